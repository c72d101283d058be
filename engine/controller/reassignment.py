"""Partition reassignments: AlterPartitionReassignments (45) and ListPartitionReassignments (46),
as Kafka 4.1's controller runs them.

A reassignment to target T of a partition on replicas R writes one PartitionChangeRecord:
replicas T + (R - T), adding T - R, removing R - T (both sorted). It completes, with a second
change, once the ISR holds every replica of T (and one not being removed): the
PartitionChangeBuilder does that whenever it runs, so an AlterPartition that grows the ISR
finishes it. A reassignment that only reorders R completes at once. Cancelling (null replicas)
goes back to R: replicas and ISR lose the adding ones; an ISR left empty takes the first
original replica, which is an unclean election and needs unclean.leader.election.enable.
"""

from __future__ import annotations

from typing import Any

from engine.common.api_keys import ApiKeys
from engine.controller.controller_result import Command, ControllerContext, ControllerResult
from engine.controller.partition_change import Election, partition_change, unclean_election_enabled
from engine.controller.replication_control import NO_THROTTLE
from engine.image.metadata_image import TopicImage
from engine.records.kio_codec import ErrorCode, i32, protocol_module

_ALTER_VERSION = 0
_LIST_VERSION = 0


class _Refused(Exception):
    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def alter_partition_reassignments(ctx: ControllerContext, request: Any) -> ControllerResult:
    module = protocol_module("alter_partition_reassignments", _ALTER_VERSION, "response")
    records: list = []
    topics_out = []
    for topic in request.topics:
        results = []
        for target in topic.partitions:
            code, message = ErrorCode.none, None
            try:
                record = _reassign(ctx, topic.name, target.partition_index, target.replicas)
                if record is not None:
                    records.append(record)
            except _Refused as refused:
                code, message = refused.code, refused.message
            results.append(module.ReassignablePartitionResponse(
                partition_index=i32(target.partition_index), error_code=code, error_message=message))
        topics_out.append(module.ReassignableTopicResponse(name=topic.name, partitions=tuple(results)))
    response = module.AlterPartitionReassignmentsResponse(
        throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, responses=tuple(topics_out))
    return ControllerResult(records, response, atomic=True)  # all the partitions or none, as Kafka


def _reassign(ctx: ControllerContext, topic_name: str, partition_id: int, replicas: Any) -> Any | None:
    topic = ctx.image.topics.topic(topic_name)
    if topic is None:
        raise _Refused(ErrorCode.unknown_topic_or_partition, f"Unable to find a topic named {topic_name}.")
    if partition_id not in topic.partitions:
        raise _Refused(ErrorCode.unknown_topic_or_partition,
                       f"Unable to find partition {topic_name}:{partition_id}.")
    if replicas is None:
        return _cancel(ctx, topic, partition_id)
    return _change(ctx, topic, partition_id, [int(r) for r in replicas])


def _cancel(ctx: ControllerContext, topic: TopicImage, partition_id: int) -> Any | None:
    p = topic.partitions[partition_id]
    if not p.is_reassigning:
        raise _Refused(ErrorCode.no_reassignment_in_progress, "No partition reassignment is in progress.")
    original = [r for r in p.replicas if r not in p.adding_replicas]
    isr = [r for r in p.isr if r not in p.adding_replicas]
    unclean_allowed = unclean_election_enabled(ctx, topic.name)
    if not isr:
        if not original:
            raise _Refused(ErrorCode.invalid_replica_assignment,
                           "Invalid replica assignment: addingReplicas contains all replicas.")
        if not unclean_allowed:
            raise _Refused(ErrorCode.invalid_replica_assignment,
                           f"Unable to revert partition assignment for {topic.name}:{partition_id} "
                           "because it would require an unclean leader election.")
        isr = [original[0]]
    return partition_change(ctx, topic, partition_id,
                            election=Election.UNCLEAN if unclean_allowed else Election.ONLINE,
                            target_isr=isr, target_replicas=original, target_removing=(), target_adding=())


def _change(ctx: ControllerContext, topic: TopicImage, partition_id: int, target: list[int]) -> Any | None:
    _check_assignment(ctx, target)
    p = topic.partitions[partition_id]
    removing = sorted(set(p.replicas) - set(target))
    adding = sorted(set(target) - set(p.replicas))
    replicas = target + removing
    targets: dict[str, Any] = {}
    if tuple(replicas) != p.replicas:
        targets["target_replicas"] = replicas
    # (empty lists are not set: an earlier reassignment's adding/removing then stay, as in Kafka)
    if removing:
        targets["target_removing"] = removing
    if adding:
        targets["target_adding"] = adding
    return partition_change(ctx, topic, partition_id, election=Election.ONLINE, **targets)


def _check_assignment(ctx: ControllerContext, replicas: list[int]) -> None:
    """Kafka's manual-assignment rules: not empty, registered brokers only, each once."""
    if not replicas:
        raise _Refused(ErrorCode.invalid_replica_assignment,
                       "The manual partition assignment includes an empty replica list.")
    previous = None
    for broker_id in sorted(replicas):
        if broker_id not in ctx.image.cluster.brokers:
            raise _Refused(ErrorCode.invalid_replica_assignment,
                           f"The manual partition assignment includes broker {broker_id}, "
                           "but no such broker is registered.")
        if broker_id == previous:
            raise _Refused(ErrorCode.invalid_replica_assignment,
                           f"The manual partition assignment includes the broker {broker_id} more than once.")
        previous = broker_id


def _alter_refused(request: Any, error: ErrorCode, message: str | None) -> Any:
    module = protocol_module("alter_partition_reassignments", _ALTER_VERSION, "response")
    return module.AlterPartitionReassignmentsResponse(
        throttle_time=NO_THROTTLE, error_code=error, error_message=message, responses=())


def list_partition_reassignments(ctx: ControllerContext, request: Any) -> ControllerResult:
    module = protocol_module("list_partition_reassignments", _LIST_VERSION, "response")
    topics = ctx.image.topics
    if request.topics is None:
        wanted = [(t, tuple(t.partitions)) for t in topics.by_id.values()]
    else:
        wanted = [(topics.topic(t.name), t.partition_indexes) for t in request.topics]
    out = []
    for topic, partition_ids in wanted:
        if topic is None:
            continue  # an unknown topic is left out, not an error
        ongoing = []
        for partition_id in partition_ids:
            p = topic.partitions.get(partition_id)
            if p is not None and p.is_reassigning:
                ongoing.append(module.OngoingPartitionReassignment(
                    partition_index=i32(partition_id), replicas=tuple(i32(r) for r in p.replicas),
                    adding_replicas=tuple(i32(r) for r in p.adding_replicas),
                    removing_replicas=tuple(i32(r) for r in p.removing_replicas)))
        if ongoing:
            out.append(module.OngoingTopicReassignment(name=topic.name, partitions=tuple(ongoing)))
    return ControllerResult((), module.ListPartitionReassignmentsResponse(
        throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, topics=tuple(out)))


def _list_refused(request: Any, error: ErrorCode, message: str | None) -> Any:
    module = protocol_module("list_partition_reassignments", _LIST_VERSION, "response")
    return module.ListPartitionReassignmentsResponse(
        throttle_time=NO_THROTTLE, error_code=error, error_message=message, topics=())


COMMANDS = [
    Command(ApiKeys.ALTER_PARTITION_REASSIGNMENTS, "alter_partition_reassignments",
            0, _ALTER_VERSION, alter_partition_reassignments, _alter_refused),
    Command(ApiKeys.LIST_PARTITION_REASSIGNMENTS, "list_partition_reassignments",
            0, _LIST_VERSION, list_partition_reassignments, _list_refused,
            read_only=True),
]
