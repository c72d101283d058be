"""A simulated broker's client-facing Kafka APIs (Kafka's KafkaApis, for a broker without data).

``BrokerApis.apis`` is the table a KafkaServer serves (ApiVersions is the server's own answer
from it) and ``BrokerApis.handle`` the handler. Three kinds of answers:

- from the broker's own committed image: Metadata, DescribeCluster, DescribeTopicPartitions
  (engine.broker.metadata_answers), DescribeConfigs, DescribeAcls, DescribeClientQuotas,
  DescribeUserScramCredentials (engine.broker.describe_answers);
- forwarded to the active controller in an Envelope: the admin writes Kafka 4.x's broker
  forwards (engine.broker.forwarding), advertised at the versions our controller serves;
- without data: Produce, a client's Fetch, ListOffsets, ListGroups, FindCoordinator
  (engine.broker.data_answers); another broker's Fetch goes to the replica simulation;
  DescribeLogDirs from the broker's log dirs (``log_dirs``; not advertised without them).

Anything else is not advertised, so a client never sends it. A request that cannot be
answered (a bug, or input no check caught) gets its API's UNKNOWN_SERVER_ERROR and a log line;
the connection stays. The one answer that is no answer: Produce with acks=0 expects none, and
Kafka closes the connection to tell such a producer of an error; we do the same.
"""

from __future__ import annotations

import dataclasses
import logging
import random
from datetime import timedelta
from typing import Any, Awaitable, Callable, Sequence

from engine.common.api_keys import ApiKeys
from engine.broker import data_answers, describe_answers, metadata_answers
from engine.common.config_resource import ConfigResourceType
from engine.broker.forwarding import Forwarder, error_response, forwarded_apis
from engine.controller.controller_config import ControllerConfig
from engine.image.metadata_image import MetadataImage
from engine.net.kafka_protocol import ApiSpec, api_name, response_class
from engine.net.kafka_server import RequestContext
from engine.records.kio_codec import ErrorCode, protocol_module

log = logging.getLogger("engine.broker.apis")

BROKER_LOGGER = ConfigResourceType.BROKER_LOGGER

# What the broker answers itself: Kafka 4.x's broker ranges that kio has (ApiKeys on the BROKER
# listener, e.g. Metadata 0-13, Fetch 4-18, DescribeConfigs 1-4, DescribeAcls 1-3).
LOCAL_APIS: dict[int, ApiSpec] = {key: ApiSpec(key, name, low, high) for key, name, low, high in (
    (ApiKeys.PRODUCE, "produce", 3, 13), (ApiKeys.FETCH, "fetch", 4, 18),
    (ApiKeys.LIST_OFFSETS, "list_offsets", 1, 11), (ApiKeys.METADATA, "metadata", 0, 13),
    (ApiKeys.FIND_COORDINATOR, "find_coordinator", 0, 6), (ApiKeys.LIST_GROUPS, "list_groups", 0, 5),
    (ApiKeys.DESCRIBE_ACLS, "describe_acls", 1, 3), (ApiKeys.DESCRIBE_CONFIGS, "describe_configs", 1, 4),
    (ApiKeys.DESCRIBE_CLIENT_QUOTAS, "describe_client_quotas", 0, 1),
    (ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, "describe_user_scram_credentials", 0, 0),
    (ApiKeys.DESCRIBE_CLUSTER, "describe_cluster", 0, 2),
    (ApiKeys.DESCRIBE_TOPIC_PARTITIONS, "describe_topic_partitions", 0, 0))}
LOG_DIRS_API = ApiSpec(ApiKeys.DESCRIBE_LOG_DIRS, "describe_log_dirs", 1, 5)  # Kafka 4.3's range

NO_LOGGERS = "this simulated broker has no log4j loggers (broker-logger configs belong to a real broker's process)"


class NoResponse(Exception):
    """A request that gets no answer (Produce with acks=0 that failed): the server closes the
    connection, which is how Kafka tells such a producer."""


class BrokerApis:
    """The handler of a simulated broker's client listener."""

    def __init__(self, *, broker_id: int, cluster_id: str, image: Callable[[], MetadataImage],
                 send_to_controller: Callable[[Any], Awaitable[Any]], listener_name: str = "PLAINTEXT",
                 authorizer: bool = False,
                 replica_fetch: Callable[[RequestContext, Any], Awaitable[Any]] | None = None,
                 request_timeout_ms: int = 30000, config: ControllerConfig | None = None,
                 rng: random.Random | None = None,
                 log_dirs: Callable[[], Sequence[data_answers.LogDir]] | None = None):
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.image = image
        self.listener_name = listener_name
        self.authorizer = authorizer
        self.replica_fetch = replica_fetch
        # the static settings DescribeConfigs reports (min.insync.replicas, ...), by Kafka's names
        self.config = dataclasses.replace(config or ControllerConfig(), node_id=broker_id, cluster_id=cluster_id)
        self.rng = rng or random.Random()
        self.forwarder = Forwarder(send_to_controller, request_timeout_ms=request_timeout_ms)
        self.log_dirs = log_dirs  # log.dirs now (a failed one offline), for DescribeLogDirs
        self.apis: dict[int, ApiSpec] = {**LOCAL_APIS, **forwarded_apis()}
        if log_dirs is not None:
            self.apis[ApiKeys.DESCRIBE_LOG_DIRS] = LOG_DIRS_API

    def finalized_features(self) -> tuple[int, dict[str, int]]:
        """ApiVersions' finalized features (for KafkaServer(finalized_features=...)): the image's,
        at its offset, as a Kafka broker's metadata cache tells them."""
        image = self.image()
        return image.provenance.last_offset, dict(image.features)

    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        try:
            return await self._answer(ctx, request)
        except NoResponse:
            raise
        except Exception as err:  # noqa: BLE001 - one line, the API's error, the connection kept
            log.error("broker %d: %s v%d from %s failed: %s: %s", self.broker_id, api_name(ctx.api_key),
                      ctx.api_version, ctx.client_id or "?", type(err).__name__, " ".join(str(err).split()))
            return self.refuse(ctx, request, ErrorCode.unknown_server_error, f"{type(err).__name__}: {err}")

    def refuse(self, ctx: RequestContext, request: Any, code: Any, message: str | None) -> Any:
        """The API's answer refusing the whole request."""
        key, version = ctx.api_key, ctx.api_version
        if key == ApiKeys.METADATA:
            return metadata_answers.metadata_error(request, version, code)
        if key == ApiKeys.DESCRIBE_CLUSTER:
            return metadata_answers.describe_cluster_error(version, code, message)
        if key == ApiKeys.DESCRIBE_TOPIC_PARTITIONS:
            return metadata_answers.describe_topic_partitions_error(request, code)
        if key == ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS:
            return describe_answers.describe_user_scram_credentials_error(code, message)
        if key in (ApiKeys.DESCRIBE_CONFIGS, ApiKeys.DESCRIBE_ACLS):
            command = (describe_answers.DESCRIBE_CONFIGS if key == ApiKeys.DESCRIBE_CONFIGS
                       else describe_answers.DESCRIBE_ACLS)
            return error_response(key, version, request, code, message, {key: command})
        if key in (ApiKeys.PRODUCE, ApiKeys.FETCH, ApiKeys.LIST_OFFSETS, ApiKeys.LIST_GROUPS, ApiKeys.FIND_COORDINATOR):
            return self._data_answer(ctx, request)
        if key == ApiKeys.DESCRIBE_CLIENT_QUOTAS:
            return describe_answers.describe_client_quotas_error(version, code, message)
        if key == ApiKeys.DESCRIBE_LOG_DIRS:
            return data_answers.make(response_class(key, version), throttle_time=timedelta(0), error_code=code,
                                     results=())
        return error_response(key, version, request, code, message)

    def _data_answer(self, ctx: RequestContext, request: Any) -> Any:
        key, version = ctx.api_key, ctx.api_version
        if key == ApiKeys.PRODUCE:
            return data_answers.produce(request, version)
        if key == ApiKeys.FETCH:
            return data_answers.fetch(request, version)
        if key == ApiKeys.LIST_OFFSETS:
            return data_answers.list_offsets(request, version)
        if key == ApiKeys.LIST_GROUPS:
            return data_answers.list_groups(version)
        return data_answers.find_coordinator(request, version)

    async def _answer(self, ctx: RequestContext, request: Any) -> Any:
        key, version = ctx.api_key, ctx.api_version
        listener = ctx.listener_name or self.listener_name
        if key == ApiKeys.METADATA:
            return metadata_answers.metadata(self.image(), request, version, listener=listener,
                                             cluster_id=self.cluster_id, rng=self.rng)
        if key == ApiKeys.DESCRIBE_CLUSTER:
            return metadata_answers.describe_cluster(self.image(), request, version, listener=listener,
                                                     cluster_id=self.cluster_id, rng=self.rng)
        if key == ApiKeys.DESCRIBE_TOPIC_PARTITIONS:
            try:
                return metadata_answers.describe_topic_partitions(self.image(), request, listener=listener)
            except metadata_answers.InvalidRequest as err:
                log.info("broker %d: DescribeTopicPartitions refused: %s", self.broker_id, err)
                return metadata_answers.describe_topic_partitions_error(request, ErrorCode.invalid_request)
        if key == ApiKeys.DESCRIBE_CONFIGS:
            return describe_answers.describe_configs(self.image(), self.config, request, version)
        if key == ApiKeys.DESCRIBE_ACLS:
            return describe_answers.describe_acls(self.image(), self.config, request, version, self.authorizer)
        if key == ApiKeys.DESCRIBE_CLIENT_QUOTAS:
            return describe_answers.describe_client_quotas(self.image(), request, version)
        if key == ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS:
            return describe_answers.describe_user_scram_credentials(self.image(), request)
        if key == ApiKeys.DESCRIBE_LOG_DIRS and self.log_dirs is not None:
            return data_answers.describe_log_dirs(self.image(), self.broker_id, self.log_dirs(), request, version)
        if key == ApiKeys.FETCH and data_answers.fetch_replica_id(request) >= 0 and self.replica_fetch is not None:
            return await self.replica_fetch(ctx, request)
        if key == ApiKeys.PRODUCE and int(request.acks) == 0:
            raise NoResponse("a Produce with acks=0 to a broker that holds no data: closing the connection, "
                             "as Kafka does when such a produce fails")
        if key in LOCAL_APIS:
            return self._data_answer(ctx, request)
        if key == ApiKeys.INCREMENTAL_ALTER_CONFIGS and any(r.resource_type == BROKER_LOGGER
                                                            for r in request.resources):
            return await self._alter_without_loggers(ctx, request)
        return await self.forwarder.forward(ctx, request)

    async def _alter_without_loggers(self, ctx: RequestContext, request: Any) -> Any:
        """IncrementalAlterConfigs naming broker loggers: Kafka's broker alters those itself (they
        are its log4j levels); ours has none, so they are refused and the rest forwarded."""
        rest = tuple(r for r in request.resources if r.resource_type != BROKER_LOGGER)
        answered: dict[tuple[int, str], list[Any]] = {}
        if rest:
            forwarded = await self.forwarder.forward(ctx, dataclasses.replace(request, resources=rest))
            for entry in forwarded.responses:
                answered.setdefault((int(entry.resource_type), entry.resource_name), []).append(entry)
        module = protocol_module("incremental_alter_configs", ctx.api_version, "response")
        responses = []
        for resource in request.resources:
            found = answered.get((int(resource.resource_type), resource.resource_name))
            if resource.resource_type != BROKER_LOGGER and found:
                responses.append(found.pop(0))
            else:
                responses.append(module.AlterConfigsResourceResponse(
                    error_code=ErrorCode.invalid_request, error_message=NO_LOGGERS,
                    resource_type=resource.resource_type, resource_name=resource.resource_name))
        return module.IncrementalAlterConfigsResponse(throttle_time=timedelta(0), responses=tuple(responses))


__all__ = ["BrokerApis", "LOCAL_APIS", "LOG_DIRS_API", "NoResponse"]
