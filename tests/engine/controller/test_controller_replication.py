"""ReplicationControl: broker state -> partitions, AlterPartition (56) and ElectLeaders (43).

Rhythm of Kafka's ReplicationControlManagerTest: command, response, replay, state. The
``Cluster`` below plays the other managers' part (registrations, fencing records) so that each
step replays the records a controller would write, in Kafka's order.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any, Iterable

import pytest

from engine.controller.controller_result import ApiError
from engine.controller.replication_control import (
    COMMANDS, alter_partition, clean_shutdown_changes, controlled_shutdown_changes, elect_leaders,
    fence_broker_changes, partitions_led_by, unclean_shutdown_changes, unfence_broker_changes,
    unregister_broker_changes)
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_version import BY_NAME, default_feature_levels, record_versions
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i8, i32, i64
from tests.controller_helpers import bootstrapped, context, new_uuid, request

TOPIC_ID = new_uuid(500)
RECOVERING = 1


def directory_of(broker_id: int) -> uuid.UUID:
    return new_uuid(1000 + broker_id)


class Cluster:
    """An image built and changed by replaying records, as the log would."""

    def __init__(self, release: str = "4.1-IV1", brokers: Iterable[int] = (1, 2, 3), elr: bool | None = None,
                 configs: dict | None = None, **topics: list):
        features = default_feature_levels(BY_NAME[release])
        if elr is not None:
            features["eligible.leader.replicas.version"] = int(elr)
        self.image = bootstrapped(release, features)
        self.versions = record_versions(self.image.metadata_version)
        self.replay([self.register(b, fenced=False) for b in brokers])
        for (resource, name), values in (configs or {}).items():
            self.replay([m.ConfigRecordV0(resource_type=i8(resource), resource_name=name, name=k, value=v)
                         for k, v in values.items()])
        for n, (name, assignment) in enumerate(topics.items()):
            topic_id = new_uuid(500 + n)
            self.replay([m.TopicRecordV0(name=name, topic_id=topic_id)]
                        + [self.partition_record(topic_id, pid, replicas) for pid, replicas in enumerate(assignment)])

    # -- records a cluster manager would write ----------------------------------------------

    def register(self, broker_id: int, fenced: bool = True) -> Any:
        version = self.versions.register_broker
        cls = m.RECORD_CLASSES[(0, version)]
        values = dict(broker_id=i32(broker_id), incarnation_id=new_uuid(broker_id * 7 + self.next_offset),
                      broker_epoch=i64(self.next_offset), end_points=(), features=(), rack=None,
                      fenced=fenced, in_controlled_shutdown=False, is_migrating_zk_broker=False,
                      log_dirs=(directory_of(broker_id),))
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})

    def broker_change(self, broker_id: int, fenced: int = 0, shutdown: int = 0) -> Any:
        cls = m.RECORD_CLASSES[(17, self.versions.broker_registration_change)]
        return cls(broker_id=i32(broker_id), broker_epoch=i64(self.image.cluster.brokers[broker_id].epoch),
                   fenced=i8(fenced), in_controlled_shutdown=i8(shutdown))

    def partition_record(self, topic_id: uuid.UUID, partition_id: int, replicas: list[int]) -> Any:
        version = self.versions.partition
        values = dict(partition_id=i32(partition_id), topic_id=topic_id, replicas=tuple(map(i32, replicas)),
                      isr=tuple(map(i32, replicas)), removing_replicas=(), adding_replicas=(),
                      leader=i32(replicas[0]), leader_epoch=i32(0), partition_epoch=i32(0))
        if version >= 1:
            values["directories"] = tuple(directory_of(r) for r in replicas)
        return m.RECORD_CLASSES[(3, version)](**values)

    # -- steps ------------------------------------------------------------------------------

    @property
    def next_offset(self) -> int:
        return self.image.provenance.last_offset + 1

    def ctx(self, **kwargs: Any):
        return context(self.image, **kwargs)

    def replay(self, records: list) -> list:
        delta = MetadataDelta(self.image)
        for i, record in enumerate(records):
            delta.replay(record, self.next_offset + i)
        self.image = delta.apply()
        return records

    def run(self, handler: Any, req: Any) -> Any:
        result = handler(self.ctx(), req)
        self.replay(list(result.records))
        return result

    def fence(self, broker_id: int) -> list:
        return self.replay(fence_broker_changes(self.ctx(), broker_id) + [self.broker_change(broker_id, fenced=1)])

    def unfence(self, broker_id: int) -> list:
        return self.replay([self.broker_change(broker_id, fenced=-1)] + unfence_broker_changes(self.ctx(), broker_id))

    def shut_down(self, broker_id: int) -> list:
        return self.replay([self.broker_change(broker_id, shutdown=1)]
                           + controlled_shutdown_changes(self.ctx(), broker_id))

    def restart(self, broker_id: int, clean: bool) -> list:
        changes = clean_shutdown_changes if clean else unclean_shutdown_changes
        return self.replay(changes(self.ctx(), broker_id) + [self.register(broker_id)])

    def part(self, topic: str = "foo", partition_id: int = 0):
        return self.image.topics.topic(topic).partitions[partition_id]

    def topic_id(self, topic: str = "foo") -> uuid.UUID:
        return self.image.topics.by_name[topic]

    def epoch(self, broker_id: int) -> int:
        return self.image.cluster.brokers[broker_id].epoch


def alter_isr(c: Cluster, isr: list[int], topic: str = "foo", partition_id: int = 0, leader: int | None = None,
              epochs: dict[int, int] | None = None, recovery: int = 0, leader_epoch: int | None = None,
              partition_epoch: int | None = None, broker_epoch: int | None = None, topic_id: Any = None) -> Any:
    p = c.part(topic, partition_id)
    leader = p.leader if leader is None else leader
    states = tuple(request_part("BrokerState", broker_id=i32(b), broker_epoch=i64((epochs or {}).get(b, c.epoch(b))))
                   for b in isr)
    data = request_part("PartitionData", partition_index=i32(partition_id),
                        leader_epoch=i32(p.leader_epoch if leader_epoch is None else leader_epoch),
                        new_isr_with_epochs=states, leader_recovery_state=i8(recovery),
                        partition_epoch=i32(p.partition_epoch if partition_epoch is None else partition_epoch))
    topic_data = request_part("TopicData", topic_id=c.topic_id(topic) if topic_id is None else topic_id,
                              partitions=(data,))
    return request("alter_partition", 3, broker_id=i32(leader),
                   broker_epoch=i64(c.epoch(leader) if broker_epoch is None else broker_epoch), topics=(topic_data,))


def request_part(name: str, **fields: Any) -> Any:
    from engine.records.kio_codec import protocol_module
    return getattr(protocol_module("alter_partition", 3, "request"), name)(**fields)


def partition_errors(response: Any) -> list:
    return [p.error_code for t in response.topics for p in t.partitions]


# -- broker state -> partitions ----------------------------------------------------------------

def test_fencing_moves_the_leadership_and_shrinks_the_isr():
    c = Cluster(foo=[[1, 2, 3], [2, 3, 1]])
    assert partitions_led_by(c.image, 1) == 1
    records = c.fence(1)
    assert [type(r).__name__ for r in records] == ["PartitionChangeRecordV2"] * 2 + ["BrokerRegistrationChangeRecordV2"]
    led = c.part("foo", 0)
    assert (led.leader, led.isr, led.leader_epoch, led.partition_epoch) == (2, (2, 3), 1, 1)
    followed = c.part("foo", 1)
    assert (followed.leader, followed.isr, followed.leader_epoch, followed.partition_epoch) == (2, (2, 3), 0, 1)
    assert partitions_led_by(c.image, 1) == 0
    assert fence_broker_changes(c.ctx(), 1) == []  # nothing left to do


def test_fencing_below_min_isr_keeps_the_broker_in_elr_and_unfencing_elects_from_elr():
    c = Cluster(configs={(4, ""): {"min.insync.replicas": "2"}}, foo=[[1, 2, 3]])
    c.fence(3)
    assert (c.part().isr, c.part().elr) == ((1, 2), ())
    c.fence(2)
    assert (c.part().isr, c.part().elr, c.part().leader) == ((1,), (2,), 1)
    c.fence(1)
    p = c.part()
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (-1, (), (1, 2), (1,))
    c.unfence(2)  # an ELR member can lead once the ISR is empty
    p = c.part()
    assert (p.leader, p.isr, p.elr, p.last_known_elr, p.leader_recovery_state) == (2, (2,), (1,), (), 0)


def test_without_elr_the_last_replica_stays_in_the_isr():
    c = Cluster(elr=False, foo=[[1, 2]])
    c.fence(2)
    c.fence(1)
    p = c.part()
    assert (p.leader, p.isr, p.elr) == (-1, (1,), ())  # Kafka never writes an empty ISR without ELR
    c.unfence(2)
    assert c.part().leader == -1  # 2 is not in the ISR: no clean election
    c.unfence(1)
    assert (c.part().leader, c.part().isr) == (1, (1,))


def test_unclean_election_by_topic_config_on_unfence():
    c = Cluster(elr=False, configs={(2, "foo"): {"unclean.leader.election.enable": "true"}}, foo=[[1, 2]])
    c.fence(2)
    c.fence(1)
    c.unfence(2)
    p = c.part()
    assert (p.leader, p.isr, p.leader_recovery_state) == (2, (2,), RECOVERING)


def test_controlled_shutdown_moves_leaderships_and_leaves_isrs():
    c = Cluster(foo=[[1, 2, 3]])
    records = c.shut_down(1)
    assert type(records[0]).__name__.startswith("BrokerRegistrationChangeRecord")
    p = c.part()
    assert (p.leader, p.isr) == (2, (2, 3))
    assert c.image.cluster.brokers[1].in_controlled_shutdown
    # a broker in controlled shutdown can lead nothing new
    c.fence(2)
    c.fence(3)
    assert c.part().leader == -1


def test_unclean_restart_leaves_isr_and_elr_clean_restart_only_isr():
    c = Cluster(configs={(4, ""): {"min.insync.replicas": "3"}}, foo=[[1, 2, 3]])
    c.fence(3)
    assert c.part().elr == (3,)
    c.restart(3, clean=True)  # ELR keeps a broker that shut down cleanly
    assert c.part().elr == (3,)
    c.restart(3, clean=False)
    assert (c.part().isr, c.part().elr) == ((1, 2), ())
    c.restart(2, clean=False)  # from the ISR too, and never into ELR
    assert (c.part().isr, c.part().elr, c.part().leader) == ((1,), (), 1)


def test_unclean_restart_without_elr_is_a_plain_isr_removal():
    c = Cluster(elr=False, foo=[[1, 2, 3]])
    c.restart(1, clean=False)
    assert (c.part().leader, c.part().isr) == (2, (2, 3))


def test_unregistration_takes_the_broker_out_of_isrs():
    c = Cluster(foo=[[1, 2, 3]])
    records = unregister_broker_changes(c.ctx(), 1)
    c.replay(records)
    assert (c.part().leader, c.part().isr) == (2, (2, 3))


def test_directory_offline_replica_cannot_lead():
    c = Cluster(foo=[[1, 2]])
    lost = dataclasses.replace(c.register(2, fenced=False), log_dirs=(new_uuid(77),))  # 2's directory is gone
    c.replay([lost])
    c.fence(1)
    assert c.part().leader == -1


# -- AlterPartition ------------------------------------------------------------------------------

def test_alter_partition_shrinks_and_expands_the_isr():
    c = Cluster(foo=[[1, 2, 3]])
    result = c.run(alter_partition, alter_isr(c, [1, 2]))
    (out,) = result.response.topics[0].partitions
    assert (out.error_code, out.leader_id, out.isr, out.leader_epoch, out.partition_epoch) == (ErrorCode.none, 1, (1, 2), 0, 1)
    assert c.part().isr == (1, 2)
    result = c.run(alter_partition, alter_isr(c, [1, 2, 3]))
    assert result.response.topics[0].partitions[0].isr == (1, 2, 3)
    assert c.part().partition_epoch == 2 and c.part().leader_epoch == 0
    # the same ISR again: nothing to write, the state in the answer
    result = c.run(alter_partition, alter_isr(c, [1, 2, 3]))
    assert result.records == [] and result.response.topics[0].partitions[0].partition_epoch == 2


def test_alter_partition_stale_broker_epoch_refuses_the_request():
    c = Cluster(foo=[[1, 2, 3]])
    with pytest.raises(ApiError) as refused:
        alter_partition(c.ctx(), alter_isr(c, [1, 2], broker_epoch=12345))
    assert refused.value.code == ErrorCode.stale_broker_epoch
    command = next(cmd for cmd in COMMANDS if cmd.api_key == 56)
    response = command.error_response(None, ErrorCode.stale_broker_epoch, "x")
    assert response.error_code == ErrorCode.stale_broker_epoch and response.topics == ()


@pytest.mark.parametrize("change, error", [
    (dict(leader_epoch=1), ErrorCode.not_controller),
    (dict(partition_epoch=1), ErrorCode.not_controller),
    (dict(leader=2, isr=[1, 2, 3]), ErrorCode.invalid_request),
    (dict(isr=[2, 3]), ErrorCode.invalid_request),
    (dict(isr=[1, 4]), ErrorCode.invalid_request),
    (dict(isr=[1, 1]), ErrorCode.invalid_request),
    (dict(isr=[1, 2], recovery=1), ErrorCode.invalid_request),
    (dict(isr=[1], recovery=1), ErrorCode.invalid_request),  # RECOVERED -> RECOVERING
    (dict(isr=[1, 2], epochs={2: 999}), ErrorCode.ineligible_replica),
    (dict(topic_id=new_uuid(9999)), ErrorCode.unknown_topic_id),
])
def test_alter_partition_errors(change, error):
    c = Cluster(brokers=(1, 2, 3, 4), foo=[[1, 2, 3]])
    c.run(alter_partition, alter_isr(c, [1, 2, 3]))  # nothing; epochs 0
    isr = change.pop("isr", [1, 2])
    result = c.run(alter_partition, alter_isr(c, isr, **change))
    assert partition_errors(result.response) == [error]
    assert result.records == []


def test_alter_partition_old_epochs_are_fenced_or_stale():
    c = Cluster(foo=[[1, 2, 3]])
    c.run(alter_partition, alter_isr(c, [1, 2]))
    c.fence(3)  # partition epoch 1 -> no change for 3 (not in ISR); leader epoch stays
    c.fence(2)  # partition epoch 2
    result = c.run(alter_partition, alter_isr(c, [1], partition_epoch=1))
    assert partition_errors(result.response) == [ErrorCode.invalid_update_version]
    c.shut_down(1)
    result = c.run(alter_partition, alter_isr(c, [1], leader=1, leader_epoch=0, partition_epoch=0))
    assert partition_errors(result.response) == [ErrorCode.fenced_leader_epoch]


def test_alter_partition_refuses_fenced_and_shutting_down_replicas():
    c = Cluster(brokers=(1, 2, 3, 4), foo=[[1, 2, 3, 4]])
    c.run(alter_partition, alter_isr(c, [1]))
    c.fence(3)
    c.shut_down(4)
    for isr in ([1, 3], [1, 4]):
        assert partition_errors(c.run(alter_partition, alter_isr(c, isr)).response) == [ErrorCode.ineligible_replica]
    # -1: no broker epoch to check
    response = c.run(alter_partition, alter_isr(c, [1, 2], epochs={2: -1})).response
    assert partition_errors(response) == [ErrorCode.none]


def test_alter_partition_completes_recovery():
    c = Cluster(configs={(2, "foo"): {"unclean.leader.election.enable": "true"}}, elr=False, foo=[[1, 2]])
    c.fence(2)
    c.fence(1)
    c.unfence(2)
    assert c.part().leader_recovery_state == RECOVERING
    result = c.run(alter_partition, alter_isr(c, [2], recovery=0))
    assert partition_errors(result.response) == [ErrorCode.none]
    assert c.part().leader_recovery_state == 0
    assert result.response.topics[0].partitions[0].leader_recovery_state == 0


# -- ElectLeaders -------------------------------------------------------------------------------

def elect(c: Cluster, election_type: int, partitions: dict | None) -> Any:
    module_request = request("elect_leaders", 2, election_type=i8(election_type), topic_partitions=None)
    if partitions is not None:
        from engine.records.kio_codec import protocol_module
        tp = protocol_module("elect_leaders", 2, "request").TopicPartitions
        module_request = dataclasses.replace(module_request, topic_partitions=tuple(
            tp(topic=t, partitions=tuple(map(i32, ps))) for t, ps in partitions.items()))
    return c.run(elect_leaders, module_request)


def results(response: Any) -> dict:
    return {(t.topic, p.partition_id): p.error_code for t in response.replica_election_results
            for p in t.partition_result}


def test_preferred_election_moves_the_leader_back():
    c = Cluster(foo=[[1, 2, 3], [2, 3, 1]])
    c.fence(1)
    c.unfence(1)
    assert c.part().leader == 2  # unfencing elects nobody where a leader exists
    c.run(alter_partition, alter_isr(c, [2, 3, 1]))
    result = elect(c, 0, {"foo": [0, 1, 7], "bar": [0]})
    assert results(result.response) == {("foo", 0): ErrorCode.none, ("foo", 1): ErrorCode.election_not_needed,
                                        ("foo", 7): ErrorCode.unknown_topic_or_partition,
                                        ("bar", 0): ErrorCode.unknown_topic_or_partition}
    assert (c.part().leader, c.part().leader_epoch) == (1, 2)
    # every partition: the ones already led by their preferred replica are left out
    assert results(elect(c, 0, None).response) == {}


def test_preferred_election_not_available_while_out_of_the_isr():
    c = Cluster(foo=[[1, 2, 3]])
    c.fence(1)
    c.unfence(1)
    result = elect(c, 0, {"foo": [0]})
    assert results(result.response) == {("foo", 0): ErrorCode.preferred_leader_not_available}
    assert result.records == []


def test_unclean_election_request():
    c = Cluster(elr=False, foo=[[1, 2]])
    c.fence(2)
    c.fence(1)
    c.unfence(2)
    assert results(elect(c, 1, {"foo": [0]}).response) == {("foo", 0): ErrorCode.none}
    p = c.part()
    assert (p.leader, p.isr, p.leader_recovery_state) == (2, (2,), RECOVERING)
    assert results(elect(c, 1, {"foo": [0]}).response) == {("foo", 0): ErrorCode.election_not_needed}


def test_unclean_election_not_available_without_a_live_replica():
    c = Cluster(elr=False, foo=[[1, 2]])
    c.fence(2)
    c.fence(1)
    assert results(elect(c, 1, {"foo": [0]}).response) == {("foo", 0): ErrorCode.eligible_leaders_not_available}


def test_unknown_election_type_refuses_the_request():
    c = Cluster(foo=[[1]])
    with pytest.raises(ApiError) as refused:
        elect(c, 5, None)
    assert refused.value.code == ErrorCode.invalid_request


# -- record versions across metadata.version levels ----------------------------------------------

@pytest.mark.parametrize("release, version, bump", [
    ("3.3-IV3", 0, True), ("3.7-IV2", 1, False), ("4.0-IV1", 2, False), ("4.1-IV1", 2, False)])
def test_isr_shrink_record_version_and_epoch_bump(release, version, bump):
    c = Cluster(release=release, foo=[[1, 2, 3]])
    records = c.fence(3)
    change = records[0]
    assert change.version == version
    assert (change.leader == 1) is bump  # before 3.6-IV0 an ISR shrink names the leader: epoch + 1
    assert c.part().leader_epoch == (1 if bump else 0)
    if version < 2:
        assert not hasattr(change, "eligible_leader_replicas")
    else:
        assert change.eligible_leader_replicas is None and change.last_known_elr is None
    if version >= 1:
        assert change.directories is None  # unchanged: left out


def test_elr_needs_the_feature_as_well_as_the_metadata_version():
    # 4.0-IV1 has the ELR records, but a new 4.0 cluster does not turn the feature on
    for release, expected in (("4.0-IV1", ((1,), ())), ("4.1-IV1", ((1,), (2,)))):
        c = Cluster(release=release, configs={(4, ""): {"min.insync.replicas": "2"}}, foo=[[1, 2]])
        c.fence(2)
        assert (c.part().isr, c.part().elr) == expected


def test_commands_table():
    assert {(c.api_key, c.name, c.min_version, c.max_version) for c in COMMANDS} == {
        (56, "alter_partition", 2, 3), (43, "elect_leaders", 0, 2)}

