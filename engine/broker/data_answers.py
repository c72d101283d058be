"""The data-plane APIs a simulated broker answers without data: it keeps metadata only.

Produce (0), a client's Fetch (1) and ListOffsets (2) get, for every partition asked about,
INVALID_REQUEST with the message below where the version carries one. The choice: Kafka's
clients retry the retriable errors (NOT_LEADER_OR_FOLLOWER, UNKNOWN_SERVER_ERROR in a fetch,
...) forever, while INVALID_REQUEST is not retriable, so a producer's send and an admin
client's listOffsets fail at once with InvalidRequestException; a consumer's fetch fails with
an unexpected-error exception. (A consumer's ListOffsets retries any error it does not know,
as Kafka's OffsetFetcher does; it gets no further than that.)

ListGroups (16) is an empty list (there are no groups) and FindCoordinator (10)
COORDINATOR_NOT_AVAILABLE, the answers admin tools can show.

DescribeLogDirs (35) lists the broker's log dirs as Kafka's ReplicaManager does: each by its
absolute path with the volume's total and usable bytes, the replicas the image places in it (a
replica not yet given a directory counts in the first online one, where Kafka's broker would
have made its log), each empty (size 0, lag 0); an offline dir is KAFKA_STORAGE_ERROR and no
topics. kafka-reassign-partitions asks it before every --execute.
"""

from __future__ import annotations

import dataclasses
import shutil
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any, NamedTuple, Sequence

from engine.common.api_keys import ApiKeys
from engine.common.directory_id import MIGRATING, UNASSIGNED
from engine.image.metadata_image import MetadataImage
from engine.net.kafka_protocol import response_class
from engine.records.kio_codec import ErrorCode, i32, i64, protocol_module

NO_DATA = "this broker is metashell's simulated broker: it keeps metadata only and holds no message data"
NO_COORDINATOR = "this simulated broker runs no group or transaction coordinator"
_ZERO = timedelta(0)


def make(cls: type, **values: Any) -> Any:
    """An instance of ``cls`` from the values it has fields for (versions differ in their fields)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})


def _module(name: str, version: int) -> Any:
    return protocol_module(name, version, "response")


def _topic_key(topic: Any) -> dict[str, Any]:
    return {"name": getattr(topic, "name", None) or getattr(topic, "topic", None),
            "topic": getattr(topic, "topic", None), "topic_id": getattr(topic, "topic_id", None)}


def produce(request: Any, version: int) -> Any:
    m = _module("produce", version)
    topics = tuple(make(m.TopicProduceResponse, **_topic_key(t), partition_responses=tuple(
        make(m.PartitionProduceResponse, index=p.index, error_code=ErrorCode.invalid_request, base_offset=i64(-1),
             log_append_time=None, log_start_offset=i64(-1), record_errors=(), error_message=NO_DATA)
        for p in t.partition_data)) for t in request.topic_data)
    return make(response_class(ApiKeys.PRODUCE, version), responses=topics, throttle_time=_ZERO)


def fetch(request: Any, version: int) -> Any:
    m = _module("fetch", version)
    topics = tuple(make(m.FetchableTopicResponse, **_topic_key(t), partitions=tuple(
        make(m.PartitionData, partition_index=p.partition, error_code=ErrorCode.invalid_request,
             high_watermark=i64(-1), last_stable_offset=i64(-1), log_start_offset=i64(-1),
             aborted_transactions=None, preferred_read_replica=i32(-1), records=None)
        for p in t.partitions)) for t in request.topics)
    return make(response_class(ApiKeys.FETCH, version), throttle_time=_ZERO, error_code=ErrorCode.none,
                session_id=i32(0), responses=topics)


def fetch_replica_id(request: Any) -> int:
    """The fetching broker's id (-1: a client): ``replica_id`` until v14, ``replica_state`` from v15."""
    state = getattr(request, "replica_state", None)
    if state is not None:
        return int(state.replica_id)
    return int(getattr(request, "replica_id", -1))


def list_offsets(request: Any, version: int) -> Any:
    m = _module("list_offsets", version)
    topics = tuple(m.ListOffsetsTopicResponse(name=t.name, partitions=tuple(
        make(m.ListOffsetsPartitionResponse, partition_index=p.partition_index, error_code=ErrorCode.invalid_request,
             timestamp=i64(-1), offset=i64(-1), leader_epoch=i32(-1))
        for p in t.partitions)) for t in request.topics)
    return make(response_class(ApiKeys.LIST_OFFSETS, version), throttle_time=_ZERO, topics=topics)


def list_groups(version: int) -> Any:
    return make(response_class(ApiKeys.LIST_GROUPS, version), throttle_time=_ZERO, error_code=ErrorCode.none, groups=())


def find_coordinator(request: Any, version: int) -> Any:
    code = ErrorCode.coordinator_not_available
    if version < 4:
        return make(response_class(ApiKeys.FIND_COORDINATOR, version), throttle_time=_ZERO, error_code=code,
                    error_message=NO_COORDINATOR, node_id=i32(-1), host="", port=i32(-1))
    m = _module("find_coordinator", version)
    return make(response_class(ApiKeys.FIND_COORDINATOR, version), throttle_time=_ZERO, coordinators=tuple(
        m.Coordinator(key=key, node_id=i32(-1), host="", port=i32(-1), error_code=code, error_message=NO_COORDINATOR)
        for key in request.coordinator_keys))


class LogDir(NamedTuple):
    """One of the broker's log.dirs: its path, its directory id (meta.properties), online or not."""
    path: str
    directory_id: uuid.UUID
    online: bool


def _volume_bytes(path: str) -> tuple[int, int]:
    try:
        usage = shutil.disk_usage(path)
    except OSError:
        return -1, -1
    return usage.total, usage.free


def _replicas_by_dir(image: MetadataImage, broker_id: int, log_dirs: Sequence[LogDir]
                     ) -> dict[uuid.UUID, dict[str, list[int]]]:
    """directory id -> topic -> partitions of this broker's replicas placed there."""
    first_online = next((d.directory_id for d in log_dirs if d.online), None)
    placed: dict[uuid.UUID, dict[str, list[int]]] = {}
    for name in sorted(image.topics.by_name):
        topic = image.topics.topic(name)
        for pid, partition in sorted(topic.partitions.items()):
            if broker_id not in partition.replicas:
                continue
            index = partition.replicas.index(broker_id)
            directory = partition.directories[index] if partition.directories else UNASSIGNED
            if directory in (UNASSIGNED, MIGRATING, None) and first_online is not None:
                directory = first_online
            placed.setdefault(directory, {}).setdefault(name, []).append(pid)
    return placed


def describe_log_dirs(image: MetadataImage, broker_id: int, log_dirs: Sequence[LogDir], request: Any,
                      version: int) -> Any:
    m = _module("describe_log_dirs", version)
    wanted = None if request.topics is None else {(t.topic, int(p)) for t in request.topics for p in t.partitions}
    placed = _replicas_by_dir(image, broker_id, log_dirs)
    results = []
    for log_dir in log_dirs:
        path = str(Path(log_dir.path).absolute())
        if not log_dir.online:
            results.append(make(m.DescribeLogDirsResult, error_code=ErrorCode.kafka_storage_error, log_dir=path,
                                topics=()))
            continue
        topics = []
        for name, partitions in placed.get(log_dir.directory_id, {}).items():
            kept = [p for p in partitions if wanted is None or (name, p) in wanted]
            if kept:
                topics.append(m.DescribeLogDirsTopic(name=name, partitions=tuple(
                    m.DescribeLogDirsPartition(partition_index=i32(p), partition_size=i64(0), offset_lag=i64(0),
                                               is_future_key=False) for p in kept)))
        total, usable = _volume_bytes(path)
        results.append(make(m.DescribeLogDirsResult, error_code=ErrorCode.none, log_dir=path, topics=tuple(topics),
                            total_bytes=i64(total), usable_bytes=i64(usable)))
    return make(response_class(ApiKeys.DESCRIBE_LOG_DIRS, version), throttle_time=_ZERO, error_code=ErrorCode.none,
                results=tuple(results))


__all__ = ["LogDir", "NO_DATA", "describe_log_dirs", "fetch", "fetch_replica_id", "find_coordinator", "list_groups", "list_offsets", "make",
           "produce"]
