"""AlterPartitionReassignments (45) and ListPartitionReassignments (46): command, response,
replay, state; completion through AlterPartition, as Kafka's controller does it."""

from __future__ import annotations

from typing import Any

from engine.controller.reassignment import COMMANDS, alter_partition_reassignments, list_partition_reassignments
from engine.controller.replication_control import alter_partition
from engine.records.kio_codec import ErrorCode, i32, protocol_module
from tests.controller_helpers import request
from tests.engine.controller.test_controller_replication import Cluster, alter_isr, partition_errors


def reassign(c: Cluster, assignments: dict[int, list[int] | None], topic: str = "foo") -> Any:
    module = protocol_module("alter_partition_reassignments", 0, "request")
    partitions = tuple(module.ReassignablePartition(
        partition_index=i32(pid), replicas=None if replicas is None else tuple(map(i32, replicas)))
        for pid, replicas in assignments.items())
    result = c.run(alter_partition_reassignments, request(
        "alter_partition_reassignments", 0, topics=(module.ReassignableTopic(name=topic, partitions=partitions),)))
    assert result.atomic
    return result


def errors(result: Any) -> list:
    return [(p.error_code, p.error_message) for t in result.response.responses for p in t.partitions]


def listed(c: Cluster, topics: dict[str, list[int]] | None = None) -> dict:
    module = protocol_module("list_partition_reassignments", 0, "request")
    wanted = None if topics is None else tuple(
        module.ListPartitionReassignmentsTopics(name=t, partition_indexes=tuple(map(i32, ps))) for t, ps in topics.items())
    result = list_partition_reassignments(c.ctx(), request("list_partition_reassignments", 0, topics=wanted))
    assert result.records == ()
    return {(t.name, p.partition_index): (p.replicas, p.adding_replicas, p.removing_replicas)
            for t in result.response.topics for p in t.partitions}


def test_reassignment_runs_until_the_isr_catches_up():
    c = Cluster(brokers=(1, 2, 3, 4), foo=[[1, 2, 3]])
    result = reassign(c, {0: [2, 3, 4]})
    assert errors(result) == [(ErrorCode.none, None)]
    (record,) = result.records
    assert (record.replicas, record.adding_replicas, record.removing_replicas) == ((2, 3, 4, 1), (4,), (1,))
    p = c.part()
    assert (p.replicas, p.leader, p.leader_epoch, p.directories[2]) == ((2, 3, 4, 1), 1, 0, c.image.cluster.brokers[4].directories[0])
    assert listed(c) == {("foo", 0): ((2, 3, 4, 1), (4,), (1,))}
    # the ISR grows to hold 4: the same change completes the reassignment and 1 leaves
    response = c.run(alter_partition, alter_isr(c, [1, 2, 3, 4])).response
    assert partition_errors(response) == [ErrorCode.new_leader_elected]
    p = c.part()
    assert (p.replicas, p.isr, p.leader, p.adding_replicas, p.removing_replicas) == ((2, 3, 4), (2, 3, 4), 2, (), ())
    assert p.leader_epoch == 1
    assert listed(c) == {} and listed(c, {"foo": [0], "nope": [0]}) == {}


def test_reordering_completes_at_once():
    c = Cluster(foo=[[1, 2, 3]])
    result = reassign(c, {0: [3, 2, 1]})
    (record,) = result.records
    assert record.replicas == (3, 2, 1) and record.leader == -2  # same members: the leader stays, no epoch bump
    assert (c.part().replicas, c.part().leader, c.part().leader_epoch) == ((3, 2, 1), 1, 0)
    assert reassign(c, {0: [3, 2, 1]}).records == []  # already there


def test_cancel_goes_back_to_the_original_replicas():
    c = Cluster(brokers=(1, 2, 3, 4), foo=[[1, 2, 3]])
    reassign(c, {0: [2, 3, 4]})
    result = reassign(c, {0: None})
    assert errors(result) == [(ErrorCode.none, None)]
    p = c.part()
    # Kafka drops the adding replicas and keeps the order: the original members, not their order
    assert (p.replicas, p.isr, p.adding_replicas, p.removing_replicas, p.leader) == ((2, 3, 1), (1, 2, 3), (), (), 1)
    result = reassign(c, {0: None})
    assert errors(result) == [(ErrorCode.no_reassignment_in_progress, "No partition reassignment is in progress.")]
    assert result.records == []


def test_cancel_needing_an_unclean_election_is_refused_unless_allowed():
    for allowed in (False, True):
        configs = {(2, "foo"): {"unclean.leader.election.enable": "true"}} if allowed else {}
        c = Cluster(elr=False, configs=configs, foo=[[1]])
        reassign(c, {0: [1, 2, 3]})
        c.run(alter_partition, alter_isr(c, [1, 2]))  # 3 not caught up: still reassigning
        c.fence(1)
        assert (c.part().isr, c.part().leader, c.part().adding_replicas) == ((2,), 2, (2, 3))
        result = reassign(c, {0: None})  # the ISR holds only replicas being added
        if not allowed:
            assert errors(result)[0][0] == ErrorCode.invalid_replica_assignment and result.records == []
            continue
        assert errors(result) == [(ErrorCode.none, None)]
        p = c.part()
        assert (p.replicas, p.isr, p.leader, p.adding_replicas) == ((1,), (1,), -1, ())  # 1 is fenced


def test_reassignment_errors():
    c = Cluster(foo=[[1, 2, 3]])
    assert errors(reassign(c, {0: []}))[0][0] == ErrorCode.invalid_replica_assignment
    assert errors(reassign(c, {0: [1, 9]}))[0][0] == ErrorCode.invalid_replica_assignment
    assert errors(reassign(c, {0: [1, 2, 2]}))[0][0] == ErrorCode.invalid_replica_assignment
    assert errors(reassign(c, {5: [1, 2]}))[0][0] == ErrorCode.unknown_topic_or_partition
    assert errors(reassign(c, {0: [1]}, topic="bar"))[0][0] == ErrorCode.unknown_topic_or_partition


def test_commands_table():
    assert {(c.api_key, c.name, c.min_version, c.max_version, c.read_only) for c in COMMANDS} == {
        (45, "alter_partition_reassignments", 0, 0, False), (46, "list_partition_reassignments", 0, 0, True)}
    refused = COMMANDS[0].error_response(None, ErrorCode.not_controller, "gone")
    assert (refused.error_code, refused.error_message, refused.responses) == (ErrorCode.not_controller, "gone", ())
