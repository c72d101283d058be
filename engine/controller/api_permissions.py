"""What each API the controller serves needs of the authorizer, as Kafka's ControllerApis asks it.

Most APIs need one operation on the CLUSTER resource ("kafka-cluster") and are refused whole
with CLUSTER_AUTHORIZATION_FAILED: the quorum's and the brokers' own RPCs CLUSTER_ACTION, the
admin writes ALTER, the admin reads DESCRIBE. The topic and config APIs are authorized per
item, as Kafka does: the denied items are taken out of the request before the command sees it
and answered beside the command's answers (TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED for
that item), so one forbidden topic does not fail the others. ApiVersions needs nothing.

Pure: the edge (engine.server.controller_server for the commands, engine.server.controller_apis
for the quorum's RPCs and Envelope) builds a ``Caller`` for each request and applies the verdict.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, Callable, NamedTuple

from engine.common.api_keys import ApiKeys
from engine.common.config_resource import ConfigResourceType
from engine.controller.controller_config import ControllerConfig
from engine.controller.controller_result import Command
from engine.controller.delegation_token_control import not_allowed_response
from engine.controller.standard_authorizer import (
    ALTER, ALTER_CONFIGS, CLUSTER, CLUSTER_ACTION, CREATE, CREATE_TOKENS, DELETE, DESCRIBE, DESCRIBE_CONFIGS, GROUP,
    TOPIC, USER, Caller,
)
from engine.image.metadata_image import MetadataImage
from engine.records.kio_codec import ErrorCode, protocol_module

# Kafka's Errors messages, which its per-item denials carry
TOPIC_DENIED = "Topic authorization failed."
GROUP_DENIED = "Group authorization failed."
CLUSTER_DENIED = "Cluster authorization failed."
METADATA_TOPIC = "__cluster_metadata"  # CreateTopics leaves it to the command, which refuses it

# api key -> the operation on CLUSTER it needs (ControllerApis' authorizeClusterOperation)
CLUSTER_OPERATIONS: dict[int, int] = {
    ApiKeys.FETCH: CLUSTER_ACTION,
    ApiKeys.VOTE: CLUSTER_ACTION,
    ApiKeys.BEGIN_QUORUM_EPOCH: CLUSTER_ACTION,
    ApiKeys.END_QUORUM_EPOCH: CLUSTER_ACTION,
    ApiKeys.FETCH_SNAPSHOT: CLUSTER_ACTION,
    ApiKeys.UPDATE_RAFT_VOTER: CLUSTER_ACTION,
    ApiKeys.DESCRIBE_QUORUM: DESCRIBE,
    ApiKeys.ADD_RAFT_VOTER: ALTER,
    ApiKeys.REMOVE_RAFT_VOTER: ALTER,
    ApiKeys.DESCRIBE_CLUSTER: ALTER,  # on a controller, ALTER (a broker asks DESCRIBE)
    ApiKeys.ENVELOPE: CLUSTER_ACTION,  # the forwarding broker's connection
    ApiKeys.ALTER_PARTITION: CLUSTER_ACTION,
    ApiKeys.BROKER_REGISTRATION: CLUSTER_ACTION,
    ApiKeys.BROKER_HEARTBEAT: CLUSTER_ACTION,
    ApiKeys.ALLOCATE_PRODUCER_IDS: CLUSTER_ACTION,
    ApiKeys.CONTROLLER_REGISTRATION: CLUSTER_ACTION,
    ApiKeys.ASSIGN_REPLICAS_TO_DIRS: CLUSTER_ACTION,
    ApiKeys.DESCRIBE_ACLS: DESCRIBE,
    ApiKeys.CREATE_ACLS: ALTER,
    ApiKeys.DELETE_ACLS: ALTER,
    ApiKeys.ELECT_LEADERS: ALTER,
    ApiKeys.ALTER_PARTITION_REASSIGNMENTS: ALTER,
    ApiKeys.LIST_PARTITION_REASSIGNMENTS: DESCRIBE,
    ApiKeys.ALTER_CLIENT_QUOTAS: ALTER_CONFIGS,
    ApiKeys.ALTER_USER_SCRAM_CREDENTIALS: ALTER,
    ApiKeys.UPDATE_FEATURES: ALTER,
    ApiKeys.UNREGISTER_BROKER: ALTER,
}
# Renew and ExpireDelegationToken: the token's owner and renewers are the command's check
UNCHECKED = frozenset({ApiKeys.API_VERSIONS, ApiKeys.RENEW_DELEGATION_TOKEN, ApiKeys.EXPIRE_DELEGATION_TOKEN})


NOT_READY_MESSAGE = "The authorizer is not ready: the controller has not loaded the ACLs yet."


def cluster_denial(caller: Caller, api_key: int) -> tuple[Any, str] | None:
    """(CLUSTER_AUTHORIZATION_FAILED, message) when the API's operation on CLUSTER is denied;
    (UNKNOWN_SERVER_ERROR, message) while the ACLs are not loaded, as Kafka answers then."""
    if caller.not_ready and api_key in CLUSTER_OPERATIONS:
        return ErrorCode.unknown_server_error, NOT_READY_MESSAGE
    operation = CLUSTER_OPERATIONS.get(api_key)
    if operation is None or caller.allows(operation, CLUSTER):
        return None
    return ErrorCode.cluster_authorization_failed, f"Principal {caller.principal} is not authorized for this request."


class Verdict(NamedTuple):
    """``request`` to serve (denied items taken out) and ``finish`` adding their answers to the
    command's; or, refused whole, ``request`` None and the ready ``answer``."""

    request: Any
    answer: Any = None
    finish: Callable[[Any], Any] = lambda response: response


def authorize_request(caller: Caller, command: Command, request: Any, image: MetadataImage,
                      config: ControllerConfig | None = None) -> Verdict:
    """The verdict on one request for ``command`` (read at its newest version)."""
    if not caller.config.enabled or command.api_key in UNCHECKED:
        return Verdict(request)
    if command.api_key == ApiKeys.DELETE_TOPICS and config is not None and not config.delete_topic_enable:
        return Verdict(request)  # Kafka refuses the whole request before authorizing (TOPIC_DELETION_DISABLED)
    if caller.not_ready:  # the whole request, whatever it names: Kafka's handler fails on the first check
        return Verdict(None, command.error_response(request, ErrorCode.unknown_server_error, NOT_READY_MESSAGE))
    per_item = _PER_ITEM.get(command.api_key)
    if per_item is not None:
        return per_item(caller, command, request, image)
    denial = cluster_denial(caller, command.api_key)
    if denial is None and command.api_key not in CLUSTER_OPERATIONS:
        # an API this table does not know: refused, not silently allowed
        denial = ErrorCode.cluster_authorization_failed, f"{command.name} has no permission rule"
    if denial is not None:
        return Verdict(None, command.error_response(request, *denial))
    return Verdict(request)


def _unique(names: list[Any]) -> set[Any]:
    """The items named once: a duplicate is the command's to refuse (INVALID_REQUEST)."""
    return {name for name, count in Counter(names).items() if count == 1}


def _create_topics(caller: Caller, command: Command, request: Any, image: MetadataImage) -> Verdict:
    module = protocol_module("create_topics", command.max_version, "response")
    names = _unique([t.name for t in request.topics]) - {METADATA_TOPIC}
    creatable = names if caller.allows(CREATE, CLUSTER) else caller.allowed_names(CREATE, TOPIC, names)
    describable = caller.allowed_names(DESCRIBE_CONFIGS, TOPIC, names)
    denied = names - creatable

    def finish(response: Any) -> Any:
        topics = [t if t.name in describable or t.error_code != ErrorCode.none else dataclasses.replace(
            t, topic_config_error_code=ErrorCode.topic_authorization_failed, configs=None) for t in response.topics]
        topics += [module.CreatableTopicResult(name=name, topic_id=None, error_code=ErrorCode.topic_authorization_failed,
                                               error_message="Authorization failed.", configs=None)
                   for name in sorted(denied)]
        return dataclasses.replace(response, topics=tuple(topics))

    kept = tuple(t for t in request.topics if t.name not in denied)
    return Verdict(dataclasses.replace(request, topics=kept), finish=finish)


def _delete_topics(caller: Caller, command: Command, request: Any, image: MetadataImage) -> Verdict:
    if caller.allows(DELETE, CLUSTER):
        return Verdict(request)
    module = protocol_module("delete_topics", command.max_version, "response")
    ids = _unique([t.topic_id for t in request.topics if t.name is None and t.topic_id is not None])
    names = _unique([t.name for t in request.topics
                     if t.name is not None and (t.topic_id is None or t.topic_id.int == 0)])
    id_names = {i: image.topics.by_id[i].name for i in ids if i in image.topics.by_id}
    everything = names | set(id_names.values())
    describable = caller.allowed_names(DESCRIBE, TOPIC, everything)
    deletable = caller.allowed_names(DELETE, TOPIC, everything)
    denials: list[Any] = []
    refused: set[int] = set()
    for index, t in enumerate(request.topics):
        if t.name is None and t.topic_id in id_names and id_names[t.topic_id] not in deletable:
            name = id_names[t.topic_id]  # told only to who may see the topic
            denials.append((name if name in describable else None, t.topic_id))
        elif t.name in names and (t.topic_id is None or t.topic_id.int == 0) and (t.name not in describable or (t.name in image.topics.by_name
                                                                and t.name not in deletable)):
            denials.append((t.name, None))  # an unknown topic it may see stays UNKNOWN_TOPIC_OR_PARTITION
        else:
            continue
        refused.add(index)
    answers = tuple(module.DeletableTopicResult(name=name, topic_id=topic_id,
                                                error_code=ErrorCode.topic_authorization_failed,
                                                error_message=TOPIC_DENIED) for name, topic_id in denials)
    kept = tuple(t for index, t in enumerate(request.topics) if index not in refused)
    return Verdict(dataclasses.replace(request, topics=kept),
                   finish=lambda response: dataclasses.replace(response, responses=answers + tuple(response.responses)))


def _create_partitions(caller: Caller, command: Command, request: Any, image: MetadataImage) -> Verdict:
    module = protocol_module("create_partitions", command.max_version, "response")
    names = _unique([t.name for t in request.topics])
    denied = names - caller.allowed_names(ALTER, TOPIC, names)
    answers = tuple(module.CreatePartitionsTopicResult(name=name, error_code=ErrorCode.topic_authorization_failed,
                                                       error_message=None) for name in sorted(denied))
    kept = tuple(t for t in request.topics if t.name not in denied)
    return Verdict(dataclasses.replace(request, topics=kept),
                   finish=lambda response: dataclasses.replace(response, results=answers + tuple(response.results)))


def _config_denial(caller: Caller, resource_type: int, name: str, operation: int) -> tuple[Any, str] | None:
    """What Kafka answers for a config resource the caller may not touch; None when allowed or
    a type not checked here (the command refuses those)."""
    if resource_type in (ConfigResourceType.BROKER, ConfigResourceType.CLIENT_METRICS) or (
            resource_type == ConfigResourceType.BROKER_LOGGER and operation == DESCRIBE_CONFIGS):
        return None if caller.allows(operation, CLUSTER) else (ErrorCode.cluster_authorization_failed, CLUSTER_DENIED)
    if resource_type == ConfigResourceType.BROKER_LOGGER:  # altering log levels: CLUSTER_ACTION (RuntimeLoggerManager)
        return None if caller.allows(CLUSTER_ACTION, CLUSTER) else (ErrorCode.cluster_authorization_failed,
                                                                   CLUSTER_DENIED)
    if resource_type == ConfigResourceType.TOPIC:
        return None if caller.allows(operation, TOPIC, name) else (ErrorCode.topic_authorization_failed, TOPIC_DENIED)
    if resource_type == ConfigResourceType.GROUP:
        return None if caller.allows(operation, GROUP, name) else (ErrorCode.group_authorization_failed, GROUP_DENIED)
    return None


def _alter_configs(caller: Caller, command: Command, request: Any, image: MetadataImage) -> Verdict:
    module = protocol_module(command.name, command.max_version, "response")
    unique = _unique([(r.resource_type, r.resource_name) for r in request.resources])
    denied: dict[tuple[int, str], tuple[Any, str]] = {}
    for resource_type, name in unique:
        if command.api_key == ApiKeys.ALTER_CONFIGS and resource_type == ConfigResourceType.BROKER_LOGGER:
            continue  # the legacy API has no BROKER_LOGGER: the command refuses it
        denial = _config_denial(caller, resource_type, name, ALTER_CONFIGS)
        if denial is not None:
            denied[(resource_type, name)] = denial
    answers = tuple(module.AlterConfigsResourceResponse(error_code=code, error_message=message,
                                                        resource_type=key[0], resource_name=key[1])
                    for key, (code, message) in denied.items())
    kept = tuple(r for r in request.resources if (r.resource_type, r.resource_name) not in denied)
    return Verdict(dataclasses.replace(request, resources=kept),
                   finish=lambda response: dataclasses.replace(response, responses=answers + tuple(response.responses)))


def _describe_configs(caller: Caller, command: Command, request: Any, image: MetadataImage) -> Verdict:
    module = protocol_module("describe_configs", command.max_version, "response")
    denied: dict[int, tuple[Any, str]] = {}
    for index, r in enumerate(request.resources):
        denial = _config_denial(caller, r.resource_type, r.resource_name, DESCRIBE_CONFIGS)
        if denial is not None:
            denied[index] = denial
    answers = tuple(module.DescribeConfigsResult(error_code=code, error_message=message,
                                                 resource_type=request.resources[i].resource_type,
                                                 resource_name=request.resources[i].resource_name, configs=())
                    for i, (code, message) in denied.items())
    kept = tuple(r for index, r in enumerate(request.resources) if index not in denied)
    return Verdict(dataclasses.replace(request, resources=kept),
                   finish=lambda response: dataclasses.replace(response, results=tuple(response.results) + answers))


def _create_delegation_token(caller: Caller, command: Command, request: Any, image: MetadataImage) -> Verdict:
    """A token for someone else needs CREATE_TOKENS on that USER; one's own needs nothing."""
    owner = caller.principal
    if request.owner_principal_name:
        owner = f"{request.owner_principal_type}:{request.owner_principal_name}"
    if owner == caller.principal or caller.allows(CREATE_TOKENS, USER, owner):
        return Verdict(request)
    answer = not_allowed_response(command.api_key, request, caller.principal)
    return Verdict(None, dataclasses.replace(answer, error_code=ErrorCode.delegation_token_authorization_failed))


_PER_ITEM: dict[int, Callable[[Caller, Command, Any, MetadataImage], Verdict]] = {
    ApiKeys.CREATE_TOPICS: _create_topics,
    ApiKeys.DELETE_TOPICS: _delete_topics,
    ApiKeys.CREATE_PARTITIONS: _create_partitions,
    ApiKeys.ALTER_CONFIGS: _alter_configs,
    ApiKeys.INCREMENTAL_ALTER_CONFIGS: _alter_configs,
    ApiKeys.DESCRIBE_CONFIGS: _describe_configs,
    ApiKeys.CREATE_DELEGATION_TOKEN: _create_delegation_token,
}


def covered_api_keys() -> set[int]:
    """Every api key this table has a rule for."""
    return set(CLUSTER_OPERATIONS) | set(_PER_ITEM) | set(UNCHECKED)


__all__ = ["CLUSTER_OPERATIONS", "Verdict", "authorize_request", "cluster_denial", "covered_api_keys"]
