"""Leaders and ISRs: what broker state changes do to partitions, AlterPartition and ElectLeaders
(Kafka 4.1's ReplicationControlManager; reassignments are in reassignment.py).

The broker-state effects return PartitionChangeRecords only; the caller writes the broker's own
record around them, in Kafka's order: fencing puts BrokerRegistrationChangeRecord(fenced) after
the partition changes, unfencing and controlled shutdown put theirs before. Each reads
``ctx.image`` as it stands (the broker may still show unfenced, or fenced when it is being
unfenced) and treats the broker as the function's name says.
"""

from __future__ import annotations

import datetime
from typing import Any

from engine.common.api_keys import ApiKeys
from engine.controller.controller_result import ApiError, Command, ControllerContext, ControllerResult
from engine.controller.partition_change import Election, elr_enabled, leader_acceptor, partition_change
from engine.image import topic_index
from engine.image.metadata_image import MetadataImage
from engine.image.partition_registration import (
    LEADER_RECOVERY_RECOVERED, LEADER_RECOVERY_RECOVERING, NO_LEADER, NO_LEADER_CHANGE, PartitionRegistration)
from engine.records.kio_codec import ErrorCode, i8, i32, protocol_module

NO_THROTTLE = datetime.timedelta(0)


# -- broker state -> partitions -------------------------------------------------------------

def partitions_led_by(image: MetadataImage, broker_id: int) -> int:
    """How many partitions ``broker_id`` leads."""
    return topic_index.partitions_led_by(image, broker_id)


def fence_broker_changes(ctx: ControllerContext, broker_id: int) -> list:
    """The broker is fenced: out of every ISR (into ELR under min ISR), new leaders where it led."""
    return leader_and_isr_updates(ctx, _in_isr(ctx.image, broker_id), removed=broker_id)


def controlled_shutdown_changes(ctx: ControllerContext, broker_id: int) -> list:
    """The broker enters controlled shutdown: its leaderships move away and it leaves every ISR
    (Kafka's handleBrokerInControlledShutdown, without its BrokerRegistrationChangeRecord)."""
    return leader_and_isr_updates(ctx, _in_isr(ctx.image, broker_id), removed=broker_id)


def clean_shutdown_changes(ctx: ControllerContext, broker_id: int) -> list:
    """A new incarnation registers after a clean shutdown (its PreviousBrokerEpoch is the
    registered epoch): the old one leaves every ISR, as when fenced."""
    return leader_and_isr_updates(ctx, _in_isr(ctx.image, broker_id), removed=broker_id)


def unclean_shutdown_changes(ctx: ControllerContext, broker_id: int) -> list:
    """A new incarnation registers after an unclean shutdown: with ELR on, the broker leaves
    every ISR and ELR (its log may have lost acknowledged data); with ELR off, every ISR, as
    when fenced (Kafka 4.1's handleBrokerShutdown)."""
    if not elr_enabled(ctx):
        return clean_shutdown_changes(ctx, broker_id)
    return (leader_and_isr_updates(ctx, _in_isr(ctx.image, broker_id), unclean_shutdown=broker_id)
            + leader_and_isr_updates(ctx, _in_elr(ctx.image, broker_id), unclean_shutdown=broker_id))


def unregister_broker_changes(ctx: ControllerContext, broker_id: int) -> list:
    """UnregisterBroker: Kafka treats the broker as removed for the partitions whose ISR or ELR
    holds it: out of the ISRs; ELR keeps it (Kafka 4.1 does not take it out there)."""
    return (leader_and_isr_updates(ctx, _in_isr(ctx.image, broker_id), removed=broker_id)
            + leader_and_isr_updates(ctx, _in_elr(ctx.image, broker_id), removed=broker_id))


def unfence_broker_changes(ctx: ControllerContext, broker_id: int) -> list:
    """The broker is unfenced: leaders for the leaderless partitions it can lead."""
    return leader_and_isr_updates(ctx, topic_index.leaderless_partitions(ctx.image), added=broker_id)


# Through the per-topic index: a broker's partitions without a scan of every partition. Kafka
# visits the ISR partitions, then the ELR ones (two passes of generateLeaderAndIsrUpdates over
# BrokersToIsrs, then BrokersToElrs), each from the image as it stands: the records follow
# that order, not one pass over both.
_in_isr = topic_index.partitions_in_isr
_in_elr = topic_index.partitions_in_elr


def leader_and_isr_updates(ctx: ControllerContext, partitions: Any, *, removed: int = NO_LEADER,
                            added: int = NO_LEADER, unclean_shutdown: int = NO_LEADER) -> list:
    """Kafka's generateLeaderAndIsrUpdates: each partition without ``removed`` and
    ``unclean_shutdown`` in its ISR, re-elected with them unable to lead and ``added`` able."""
    records = []
    for topic, partition_id in partitions:
        partition = topic.partitions[partition_id]
        acceptable = leader_acceptor(ctx.image, partition, removed=removed, added=added,
                                     unclean_shutdown=unclean_shutdown)
        isr = tuple(r for r in partition.isr if r != removed and r != unclean_shutdown)
        record = partition_change(
            ctx, topic, partition_id, acceptable=acceptable, target_isr=isr,
            unclean_shutdown_replicas=(unclean_shutdown,) if unclean_shutdown != NO_LEADER else ())
        if record is not None:
            records.append(record)
    return records


# -- AlterPartition (56) -----------------------------------------------------------------------

_AP_VERSION = 3


def _ap(kind: str) -> Any:
    return protocol_module("alter_partition", _AP_VERSION, kind)


def _ap_partition(partition_index: int, error: ErrorCode, p: PartitionRegistration | None = None) -> Any:
    cls = _ap("response").PartitionData
    if p is None:
        return cls(partition_index=i32(partition_index), error_code=error, leader_id=i32(0),
                   leader_epoch=i32(0), partition_epoch=i32(0))
    return cls(partition_index=i32(partition_index), error_code=error, leader_id=i32(p.leader),
               leader_epoch=i32(p.leader_epoch), isr=tuple(i32(r) for r in p.isr),
               leader_recovery_state=i8(p.leader_recovery_state), partition_epoch=i32(p.partition_epoch))


def alter_partition(ctx: ControllerContext, request: Any) -> ControllerResult:
    """A partition leader's new ISR (KIP-497, with broker epochs per KIP-903)."""
    broker = ctx.image.cluster.brokers.get(request.broker_id)
    if broker is None:
        raise ApiError(ErrorCode.stale_broker_epoch, f"no broker registration for broker {request.broker_id}")
    if broker.epoch != request.broker_epoch:
        raise ApiError(ErrorCode.stale_broker_epoch,
                       f"broker {request.broker_id} has epoch {broker.epoch}, not {request.broker_epoch}")
    response_module = _ap("response")
    records, topics_out = [], []
    for topic_data in request.topics:
        topic = ctx.image.topics.by_id.get(topic_data.topic_id) if topic_data.topic_id else None
        results = []
        for data in topic_data.partitions:
            if topic is None:
                results.append(_ap_partition(data.partition_index, ErrorCode.unknown_topic_id))
                continue
            partition = topic.partitions.get(data.partition_index)
            error = _alter_partition_error(ctx, request.broker_id, partition, data)
            if error is not ErrorCode.none:
                results.append(_ap_partition(data.partition_index, error))
                continue
            record = partition_change(
                ctx, topic, data.partition_index,
                target_isr=tuple(state.broker_id for state in data.new_isr_with_epochs),
                target_leader_recovery_state=data.leader_recovery_state)
            if record is not None:
                records.append(record)
                partition = partition.merge(record)
                if record.leader not in (request.broker_id, NO_LEADER_CHANGE):
                    # the change completed a reassignment that moved the leadership: the
                    # records stand, and the old leader learns it must refresh its metadata
                    results.append(_ap_partition(data.partition_index, ErrorCode.new_leader_elected))
                    continue
            results.append(_ap_partition(data.partition_index, ErrorCode.none, partition))
        topics_out.append(response_module.TopicData(topic_id=topic_data.topic_id, partitions=tuple(results)))
    response = response_module.AlterPartitionResponse(throttle_time=NO_THROTTLE, error_code=ErrorCode.none,
                                                      topics=tuple(topics_out))
    return ControllerResult(records, response)


def _alter_partition_error(ctx: ControllerContext, broker_id: int, p: PartitionRegistration | None,
                           data: Any) -> ErrorCode:
    """Kafka's checks of one partition's AlterPartition, in its order."""
    if p is None:
        return ErrorCode.unknown_topic_or_partition
    # a leader ahead of us means this controller is behind: the broker should find the active one
    if data.leader_epoch > p.leader_epoch or data.partition_epoch > p.partition_epoch:
        return ErrorCode.not_controller
    if data.leader_epoch < p.leader_epoch:
        return ErrorCode.fenced_leader_epoch
    if broker_id != p.leader:
        return ErrorCode.invalid_request
    if data.partition_epoch < p.partition_epoch:
        return ErrorCode.invalid_update_version
    new_isr = [state.broker_id for state in data.new_isr_with_epochs]
    if (len(set(new_isr)) != len(new_isr) or any(r < 0 or r not in p.replicas for r in new_isr)
            or p.leader not in new_isr):
        return ErrorCode.invalid_request
    recovery = data.leader_recovery_state
    if recovery not in (LEADER_RECOVERY_RECOVERED, LEADER_RECOVERY_RECOVERING):
        # Kafka's LeaderRecoveryState.of throws here (IllegalArgumentException): the whole request
        # fails, UNKNOWN_SERVER_ERROR, and no partition of it is changed
        raise ApiError(ErrorCode.unknown_server_error, f"Value {recovery} is not a valid leader recovery state")
    if recovery == LEADER_RECOVERY_RECOVERING and len(new_isr) > 1:
        return ErrorCode.invalid_request  # a recovering leader is alone in its ISR
    if p.leader_recovery_state == LEADER_RECOVERY_RECOVERED and recovery == LEADER_RECOVERY_RECOVERING:
        return ErrorCode.invalid_request
    brokers = ctx.image.cluster.brokers
    for state in data.new_isr_with_epochs:
        broker = brokers.get(state.broker_id)
        # unregistered, shutting down, fenced, or another incarnation (-1: no epoch to check)
        if (broker is None or broker.in_controlled_shutdown or broker.fenced
                or (state.broker_epoch != -1 and state.broker_epoch != broker.epoch)):
            return ErrorCode.ineligible_replica
    return ErrorCode.none


def _alter_partition_refused(request: Any, error: ErrorCode, message: str | None) -> Any:
    return _ap("response").AlterPartitionResponse(throttle_time=NO_THROTTLE, error_code=error, topics=())


# -- ElectLeaders (43) -------------------------------------------------------------------------

_EL_VERSION = 2
_PREFERRED, _UNCLEAN = 0, 1  # ElectionType
# Kafka answers these with the error's own default message
_DEFAULT_MESSAGES = {
    ErrorCode.election_not_needed: "Leader election not needed for topic partition.",
    ErrorCode.preferred_leader_not_available: "The preferred leader was not available.",
    ErrorCode.eligible_leaders_not_available: "Eligible topic partition leaders are not available.",
}


def elect_leaders(ctx: ControllerContext, request: Any) -> ControllerResult:
    """Preferred (0) or unclean (1) elections for the named partitions, or every partition."""
    if request.election_type not in (_PREFERRED, _UNCLEAN):
        raise ApiError(ErrorCode.invalid_request, f"unknown election type {request.election_type}")
    module = protocol_module("elect_leaders", _EL_VERSION, "response")
    image, records, results = ctx.image, [], []
    if request.topic_partitions is None:
        wanted = [(name, tuple(image.topics.by_id[tid].partitions), True) for name, tid in image.topics.by_name.items()]
    else:
        wanted = [(t.topic, t.partitions, False) for t in request.topic_partitions]
    for name, partition_ids, everything in wanted:
        partition_results = []
        for partition_id in partition_ids:
            error, message = _elect_leader(ctx, name, partition_id, request.election_type, records)
            if everything and error is ErrorCode.election_not_needed:
                continue  # asked for everything: partitions led by their choice are left out
            partition_results.append(module.PartitionResult(partition_id=i32(partition_id), error_code=error,
                                                            error_message=message))
        results.append(module.ReplicaElectionResult(topic=name, partition_result=tuple(partition_results)))
    return ControllerResult(records, module.ElectLeadersResponse(
        throttle_time=NO_THROTTLE, error_code=ErrorCode.none, replica_election_results=tuple(results)))


def _elect_leader(ctx: ControllerContext, topic_name: str, partition_id: int, election_type: int,
                  records: list) -> tuple[ErrorCode, str | None]:
    topic = ctx.image.topics.topic(topic_name)
    if topic is None:
        return ErrorCode.unknown_topic_or_partition, f"No such topic as {topic_name}"
    partition = topic.partitions.get(partition_id)
    if partition is None:
        return ErrorCode.unknown_topic_or_partition, f"No such partition as {topic_name}-{partition_id}"
    preferred = partition.replicas[0] if partition.replicas else NO_LEADER
    if ((election_type == _PREFERRED and partition.leader == preferred)
            or (election_type == _UNCLEAN and partition.leader != NO_LEADER)):
        return _error(ErrorCode.election_not_needed)
    election = Election.PREFERRED if election_type == _PREFERRED else Election.UNCLEAN
    record = partition_change(ctx, topic, partition_id, election=election)
    if record is None:
        return _error(ErrorCode.preferred_leader_not_available if election_type == _PREFERRED
                      else ErrorCode.eligible_leaders_not_available)
    records.append(record)
    return ErrorCode.none, None


def _error(code: ErrorCode) -> tuple[ErrorCode, str | None]:
    return code, _DEFAULT_MESSAGES.get(code)


def _elect_leaders_refused(request: Any, error: ErrorCode, message: str | None) -> Any:
    module = protocol_module("elect_leaders", _EL_VERSION, "response")
    return module.ElectLeadersResponse(throttle_time=NO_THROTTLE, error_code=error, replica_election_results=())


COMMANDS = [
    Command(ApiKeys.ALTER_PARTITION, "alter_partition", 2, _AP_VERSION, alter_partition, _alter_partition_refused),
    Command(ApiKeys.ELECT_LEADERS, "elect_leaders", 0, _EL_VERSION, elect_leaders, _elect_leaders_refused),
]

