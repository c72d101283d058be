"""The DescribeQuorum answer (what ``kafka-metadata-quorum describe`` shows), from a leader's view."""

from __future__ import annotations

from typing import Any

from engine.records.kio_codec import ErrorCode
from engine.raft import raft_messages as rm
from engine.raft.leader_state import LeaderState, ReplicaProgress
from engine.raft.replica_context import ReplicaContext

R = rm.DESCRIBE_RESP


def describe_quorum_response(client: ReplicaContext, now_ms: int, request: Any) -> Any:
    part = rm.only_partition(request)
    if part is None or request.topics[0].topic_name != rm.METADATA_TOPIC or part.partition_index != rm.PARTITION:
        return _answer(ErrorCode.none, top=ErrorCode.unknown_topic_or_partition,
                       message="only __cluster_metadata-0 has a quorum")
    leader = client.quorum.state
    if not isinstance(leader, LeaderState):
        # Name the leader and its endpoints, so that a tool can go there (Kafka v2 does).
        leader_id = client.quorum.leader_id
        node = client.control.latest_voters().node(leader_id) if leader_id >= 0 else None
        nodes = [] if node is None else [R.Node(node_id=leader_id, listeners=tuple(
            R.Listener(name=name, host=host, port=port) for name, (host, port) in node.endpoints))]
        return _answer(ErrorCode.not_leader_or_follower, leader_id=leader_id, epoch=client.epoch, nodes=nodes,
                       message="this controller is not the leader")
    voters = [_replica(leader, p, client, now_ms) for p in leader.progress.values()]
    observers = [_replica(leader, p, client, now_ms) for p in leader.observers.values()]
    nodes = [R.Node(node_id=n.key.node_id, listeners=tuple(
        R.Listener(name=name, host=host, port=port) for name, (host, port) in n.endpoints))
        for n in leader.voters.voters]
    hw = leader.high_watermark if leader.high_watermark is not None else -1
    return _answer(ErrorCode.none, leader_id=client.local.node_id, epoch=leader.epoch, high_watermark=hw,
                   voters=voters, observers=observers, nodes=nodes)


def _replica(leader: LeaderState, progress: ReplicaProgress, client: ReplicaContext, now_ms: int) -> Any:
    if progress.key.node_id == client.local.node_id:
        end, fetch_ms, caught_up_ms = client.log.end_offset, now_ms, now_ms
    else:
        end, fetch_ms, caught_up_ms = progress.end_offset, progress.last_fetch_ms, progress.last_caught_up_ms
    return R.ReplicaState(replica_id=progress.key.node_id, replica_directory_id=progress.key.directory_id,
                          log_end_offset=end, last_fetch_timestamp=fetch_ms, last_caught_up_timestamp=caught_up_ms)


def describe_quorum_error(error: ErrorCode, message: str) -> Any:
    """An answer carrying only a top-level error."""
    return _answer(ErrorCode.none, top=error, message=message)


def _answer(error: ErrorCode, *, top: ErrorCode = ErrorCode.none, message: str | None = None, leader_id: int = -1,
            epoch: int = -1, high_watermark: int = -1, voters=(), observers=(), nodes=()) -> Any:
    partition = R.PartitionData(partition_index=rm.PARTITION, error_code=error,
                                error_message=message if error != ErrorCode.none else None,
                                leader_id=leader_id, leader_epoch=epoch, high_watermark=high_watermark,
                                current_voters=tuple(voters), observers=tuple(observers))
    return R.DescribeQuorumResponse(error_code=top, error_message=message if top != ErrorCode.none else None,
                                    topics=(R.TopicData(topic_name=rm.METADATA_TOPIC, partitions=(partition,)),),
                                    nodes=tuple(nodes))
