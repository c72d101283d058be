"""The simulated broker's lifecycle against our real controller core, in one process.

A ``Cluster`` keeps what Raft would: one active controller (QuorumController with the full
command table), a log the test commits at once, and the committed image replayed from it. Each
tick of injected time, every broker that is not paused polls its lifecycle, the controller
takes what was sent (a heartbeat v1 read as the v2 its command takes, as the network edge
does), runs its periodic tasks, commits, and the answers go back to their brokers.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from engine.broker.broker_lifecycle import (
    BrokerLifecycle,
    BrokerState,
    LifecycleConfig,
    Listener,
    registration_needs_refresh,
    resend_backoff_ms,
    uuid_order,
)
from engine.controller.commands import activation_hooks, all_commands, all_periodic, new_soft_state
from engine.controller.controller_config import ControllerConfig
from engine.controller.feature_control import supported_feature_ranges
from engine.controller.quorum_controller import ControllerOutput, QuorumController
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.net.message_versions import convert_message
from engine.raft.raft_io import LeaderAndEpoch
from engine.raft.raft_log import LogBatch
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i16, i32, i64, protocol_module
from engine.server.controller_server import read_bootstrap_records
from tests.controller_helpers import bootstrapped, new_uuid

NODE = 3000  # the controller's node id
CLUSTER_ID = "lifecycle-test"
TICK_MS = 10
_HEARTBEAT_V2 = protocol_module("broker_heartbeat", 2, "request").BrokerHeartbeatRequest


def config(broker_id: int, incarnation: int = 1, **overrides: Any) -> LifecycleConfig:
    fields: dict[str, Any] = dict(
        broker_id=broker_id, cluster_id=CLUSTER_ID, incarnation_id=new_uuid(1000 * broker_id + incarnation),
        listeners=(Listener("PLAINTEXT", f"broker{broker_id}.local", 9092),), rack=f"rack-{broker_id % 2}",
        supported_features=supported_feature_ranges(), log_dir_ids=(new_uuid(100 * broker_id + 2),
                                                                    new_uuid(100 * broker_id + 1)))
    fields.update(overrides)
    return LifecycleConfig(**fields)


class SimBroker:
    """A broker process around its lifecycle: follows the committed log (unless held back) and,
    as Kafka's BrokerServer, is ready to unfence once the controller says it caught up."""

    def __init__(self, life: BrokerLifecycle):
        self.life = life
        self.metadata_offset: int | None = None  # None: follow the committed log
        self.paused = False
        self.inbox: list[tuple[Any, Any]] = []  # answers that came while paused
        self.sent: list[tuple[int, Any]] = []  # (now_ms, request)


class Cluster:
    def __init__(self, active: bool = True) -> None:
        self.log: list[tuple[int, int, Any]] = []  # (offset, epoch, record)
        self.committed_to = -1
        self.image = MetadataImage()
        cfg = ControllerConfig(node_id=NODE, cluster_id=CLUSTER_ID)
        self.core = QuorumController(cfg, lambda: self.image, read_bootstrap_records(Path("/nonexistent")),
                                     all_commands(), all_periodic(), new_soft_state(cfg), activation_hooks())
        self.now_ms = 0
        self.brokers: dict[int, SimBroker] = {}
        if active:
            self.lead()

    def lead(self) -> None:
        """Raft elects this controller (epoch 1); it claims and bootstraps once that is committed."""
        self.core.handle_leader_change(LeaderAndEpoch(NODE, 1))
        self.log.append((len(self.log), 1, m.NoOpRecordV0()))
        self._settle()

    def _take(self, out: ControllerOutput) -> list[tuple[Any, Any]]:
        for append in out.appends:
            for record in append.records:
                self.log.append((len(self.log), 1, record))
        return list(out.responses)

    def _commit(self) -> None:
        if len(self.log) - 1 == self.committed_to:
            return
        delta = MetadataDelta(self.image)
        batches = []
        for offset, epoch, record in self.log[self.committed_to + 1:]:
            delta.replay(record, offset, epoch, 0)
            batches.append(LogBatch(offset, offset, epoch, 0, False, (record,), 10))
        self.image = delta.apply()
        self.committed_to = len(self.log) - 1
        self.core.handle_commit(batches)

    def _settle(self) -> list[tuple[Any, Any]]:
        """Periodic tasks, then commit everything and release the answers it waited for."""
        answers = self._take(self.core.poll(self.now_ms, len(self.log)))
        while len(self.log) - 1 > self.committed_to:
            self._commit()
            answers += self._take(self.core.poll(self.now_ms, len(self.log)))
        return answers

    def submit(self, api_key: int, request: Any, token: Any) -> list[tuple[Any, Any]]:
        return self._take(self.core.submit(self.now_ms, len(self.log), api_key, request, token))

    def add(self, broker_id: int, previous_broker_epoch: int = -1, **overrides: Any) -> SimBroker:
        broker = SimBroker(BrokerLifecycle(config(broker_id, **overrides)))
        self.brokers[broker_id] = broker
        broker.life.start(self.now_ms, previous_broker_epoch)
        return broker

    def tick(self) -> None:
        self.now_ms += TICK_MS
        answers: list[tuple[Any, Any]] = []
        for broker in self.brokers.values():
            if broker.paused:
                continue
            life = broker.life
            life.metadata_offset(self.committed_to if broker.metadata_offset is None else broker.metadata_offset)
            if life.state is BrokerState.RECOVERY:
                life.set_ready_to_unfence(self.now_ms)
            for request in life.poll(self.now_ms):
                broker.sent.append((self.now_ms, request))
                api_key = int(request.__api_key__)
                wire = convert_message(request, _HEARTBEAT_V2) if api_key == 63 else request
                answers += self.submit(api_key, wire, (broker, request))
        answers += self._settle()
        for (broker, request), response in answers:
            broker.inbox.append((request, response))
        for broker in self.brokers.values():
            if not broker.paused:
                for request, response in broker.inbox:
                    broker.life.handle_response(request, response, self.now_ms)
                broker.inbox.clear()

    def run(self, ms: int) -> None:
        for _ in range(ms // TICK_MS):
            self.tick()

    def run_until(self, condition: Any, limit_ms: int = 60_000) -> None:
        end = self.now_ms + limit_ms
        while not condition():
            assert self.now_ms < end, "condition not reached in time"
            self.tick()

    def registration(self, broker_id: int) -> Any:
        return self.image.cluster.brokers[broker_id]


def heartbeats(broker: SimBroker) -> list[tuple[int, Any]]:
    return [(t, r) for t, r in broker.sent if int(r.__api_key__) == 63]


def registrations(broker: SimBroker) -> list[tuple[int, Any]]:
    return [(t, r) for t, r in broker.sent if int(r.__api_key__) == 62]


def running(cluster: Cluster, *broker_ids: int) -> None:
    for broker_id in broker_ids:
        cluster.add(broker_id)
    cluster.run_until(lambda: all(cluster.brokers[b].life.state is BrokerState.RUNNING for b in broker_ids))


# -- the way up ----------------------------------------------------------------------------------

def test_registration_then_starting_caught_up_recovery_and_running() -> None:
    c = Cluster()
    broker = c.add(1)
    assert broker.life.state is BrokerState.STARTING and broker.life.broker_epoch == -1
    c.tick()
    (_, reg), = broker.sent
    assert int(reg.__api_key__) == 62 and reg.__version__ == 4
    assert reg.broker_id == 1 and reg.cluster_id == CLUSTER_ID and reg.incarnation_id == new_uuid(1001)
    assert [(lst.name, lst.host, lst.port, lst.security_protocol) for lst in reg.listeners] == \
        [("PLAINTEXT", "broker1.local", 9092, 0)]
    assert reg.rack == "rack-1" and reg.previous_broker_epoch == -1 and not reg.is_migrating_zk_broker
    assert list(reg.log_dirs) == [new_uuid(101), new_uuid(102)]  # sorted, as Kafka sends them
    assert {f.name: (f.min_supported_version, f.max_supported_version) for f in reg.features} == \
        supported_feature_ranges()
    # the epoch is the offset of the RegisterBrokerRecord
    register_offset = next(o for o, _, r in c.log if r.type_name == "REGISTER_BROKER_RECORD")
    assert broker.life.broker_epoch == register_offset and broker.life.registered
    assert c.registration(1).fenced and c.registration(1).incarnation_id == new_uuid(1001)

    c.run_until(lambda: broker.life.state is not BrokerState.STARTING)
    assert broker.life.state is BrokerState.RECOVERY and broker.life.caught_up
    first = heartbeats(broker)[0]
    assert first[0] == 20 and first[1].want_fence and first[1].broker_epoch == register_offset  # at once

    c.run_until(lambda: broker.life.state is BrokerState.RUNNING)
    assert broker.life.unfenced and not c.registration(1).fenced
    assert not heartbeats(broker)[-1][1].want_fence
    # RUNNING: one heartbeat per broker.heartbeat.interval.ms
    count = len(heartbeats(broker))
    c.run(6000)
    times = [t for t, _ in heartbeats(broker)[count - 1:]]
    assert [b - a for a, b in zip(times, times[1:])] == [2000, 2000, 2000]


def test_starting_heartbeats_every_10_ms_and_a_metadata_offset_behind_the_registration_keeps_it_fenced() -> None:
    c = Cluster()
    broker = c.add(1)
    broker.metadata_offset = -1  # has not loaded any metadata yet
    c.run(500)
    assert broker.life.state is BrokerState.STARTING and c.registration(1).fenced
    times = [t for t, _ in heartbeats(broker)]
    assert len(times) > 40 and {b - a for a, b in zip(times, times[1:])} == {10}
    assert all(r.current_metadata_offset == -1 for _, r in heartbeats(broker))

    # ready to serve but still one record short of its registration: the controller keeps it fenced
    broker.metadata_offset = broker.life.broker_epoch - 1
    broker.life.set_ready_to_unfence(c.now_ms)
    c.run(500)
    assert broker.life.state is BrokerState.STARTING and c.registration(1).fenced
    assert not heartbeats(broker)[-1][1].want_fence

    broker.metadata_offset = None  # catches up with the log
    c.run_until(lambda: broker.life.state is BrokerState.RUNNING)
    assert not c.registration(1).fenced


def test_a_broker_that_is_not_ready_to_unfence_stays_in_recovery() -> None:
    c = Cluster()
    life = BrokerLifecycle(config(1))
    life.start(c.now_ms)
    seen: list[Any] = []
    for _ in range(300):  # drive it by hand: never set_ready_to_unfence
        c.now_ms += TICK_MS
        life.metadata_offset(c.committed_to)
        for request in life.poll(c.now_ms):
            seen.append(request)
            wire = convert_message(request, _HEARTBEAT_V2) if int(request.__api_key__) == 63 else request
            answers = c.submit(int(request.__api_key__), wire, request) + c._settle()
            for token, response in answers:
                life.handle_response(token, response, c.now_ms)
    assert life.state is BrokerState.RECOVERY and c.image.cluster.brokers[1].fenced
    assert all(r.want_fence for r in seen if int(r.__api_key__) == 63)


# -- failures and retries --------------------------------------------------------------------------

def test_registration_is_retried_with_backoff_until_a_controller_takes_it() -> None:
    c = Cluster(active=False)  # no active controller yet: NOT_CONTROLLER
    broker = c.add(1)
    c.run(1600)
    times = [t for t, _ in registrations(broker)]
    assert [b - a for a, b in zip(times, times[1:])] == [100, 200, 400, 800]
    assert broker.life.state is BrokerState.STARTING and broker.life.failed_attempts == 5
    c.lead()
    c.run_until(lambda: broker.life.state is BrokerState.RUNNING)
    assert broker.life.failed_attempts == 0 and not c.registration(1).fenced


def test_an_inconsistent_cluster_id_is_retried_and_never_registers() -> None:
    c = Cluster()
    broker = c.add(1, cluster_id="another-cluster")
    c.run(35_000)
    assert 1 not in c.image.cluster.brokers and not broker.life.registered
    times = [t for t, _ in registrations(broker)]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert gaps[:7] == [100, 200, 400, 800, 1600, 3200, 6400] and set(gaps[7:]) == {9000}  # capped


def test_no_registration_within_the_initial_timeout_shuts_the_broker_down() -> None:
    life = BrokerLifecycle(config(1))
    life.start(0)
    now = 0
    while now is not None and life.state is not BrokerState.SHUTTING_DOWN:
        for request in life.poll(now):
            life.handle_failure(request, now)
        shut_at, now = now, life.next_poll_ms(now)
    assert shut_at == 60_000 and "register" in (life.shutdown_reason or "")
    assert now is None and life.poll(shut_at + 10_000) == [] and life.next_poll_ms(shut_at) is None


def test_one_request_in_flight_at_most_and_an_answer_for_another_is_ignored() -> None:
    life = BrokerLifecycle(config(1))
    life.start(0)
    (reg,) = life.poll(0)
    assert life.in_flight is reg and life.poll(5) == [] and life.poll(4000) == []
    assert life.next_poll_ms(100) == 4500  # only the request timeout is due
    registered = protocol_module("broker_registration", 4, "response").BrokerRegistrationResponse
    answer = registered(throttle_time=0, error_code=ErrorCode.none, broker_epoch=7)
    assert not life.handle_response(object(), answer, 10)  # not the request in flight
    assert life.handle_response(reg, answer, 10) and life.broker_epoch == 7
    assert not life.handle_response(reg, answer, 11)  # a duplicate answer
    (beat,) = life.poll(10)
    life.set_ready_to_unfence(12)  # due now, while the heartbeat is in flight: sent once it is answered
    assert life.poll(12) == [] and life.poll(50) == []
    beat_answer = protocol_module("broker_heartbeat", 1, "response").BrokerHeartbeatResponse(
        throttle_time=0, error_code=ErrorCode.none, is_caught_up=False, is_fenced=True, should_shut_down=False)
    life.handle_response(beat, beat_answer, 60)
    (second,) = life.poll(60)  # at once, not after STARTING's 10 ms
    assert not second.want_fence
    # unanswered for half the session timeout: a failure, then the backoff; its late answer is ignored
    assert life.poll(60 + 4499) == []
    assert life.next_poll_ms(60 + 4499) == 60 + 4500
    assert life.poll(60 + 4500) == [] and life.in_flight is None and life.failed_attempts == 1
    assert not life.handle_response(second, beat_answer, 60 + 4501)
    assert life.next_poll_ms(60 + 4501) == 60 + 4500 + 100
    (third,) = life.poll(60 + 4600)
    assert int(third.__api_key__) == 63  # still a heartbeat: no re-registration


def test_a_wrong_answer_type_is_a_failure_and_a_failure_never_sends_at_once() -> None:
    life = BrokerLifecycle(config(1))
    life.start(0)
    (reg,) = life.poll(0)
    life.set_ready_to_unfence(1)  # due while in flight
    beat_answer = protocol_module("broker_heartbeat", 1, "response").BrokerHeartbeatResponse(
        throttle_time=0, error_code=ErrorCode.none, is_caught_up=True, is_fenced=False, should_shut_down=False)
    assert life.handle_response(reg, beat_answer, 5)  # a heartbeat answer to a registration
    assert not life.registered and life.failed_attempts == 1
    assert life.poll(5) == [] and life.next_poll_ms(5) == 105  # backs off despite the due send
    life.handle_failure(life.poll(105)[0], 110)
    assert life.next_poll_ms(110) == 310


def test_stale_broker_epoch_is_retried_as_a_heartbeat_as_kafka_does() -> None:
    """Another incarnation took the id (after the first's session expired): the old one's
    heartbeats get STALE_BROKER_EPOCH, and it keeps heartbeating with backoff, never re-registering."""
    c = Cluster()
    running(c, 1)
    old = c.brokers[1]
    old.paused = True
    c.run(10_000)  # the session expires
    assert c.registration(1).fenced
    new = c.add(1, incarnation=2)  # replaces brokers[1] in the tick loop
    c.run_until(lambda: new.life.state is BrokerState.RUNNING)
    assert new.life.broker_epoch > old.life.broker_epoch
    c.brokers[2] = old  # the old process wakes up as if nothing happened
    old.paused = False
    registrations_before = len(registrations(old))
    c.run(3000)
    assert len(registrations(old)) == registrations_before and old.life.failed_attempts >= 3
    times = [t for t, _ in heartbeats(old)][-3:]
    assert times[2] - times[1] == 2 * (times[1] - times[0])  # doubling backoff
    assert old.life.state is BrokerState.RUNNING and c.registration(1).epoch == new.life.broker_epoch


def test_resend_registration_keeps_the_epoch_of_the_same_incarnation() -> None:
    c = Cluster()
    running(c, 1)
    broker = c.brokers[1]
    epoch = broker.life.broker_epoch
    broker.life.resend_registration(c.now_ms)
    c.run(100)
    assert len(registrations(broker)) == 2 and broker.life.broker_epoch == epoch
    assert not c.registration(1).fenced and broker.life.state is BrokerState.RUNNING


def test_a_registration_without_directories_needs_a_refresh_once_the_version_has_them() -> None:
    """Kafka's BrokerRegistrationTracker: a broker registered before 3.7-IV2 (no log dirs) is
    registered again, with its directories, once metadata.version reaches 3.7-IV2."""
    image = bootstrapped("3.6-IV2")
    assert not registration_needs_refresh(image, 1)  # not registered yet: the lifecycle is sending it
    delta = MetadataDelta(image)
    delta.replay(m.RegisterBrokerRecordV2(broker_id=i32(1), is_migrating_zk_broker=False, incarnation_id=new_uuid(7),
                                          broker_epoch=i64(20), end_points=(), features=(), rack=None, fenced=True,
                                          in_controlled_shutdown=False), 20)
    old = delta.apply()
    assert not registration_needs_refresh(old, 1)  # 3.6: no directories to have
    delta = MetadataDelta(old)
    delta.replay(m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(17)), 21)  # 3.7-IV2
    assert registration_needs_refresh(delta.apply(), 1)


# -- the controller's clock ---------------------------------------------------------------------

def test_a_paused_broker_is_fenced_by_session_expiry_and_unfenced_when_it_resumes() -> None:
    c = Cluster()
    running(c, 1, 2)
    paused = c.brokers[1]
    paused.paused = True  # SIGSTOP: nothing sent, nothing read
    c.run(8000)
    assert not c.registration(1).fenced  # within broker.session.timeout.ms (9000)
    c.run(2000)
    assert c.registration(1).fenced and not c.registration(2).fenced
    assert paused.life.state is BrokerState.RUNNING  # it cannot know: it is stopped
    paused.paused = False
    c.run(100)
    assert not c.registration(1).fenced and paused.life.state is BrokerState.RUNNING


# -- controlled shutdown and the next start ------------------------------------------------------

def _create_topic(c: Cluster, name: str, replicas: tuple[int, ...]) -> None:
    module = protocol_module("create_topics", 7, "request")
    topic = module.CreatableTopic(name=name, num_partitions=i32(-1), replication_factor=i16(-1),
                                  assignments=(module.CreatableReplicaAssignment(
                                      partition_index=i32(0), broker_ids=tuple(i32(b) for b in replicas)),),
                                  configs=())
    c.submit(19, module.CreateTopicsRequest(topics=(topic,), timeout=i32(30000), validate_only=False), "create")
    c._settle()


def _partition(c: Cluster, name: str) -> Any:
    return c.image.topics.by_id[c.image.topics.by_name[name]].partitions[0]


def test_controlled_shutdown_moves_leadership_away_then_shuts_down() -> None:
    c = Cluster()
    running(c, 1, 2)
    _create_topic(c, "t", (1, 2))
    assert _partition(c, "t").leader == 1
    broker = c.brokers[1]
    broker.life.begin_controlled_shutdown(c.now_ms)
    assert broker.life.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN
    before = len(heartbeats(broker))
    c.tick()
    (t0, first), = heartbeats(broker)[before:]
    assert first.want_shut_down and t0 == c.now_ms  # at once
    assert broker.life.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN  # it still leads: not yet
    assert c.registration(1).in_controlled_shutdown
    c.run_until(lambda: broker.life.state is BrokerState.SHUTTING_DOWN, limit_ms=5000)
    assert broker.life.shutdown_reason == "controlled shutdown complete"
    t1 = heartbeats(broker)[before + 1][0]
    assert t1 - t0 == 50  # after the first "not yet", the next comes sooner than the interval
    assert _partition(c, "t").leader == 2
    sent = len(broker.sent)
    c.run(5000)
    assert len(broker.sent) == sent  # nothing after SHUTTING_DOWN

    # The next incarnation names the epoch of that clean shutdown. As in Kafka 4.1.2 (whose
    # BrokerHeartbeatTracker keeps the old epoch's contact time), it is refused
    # DUPLICATE_BROKER_REGISTRATION until the old session expires, retrying with backoff.
    epoch = broker.life.broker_epoch
    restarted = c.add(1, incarnation=2, previous_broker_epoch=epoch)
    c.run_until(lambda: restarted.life.state is BrokerState.RUNNING, limit_ms=20_000)
    sent = registrations(restarted)
    assert len(sent) > 1 and restarted.life.failed_attempts == 0
    assert {(r.previous_broker_epoch, r.incarnation_id) for _, r in sent} == {(epoch, new_uuid(1002))}
    assert restarted.life.broker_epoch > epoch and not c.registration(1).fenced
    assert c.registration(1).incarnation_id == new_uuid(1002)


def test_controlled_shutdown_outside_running_shuts_down_at_once() -> None:
    life = BrokerLifecycle(config(1))
    life.start(0)
    life.begin_controlled_shutdown(1)
    assert life.state is BrokerState.SHUTTING_DOWN and life.poll(2) == []
    idle = BrokerLifecycle(config(2))
    idle.begin_controlled_shutdown(0)
    assert idle.state is BrokerState.SHUTTING_DOWN


# -- offline log directories ---------------------------------------------------------------------

def test_offline_dirs_are_reported_at_once_and_acknowledged() -> None:
    c = Cluster()
    running(c, 1)
    broker = c.brokers[1]
    failed = new_uuid(101)
    before = len(heartbeats(broker))
    broker.life.set_offline_dirs([failed], c.now_ms)
    assert broker.life.offline_dirs == {failed: False}
    c.tick()
    (_, beat), = heartbeats(broker)[before:]
    assert list(beat.offline_log_dirs) == [failed]
    assert broker.life.offline_dirs == {failed: True}
    assert list(c.registration(1).directories) == [new_uuid(102)]
    c.run(35_000)  # acknowledged: no shutdown at log.dir.failure.timeout.ms
    assert broker.life.state is BrokerState.RUNNING
    assert list(heartbeats(broker)[-1][1].offline_log_dirs) == [failed]  # still reported


def test_an_offline_dir_never_acknowledged_shuts_the_broker_down() -> None:
    c = Cluster()
    running(c, 1)
    broker = c.brokers[1]
    broker.paused = True  # stands for a controller that does not answer
    broker.life.set_offline_dirs([new_uuid(102)], c.now_ms)
    start = c.now_ms
    life = broker.life
    now = start
    while now is not None and life.state is not BrokerState.SHUTTING_DOWN:
        for request in life.poll(now):
            life.handle_failure(request, now)
        shut_at, now = now, life.next_poll_ms(now)
    assert shut_at == start + 30_000 and "offline log dir" in (life.shutdown_reason or "")


# -- Kafka's helpers, as facts ----------------------------------------------------------------------

def test_backoff_is_kafkas_exponential_backoff() -> None:
    # ExponentialBackoff(100, 2, 9000, 0.0).backoff(0..9) in Kafka 4.1.2 (jshell)
    assert [resend_backoff_ms(n, 9000) for n in range(10)] == [100, 200, 400, 800, 1600, 3200, 6400, 9000, 9000, 9000]
    assert resend_backoff_ms(3, 9000, 0.0) == 784 and resend_backoff_ms(3, 9000, 0.999999) == 815
    assert resend_backoff_ms(5, 50) == 100  # a max below the initial interval: the initial one
    jittered = BrokerLifecycle(config(1), jitter=lambda: 0.0)  # the lowest draw: 2 % sooner
    jittered.start(0)
    jittered.handle_failure(jittered.poll(0)[0], 0)
    assert jittered.next_poll_ms(0) == 98


def test_log_dirs_sort_as_javas_uuid_compare() -> None:
    high = uuid.UUID(int=1 << 127)  # negative most significant bits in Java: sorts first
    low = uuid.UUID(int=(1 << 64) + 5)
    assert sorted([low, high], key=uuid_order) == [high, low]
