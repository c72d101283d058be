"""The partition change builder: Kafka 4.1's rules, and invariants over random histories.

The unit cases' expected records were read off Kafka 4.1.2's own PartitionChangeBuilder (run
on the same inputs); the property drives random partitions through random broker fencing,
unfencing, controlled shutdowns, restarts and ISR changes, replaying every record.
"""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings, strategies as st

from engine.common.directory_id import migrating_array
from engine.controller.partition_change import Election, build_partition_change
from engine.controller.replication_control import alter_partition
from engine.image.metadata_version import record_versions
from engine.image.partition_registration import PartitionRegistration
from tests.engine.controller.test_controller_replication import Cluster, alter_isr

TOPIC = uuid.UUID(int=(1 << 64) + 1)


def part(replicas, isr=None, leader=None, elr=(), last_known_elr=(), recovery=0, **kw) -> PartitionRegistration:
    isr = tuple(replicas if isr is None else isr)
    return PartitionRegistration(replicas=tuple(replicas), isr=isr, leader=isr[0] if leader is None and isr else
                                 (-1 if leader is None else leader), leader_recovery_state=recovery, leader_epoch=5,
                                 partition_epoch=9, directories=migrating_array(len(replicas)), elr=tuple(elr),
                                 last_known_elr=tuple(last_known_elr), **kw)


def build(p, level=27, acceptable=None, min_isr=1, elr=True, **kw):
    ok = set(p.replicas if acceptable is None else acceptable)
    return build_partition_change(p, TOPIC, 0, acceptable=ok.__contains__, versions=record_versions(level),
                                  min_isr=min_isr, elr_enabled=elr and level >= 23, **kw)


def test_nothing_to_change_is_none():
    assert build(part([1, 2, 3])) is None
    assert build(part([1, 2, 3]), target_isr=[1, 2, 3], election=Election.PREFERRED) is None


def test_elr_follows_java_hash_set_order():
    # Kafka 4.1.2: 2|-2|1001|...|ELR 65537,17,2
    record = build(part([1001, 17, 65537, 2]), min_isr=3, target_isr=[1001])
    assert (record.leader, record.isr, record.eligible_leader_replicas, record.last_known_elr) == (
        -2, (1001,), (65537, 17, 2), None)


def test_leader_from_elr_only_with_an_empty_isr():
    p = part([1, 2, 3], isr=[], leader=-1, elr=[2, 3], last_known_elr=[1])
    record = build(p, acceptable=[3], min_isr=2)
    assert (record.leader, record.isr, record.eligible_leader_replicas, record.last_known_elr) == (3, (3,), (2,), ())
    p = part([1, 2, 3], isr=[1], leader=-1, elr=[2, 3])
    assert build(p, acceptable=[2, 3], min_isr=2) is None  # 1 is in the ISR but cannot lead; ELR waits


def test_last_known_leader_is_elected_only_when_acceptable():
    p = part([1, 2], isr=[], leader=-1, last_known_elr=[1])
    assert build(p, acceptable=[]) is None
    record = build(p, acceptable=[1])
    assert (record.leader, record.isr, record.leader_recovery_state, record.last_known_elr) == (1, (1,), 1, ())


def test_unclean_election_recovers_and_clears_elr():
    p = part([1, 2, 3], isr=[1], leader=-1, elr=[2])
    record = build(p, acceptable=[3], min_isr=2, election=Election.UNCLEAN)
    assert (record.leader, record.isr, record.leader_recovery_state, record.eligible_leader_replicas) == (3, (3,), 1, ())


def test_online_election_never_picks_outside_isr_and_elr():
    p = part([1, 2, 3], isr=[1], leader=-1)
    assert build(p, acceptable=[2, 3], elr=False) is None


def test_versions_leave_out_fields_they_lack():
    p = part([1, 2, 3])
    for level, cls_name in ((7, "PartitionChangeRecordV0"), (17, "PartitionChangeRecordV1"),
                            (23, "PartitionChangeRecordV2"), (27, "PartitionChangeRecordV2")):
        record = build(p, level=level, target_isr=[1, 2], target_replicas=[1, 2, 3, 4])
        assert type(record).__name__ == cls_name
        assert record.replicas == (1, 2, 3, 4)
        # directories are written from 3.7-IV2 on, one per replica
        assert getattr(record, "directories", None) is (None if level < 17 else record.directories)
        if level >= 17:
            assert len(record.directories) == 4
        # the leader is named (epoch bump) on an ISR shrink only before 3.6-IV0
        assert record.leader == (1 if level == 7 else -2)


def test_reassignment_completion_drops_removing_replicas():
    p = part([2, 3, 1], isr=[1, 2], removing_replicas=(1,), adding_replicas=(3,))
    record = build(p, target_isr=[1, 2, 3])
    assert (record.replicas, record.isr, record.leader, record.removing_replicas, record.adding_replicas) == (
        (2, 3), (2, 3), 2, (), ())


# -- invariants over random histories ------------------------------------------------------------

OPS = st.sampled_from(["fence", "unfence", "shutdown", "restart_clean", "restart_unclean", "shrink", "expand"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(release=st.sampled_from(["3.3-IV3", "3.7-IV2", "4.1-IV1"]),
       min_isr=st.integers(1, 3), unclean=st.booleans(),
       assignment=st.lists(st.permutations([1, 2, 3, 4]).map(lambda p: p[:3]), min_size=1, max_size=3),
       steps=st.lists(st.tuples(OPS, st.integers(1, 4)), max_size=14))
def test_partition_invariants_under_random_broker_histories(release, min_isr, unclean, assignment, steps):
    configs = {(4, ""): {"min.insync.replicas": str(min_isr)}}
    if unclean:
        configs[(2, "foo")] = {"unclean.leader.election.enable": "true"}
    c = Cluster(release=release, brokers=(1, 2, 3, 4), configs=configs, foo=assignment)
    for op, broker_id in steps:
        before = dict(c.image.topics.topic("foo").partitions)
        broker = c.image.cluster.brokers[broker_id]
        if op == "fence" and not broker.fenced:
            c.fence(broker_id)
        elif op == "unfence" and broker.fenced:
            c.unfence(broker_id)
        elif op == "shutdown" and not broker.fenced and not broker.in_controlled_shutdown:
            c.shut_down(broker_id)
        elif op.startswith("restart"):
            c.restart(broker_id, clean=op == "restart_clean")
        elif op in ("shrink", "expand"):
            for pid, p in before.items():
                if p.leader < 0 or c.image.cluster.brokers[p.leader].fenced:
                    continue
                isr = [r for r in p.isr if r != broker_id or r == p.leader] if op == "shrink" else \
                    list(p.isr) + [r for r in p.replicas if r == broker_id and r not in p.isr]
                c.run(alter_partition, alter_isr(c, isr, partition_id=pid))
        check(c, before)


def check(c: Cluster, before: dict) -> None:
    brokers = c.image.cluster.brokers
    for pid, p in c.image.topics.topic("foo").partitions.items():
        old = before[pid]
        assert set(p.isr) <= set(p.replicas)
        assert p.leader == -1 or p.leader in p.isr
        assert not set(p.elr) & set(p.isr)
        assert set(p.elr) <= set(p.replicas)
        assert p.leader_epoch >= old.leader_epoch and p.partition_epoch >= old.partition_epoch
        if p.leader != old.leader:
            assert p.leader_epoch > old.leader_epoch
            if p.leader != -1:
                assert not brokers[p.leader].fenced and not brokers[p.leader].in_controlled_shutdown
                from_elr = p.leader in old.elr and p.leader not in old.isr
                if from_elr:
                    assert p.isr == (p.leader,)  # a leader out of ELR starts alone in the ISR
                if p.leader not in old.isr and not from_elr:
                    assert p.leader_recovery_state == 1  # unclean: RECOVERING
