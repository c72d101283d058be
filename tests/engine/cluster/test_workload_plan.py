"""``kraftd cluster workload``'s choices (engine.cluster.workload_plan), without a cluster: the
requests each action builds, read back from the kio messages, over cluster shapes given here."""

from __future__ import annotations

import random
from datetime import timedelta

from engine.cluster.workload import Tally
from engine.cluster.workload_plan import (
    CONFIG_VALUES, MAX_PARTITIONS, RECENT_STEPS, ClusterShape, PartitionShape, Planner, metadata_request, refusals,
)
from engine.common.api_keys import ApiKeys
from engine.records.kio_codec import ErrorCode, i16, i32, protocol_module


def shape(brokers=(1, 2, 3, 4, 5), **topics: list[tuple[int, ...]]) -> ClusterShape:
    """Topics as lists of replica tuples (the first replica leads)."""
    return ClusterShape(tuple(brokers), {name.replace("_", "-"): tuple(
        PartitionShape(i, replicas[0], replicas) for i, replicas in enumerate(parts)) for name, parts in topics.items()})


def topic_names(request) -> set[str]:
    """Every topic a request names, whatever its API."""
    key = type(request).__api_key__
    if key == ApiKeys.CREATE_TOPICS:
        return {t.name for t in request.topics}
    if key == ApiKeys.DELETE_TOPICS:
        return {t.name for t in request.topics}
    if key == ApiKeys.INCREMENTAL_ALTER_CONFIGS:
        return {r.resource_name for r in request.resources}
    if key == ApiKeys.ELECT_LEADERS:
        return {t.topic for t in request.topic_partitions}
    return {t.name for t in request.topics}  # CreatePartitions, AlterPartitionReassignments


def test_it_creates_two_topics_first_then_picks_every_kind():
    planner = Planner(random.Random(1))
    first = planner.next_action(shape())
    assert (first.kind, first.target) == ("create", "workload-1")
    (create,) = first.requests
    topic = create.topics[0]
    assert (topic.name, topic.replication_factor) == ("workload-1", 3) and 1 <= topic.num_partitions <= 6
    assert planner.next_action(shape(workload_1=[(1, 2, 3)])).kind == "create"
    busy = shape(workload_1=[(1, 2, 3), (2, 3, 4)], workload_2=[(3, 4, 5)])
    kinds = {planner.next_action(busy).kind for _ in range(300)}
    assert kinds == {"create", "config", "leader", "reassign", "partitions"}


def test_the_same_seed_makes_the_same_actions():
    cluster = shape(workload_1=[(1, 2, 3), (2, 3, 4)], workload_2=[(3, 4, 5)])
    a, b, c = Planner(random.Random(9)), Planner(random.Random(9)), Planner(random.Random(10))
    first = [a.next_action(cluster) for _ in range(50)]
    assert first == [b.next_action(cluster) for _ in range(50)]
    assert first != [c.next_action(cluster) for _ in range(50)]


def test_an_operators_own_topics_are_never_touched():
    cluster = shape(orders=[(1, 2, 3)] * 3, workload_1=[(1, 2, 3)], workload_2=[(4, 5, 1)])
    planner = Planner(random.Random(3), max_topics=3)
    for _ in range(400):
        action = planner.next_action(cluster)
        for request in action.requests:
            assert topic_names(request) <= {"workload-1", "workload-2", f"workload-{planner.last_number}"}, action


def test_at_max_topics_the_oldest_by_number_is_deleted():
    cluster = shape(workload_10=[(1, 2, 3)], workload_9=[(1, 2, 3)], workload_2=[(1, 2, 3)])
    planner = Planner(random.Random(0), max_topics=3)
    actions = [planner.next_action(cluster) for _ in range(200)]
    assert "create" not in {a.kind for a in actions}
    deletes = [a for a in actions if a.kind == "delete"]
    assert deletes and {a.target for a in deletes} == {"workload-2"}
    assert deletes[0].requests[0].topics[0].name == "workload-2" and deletes[0].detail == "1 partition"


def test_a_topic_not_yet_in_metadata_is_not_created_twice():
    planner = Planner(random.Random(0))
    names = [planner.next_action(shape()).target for _ in range(3)]  # the broker's metadata lags behind
    assert names == ["workload-1", "workload-2", "workload-3"]


def test_config_values_fit_the_topic():
    planner = Planner(random.Random(5))
    cluster = shape(brokers=(1,), workload_1=[(1,)], workload_2=[(1,)])
    seen = set()
    for _ in range(300):
        action = planner.config(cluster)
        (config,) = action.requests[0].resources[0].configs
        assert config.value in CONFIG_VALUES[config.name] and config.config_operation == 0
        assert action.detail == f"{config.name}={config.value}"
        seen.add((config.name, config.value))
    # replication factor 1: min.insync.replicas=2 would refuse every write
    assert ("min.insync.replicas", "1") in seen and ("min.insync.replicas", "2") not in seen


def test_a_leader_move_reorders_the_same_replicas_then_elects_the_preferred():
    planner = Planner(random.Random(2))
    cluster = shape(workload_1=[(3, 1, 5)], workload_2=[(2, 4)])
    for _ in range(50):
        planner.recent.clear()
        action = planner.leader(cluster)
        reassign, elect = action.requests
        (partition,) = reassign.topics[0].partitions
        name, index = reassign.topics[0].name, partition.partition_index
        before = cluster.topics[name][index]
        assert sorted(partition.replicas) == sorted(before.replicas) and partition.replicas[0] != before.leader
        assert elect.election_type == 0 and elect.topic_partitions[0].partitions == (index,)
        assert (action.target, action.detail) == (f"{name}-{index}", f"{before.leader} -> {partition.replicas[0]}")


def test_a_reassignment_moves_to_another_set_of_live_brokers_and_skips_one_under_way():
    planner = Planner(random.Random(4))
    # partition 1 of workload-1 lists 5 replicas: a reassignment is under way (adding and removing)
    cluster = shape(brokers=(1, 2, 3, 4, 5, 6), workload_1=[(1, 2, 3), (1, 2, 3, 4, 5)], workload_2=[(4, 5, 6)])
    for _ in range(100):
        planner.recent.clear()
        action = planner.reassign(cluster)
        (request,) = action.requests
        topic = request.topics[0]
        (partition,) = topic.partitions
        before = cluster.topics[topic.name][partition.partition_index]
        assert (topic.name, partition.partition_index) != ("workload-1", 1)
        assert len(partition.replicas) == 3 and set(partition.replicas) != set(before.replicas)
        assert set(partition.replicas) <= {1, 2, 3, 4, 5, 6} and len(set(partition.replicas)) == 3


def test_a_partition_just_moved_is_left_alone_for_a_few_moves():
    # a broker's Metadata a moment old would show it as it was: a leader move would undo the move
    planner = Planner(random.Random(6))
    cluster = shape(workload_1=[(1, 2, 3)] * 7)
    moved = [planner.reassign(cluster).target if i % 2 else planner.leader(cluster).target for i in range(7)]
    for i in range(len(moved)):
        assert moved[i] not in moved[max(0, i - RECENT_STEPS):i]
    assert len(set(moved[:RECENT_STEPS + 1])) == RECENT_STEPS + 1


def test_with_every_broker_a_replica_a_reassignment_becomes_a_leader_move():
    planner = Planner(random.Random(4))
    assert planner.reassign(shape(brokers=(1, 2, 3), workload_1=[(1, 2, 3)])).kind == "leader"


def test_partitions_grow_up_to_the_limit():
    planner = Planner(random.Random(8))
    action = planner.partitions(shape(workload_1=[(1, 2, 3)] * (MAX_PARTITIONS - 1)))
    assert action.requests[0].topics[0].count == MAX_PARTITIONS and action.detail == f"{MAX_PARTITIONS - 1} -> 12 partitions"
    assert planner.partitions(shape(workload_1=[(1, 2, 3)] * MAX_PARTITIONS)) is None


def test_no_broker_no_action():
    assert Planner(random.Random(0)).next_action(shape(brokers=())) is None


def test_the_shape_is_read_off_a_metadata_answer():
    md = protocol_module("metadata", 12, "response")
    answer = md.MetadataResponse(throttle_time=timedelta(0), brokers=(
        md.MetadataResponseBroker(node_id=i32(2), host="h", port=i32(1)),
        md.MetadataResponseBroker(node_id=i32(1), host="h", port=i32(2))), cluster_id="c", controller_id=i32(1),
        topics=(md.MetadataResponseTopic(error_code=ErrorCode.none, name="t", topic_id=None, partitions=(
            md.MetadataResponsePartition(error_code=ErrorCode.none, partition_index=i32(1), leader_id=i32(2),
                                         replica_nodes=(i32(2), i32(1))),
            md.MetadataResponsePartition(error_code=ErrorCode.none, partition_index=i32(0), leader_id=i32(-1),
                                         replica_nodes=(i32(1),)))),
                md.MetadataResponseTopic(error_code=ErrorCode.unknown_topic_or_partition, name="gone",
                                         topic_id=None, partitions=())))
    assert ClusterShape.of(answer) == ClusterShape((1, 2), {"t": (PartitionShape(0, -1, (1,)),
                                                                  PartitionShape(1, 2, (2, 1)))})
    request = metadata_request()
    assert request.topics is None and request.allow_auto_topic_creation is False


def test_refusals_name_kafkas_errors_and_leave_out_an_election_not_needed():
    el = protocol_module("elect_leaders", 2, "response")
    answer = el.ElectLeadersResponse(throttle_time=timedelta(0), error_code=ErrorCode.none,
                                      replica_election_results=(el.ReplicaElectionResult(topic="t", partition_result=(
                                          el.PartitionResult(partition_id=i32(0), error_code=ErrorCode.election_not_needed,
                                                             error_message="no need"),
                                          el.PartitionResult(partition_id=i32(1),
                                                             error_code=ErrorCode.preferred_leader_not_available,
                                                             error_message="broker 4 is fenced"))),))
    assert refusals(answer) == ["PREFERRED_LEADER_NOT_AVAILABLE: broker 4 is fenced"]
    ct = protocol_module("create_topics", 7, "response")
    created = ct.CreateTopicsResponse(throttle_time=timedelta(0), topics=(ct.CreatableTopicResult(
        name="t", topic_id=None, error_code=ErrorCode.none, error_message=None, num_partitions=i32(1),
        replication_factor=i16(1), configs=None),))
    assert refusals(created) == []


def test_the_summary_line_counts_what_was_done():
    tally = Tally()
    tally.done.update({"create": 2, "leader": 1})
    tally.refused, tally.failed = 1, 2
    assert tally.summary(12.34, "Ctrl-C") == \
        "workload: stopped (Ctrl-C) after 12.3 s: 6 steps (2 topics created, 1 leader move); 1 refused, 2 failed"
    assert Tally().summary(0.5, "time up") == "workload: stopped (time up) after 0.5 s: 0 steps (nothing done)"
