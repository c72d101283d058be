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
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

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
    return make(response_class(0, version), responses=topics, throttle_time=_ZERO)


def fetch(request: Any, version: int) -> Any:
    m = _module("fetch", version)
    topics = tuple(make(m.FetchableTopicResponse, **_topic_key(t), partitions=tuple(
        make(m.PartitionData, partition_index=p.partition, error_code=ErrorCode.invalid_request,
             high_watermark=i64(-1), last_stable_offset=i64(-1), log_start_offset=i64(-1),
             aborted_transactions=None, preferred_read_replica=i32(-1), records=None)
        for p in t.partitions)) for t in request.topics)
    return make(response_class(1, version), throttle_time=_ZERO, error_code=ErrorCode.none, session_id=i32(0),
                responses=topics)


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
    return make(response_class(2, version), throttle_time=_ZERO, topics=topics)


def list_groups(version: int) -> Any:
    return make(response_class(16, version), throttle_time=_ZERO, error_code=ErrorCode.none, groups=())


def find_coordinator(request: Any, version: int) -> Any:
    code = ErrorCode.coordinator_not_available
    if version < 4:
        return make(response_class(10, version), throttle_time=_ZERO, error_code=code, error_message=NO_COORDINATOR,
                    node_id=i32(-1), host="", port=i32(-1))
    m = _module("find_coordinator", version)
    return make(response_class(10, version), throttle_time=_ZERO, coordinators=tuple(
        m.Coordinator(key=key, node_id=i32(-1), host="", port=i32(-1), error_code=code, error_message=NO_COORDINATOR)
        for key in request.coordinator_keys))


__all__ = ["NO_DATA", "fetch", "fetch_replica_id", "find_coordinator", "list_groups", "list_offsets", "make",
           "produce"]
