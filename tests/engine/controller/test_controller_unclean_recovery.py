"""KIP-966's unclean recovery (engine/controller/unclean_recovery.py), in the controller's rhythm:
the image leaves a partition leaderless, the periodic task asks the live replicas, answers
come in, the clock moves, the task elects, the records replay, the state is checked.

The cluster is built by replaying the records the other managers write (the ``Cluster`` of
the ReplicationControl tests), so each leaderless state is one Kafka's controller reaches.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from engine.common.errors import ConfigError
from engine.controller import commands
from engine.controller.controller_config import ControllerConfig
from engine.controller.controller_result import ControllerResult
from engine.controller.partition_change import Election, partition_change
from engine.controller.unclean_recovery import (
    BALANCED, MANUAL, PROACTIVE, PROACTIVE_WINDOW_MS, REQUERY_INTERVAL_MS, SCAN_INTERVAL_MS, LogInfo, LogQuery,
    UncleanRecoveryState, new_soft_state, on_activation, recover, recovery_strategy)
from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i32
from tests.engine.controller.test_controller_replication import Cluster

RECOVERING = 1
T0 = 1_000_000
TIMEOUT_MS = 60_000


def config(strategy: str = "", enabled: bool = True, **kwargs) -> ControllerConfig:
    return ControllerConfig(unclean_recovery_manager_enabled=enabled, unclean_recovery_strategy=strategy,
                            unclean_recovery_timeout_ms=TIMEOUT_MS, **kwargs)


class Recovery:
    """A cluster plus the active controller's soft state, polled at chosen times."""

    def __init__(self, cluster: Cluster, cfg: ControllerConfig):
        self.c = cluster
        self.config = cfg
        self.soft = new_soft_state(cfg)
        self.state: UncleanRecoveryState = self.soft.unclean_recovery

    def poll(self, now_ms: int) -> tuple[list, list[LogQuery]]:
        """One poll: the records written (and replayed) and the questions to send."""
        result = recover(self.c.ctx(now_ms=now_ms, config=self.config, soft=self.soft))
        records = [] if result is None else list(result.records)
        self.c.replay(records)
        return records, self.state.take_queries()

    def answer(self, broker_id: int, log_end_offset: int, last_epoch: int | None = None,
               broker_epoch: int | None = None, leader_epoch: int | None = None) -> None:
        p = self.c.part()
        self.state.add_answers([LogInfo(
            self.c.topic_id(), 0, broker_id, self.c.epoch(broker_id) if broker_epoch is None else broker_epoch,
            p.leader_epoch if leader_epoch is None else leader_epoch,
            p.leader_epoch if last_epoch is None else last_epoch, log_end_offset)])


def lagging_first_cluster() -> Cluster:
    """Replicas [1, 2, 3], min ISR 2, ELR on. Broker 1 dies first (it lags), then 3, then the
    leader 2; brokers 1 and 3 come back after unclean shutdowns, 2 never does. The partition
    is leaderless: ISR [], ELR [2] (fenced: unusable), last-known leader 2."""
    c = Cluster(elr=True, configs={(2, "foo"): {"min.insync.replicas": "2"}}, foo=[[1, 2, 3]])
    c.fence(1)
    c.fence(3)
    c.fence(2)
    for broker_id in (1, 3):
        c.restart(broker_id, clean=False)
        c.unfence(broker_id)
    p = c.part()
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (-1, (), (2,), (2,))
    return c


def proactive_round() -> tuple[Cluster, Recovery]:
    """The lagging-first cluster under Proactive, after the poll that starts the round at T0."""
    c = lagging_first_cluster()
    r = Recovery(c, config(PROACTIVE))
    r.poll(T0)
    return c, r


def kafkas_unclean_choice(c: Cluster) -> int:
    record = partition_change(c.ctx(), c.image.topics.topic("foo"), 0, election=Election.UNCLEAN)
    return record.leader


# -- the decision -------------------------------------------------------------------------------

def test_the_replica_with_the_most_data_wins_where_kafka_would_elect_the_first_live_one():
    c = lagging_first_cluster()
    assert kafkas_unclean_choice(c) == 1  # Kafka's unclean election: the first live replica
    r = Recovery(c, config(PROACTIVE))
    records, queries = r.poll(T0)
    assert records == []
    p = c.part()
    assert sorted(q.broker_id for q in queries) == [1, 3]
    assert {(q.broker_epoch, q.leader_epoch, q.topic_name) for q in queries} == {
        (c.epoch(q.broker_id), p.leader_epoch, "foo") for q in queries}
    r.answer(1, log_end_offset=10)
    r.answer(3, log_end_offset=25)
    # Proactive: broker 2 may still come back, so the answers wait out the window
    assert r.poll(T0 + PROACTIVE_WINDOW_MS - 1) == ([], [])
    records, _ = r.poll(T0 + PROACTIVE_WINDOW_MS)
    assert len(records) == 1 and records[0].leader == 3
    p = c.part()
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (3, (3,), (), ())
    assert p.leader_recovery_state == RECOVERING
    assert r.state.tasks == {} and r.state.elected == 1
    assert r.poll(T0 + 10 * PROACTIVE_WINDOW_MS) == ([], [])  # a partition with a leader is left alone


def test_the_last_epoch_counts_before_the_log_end_offset():
    c, r = proactive_round()
    epoch = c.part().leader_epoch
    r.answer(1, log_end_offset=100, last_epoch=epoch - 2)  # longer, but a stale branch of the log
    r.answer(3, log_end_offset=50, last_epoch=epoch - 1)
    records, _ = r.poll(T0 + PROACTIVE_WINDOW_MS)
    assert records[0].leader == 3


def test_a_tie_goes_to_the_replica_first_in_the_assignment():
    c, r = proactive_round()
    r.answer(3, log_end_offset=7)
    r.answer(1, log_end_offset=7)
    records, _ = r.poll(T0 + PROACTIVE_WINDOW_MS)
    assert records[0].leader == 1


def test_every_replica_answering_decides_at_once():
    c = lagging_first_cluster()
    c.restart(2, clean=False)  # broker 2 back but still fenced: the round asks only 1 and 3
    c.unfence(2)  # unfenced: the last known leader is elected by Kafka's own rule, no recovery
    assert c.part().leader == 2
    r = Recovery(c, config(PROACTIVE))
    assert r.poll(T0) == ([], [])
    # a leaderless partition whose three replicas are live: all answer, no window to wait
    c.replay([change(c, leader=-1, isr=(), elr=(), last_known_elr=(1, 3))])
    now = T0 + SCAN_INTERVAL_MS  # the image is scanned once a second while no round runs
    _, queries = r.poll(now)
    assert sorted(q.broker_id for q in queries) == [1, 2, 3]
    for broker_id, end in ((1, 5), (2, 9), (3, 8)):
        r.answer(broker_id, log_end_offset=end)
    records, _ = r.poll(now + 1)
    assert records[0].leader == 2 and c.part().isr == (2,)


def change(c: Cluster, **fields) -> m.PartitionChangeRecordV2:
    values = dict(partition_id=i32(0), topic_id=c.topic_id(), leader=i32(fields.pop("leader", -2)))
    for name, rename in (("isr", "isr"), ("elr", "eligible_leader_replicas"), ("last_known_elr", "last_known_elr")):
        if name in fields:
            values[rename] = tuple(i32(b) for b in fields.pop(name))
    if "recovery" in fields:
        values["leader_recovery_state"] = i8(fields.pop("recovery"))
    return m.PartitionChangeRecordV2(**values)


# -- the round: asking, answers that do not count ------------------------------------------------

def test_unanswered_replicas_are_asked_again_after_the_interval_and_late_comers_are_asked_too():
    c = lagging_first_cluster()
    r = Recovery(c, config(PROACTIVE))
    _, first = r.poll(T0)
    assert r.poll(T0 + REQUERY_INTERVAL_MS - 1) == ([], [])
    _, again = r.poll(T0 + REQUERY_INTERVAL_MS)
    assert {q.broker_id for q in again} == {q.broker_id for q in first}
    r.answer(3, log_end_offset=4)
    _, later = r.poll(T0 + 2 * REQUERY_INTERVAL_MS)
    assert [q.broker_id for q in later] == [1]  # 3 answered: not asked again


def test_a_stale_answer_is_rejected_and_the_replica_asked_again():
    c, r = proactive_round()
    r.answer(3, log_end_offset=99, leader_epoch=c.part().leader_epoch - 1)  # its metadata is behind
    r.answer(1, log_end_offset=99, broker_epoch=c.epoch(1) - 1)  # answered before it restarted
    records, queries = r.poll(T0 + 1)
    assert records == [] and sorted(q.broker_id for q in queries) == [1, 3]
    records, _ = r.poll(T0 + PROACTIVE_WINDOW_MS)
    assert records == []  # nobody valid answered: no election, however long the wait
    r.answer(1, log_end_offset=3)
    records, _ = r.poll(T0 + PROACTIVE_WINDOW_MS + 1)  # after the window the first answer decides
    assert records[0].leader == 1


def test_an_answer_from_a_broker_that_restarted_since_does_not_count():
    c, r = proactive_round()
    r.answer(3, log_end_offset=50)
    r.answer(1, log_end_offset=10)
    c.restart(3, clean=False)  # 3 re-registers (new epoch, fenced): its answer is void
    records, _ = r.poll(T0 + PROACTIVE_WINDOW_MS)
    assert records[0].leader == 1


def test_the_round_ends_when_the_partition_gets_a_leader_by_other_means():
    c, r = proactive_round()
    r.answer(1, log_end_offset=10)
    c.restart(2, clean=True)
    c.unfence(2)  # the last known leader is back and elected
    assert c.part().leader == 2
    assert r.poll(T0 + PROACTIVE_WINDOW_MS) == ([], [])
    assert r.state.tasks == {}


# -- strategies ---------------------------------------------------------------------------------

def test_balanced_waits_for_the_last_known_leader():
    c = lagging_first_cluster()  # the last known leader (2) is gone
    r = Recovery(c, config(BALANCED))
    assert r.poll(T0) == ([], [])
    assert r.poll(T0 + 10 * TIMEOUT_MS) == ([], [])
    assert r.state.tasks == {}


def test_balanced_elects_at_the_timeout_once_every_last_holder_answered():
    c = lagging_first_cluster()
    c.replay([change(c, elr=(), last_known_elr=(1, 3))])  # last holders 1 and 3, both live; 2 dead
    r = Recovery(c, config(BALANCED))
    _, queries = r.poll(T0)
    assert sorted(q.broker_id for q in queries) == [1, 3]
    r.answer(3, log_end_offset=20)
    assert r.poll(T0 + TIMEOUT_MS)[0] == []  # 1 is a last holder and has not answered
    r.answer(1, log_end_offset=30)
    assert r.poll(T0 + TIMEOUT_MS - 1)[0] == []  # the timeout has not passed (2 may come back)
    records, _ = r.poll(T0 + TIMEOUT_MS)
    assert records[0].leader == 1 and c.part().leader_recovery_state == RECOVERING


def test_proactive_window_is_capped_by_the_timeout():
    c = lagging_first_cluster()
    r = Recovery(c, dataclass_replace(config(PROACTIVE), unclean_recovery_timeout_ms=1000))
    r.poll(T0)
    r.answer(1, log_end_offset=1)
    assert r.poll(T0 + 999)[0] == []
    assert r.poll(T0 + 1000)[0][0].leader == 1


def dataclass_replace(cfg: ControllerConfig, **changes) -> ControllerConfig:
    import dataclasses
    return dataclasses.replace(cfg, **changes)


def test_manual_never_starts_a_round_and_disabled_does_nothing():
    for cfg in (config(MANUAL), config(PROACTIVE, enabled=False)):
        r = Recovery(lagging_first_cluster(), cfg)
        assert r.poll(T0) == ([], [])
        assert r.poll(T0 + 10 * TIMEOUT_MS) == ([], [])


def test_the_strategy_comes_from_the_topic_then_the_controller_then_unclean_leader_election():
    c = lagging_first_cluster()
    assert recovery_strategy(c.ctx(config=config()), "foo") == BALANCED
    assert recovery_strategy(c.ctx(config=config(unclean_leader_election_enable=True)), "foo") == PROACTIVE
    assert recovery_strategy(c.ctx(config=config(MANUAL, unclean_leader_election_enable=True)), "foo") == MANUAL
    c.replay([m.ConfigRecordV0(resource_type=i8(2), resource_name="foo", name="unclean.leader.election.enable",
                               value="true")])
    assert recovery_strategy(c.ctx(config=config()), "foo") == PROACTIVE
    c.replay([m.ConfigRecordV0(resource_type=i8(4), resource_name="", name="unclean.recovery.strategy",
                               value="manual")])
    assert recovery_strategy(c.ctx(config=config(PROACTIVE)), "foo") == MANUAL


def test_without_elr_an_isr_of_fenced_replicas_is_recovered_too():
    c = Cluster(release="3.6-IV2", foo=[[1, 2, 3]])
    for broker_id in (1, 3, 2):
        c.fence(broker_id)
    assert (c.part().leader, c.part().isr) == (-1, (2,))  # the last ISR member stays in the ISR
    c.restart(1, clean=False)
    c.unfence(1)
    r = Recovery(c, config(PROACTIVE))
    _, queries = r.poll(T0)
    assert [q.broker_id for q in queries] == [1]
    r.answer(1, log_end_offset=4)
    records, _ = r.poll(T0 + PROACTIVE_WINDOW_MS)
    assert records[0].leader == 1
    p = c.part()
    assert (p.leader, p.isr, p.leader_recovery_state) == (1, (1,), RECOVERING)


# -- the controller's wiring ---------------------------------------------------------------------

def test_the_manager_is_in_the_table_and_a_new_activation_starts_afresh():
    assert recover in commands.all_periodic()
    soft = commands.new_soft_state(config())
    assert isinstance(soft.unclean_recovery, UncleanRecoveryState)
    r = Recovery(lagging_first_cluster(), config(PROACTIVE))
    r.poll(T0)
    r.answer(1, log_end_offset=1)
    on_activation(r.soft, r.c.image, T0)
    assert r.state.tasks == {} and r.state.inbox == []
    assert recover(r.c.ctx(config=config(), soft=SimpleNamespace())) is None  # no soft state: nothing


def test_the_settings_parse_by_kafka_names():
    cfg = ControllerConfig.from_properties(1, {"unclean.recovery.manager.enabled": "true",
                                               "unclean.recovery.strategy": "proactive",
                                               "unclean.recovery.timeout.ms": "1500"})
    assert (cfg.unclean_recovery_manager_enabled, cfg.unclean_recovery_strategy,
            cfg.unclean_recovery_timeout_ms) == (True, PROACTIVE, 1500)
    default = ControllerConfig.from_properties(1, {})
    assert (default.unclean_recovery_manager_enabled, default.unclean_recovery_strategy,
            default.unclean_recovery_timeout_ms) == (False, "", 300000)
    with pytest.raises(ConfigError):
        ControllerConfig.from_properties(1, {"unclean.recovery.strategy": "eager"})


def test_a_result_is_only_returned_with_records():
    r = Recovery(lagging_first_cluster(), config(PROACTIVE))
    assert recover(r.c.ctx(now_ms=T0, config=r.config, soft=r.soft)) is None
    r.answer(3, log_end_offset=2)
    result = recover(r.c.ctx(now_ms=T0 + PROACTIVE_WINDOW_MS, config=r.config, soft=r.soft))
    assert isinstance(result, ControllerResult) and result.response is None and len(result.records) == 1


def test_switching_unclean_leader_election_on_turns_balanced_into_proactive():
    """KIP-966's intent-based setting: the waiting Balanced round becomes a Proactive one."""
    c = lagging_first_cluster()
    r = Recovery(c, config())
    assert r.poll(T0) == ([], [])  # Balanced: the last known leader is gone, wait
    c.replay([m.ConfigRecordV0(resource_type=i8(2), resource_name="foo", name="unclean.leader.election.enable",
                               value="true")])
    now = T0 + SCAN_INTERVAL_MS
    _, queries = r.poll(now)
    assert sorted(q.broker_id for q in queries) == [1, 3]
    r.answer(1, log_end_offset=10)
    r.answer(3, log_end_offset=30)
    records, _ = r.poll(now + PROACTIVE_WINDOW_MS)
    assert records[0].leader == 3


def test_a_partition_change_during_the_round_starts_a_new_round():
    c, r = proactive_round()
    r.answer(3, log_end_offset=30)
    c.replay([change(c, elr=())])  # the unusable ELR member leaves: a new partition epoch
    assert r.poll(T0 + 1) == ([], [])
    assert r.state.tasks == {}
    now = T0 + SCAN_INTERVAL_MS
    _, queries = r.poll(now)  # a new round, its answers asked afresh
    assert sorted(q.broker_id for q in queries) == [1, 3]
    assert r.poll(now + PROACTIVE_WINDOW_MS)[0] == []  # the old answer does not count


def test_kafkas_unclean_election_is_off_while_the_recovery_manager_is_on() -> None:
    """KIP-966: the recovery manager replaces Kafka's unclean election (it elects the replica with
    the most data); without it the topic's unclean.leader.election.enable decides as in Kafka."""
    from engine.controller.controller_config import ControllerConfig
    from engine.controller.partition_change import unclean_election_enabled
    from engine.records import metadata_records as records
    from engine.records.kio_codec import i8
    from tests.controller_helpers import bootstrapped, context, replayed as replay_records
    from engine.controller.controller_result import ControllerResult

    image = replay_records(bootstrapped(), ControllerResult([records.ConfigRecordV0(
        resource_type=i8(2), resource_name="t", name="unclean.leader.election.enable", value="true")], None))
    assert unclean_election_enabled(context(image), "t")
    on = ControllerConfig(unclean_recovery_manager_enabled=True)
    assert not unclean_election_enabled(context(image, config=on), "t")
