"""What a broker answers from its own metadata image: Metadata (3), DescribeCluster (60) and
DescribeTopicPartitions (75, KIP-966), as Kafka's KRaftMetadataCache and KafkaApis read the image.

Facts carried over from Kafka 4.x:
- the brokers listed are the unfenced ones with an endpoint on the listener the request came in
  on; a KRaft broker names a random one of them as the "controller" (clients send their admin
  writes to it, and it forwards them);
- a partition whose leader has no endpoint on that listener reads LEADER_NOT_AVAILABLE with
  leader -1 (LISTENER_NOT_FOUND from Metadata v6 when the leader is registered but lacks the
  listener); Metadata v0 alone leaves unavailable replicas out and says REPLICA_NOT_AVAILABLE;
- a replica is offline when its broker is unknown, fenced, lacks the listener, or its directory
  is not one of the broker's online directories;
- a topic not in the image reads UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION when its
  name is illegal; an unknown topic id reads UNKNOWN_TOPIC_ID.
"""

from __future__ import annotations

import random
import uuid
from datetime import timedelta
from typing import Any, Iterable

from engine.common.api_keys import ApiKeys, EndpointType
from engine.common.directory_id import LOST, MIGRATING, UNASSIGNED
from engine.controller.topic_control import topic_name_error
from engine.image.metadata_image import BrokerRegistration, MetadataImage, TopicImage
from engine.image.partition_registration import PartitionRegistration
from engine.net.kafka_protocol import response_class
from engine.net.message_versions import convert_message
from engine.records.kio_codec import ErrorCode, i8, i32, protocol_module

NO_LEADER = -1
NO_AUTHORIZED_OPERATIONS = -2147483648  # the schemas' default: "not asked for"
# Kafka's AclEntry.supportedOperations as a bit field (Utils.to32BitField): a broker without an
# authorizer grants them all, and ours grants all when one is configured (it checks nothing)
TOPIC_OPERATIONS = 3576  # READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS
CLUSTER_OPERATIONS = 8096  # CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000  # max.request.partition.size.limit

_metadata = protocol_module("metadata", 13, "response")
_cluster = protocol_module("describe_cluster", 2, "response")
_dtp = protocol_module("describe_topic_partitions", 0, "response")
_ZERO = timedelta(0)


class InvalidRequest(Exception):
    """A request Kafka refuses as a whole with INVALID_REQUEST (the message is the client's)."""


# -- the image, read as KRaftMetadataCache reads it ------------------------------------------

def endpoint(broker: BrokerRegistration | None, listener: str) -> tuple[str, int] | None:
    if broker is None:
        return None
    found = next((e for e in broker.endpoints if e.name == listener), None)
    return None if found is None else (found.host, found.port)


def alive_brokers(image: MetadataImage, listener: str) -> list[tuple[BrokerRegistration, tuple[str, int]]]:
    """The unfenced brokers with an endpoint on ``listener``, by id."""
    found = []
    for broker_id in sorted(image.cluster.brokers):
        broker = image.cluster.brokers[broker_id]
        address = endpoint(broker, listener)
        if not broker.fenced and address is not None:
            found.append((broker, address))
    return found


def random_alive_broker(image: MetadataImage, rng: random.Random) -> int:
    """Kafka's KRaft answer for "the controller" to clients: a random unfenced broker (-1: none)."""
    alive = [b.id for b in image.cluster.brokers.values() if not b.fenced]
    return rng.choice(sorted(alive)) if alive else -1


def _directory(partition: PartitionRegistration, broker_id: int) -> uuid.UUID:
    if partition.directories and broker_id in partition.replicas:
        return partition.directories[partition.replicas.index(broker_id)]
    return UNASSIGNED


def _dir_online(broker: BrokerRegistration, directory: uuid.UUID) -> bool:
    if directory in (UNASSIGNED, MIGRATING):
        return True
    if directory == LOST:
        return False
    # a broker registered before directories were kept lists none: its replicas count as online
    return not broker.directories or directory in broker.directories


def offline_replicas(image: MetadataImage, partition: PartitionRegistration, listener: str) -> list[int]:
    offline = []
    for broker_id in partition.replicas:
        broker = image.cluster.brokers.get(broker_id)
        if broker is None or broker.fenced or endpoint(broker, listener) is None \
                or not _dir_online(broker, _directory(partition, broker_id)):
            offline.append(broker_id)
    return offline


def _available(image: MetadataImage, ids: Iterable[int], listener: str) -> list[int]:
    """Metadata v0's replica lists: only the unfenced brokers with the listener."""
    brokers = image.cluster.brokers
    return [b for b in ids if b in brokers and not brokers[b].fenced and endpoint(brokers[b], listener)]


def _ids(values: Iterable[int]) -> tuple[i32, ...]:
    return tuple(i32(v) for v in values)


# -- Metadata ---------------------------------------------------------------------------------

def _metadata_partition(image: MetadataImage, partition_id: int, partition: PartitionRegistration,
                        listener: str, version: int) -> Any:
    filter_unavailable = version == 0
    replicas = _available(image, partition.replicas, listener) if filter_unavailable else list(partition.replicas)
    isr = _available(image, partition.isr, listener) if filter_unavailable else list(partition.isr)
    leader = partition.leader
    if endpoint(image.cluster.brokers.get(leader), listener) is None:
        registered = leader in image.cluster.brokers
        code = ErrorCode.listener_not_found if registered and version >= 6 else ErrorCode.leader_not_available
        leader = NO_LEADER
    elif len(replicas) < len(partition.replicas) or len(isr) < len(partition.isr):
        code = ErrorCode.replica_not_available
    else:
        code = ErrorCode.none
    return _metadata.MetadataResponsePartition(
        error_code=code, partition_index=i32(partition_id), leader_id=i32(leader),
        leader_epoch=i32(partition.leader_epoch), replica_nodes=_ids(replicas), isr_nodes=_ids(isr),
        offline_replicas=_ids(offline_replicas(image, partition, listener)))


def _metadata_topic(code: Any, name: str | None, topic_id: uuid.UUID | None, partitions: tuple = (),
                    operations: int = NO_AUTHORIZED_OPERATIONS) -> Any:
    return _metadata.MetadataResponseTopic(
        error_code=code, name=name, topic_id=topic_id, is_internal=name in INTERNAL_TOPICS,
        partitions=partitions, topic_authorized_operations=i32(operations))


def _existing_topic(image: MetadataImage, topic: TopicImage, listener: str, version: int, operations: int) -> Any:
    partitions = tuple(_metadata_partition(image, pid, p, listener, version)
                       for pid, p in sorted(topic.partitions.items()))
    return _metadata_topic(ErrorCode.none, topic.name, topic.id, partitions, operations)


def missing_topic_error(name: str) -> Any:
    """Kafka's answer for a topic name the image lacks."""
    return ErrorCode.invalid_topic_exception if topic_name_error(name) else ErrorCode.unknown_topic_or_partition


def requested_topics(request: Any, version: int) -> tuple[list[str], list[uuid.UUID]] | None:
    """The names and ids a Metadata request asks for; None for all topics. InvalidRequest for a
    null name or a topic id before v12, as Kafka refuses them."""
    topics = request.topics
    if topics is None or (version == 0 and not topics):
        return None
    names, ids = [], []
    for topic in topics:
        topic_id = getattr(topic, "topic_id", None)
        if topic.name is None and version < 12:
            raise InvalidRequest(f"Topic name can not be null for version {version}")
        if topic_id not in (None, MIGRATING) and version < 12:
            raise InvalidRequest(f"Topic IDs are not supported in requests for version {version}")
        if topic_id not in (None, MIGRATING):
            ids.append(topic_id)
        elif topic.name is not None and topic.name not in names:
            names.append(topic.name)
    return names, ids


def metadata(image: MetadataImage, request: Any, version: int, *, listener: str, cluster_id: str,
             rng: random.Random, creating: Iterable[str] = ()) -> Any:
    """The Metadata response at ``version``; ``creating``: names being auto-created now (they
    read LEADER_NOT_AVAILABLE, as Kafka's AutoTopicCreationManager answers)."""
    try:
        wanted = requested_topics(request, version)
    except InvalidRequest:
        return metadata_error(request, version, ErrorCode.invalid_request)
    operations = TOPIC_OPERATIONS if getattr(request, "include_topic_authorized_operations", False) \
        and version >= 8 else NO_AUTHORIZED_OPERATIONS
    creating = set(creating)
    topics = []
    if wanted is None:
        for name in sorted(image.topics.by_name):
            topics.append(_existing_topic(image, image.topics.topic(name), listener, version, operations))
    else:
        names, ids = wanted
        for topic_id in ids:
            topic = image.topics.by_id.get(topic_id)
            if topic is None:
                topics.append(_metadata_topic(ErrorCode.unknown_topic_id, None, topic_id))
            elif topic.name not in names:
                names.append(topic.name)
        for name in names:
            topic = image.topics.topic(name)
            if topic is not None:
                topics.append(_existing_topic(image, topic, listener, version, operations))
            elif name in creating:
                topics.append(_metadata_topic(ErrorCode.leader_not_available, name, None))
            else:
                topics.append(_metadata_topic(missing_topic_error(name), name, None))
    brokers = tuple(_metadata.MetadataResponseBroker(node_id=i32(b.id), host=host, port=i32(port), rack=b.rack)
                    for b, (host, port) in alive_brokers(image, listener))
    response = _metadata.MetadataResponse(
        throttle_time=_ZERO, brokers=brokers, cluster_id=cluster_id, controller_id=i32(random_alive_broker(image, rng)),
        topics=tuple(topics), error_code=ErrorCode.none)
    extra = None
    if 8 <= version <= 10:
        wants_cluster = getattr(request, "include_cluster_authorized_operations", False)
        extra = {"cluster_authorized_operations": i32(CLUSTER_OPERATIONS if wants_cluster
                                                      else NO_AUTHORIZED_OPERATIONS)}
    return convert_message(response, response_class(ApiKeys.METADATA, version), extra)


def metadata_error(request: Any, version: int, code: Any) -> Any:
    """Kafka's MetadataRequest.getErrorResponse: every named topic with the error, no brokers."""
    topics = tuple(_metadata_topic(code, t.name, None) for t in (request.topics or ()))
    response = _metadata.MetadataResponse(throttle_time=_ZERO, brokers=(), cluster_id=None, controller_id=i32(-1),
                                          topics=topics, error_code=ErrorCode.none)
    return convert_message(response, response_class(ApiKeys.METADATA, version))


# -- DescribeCluster --------------------------------------------------------------------------

def describe_cluster(image: MetadataImage, request: Any, version: int, *, listener: str, cluster_id: str,
                     rng: random.Random) -> Any:
    endpoint_type = int(getattr(request, "endpoint_type", EndpointType.BROKER))
    if endpoint_type != EndpointType.BROKER:
        # Kafka's AuthHelper: v0 has no endpoint-type errors, so INVALID_REQUEST there
        if endpoint_type == EndpointType.CONTROLLER:
            code = ErrorCode.mismatched_endpoint_type
            message = "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
        else:
            code, message = ErrorCode.unsupported_endpoint_type, f"Unsupported endpoint type {endpoint_type}"
        return describe_cluster_error(version, ErrorCode.invalid_request if version == 0 else code, message)
    if getattr(request, "include_fenced_brokers", False):
        nodes = [(b, endpoint(b, listener)) for _, b in sorted(image.cluster.brokers.items())]
        nodes = [(b, address) for b, address in nodes if address is not None]
    else:
        nodes = alive_brokers(image, listener)
    brokers = tuple(_cluster.DescribeClusterBroker(broker_id=i32(b.id), host=host, port=i32(port), rack=b.rack,
                                                   is_fenced=b.fenced) for b, (host, port) in nodes)
    controller = random_alive_broker(image, rng)
    if all(b.id != controller for b, _ in nodes):
        controller = -1  # Kafka's rule: a controller id the client cannot find in the list reads -1
    wants_cluster = getattr(request, "include_cluster_authorized_operations", False)
    response = _cluster.DescribeClusterResponse(
        throttle_time=_ZERO, error_code=ErrorCode.none, error_message=None, endpoint_type=i8(EndpointType.BROKER),
        cluster_id=cluster_id, controller_id=i32(controller), brokers=brokers,
        cluster_authorized_operations=i32(CLUSTER_OPERATIONS if wants_cluster else NO_AUTHORIZED_OPERATIONS))
    return convert_message(response, response_class(ApiKeys.DESCRIBE_CLUSTER, version))


def describe_cluster_error(version: int, code: Any, message: str | None) -> Any:
    response = _cluster.DescribeClusterResponse(
        throttle_time=_ZERO, error_code=code, error_message=message, endpoint_type=i8(EndpointType.BROKER),
        cluster_id="", controller_id=i32(-1), brokers=())
    return convert_message(response, response_class(ApiKeys.DESCRIBE_CLUSTER, version))


# -- DescribeTopicPartitions (KIP-966) --------------------------------------------------------

def _dtp_partition(image: MetadataImage, partition_id: int, partition: PartitionRegistration, listener: str) -> Any:
    leader = partition.leader if endpoint(image.cluster.brokers.get(partition.leader), listener) else NO_LEADER
    return _dtp.DescribeTopicPartitionsResponsePartition(
        error_code=ErrorCode.none, partition_index=i32(partition_id), leader_id=i32(leader),
        leader_epoch=i32(partition.leader_epoch), replica_nodes=_ids(partition.replicas),
        isr_nodes=_ids(partition.isr), eligible_leader_replicas=_ids(partition.elr),
        last_known_elr=_ids(partition.last_known_elr),
        offline_replicas=_ids(offline_replicas(image, partition, listener)))


def _dtp_topic(code: Any, name: str, topic_id: uuid.UUID | None, partitions: tuple = (),
               operations: int = NO_AUTHORIZED_OPERATIONS) -> Any:
    return _dtp.DescribeTopicPartitionsResponseTopic(
        error_code=code, name=name, topic_id=topic_id, is_internal=name in INTERNAL_TOPICS, partitions=partitions,
        topic_authorized_operations=i32(operations))


def describe_topic_partitions(image: MetadataImage, request: Any, *, listener: str) -> Any:
    """Topics in name order from the cursor on, at most ``response_partition_limit`` partitions
    (capped at max.request.partition.size.limit), and the cursor where the next page starts.
    InvalidRequest for a cursor Kafka refuses."""
    cursor = request.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    all_topics = not request.topics
    source = image.topics.by_name if all_topics else [t.name for t in request.topics]
    names = sorted({name for name in source if name >= cursor_topic})
    if cursor is not None and not all_topics and cursor.topic_name not in names:
        raise InvalidRequest(f"DescribeTopicPartitionsRequest topic list should contain the cursor topic: "
                             f"{cursor.topic_name}")
    if cursor is not None and cursor.partition_index < 0:
        raise InvalidRequest(f"DescribeTopicPartitionsRequest cursor partition must be valid: {cursor}")
    remaining = max(min(MAX_REQUEST_PARTITION_SIZE_LIMIT, int(request.response_partition_limit)), 1)
    topics, next_cursor = [], None
    for name in names:
        if remaining <= 0:
            next_cursor = _dtp.Cursor(topic_name=name, partition_index=i32(0))
            break
        topic = image.topics.topic(name)
        if topic is None:
            if not all_topics:
                topics.append(_dtp_topic(missing_topic_error(name), name, None, (), TOPIC_OPERATIONS))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        upper = min(len(topic.partitions), start + remaining)
        partitions = tuple(_dtp_partition(image, pid, topic.partitions[pid], listener)
                           for pid in range(start, upper) if pid in topic.partitions)
        topics.append(_dtp_topic(ErrorCode.none, name, topic.id, partitions, TOPIC_OPERATIONS))
        if upper < len(topic.partitions):
            next_cursor = _dtp.Cursor(topic_name=name, partition_index=i32(upper))
            break
        remaining -= len(partitions)
    return _dtp.DescribeTopicPartitionsResponse(throttle_time=_ZERO, topics=tuple(topics), next_cursor=next_cursor)


def describe_topic_partitions_error(request: Any, code: Any) -> Any:
    """Kafka's getErrorResponse: every requested topic with the error."""
    return _dtp.DescribeTopicPartitionsResponse(
        throttle_time=_ZERO, topics=tuple(_dtp_topic(code, t.name, None) for t in request.topics), next_cursor=None)


__all__ = ["InvalidRequest", "alive_brokers", "describe_cluster", "describe_cluster_error",
           "describe_topic_partitions", "describe_topic_partitions_error", "metadata", "metadata_error",
           "missing_topic_error", "offline_replicas", "random_alive_broker"]
