"""Three of Kafka 4.1's ReplicationControlManager answers, on the same replayed Cluster as
test_controller_replication:

* a broker leaving (unclean shutdown, UnregisterBroker) is two passes of
  generateLeaderAndIsrUpdates: the partitions whose ISR holds it, then those whose ELR does,
  so the records come in that order, not partition by partition;
* an AlterPartition naming a leader recovery state Kafka does not know fails whole
  (LeaderRecoveryState.of throws: UNKNOWN_SERVER_ERROR), after the checks Kafka makes first;
* a min.insync.replicas the log holds but Integer.parseInt refuses fails the operation that
  reads it (getTopicEffectiveMinIsr), instead of a default taken silently; CreateTopics and
  IncrementalAlterConfigs refuse such a value up front (INVALID_CONFIG).
"""

from __future__ import annotations

import dataclasses

import pytest

from engine.controller.config_control import effective_min_isr
from engine.controller.controller_result import ApiError
from engine.controller.replication_control import (
    alter_partition, fence_broker_changes, unclean_shutdown_changes, unregister_broker_changes)
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode
from test_controller_replication import Cluster, alter_isr, partition_errors

TOPIC = 2


def _elr_then_isr() -> Cluster:
    """foo-0 holds broker 3 in its ELR, foo-1 in its ISR (min ISR 3, four brokers)."""
    c = Cluster(brokers=(1, 2, 3, 4), configs={(4, ""): {"min.insync.replicas": "3"}},
                foo=[[1, 2, 3], [4, 3, 1]])
    c.fence(3)  # out of both ISRs, into both ELRs
    c.unfence(3)
    c.run(alter_partition, alter_isr(c, [4, 1, 3], partition_id=1))  # back into foo-1's ISR
    assert (c.part("foo", 0).isr, c.part("foo", 0).elr) == ((1, 2), (3,))
    assert (c.part("foo", 1).isr, c.part("foo", 1).elr) == ((4, 1, 3), ())
    return c


def test_an_unclean_shutdown_visits_the_isr_partitions_then_the_elr_ones() -> None:
    c = _elr_then_isr()
    records = unclean_shutdown_changes(c.ctx(), 3)
    assert [r.partition_id for r in records] == [1, 0]  # foo-1 (ISR) before foo-0 (ELR)
    c.replay(records)
    assert (c.part("foo", 1).isr, c.part("foo", 1).elr) == ((4, 1), ())
    assert (c.part("foo", 0).isr, c.part("foo", 0).elr) == ((1, 2), ())  # no longer a safe election


def test_unregistration_visits_the_isr_partitions_then_the_elr_ones() -> None:
    c = _elr_then_isr()
    records = unregister_broker_changes(c.ctx(), 3)
    # Kafka 4.1 leaves an unregistered broker in the ELR: only foo-1's ISR changes
    assert [(r.partition_id, r.isr) for r in records] == [(1, (4, 1))]


# -- AlterPartition: an unknown leader recovery state ------------------------------------------

def test_an_unknown_leader_recovery_state_fails_the_whole_request() -> None:
    c = Cluster(foo=[[1, 2, 3], [1, 2, 3]])
    good = alter_isr(c, [1, 2], recovery=0)  # on its own, foo-0 would shrink
    bad = alter_isr(c, [1, 2], partition_id=1, recovery=5).topics[0].partitions[0]
    topic = dataclasses.replace(good.topics[0], partitions=(good.topics[0].partitions[0], bad))
    with pytest.raises(ApiError) as refused:  # nothing written for foo-0 either
        alter_partition(c.ctx(), dataclasses.replace(good, topics=(topic,)))
    assert refused.value.code == ErrorCode.unknown_server_error
    assert refused.value.message == "Value 5 is not a valid leader recovery state"
    assert alter_partition(c.ctx(), good).records  # the same request without foo-1 goes through


def test_the_checks_before_the_recovery_state_still_answer_per_partition() -> None:
    c = Cluster(foo=[[1, 2, 3]])
    # An ISR without its leader is refused before Kafka parses the recovery state.
    result = alter_partition(c.ctx(), alter_isr(c, [2, 3], recovery=5))
    assert partition_errors(result.response) == [ErrorCode.invalid_request] and result.records == []


# -- min.insync.replicas the controller cannot read -----------------------------------------------

@pytest.mark.parametrize("value", ["abc", " 2", "2.0", "", "2147483648"])
def test_a_min_isr_that_integer_parse_int_refuses_fails_the_operation(value: str) -> None:
    c = Cluster(foo=[[1, 2, 3]])
    c.replay([m.ConfigRecordV0(resource_type=TOPIC, resource_name="foo", name="min.insync.replicas", value=value)])
    with pytest.raises(ApiError) as failed:
        fence_broker_changes(c.ctx(), 1)
    assert failed.value.code == ErrorCode.unknown_server_error
    assert failed.value.message == f"min.insync.replicas for topic foo is not an integer: {value!r}"


def test_the_cluster_default_is_read_the_same_way() -> None:
    c = Cluster(foo=[[1, 2, 3]])
    c.replay([m.ConfigRecordV0(resource_type=4, resource_name="", name="min.insync.replicas", value="three")])
    with pytest.raises(ApiError):
        fence_broker_changes(c.ctx(), 1)


@pytest.mark.parametrize("value, expected", [("2", 2), ("+2", 2), ("-1", -1), (None, 7)])
def test_what_integer_parse_int_takes_is_taken(value, expected) -> None:
    assert effective_min_isr("foo", value, 7) == expected


def test_a_readable_min_isr_still_drives_the_elr() -> None:
    c = Cluster(foo=[[1, 2, 3]])
    c.replay([m.ConfigRecordV0(resource_type=TOPIC, resource_name="foo", name="min.insync.replicas", value="+3")])
    c.fence(3)
    assert (c.part().isr, c.part().elr) == ((1, 2), (3,))  # below 3: into the ELR
