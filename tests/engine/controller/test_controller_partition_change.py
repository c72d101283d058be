"""The partition change builder: invariants over random histories.

The property drives random partitions through random broker fencing, unfencing, controlled
shutdowns, restarts and ISR changes, replaying every record. The records themselves are
compared with Kafka's own PartitionChangeBuilder, live, in
tests/differential/test_diff_partition_change.py (its named cases are the rules this file
once pinned with vectors read off Kafka 4.1.2).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from engine.controller.replication_control import alter_partition
from tests.engine.controller.test_controller_replication import Cluster, alter_isr

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
