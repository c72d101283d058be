"""CreateTopics, DeleteTopics, CreatePartitions and AssignReplicasToDirs on the controller, in
the rhythm of Kafka's ReplicationControlManagerTest: command, response, replay, state. Messages
are Kafka 4.1.2's (read off its classes)."""

from __future__ import annotations

import random

import pytest

from engine.common.directory_id import MIGRATING, UNASSIGNED
from engine.common.kafka_uuid import RESERVED_UUIDS, uuid_to_kafka
from engine.controller.controller_config import ControllerConfig
from engine.controller.controller_result import ApiError, ControllerResult
from engine.controller.topic_control import (
    COMMANDS, assign_replicas_to_dirs, create_partitions, create_topics, create_topics_error, delete_topics,
    new_topic_id)
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i8, i16, i32, i64, protocol_module, u16
from tests.controller_helpers import bootstrapped, context, new_uuid, replayed, request

CT = protocol_module("create_topics", 7, "request")
DT = protocol_module("delete_topics", 6, "request")
CP = protocol_module("create_partitions", 3, "request")
AD = protocol_module("assign_replicas_to_dirs", 0, "request")


class Soft:
    rng = random.Random(5)


def with_brokers(image: MetadataImage, *specs: tuple) -> MetadataImage:
    """Brokers (id, rack, fenced, in controlled shutdown, log dirs) registered at epoch 100 + id."""
    records = []
    for broker_id, rack, fenced, shutdown, dirs in specs:
        endpoint = m.RegisterBrokerRecordV3BrokerEndpoint(name="PLAINTEXT", host="h", port=u16(9092),
                                                          security_protocol=i16(0))
        records.append(m.RegisterBrokerRecordV3(
            broker_id=i32(broker_id), is_migrating_zk_broker=False, incarnation_id=new_uuid(broker_id),
            broker_epoch=i64(100 + broker_id), end_points=(endpoint,), features=(), rack=rack, fenced=fenced,
            in_controlled_shutdown=shutdown, log_dirs=tuple(dirs)))
    return replayed(image, ControllerResult(records, None))


def cluster(release: str = "4.1-IV1", count: int = 3, dirs: int = 1) -> MetadataImage:
    return with_brokers(bootstrapped(release), *[
        (b, f"rack{b}", False, False, [new_uuid(1000 + 10 * b + d) for d in range(dirs)]) for b in range(count)])


def topic(name: str, partitions: int = -1, factor: int = -1, assignments=(), configs=()) -> object:
    return CT.CreatableTopic(
        name=name, num_partitions=i32(partitions), replication_factor=i16(factor),
        assignments=tuple(CT.CreatableReplicaAssignment(partition_index=i32(i), broker_ids=tuple(map(i32, b)))
                          for i, b in assignments),
        configs=tuple(CT.CreatableTopicConfig(name=k, value=v) for k, v in configs))


def create(image, *topics, validate_only=False, config=None):
    return create_topics(context(image, config=config, soft=Soft()),
                         request("create_topics", 7, topics=tuple(topics), validate_only=validate_only))


def only(result):
    [answer] = result.response.topics
    return answer


# -- CreateTopics --------------------------------------------------------------------------------


def test_create_topic_writes_topic_and_partitions_atomically_and_the_image_has_them():
    image = cluster()
    result = create(image, topic("orders", 3, 2))
    answer = only(result)
    assert (answer.error_code, answer.error_message, answer.num_partitions, answer.replication_factor) == \
        (ErrorCode.none, None, 3, 2)
    assert result.atomic
    assert [type(r).__name__ for r in result.records] == ["TopicRecordV0"] + ["PartitionRecordV2"] * 3
    assert result.records[0].topic_id == answer.topic_id
    image = replayed(image, result)
    created = image.topics.topic("orders")
    assert created.id == answer.topic_id and len(created.partitions) == 3
    for p in created.partitions.values():
        assert len(set(p.replicas)) == 2 and p.isr == p.replicas and p.leader == p.replicas[0]
        assert (p.leader_epoch, p.partition_epoch) == (0, 0)
        assert p.directories == tuple(new_uuid(1000 + 10 * r) for r in p.replicas)  # each broker's only dir
    # a second command on the new state: the name is taken
    again = only(create(image, topic("orders", 1, 1)))
    assert (again.error_code, again.error_message) == (ErrorCode.topic_already_exists, "Topic 'orders' already exists.")


def test_defaults_come_from_the_config_and_the_answer_lists_effective_configs():
    image = cluster()
    config = ControllerConfig(num_partitions=4, default_replication_factor=3)
    result = create(image, topic("t", configs=[("retention.ms", "1000")]), config=config)
    answer = only(result)
    assert (answer.num_partitions, answer.replication_factor) == (4, 3)
    configs = {c.name: (c.value, c.config_source) for c in answer.configs}
    assert configs["retention.ms"] == ("1000", 1)  # the topic's own
    assert configs["cleanup.policy"] == ("delete", 5)  # Kafka's default
    assert "internal.segment.bytes" not in configs and len(configs) == 33
    assert [c.name for c in answer.configs] == sorted(configs)
    record = result.records[1]
    assert record == m.ConfigRecordV0(resource_type=i8(2), resource_name="t", name="retention.ms", value="1000")
    assert replayed(image, result).configs[(2, "t")] == {"retention.ms": "1000"}


def test_cluster_wide_broker_configs_show_through_with_their_units():
    image = cluster()
    image = replayed(image, ControllerResult([
        m.ConfigRecordV0(resource_type=i8(4), resource_name="", name="log.retention.hours", value="5")], None))
    configs = {c.name: (c.value, c.config_source) for c in only(create(image, topic("t", 1, 1))).configs}
    assert configs["retention.ms"] == ("18000000", 3)


def test_validate_only_answers_as_if_created_and_writes_nothing():
    result = create(cluster(), topic("t", 2, 1), validate_only=True)
    assert result.records == [] and only(result).error_code == ErrorCode.none and only(result).num_partitions == 2


@pytest.mark.parametrize("name, message", [
    ("", "Topic name is invalid: the empty string is not allowed"),
    (".", "Topic name is invalid: '.' is not allowed"),
    ("..", "Topic name is invalid: '..' is not allowed"),
    ("a" * 250, f"Topic name is invalid: the length of '{'a' * 250}' is longer than the max allowed length 249"),
    ("a b", "Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics, "
            "'.', '_' and '-'"),
    ("é", "Topic name is invalid: 'é' contains one or more characters other than ASCII alphanumerics, "
          "'.', '_' and '-'"),
])
def test_illegal_names_are_refused(name, message):
    answer = only(create(cluster(), topic(name, 1, 1)))
    assert (answer.error_code, answer.error_message) == (ErrorCode.invalid_topic_exception, message)


def test_a_name_colliding_on_dot_and_underscore_is_refused():
    image = replayed(cluster(), create(cluster(), topic("a.b", 1, 1)))
    answer = only(create(image, topic("a_b", 1, 1)))
    assert (answer.error_code, answer.error_message) == \
        (ErrorCode.invalid_topic_exception, "Topic 'a_b' collides with existing topic: a.b")
    assert only(create(image, topic("ab", 1, 1))).error_code == ErrorCode.none


def test_duplicates_and_the_metadata_topic_are_refused_after_the_rest():
    result = create(cluster(), topic("x", 1, 1), topic("d", 1, 1), topic("d", 1, 1), topic("__cluster_metadata", 1, 1))
    assert [(t.name, t.error_code, t.error_message) for t in result.response.topics] == [
        ("x", ErrorCode.none, None), ("d", ErrorCode.invalid_request, "Duplicate topic name."),
        ("__cluster_metadata", ErrorCode.invalid_request, "Creation of internal topic __cluster_metadata is prohibited.")]
    assert [r.name for r in result.records if isinstance(r, m.TopicRecordV0)] == ["x"]


@pytest.mark.parametrize("partitions, factor, code, message", [
    (1, 0, ErrorCode.invalid_replication_factor, "Replication factor must be larger than 0, or -1 to use the default value."),
    (1, -2, ErrorCode.invalid_replication_factor, "Replication factor must be larger than 0, or -1 to use the default value."),
    (0, 1, ErrorCode.invalid_partitions, "Number of partitions was set to an invalid non-positive value."),
    (-5, 1, ErrorCode.invalid_partitions, "Number of partitions was set to an invalid non-positive value."),
    (1, 4, ErrorCode.invalid_replication_factor, "Unable to replicate the partition 4 time(s): The target "
     "replication factor of 4 cannot be reached because only 3 broker(s) are registered."),
])
def test_partition_and_replica_counts_are_checked(partitions, factor, code, message):
    answer = only(create(cluster(), topic("t", partitions, factor)))
    assert (answer.error_code, answer.error_message) == (code, message)


def test_fenced_and_shutting_down_brokers():
    image = with_brokers(bootstrapped(), (0, None, True, False, [new_uuid(1)]), (1, None, False, True, [new_uuid(2)]))
    answer = only(create(image, topic("t", 1, 1)))
    assert (answer.error_code, answer.error_message) == (
        ErrorCode.invalid_replication_factor, "Unable to replicate the partition 1 time(s): All brokers are currently fenced.")
    # a broker in controlled shutdown is not usable: only one broker counts
    image = with_brokers(image, (2, None, False, False, [new_uuid(3)]))
    answer = only(create(image, topic("t", 1, 3)))
    assert answer.error_message == ("Unable to replicate the partition 3 time(s): The target replication factor "
                                    "of 3 cannot be reached because only 2 broker(s) are registered.")
    # a fenced broker may follow, never lead, never be in the ISR
    result = create(image, topic("t", 4, 2))
    for p in replayed(image, result).topics.topic("t").partitions.values():
        assert p.leader == 2 and p.isr == (2,) and set(p.replicas) == {0, 2}


@pytest.mark.parametrize("assignments, code, message", [
    ([(0, [0, 1]), (0, [1, 2])], ErrorCode.invalid_replica_assignment,
     "Found multiple manual partition assignments for partition 0"),
    ([(0, [])], ErrorCode.invalid_replica_assignment, "The manual partition assignment includes an empty replica list."),
    ([(0, [0, 9])], ErrorCode.invalid_replica_assignment,
     "The manual partition assignment includes broker 9, but no such broker is registered."),
    ([(0, [1, 1])], ErrorCode.invalid_replica_assignment,
     "The manual partition assignment includes the broker 1 more than once."),
    ([(0, [0, 1]), (1, [2])], ErrorCode.invalid_replica_assignment, "The manual partition assignment includes a "
     "partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s)."),
    ([(0, [0]), (2, [1])], ErrorCode.invalid_replica_assignment, "partitions should be a consecutive 0-based integer sequence"),
])
def test_manual_assignments_are_checked(assignments, code, message):
    answer = only(create(cluster(), topic("t", assignments=assignments)))
    assert (answer.error_code, answer.error_message) == (code, message)


def test_manual_assignment_needs_minus_one_counts_and_an_active_broker():
    answer = only(create(cluster(), topic("t", -1, 2, assignments=[(0, [0, 1])])))
    assert answer.error_message == "A manual partition assignment was specified, but replication factor was not set to -1."
    answer = only(create(cluster(), topic("t", 1, -1, assignments=[(0, [0, 1])])))
    assert answer.error_message == "A manual partition assignment was specified, but numPartitions was not set to -1."
    image = with_brokers(cluster(), (5, None, True, False, [new_uuid(5)]))
    answer = only(create(image, topic("t", assignments=[(0, [5])])))
    assert (answer.error_code, answer.error_message) == (ErrorCode.invalid_replica_assignment, "All brokers specified "
                                                         "in the manual partition assignment for partition 0 are fenced or in controlled shutdown.")


def test_manual_assignment_keeps_the_order_and_leads_with_the_first_active():
    image = with_brokers(cluster(), (5, None, True, False, [new_uuid(5)]))
    result = create(image, topic("t", assignments=[(0, [5, 2, 0]), (1, [1, 0, 2])]))
    parts = replayed(image, result).topics.topic("t").partitions
    assert (parts[0].replicas, parts[0].isr, parts[0].leader) == ((5, 2, 0), (2, 0), 2)
    assert (parts[1].replicas, parts[1].leader) == ((1, 0, 2), 1)


@pytest.mark.parametrize("configs, code, message", [
    ([("no.such", "1")], ErrorCode.invalid_config, "Unknown topic config name: no.such"),
    ([("retention.ms", "abc")], ErrorCode.invalid_config,
     "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
    ([("min.insync.replicas", "0")], ErrorCode.invalid_config,
     "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ([("retention.ms", None)], ErrorCode.invalid_config, "Null value not supported for topic configs: retention.ms"),
])
def test_configs_are_checked(configs, code, message):
    answer = only(create(cluster(), topic("t", 1, 1, configs=configs)))
    assert (answer.error_code, answer.error_message) == (code, message)


def test_min_isr_on_a_new_topic_clears_its_elr_when_elr_is_on():
    result = create(cluster("4.1-IV1"), topic("t", 1, 1, configs=[("min.insync.replicas", "2")]))
    assert [type(r).__name__ for r in result.records] == ["TopicRecordV0", "ConfigRecordV0", "ClearElrRecordV0",
                                                          "PartitionRecordV2"]
    result = create(cluster("3.9-IV0"), topic("t", 1, 1, configs=[("min.insync.replicas", "2")]))
    assert not any(isinstance(r, m.ClearElrRecordV0) for r in result.records)


def test_more_than_ten_thousand_partitions_refuse_the_whole_request():
    with pytest.raises(ApiError) as refused:
        create(cluster(), topic("a", 6000, 1), topic("b", 4001, 1))
    assert (refused.value.code, refused.value.message) == (ErrorCode.policy_violation,
                                                          "Excessively large number of partitions per request.")
    response = create_topics_error(request("create_topics", 7, topics=(topic("a", 1, 1),)), ErrorCode.not_controller, None)
    assert response.topics[0].error_code == ErrorCode.not_controller


@pytest.mark.parametrize("release, version, directories", [
    ("3.3-IV3", 0, None), ("3.7-IV2", 1, "dir"), ("4.0-IV1", 2, "dir"), ("4.1-IV1", 2, "dir")])
def test_partition_record_versions_follow_metadata_version(release, version, directories):
    image = cluster(release)
    result = create(image, topic("t", 1, 1))
    record = result.records[-1]
    assert record.__version__ == version
    if directories:
        assert record.directories == (new_uuid(1000 + 10 * record.replicas[0]),)
    if version == 2:
        assert record.eligible_leader_replicas is None and record.last_known_elr is None
    assert replayed(image, result).topics.topic("t").partitions[0].replicas == record.replicas


def test_directories_unassigned_with_several_and_migrating_with_none():
    image = with_brokers(bootstrapped("3.7-IV2"), (0, None, False, False, [new_uuid(1), new_uuid(2)]),
                         (1, None, False, False, []))
    result = create(image, topic("t", assignments=[(0, [0, 1])]))
    assert result.records[-1].directories == (UNASSIGNED, MIGRATING)
    assert replayed(image, result).topics.topic("t").partitions[0].directories == (UNASSIGNED, MIGRATING)


def test_new_topic_ids_are_never_reserved_nor_start_with_a_dash():
    rng = random.Random(0)
    for _ in range(2000):
        topic_id = new_topic_id(rng)
        assert topic_id not in RESERVED_UUIDS and not uuid_to_kafka(topic_id).startswith("-")
    assert new_topic_id(random.Random(9)) == new_topic_id(random.Random(9))  # seeded: repeatable


# -- DeleteTopics --------------------------------------------------------------------------------


def delete(image, *states):
    return delete_topics(context(image), request("delete_topics", 6, topics=tuple(states), timeout=i32(1000)))


def by_name(name):
    return DT.DeleteTopicState(name=name, topic_id=None)


def by_id(topic_id):
    return DT.DeleteTopicState(name=None, topic_id=topic_id)


def test_delete_by_name_and_by_id_removes_topics_and_their_configs():
    image = cluster()
    image = replayed(image, create(image, topic("a", 2, 1, configs=[("retention.ms", "5")]), topic("b", 1, 1)))
    b_id = image.topics.by_name["b"]
    result = delete(image, by_name("a"), by_id(b_id))
    assert result.atomic and [type(r).__name__ for r in result.records] == ["RemoveTopicRecordV0"] * 2
    assert {(r.name, r.error_code) for r in result.response.responses} == {("a", ErrorCode.none), ("b", ErrorCode.none)}
    image = replayed(image, result)
    assert not image.topics.by_name and (2, "a") not in image.configs
    again = delete(image, by_name("a"), by_id(b_id))
    assert [(r.name, r.topic_id, r.error_code, r.error_message) for r in again.response.responses] == [
        (None, b_id, ErrorCode.unknown_topic_id, "This server does not host this topic ID."),
        ("a", None, ErrorCode.unknown_topic_or_partition, "This server does not host this topic-partition.")]
    assert again.records == []


def test_delete_request_shape_errors():
    image = cluster()
    image = replayed(image, create(image, topic("a", 1, 1)))
    a_id = image.topics.by_name["a"]
    result = delete(image, DT.DeleteTopicState(name=None, topic_id=None), DT.DeleteTopicState(name="a", topic_id=a_id),
                    by_name("x"), by_name("x"), by_id(new_uuid(77)), by_id(new_uuid(77)))
    assert [(r.name, r.error_code, r.error_message) for r in result.response.responses] == [
        (None, ErrorCode.invalid_request, "Neither topic name nor id were specified."),
        ("a", ErrorCode.invalid_request, "You may not specify both topic name and topic id."),
        ("x", ErrorCode.invalid_request, "Duplicate topic name."),
        (None, ErrorCode.invalid_request, "Duplicate topic id.")]
    assert result.records == []
    # a name that maps to an id also given: neither is deleted
    result = delete(image, by_id(a_id), by_name("a"))
    assert [(r.name, r.error_code, r.error_message) for r in result.response.responses] == [
        ("a", ErrorCode.invalid_request, "The provided topic name maps to an ID that was already supplied.")]
    assert result.records == []


def test_delete_refused_when_deletion_is_disabled():
    with pytest.raises(ApiError) as refused:
        delete_topics(context(cluster(), config=ControllerConfig(delete_topic_enable=False)), request("delete_topics", 6, topics=(by_name("a"),),
                                                                     timeout=i32(1)))
    assert refused.value.code == ErrorCode.topic_deletion_disabled


# -- CreatePartitions ------------------------------------------------------------------------------


def grow(image, *topics, validate_only=False):
    return create_partitions(context(image, soft=Soft()), request(
        "create_partitions", 3, topics=tuple(topics), timeout=i32(1000), validate_only=validate_only))


def grow_topic(name, count, assignments=None):
    return CP.CreatePartitionsTopic(name=name, count=i32(count), assignments=None if assignments is None else tuple(
        CP.CreatePartitionsAssignment(broker_ids=tuple(map(i32, a))) for a in assignments))


def test_create_partitions_adds_partitions_with_the_topics_replication_factor():
    image = cluster()
    image = replayed(image, create(image, topic("t", 2, 2)))
    result = grow(image, grow_topic("t", 5))
    assert [(r.name, r.error_code, r.error_message) for r in result.response.results] == [("t", ErrorCode.none, None)]
    assert [r.partition_id for r in result.records] == [2, 3, 4] and result.atomic
    parts = replayed(image, result).topics.topic("t").partitions
    assert sorted(parts) == [0, 1, 2, 3, 4] and all(len(p.replicas) == 2 for p in parts.values())
    assert grow(image, grow_topic("t", 5), validate_only=True).records == []


def test_create_partitions_with_assignments():
    image = cluster()
    image = replayed(image, create(image, topic("t", 1, 2)))
    result = grow(image, grow_topic("t", 3, [[2, 0], [1, 2]]))
    parts = replayed(image, result).topics.topic("t").partitions
    assert (parts[1].replicas, parts[2].replicas, parts[2].leader) == ((2, 0), (1, 2), 1)


@pytest.mark.parametrize("change, code, message", [
    (grow_topic("nope", 3), ErrorCode.unknown_topic_or_partition, None),
    (grow_topic("t", 2), ErrorCode.invalid_partitions, "Topic already has 2 partition(s)."),
    (grow_topic("t", 1), ErrorCode.invalid_partitions, "The topic t currently has 2 partition(s); 1 would not be an increase."),
    (grow_topic("t", 4, [[0, 1]]), ErrorCode.invalid_replica_assignment,
     "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."),
    (grow_topic("t", 3, [[0]]), ErrorCode.invalid_replica_assignment, "The manual partition assignment includes a "
     "partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s)."),
    (grow_topic("t", 3, [[0, 8]]), ErrorCode.invalid_replica_assignment,
     "The manual partition assignment includes broker 8, but no such broker is registered."),
    # refused before placing anything: two billion partitions must not build two billion replica lists
    (grow_topic("t", 2**31 - 1), ErrorCode.unknown_server_error,
     "The server experienced an unexpected error when processing the request."),
])
def test_create_partitions_refusals(change, code, message):
    image = cluster()
    image = replayed(image, create(image, topic("t", 2, 2)))
    result = grow(image, change)
    assert [(r.error_code, r.error_message) for r in result.response.results] == [(code, message)]
    assert result.records == []


def test_create_partitions_duplicates_and_placer_refusal():
    image = cluster()
    image = replayed(image, create(image, topic("t", 1, 3)))
    fenced = with_brokers(image, (1, "rack1", True, False, [new_uuid(1010)]), (2, "rack2", True, False, [new_uuid(1020)]))
    result = grow(fenced, grow_topic("t", 2), grow_topic("d", 2), grow_topic("d", 3))
    assert [(r.name, r.error_code) for r in result.response.results] == [
        ("d", ErrorCode.invalid_request), ("t", ErrorCode.none)]
    [record] = result.records
    assert record.leader == 0 and record.isr == (0,)  # fenced brokers follow, out of the ISR
    gone = with_brokers(image, (0, "rack0", False, True, [new_uuid(1000)]))  # 0 shutting down: 2 usable
    result = grow(gone, grow_topic("t", 2))
    assert [(r.error_code, r.error_message) for r in result.response.results] == [(
        ErrorCode.invalid_replication_factor,
        "The target replication factor of 3 cannot be reached because only 2 broker(s) are registered.")]


# -- AssignReplicasToDirs --------------------------------------------------------------------------


def assign(image, broker_id, epoch, directory, topic_id, *partitions):
    req = request("assign_replicas_to_dirs", 0, broker_id=i32(broker_id), broker_epoch=i64(epoch), directories=(
        AD.DirectoryData(id_=directory, topics=(AD.TopicData(topic_id=topic_id, partitions=tuple(
            AD.PartitionData(partition_index=i32(p)) for p in partitions)),)),))
    return assign_replicas_to_dirs(context(image), req)


def test_assignment_records_the_directory_and_the_image_has_it():
    image = cluster(dirs=2)
    image = replayed(image, create(image, topic("t", assignments=[(0, [0, 1]), (1, [1, 2])])))
    t = image.topics.topic("t")
    assert t.partitions[0].directories == (UNASSIGNED, UNASSIGNED)
    result = assign(image, 1, 101, new_uuid(1011), t.id, 0, 1, 7)
    [directory] = result.response.directories
    assert [(p.partition_index, p.error_code) for p in directory.topics[0].partitions] == [
        (0, ErrorCode.none), (1, ErrorCode.none), (7, ErrorCode.unknown_topic_or_partition)]
    assert [(r.partition_id, r.directories, r.__version__) for r in result.records] == [
        (0, (UNASSIGNED, new_uuid(1011)), 2), (1, (new_uuid(1011), UNASSIGNED), 2)]
    image = replayed(image, result)
    assert image.topics.topic("t").partitions[0].directories == (UNASSIGNED, new_uuid(1011))
    assert image.topics.topic("t").partitions[0].partition_epoch == 1
    assert assign(image, 1, 101, new_uuid(1011), t.id, 0).records == []  # already there: nothing to write


def test_assignment_errors():
    image = cluster(dirs=2)
    image = replayed(image, create(image, topic("t", assignments=[(0, [0, 1])])))
    t = image.topics.topic("t")
    result = assign(image, 2, 102, new_uuid(1020), t.id, 0)
    assert result.response.directories[0].topics[0].partitions[0].error_code == ErrorCode.not_leader_or_follower
    result = assign(image, 2, 102, new_uuid(1020), new_uuid(4444), 0)
    assert result.response.directories[0].topics[0].partitions[0].error_code == ErrorCode.unknown_topic_id
    for broker_id, epoch, message in [(1, 5, "Expected broker epoch 101, but got broker epoch 5"),
                                      (9, 5, "No broker registration found for broker id 9")]:
        with pytest.raises(ApiError) as refused:
            assign(image, broker_id, epoch, new_uuid(1011), t.id, 0)
        assert (refused.value.code, refused.value.message) == (ErrorCode.stale_broker_epoch, message)
    old = cluster("3.7-IV1")
    with pytest.raises(ApiError) as refused:
        assign(old, 1, 101, new_uuid(1011), t.id, 0)
    assert (refused.value.code, refused.value.message) == (ErrorCode.unsupported_version,
                                                          "Directory assignment is not supported yet.")


def test_assignment_to_an_offline_directory_takes_the_replica_out_of_the_isr():
    image = cluster(dirs=2)
    image = replayed(image, create(image, topic("t", assignments=[(0, [1, 0])])))
    t = image.topics.topic("t")
    result = assign(image, 1, 101, new_uuid(5555), t.id, 0)  # not one of broker 1's directories
    image = replayed(image, result)
    p = image.topics.topic("t").partitions[0]
    assert p.directories == (new_uuid(5555), UNASSIGNED) and p.isr == (0,) and p.leader == 0


def test_commands_table():
    assert [(c.api_key, c.name, c.min_version, c.max_version) for c in COMMANDS] == [
        (19, "create_topics", 2, 7), (20, "delete_topics", 1, 6), (37, "create_partitions", 0, 3),
        (73, "assign_replicas_to_dirs", 0, 0)]
