"""Kafka's Raft RPCs as kio messages: builders for what we send, readers for what we get.

Every Raft RPC names the one partition ``__cluster_metadata-0`` inside topic and
partition arrays; these helpers hide that nesting from the core. Versions are the
newest Kafka 4.x uses and kio 0.6.5 has (KIP-853 and KIP-996 fields included).
"""

from __future__ import annotations

import datetime
import struct
import uuid
from typing import Any

from engine.records.kio_codec import ErrorCode, protocol_module
from engine.records.record_batch import LOG_OVERHEAD, MIN_BATCH_LENGTH
from engine.raft.voter_set import Address, ReplicaKey

METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = uuid.UUID(int=1)  # Kafka's Uuid.METADATA_TOPIC_ID, AAAAAAAAAAAAAAAAAAAAAQ
PARTITION = 0

VERSIONS = {"vote": 2, "begin_quorum_epoch": 1, "end_quorum_epoch": 1, "fetch": 17, "fetch_snapshot": 1,
            "describe_quorum": 2, "add_raft_voter": 1, "remove_raft_voter": 0, "update_raft_voter": 0}
# The versions a request is read at by the core. A Fetch is read as v18, so that a fetcher's own
# high watermark (KIP-1166; 2**63-1, "not supported", from older versions) reaches the leader; ours
# are sent as v17, which every Kafka 4.x controller serves (v18 came with 4.1).
INBOUND_VERSIONS = {**VERSIONS, "fetch": 18}
HIGH_WATERMARK_NOT_SUPPORTED = 2**63 - 1


def _m(api: str, kind: str) -> Any:
    return protocol_module(api, VERSIONS[api], kind)


VOTE_REQ, VOTE_RESP = _m("vote", "request"), _m("vote", "response")
BEGIN_REQ, BEGIN_RESP = _m("begin_quorum_epoch", "request"), _m("begin_quorum_epoch", "response")
END_REQ, END_RESP = _m("end_quorum_epoch", "request"), _m("end_quorum_epoch", "response")
FETCH_REQ, FETCH_RESP = _m("fetch", "request"), _m("fetch", "response")
SNAP_REQ, SNAP_RESP = _m("fetch_snapshot", "request"), _m("fetch_snapshot", "response")
DESCRIBE_REQ, DESCRIBE_RESP = _m("describe_quorum", "request"), _m("describe_quorum", "response")
ADD_REQ, ADD_RESP = _m("add_raft_voter", "request"), _m("add_raft_voter", "response")
REMOVE_REQ, REMOVE_RESP = _m("remove_raft_voter", "request"), _m("remove_raft_voter", "response")
UPDATE_REQ, UPDATE_RESP = _m("update_raft_voter", "request"), _m("update_raft_voter", "response")

NONE = ErrorCode.none
ZERO_MS = datetime.timedelta(0)


def ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


def only_partition(message: Any) -> Any:
    """The single partition of a Raft message, if it is ``__cluster_metadata-0``; else None
    (another shape, topic or partition: the caller refuses it)."""
    topics = getattr(message, "topics", None) or getattr(message, "responses", None) or ()
    if len(topics) != 1:
        return None
    topic = topics[0]
    name = getattr(topic, "topic_name", None) or getattr(topic, "name", None)
    if name is not None and name != METADATA_TOPIC:
        return None
    if name is None and getattr(topic, "topic_id", METADATA_TOPIC_ID) != METADATA_TOPIC_ID:
        return None
    parts = topic.partitions
    if len(parts) != 1:
        return None
    part = parts[0]
    index = next((getattr(part, f) for f in ("partition_index", "partition", "index") if hasattr(part, f)), 0)
    return part if index == PARTITION else None


def _leader_endpoints(cls: Any, endpoints: tuple[tuple[str, Address], ...]) -> tuple:
    return tuple(cls(name=name, host=host, port=port) for name, (host, port) in endpoints)


def _node_endpoints(cls: Any, node_id: int, address: Address | None) -> tuple:
    return () if address is None or node_id < 0 else (cls(node_id=node_id, host=address[0], port=address[1]),)


# -- Vote (KIP-595, PreVote KIP-996) -------------------------------------------------

def vote_request(cluster_id: str, candidate: ReplicaKey, epoch: int, voter: ReplicaKey, last_epoch: int,
                 last_offset: int, pre_vote: bool) -> Any:
    part = VOTE_REQ.PartitionData(partition_index=PARTITION, replica_epoch=epoch, replica_id=candidate.node_id,
                                  replica_directory_id=candidate.directory_id,
                                  voter_directory_id=voter.directory_id, last_offset_epoch=last_epoch,
                                  last_offset=last_offset, pre_vote=pre_vote)
    return VOTE_REQ.VoteRequest(cluster_id=cluster_id, voter_id=voter.node_id,
                                topics=(VOTE_REQ.TopicData(topic_name=METADATA_TOPIC, partitions=(part,)),))


def vote_response(error: ErrorCode, leader_id: int, epoch: int, granted: bool,
                  leader_address: Address | None = None, top_error: ErrorCode = NONE) -> Any:
    part = VOTE_RESP.PartitionData(partition_index=PARTITION, error_code=error, leader_id=leader_id,
                                   leader_epoch=epoch, vote_granted=granted)
    return VOTE_RESP.VoteResponse(error_code=top_error, topics=(
        VOTE_RESP.TopicData(topic_name=METADATA_TOPIC, partitions=(part,)),),
        node_endpoints=_node_endpoints(VOTE_RESP.NodeEndpoint, leader_id, leader_address))


# -- BeginQuorumEpoch / EndQuorumEpoch ---------------------------------------------------

def begin_epoch_request(cluster_id: str, leader_id: int, epoch: int, voter: ReplicaKey,
                        endpoints: tuple[tuple[str, Address], ...]) -> Any:
    part = BEGIN_REQ.PartitionData(partition_index=PARTITION, voter_directory_id=voter.directory_id,
                                   leader_id=leader_id, leader_epoch=epoch)
    return BEGIN_REQ.BeginQuorumEpochRequest(
        cluster_id=cluster_id, voter_id=voter.node_id,
        topics=(BEGIN_REQ.TopicData(topic_name=METADATA_TOPIC, partitions=(part,)),),
        leader_endpoints=_leader_endpoints(BEGIN_REQ.LeaderEndpoint, endpoints))


def begin_epoch_response(error: ErrorCode, leader_id: int, epoch: int, leader_address: Address | None = None,
                         top_error: ErrorCode = NONE) -> Any:
    part = BEGIN_RESP.PartitionData(partition_index=PARTITION, error_code=error, leader_id=leader_id,
                                    leader_epoch=epoch)
    return BEGIN_RESP.BeginQuorumEpochResponse(
        error_code=top_error, topics=(BEGIN_RESP.TopicData(topic_name=METADATA_TOPIC, partitions=(part,)),),
        node_endpoints=_node_endpoints(BEGIN_RESP.NodeEndpoint, leader_id, leader_address))


def end_epoch_request(cluster_id: str, leader_id: int, epoch: int, successors: tuple[ReplicaKey, ...],
                      endpoints: tuple[tuple[str, Address], ...]) -> Any:
    preferred = tuple(END_REQ.ReplicaInfo(candidate_id=k.node_id, candidate_directory_id=k.directory_id)
                      for k in successors)
    part = END_REQ.PartitionData(partition_index=PARTITION, leader_id=leader_id, leader_epoch=epoch,
                                 preferred_candidates=preferred)
    return END_REQ.EndQuorumEpochRequest(
        cluster_id=cluster_id, topics=(END_REQ.TopicData(topic_name=METADATA_TOPIC, partitions=(part,)),),
        leader_endpoints=_leader_endpoints(END_REQ.LeaderEndpoint, endpoints))


def end_epoch_response(error: ErrorCode, leader_id: int, epoch: int, leader_address: Address | None = None,
                       top_error: ErrorCode = NONE) -> Any:
    part = END_RESP.PartitionData(partition_index=PARTITION, error_code=error, leader_id=leader_id,
                                  leader_epoch=epoch)
    return END_RESP.EndQuorumEpochResponse(
        error_code=top_error, topics=(END_RESP.TopicData(topic_name=METADATA_TOPIC, partitions=(part,)),),
        node_endpoints=_node_endpoints(END_RESP.NodeEndpoint, leader_id, leader_address))


# -- Fetch (pull replication) ----------------------------------------------------------

def fetch_request(cluster_id: str, replica: ReplicaKey, epoch: int, fetch_offset: int, last_fetched_epoch: int,
                  max_wait_ms: int, max_bytes: int, log_start_offset: int = -1) -> Any:
    part = FETCH_REQ.FetchPartition(partition=PARTITION, current_leader_epoch=epoch, fetch_offset=fetch_offset,
                                    last_fetched_epoch=last_fetched_epoch, log_start_offset=log_start_offset,
                                    partition_max_bytes=max_bytes, replica_directory_id=replica.directory_id)
    return FETCH_REQ.FetchRequest(
        cluster_id=cluster_id, replica_state=FETCH_REQ.ReplicaState(replica_id=replica.node_id, replica_epoch=-1),
        max_wait=ms(max_wait_ms), min_bytes=0, max_bytes=max_bytes,
        topics=(FETCH_REQ.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=(part,)),), forgotten_topics_data=())


def fetch_response(error: ErrorCode, *, leader_id: int, epoch: int, high_watermark: int, records: bytes = b"",
                   log_start_offset: int = -1, diverging: tuple[int, int] | None = None,
                   snapshot: tuple[int, int] | None = None, leader_address: Address | None = None,
                   top_error: ErrorCode = NONE) -> Any:
    r = FETCH_RESP
    part = r.PartitionData(
        partition_index=PARTITION, error_code=error, high_watermark=high_watermark,
        log_start_offset=log_start_offset,
        diverging_epoch=r.EpochEndOffset(epoch=diverging[1], end_offset=diverging[0]) if diverging
        else r.EpochEndOffset(),
        current_leader=r.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=epoch),
        snapshot_id=r.SnapshotId(end_offset=snapshot[0], epoch=snapshot[1]) if snapshot else r.SnapshotId(),
        aborted_transactions=None, records=records)
    return r.FetchResponse(throttle_time=ZERO_MS, error_code=top_error, session_id=0, responses=(
        r.FetchableTopicResponse(topic_id=METADATA_TOPIC_ID, partitions=(part,)),),
        node_endpoints=_node_endpoints(r.NodeEndpoint, leader_id, leader_address))


def fetched_records(part: Any) -> bytes:
    """The records of a Fetch answer's partition, without a torn last batch. A leader may cut its
    answer inside a batch: Kafka's reads its log as a byte range up to a size (4.3: the request's
    MaxBytes; 4.1: its internal.metadata.max.fetch.size.in.bytes, 8 MiB). As Kafka's follower
    does, the whole batches before it are kept and the rest is fetched again. A batch whose
    length field is absurd is left in, for the log's checks to refuse."""
    data = bytes(part.records or b"")
    pos = 0
    while len(data) - pos >= LOG_OVERHEAD:
        (length,) = struct.unpack_from(">i", data, pos + 8)
        if length < MIN_BATCH_LENGTH:
            return data
        if pos + LOG_OVERHEAD + length > len(data):
            break
        pos += LOG_OVERHEAD + length
    return data[:pos]


# -- FetchSnapshot (KIP-630) -------------------------------------------------------------

def fetch_snapshot_request(cluster_id: str, replica: ReplicaKey, epoch: int, snapshot_id: tuple[int, int],
                           position: int, max_bytes: int) -> Any:
    part = SNAP_REQ.PartitionSnapshot(
        partition=PARTITION, current_leader_epoch=epoch,
        snapshot_id=SNAP_REQ.SnapshotId(end_offset=snapshot_id[0], epoch=snapshot_id[1]),
        position=position, replica_directory_id=replica.directory_id)
    return SNAP_REQ.FetchSnapshotRequest(cluster_id=cluster_id, replica_id=replica.node_id, max_bytes=max_bytes,
                                         topics=(SNAP_REQ.TopicSnapshot(name=METADATA_TOPIC, partitions=(part,)),))


def fetch_snapshot_response(error: ErrorCode, *, leader_id: int, epoch: int, snapshot_id: tuple[int, int] = (-1, -1),
                            size: int = -1, position: int = -1, data: bytes = b"",
                            leader_address: Address | None = None, top_error: ErrorCode = NONE) -> Any:
    r = SNAP_RESP
    part = r.PartitionSnapshot(index=PARTITION, error_code=error,
                               snapshot_id=r.SnapshotId(end_offset=snapshot_id[0], epoch=snapshot_id[1]),
                               current_leader=r.LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=epoch),
                               size=size, position=position, unaligned_records=data)
    return r.FetchSnapshotResponse(throttle_time=ZERO_MS, error_code=top_error, topics=(
        r.TopicSnapshot(name=METADATA_TOPIC, partitions=(part,)),),
        node_endpoints=_node_endpoints(r.NodeEndpoint, leader_id, leader_address))


# -- DescribeQuorum and the voter-change RPCs (KIP-853) ----------------------------------

def describe_quorum_request() -> Any:
    return DESCRIBE_REQ.DescribeQuorumRequest(topics=(DESCRIBE_REQ.TopicData(
        topic_name=METADATA_TOPIC, partitions=(DESCRIBE_REQ.PartitionData(partition_index=PARTITION),)),))


def add_voter_request(cluster_id: str, voter: ReplicaKey, endpoints: tuple[tuple[str, Address], ...],
                      timeout_ms: int = 30_000) -> Any:
    return ADD_REQ.AddRaftVoterRequest(
        cluster_id=cluster_id, timeout=ms(timeout_ms), voter_id=voter.node_id,
        voter_directory_id=voter.directory_id,
        listeners=tuple(ADD_REQ.Listener(name=n, host=h, port=p) for n, (h, p) in endpoints))


def add_voter_response(error: ErrorCode, message: str | None = None) -> Any:
    return ADD_RESP.AddRaftVoterResponse(throttle_time=ZERO_MS, error_code=error, error_message=message)


def remove_voter_request(cluster_id: str, voter: ReplicaKey) -> Any:
    return REMOVE_REQ.RemoveRaftVoterRequest(cluster_id=cluster_id, voter_id=voter.node_id,
                                             voter_directory_id=voter.directory_id)


def remove_voter_response(error: ErrorCode, message: str | None = None) -> Any:
    return REMOVE_RESP.RemoveRaftVoterResponse(throttle_time=ZERO_MS, error_code=error, error_message=message)


def update_voter_request(cluster_id: str, epoch: int, voter: ReplicaKey, endpoints: tuple[tuple[str, Address], ...],
                         min_kraft: int = 0, max_kraft: int = 1) -> Any:
    return UPDATE_REQ.UpdateRaftVoterRequest(
        cluster_id=cluster_id, current_leader_epoch=epoch, voter_id=voter.node_id,
        voter_directory_id=voter.directory_id,
        listeners=tuple(UPDATE_REQ.Listener(name=n, host=h, port=p) for n, (h, p) in endpoints),
        k_raft_version_feature=UPDATE_REQ.KRaftVersionFeature(min_supported_version=min_kraft,
                                                              max_supported_version=max_kraft))


def update_voter_response(error: ErrorCode, leader_id: int, epoch: int, address: Address | None) -> Any:
    host, port = address if address else ("", 0)
    return UPDATE_RESP.UpdateRaftVoterResponse(
        throttle_time=ZERO_MS, error_code=error,
        current_leader=UPDATE_RESP.CurrentLeader(leader_id=leader_id, leader_epoch=epoch, host=host, port=port))
