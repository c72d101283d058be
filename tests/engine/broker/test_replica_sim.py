"""The simulated replicas against our real controller core, in one process (no sockets).

``ReplicaCluster`` extends the lifecycle tests' Cluster (one active QuorumController, a log it
commits at once, the image replayed from it): each tick of injected time every running broker
polls its lifecycle, its ReplicaSim and its DirAssignments; Fetches go straight to the leader
broker's ReplicaSim, AlterPartition and AssignReplicasToDirs to the controller, whose answers
come back once committed. A broker can be paused (killed: nothing sent, nothing answered) or
have its image held back (its metadata lags the controller's).
"""

from __future__ import annotations

import datetime
import random
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

import tests.engine.broker.test_broker_lifecycle as lc
from engine.broker.broker_lifecycle import BrokerState
from engine.broker.dir_assignments import DirAssignments
from engine.broker.replica_fetch import (
    FetchTarget, PartitionAnswer, fetch_response, fetch_version, replica_fetch_request, response_errors)
from engine.broker.replica_sim import ALTER_PARTITION_RETRY_MS, CONTROLLER, ReplicaConfig, ReplicaSim
from engine.image.metadata_delta import MetadataDelta
from engine.net.kafka_protocol import (
    ApiSpec, decode_request_frame, decode_response_frame, encode_request, encode_response)
from engine.net.message_versions import convert_message
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i8, i16, i32, i64, protocol_module

TICK_MS = 50
_AP_RESPONSE = protocol_module("alter_partition", 3, "response")


@dataclass
class Node:
    """A broker's replica cores next to its lifecycle."""

    sim: ReplicaSim
    dirs: DirAssignments
    hold_image: bool = False  # its metadata stops following the committed log
    alter_partitions: list[tuple[int, Any]] = field(default_factory=list)  # (now_ms, request) sent
    fetches: list[tuple[int, int, Any]] = field(default_factory=list)  # (now_ms, leader, request) sent


class ReplicaCluster(lc.Cluster):
    def __init__(self) -> None:
        super().__init__()
        self.nodes: dict[int, Node] = {}
        self.answer_alter_partition = True  # False: the controller never sees them (lost on the way)

    def add_node(self, broker_id: int, seed: int = 0, **replica_overrides: Any) -> Node:
        broker = self.add(broker_id)
        dirs = tuple(broker.life.config.log_dir_ids)
        sim = ReplicaSim(ReplicaConfig(broker_id, log_dir_ids=dirs, **replica_overrides), random.Random(seed))
        node = Node(sim, DirAssignments(broker_id, dirs, random.Random(seed)))
        self.nodes[broker_id] = node
        return node

    def tick(self) -> None:
        self.now_ms += TICK_MS
        now = self.now_ms
        answers: list[tuple[Any, Any]] = []
        for broker_id, broker in list(self.brokers.items()):
            if broker.paused:
                continue
            life = broker.life
            life.metadata_offset(self.committed_to)
            if life.state is BrokerState.RECOVERY:
                life.set_ready_to_unfence(now)
            for request in life.poll(now):
                api_key = int(request.__api_key__)
                wire = convert_message(request, lc._HEARTBEAT_V2) if api_key == 63 else request
                answers += self.submit(api_key, wire, ("life", broker_id, request))
            node = self.nodes.get(broker_id)
            if node is None or life.broker_epoch < 0:
                continue
            if not node.hold_image:
                node.sim.set_image(self.image, now, life.broker_epoch)
                node.dirs.set_image(self.image, now)
            for destination, request in node.sim.poll(now):
                if destination == CONTROLLER:
                    node.alter_partitions.append((now, request))
                    if self.answer_alter_partition:
                        answers += self.submit(56, request, ("ap", broker_id, request))
                else:
                    node.fetches.append((now, destination, request))
                    node.sim.handle_fetch_response(destination, request, self._fetch(destination, request), now)
            for request in node.dirs.poll(now):
                answers += self.submit(73, request, ("dirs", broker_id, request))
        answers += self._settle()
        for (kind, broker_id, request), response in answers:
            self.brokers[broker_id].inbox.append((kind, request, response))
        for broker_id, broker in self.brokers.items():
            if broker.paused:
                continue
            for kind, request, response in broker.inbox:
                if kind == "life":
                    broker.life.handle_response(request, response, now)
                elif kind == "ap":
                    self.nodes[broker_id].sim.handle_alter_partition_response(request, response, now)
                else:
                    self.nodes[broker_id].dirs.handle_response(request, response, now)
            broker.inbox.clear()

    def _fetch(self, leader_id: int, request: Any) -> Any | None:
        leader = self.brokers.get(leader_id)
        node = self.nodes.get(leader_id)
        if leader is None or node is None or leader.paused:
            return None  # a dead leader: the fetch times out
        return node.sim.handle_fetch(request, self.now_ms)

    def run(self, ms: int) -> None:
        for _ in range(ms // TICK_MS):
            self.tick()

    def run_until(self, condition: Callable[[], bool], limit_ms: int = 60_000) -> None:
        end = self.now_ms + limit_ms
        while not condition():
            assert self.now_ms < end, "condition not reached in time"
            self.tick()

    def create_topic(self, name: str, assignments: list[tuple[int, ...]]) -> uuid.UUID:
        module = protocol_module("create_topics", 7, "request")
        topic = module.CreatableTopic(
            name=name, num_partitions=i32(-1), replication_factor=i16(-1), configs=(),
            assignments=tuple(module.CreatableReplicaAssignment(partition_index=i32(i),
                                                                broker_ids=tuple(i32(b) for b in replicas))
                              for i, replicas in enumerate(assignments)))
        self.submit(19, module.CreateTopicsRequest(topics=(topic,), timeout=i32(30000), validate_only=False), None)
        self._settle()
        return self.image.topics.by_name[name]

    def partition(self, topic_id: uuid.UUID, index: int = 0) -> Any:
        return self.image.topics.by_id[topic_id].partitions[index]


def running(*broker_ids: int, **overrides: Any) -> ReplicaCluster:
    c = ReplicaCluster()
    for broker_id in broker_ids:
        c.add_node(broker_id, seed=broker_id, **overrides)
    c.run_until(lambda: all(c.brokers[b].life.state is BrokerState.RUNNING for b in broker_ids))
    return c


def fetches_of(node: Node, key: tuple[uuid.UUID, int]) -> int:
    return sum(1 for _, _, r in node.fetches for t in r.topics for p in t.partitions
               if (t.topic_id, int(p.partition)) == key)


# -- ISR shrink and expand -------------------------------------------------------------------------

def test_followers_fetch_from_their_leader_one_fetch_per_leader_every_interval() -> None:
    c = running(1, 2, 3)
    t = c.create_topic("t", [(1, 2, 3), (2, 3, 1), (1, 3, 2)])
    c.run(2000)
    node = c.nodes[3]
    assert node.sim.following() == {(t, 0): 1, (t, 1): 2, (t, 2): 1}
    by_leader = {}
    for now, leader, request in node.fetches:
        by_leader.setdefault(leader, []).append((now, request))
    (_, last), = by_leader[1][-1:]
    assert last.__version__ == fetch_version(c.image.metadata_version) == 18
    assert (last.replica_state.replica_id, last.replica_state.replica_epoch) == (3, c.brokers[3].life.broker_epoch)
    assert sorted((p.partition, p.current_leader_epoch, p.fetch_offset) for tp in last.topics for p in tp.partitions) \
        == [(0, 0, 0), (2, 0, 0)]  # one request per leader, all its partitions
    times = [now for now, _ in by_leader[1]]
    assert {b - a for a, b in zip(times, times[1:])} == {500}  # replica.fetch.wait.max.ms
    assert c.partition(t, 0).isr == (1, 2, 3) and c.nodes[1].sim.counters.isr_shrinks_sent == 0


def test_a_follower_lagging_beyond_the_lag_time_leaves_the_isr_and_returns_without_the_lag() -> None:
    c = running(1, 2, 3)
    t = c.create_topic("t", [(1, 2, 3)])
    c.run(1000)
    lagging = c.nodes[3].sim
    lagging.set_fetch_delay_ms(60_000)  # checked every 15 s: a lag window wider than that is always seen
    start = c.now_ms
    c.run_until(lambda: c.partition(t).isr == (1, 2), limit_ms=50_000)
    assert c.now_ms - start > 30_000  # not before replica.lag.time.max.ms
    leader = c.nodes[1].sim
    assert leader.leading()[(t, 0)] == (1, 2) and leader.counters.isr_shrinks_sent == 1
    (_, shrink), = c.nodes[1].alter_partitions
    (data,) = shrink.topics[0].partitions
    assert shrink.__version__ == 3 and shrink.broker_id == 1 and shrink.broker_epoch == c.brokers[1].life.broker_epoch
    assert [(s.broker_id, s.broker_epoch) for s in data.new_isr_with_epochs] == \
        [(1, c.brokers[1].life.broker_epoch), (2, c.brokers[2].life.broker_epoch)]
    assert not c.registration(3).fenced  # it still heartbeats: the leader, not the controller, removed it

    lagging.set_fetch_delay_ms(0)
    c.run_until(lambda: c.partition(t).isr == (1, 2, 3), limit_ms=3000)
    assert leader.counters.isr_expands_sent == 1 and leader.pending_isr((t, 0)) is None


def test_a_killed_broker_leaves_the_isr_and_its_leaderships_move() -> None:
    c = running(1, 2, 3)
    t = c.create_topic("t", [(1, 2, 3), (3, 1, 2)])
    c.run(1000)
    c.brokers[3].paused = True  # kill -9: no heartbeats, no fetches, no answers
    c.run_until(lambda: 3 not in c.partition(t, 0).isr and 3 not in c.partition(t, 1).isr, limit_ms=15_000)
    moved = c.partition(t, 1)
    assert moved.leader == 1 and moved.isr == (1, 2)
    c.run(2000)
    assert c.nodes[1].sim.leading() == {(t, 0): (1, 2), (t, 1): (1, 2)}
    assert c.nodes[2].sim.following() == {(t, 0): 1, (t, 1): 1}
    # the new leader answers broker 2's fetches: its lag time starts from the election
    c.run(40_000)
    assert c.partition(t, 1).isr == (1, 2)


def test_a_stale_alter_partition_is_refused_once_and_not_repeated_until_the_image_moves_on() -> None:
    c = running(1, 2, 3)
    t = c.create_topic("t", [(1, 2, 3)])
    c.run(1000)
    leader = c.nodes[1]
    leader.hold_image = True  # broker 1 no longer sees the controller's changes
    c.nodes[3].sim.set_fetch_delay_ms(10 ** 9)
    c.brokers[2].paused = True  # the controller fences it: ISR (1, 3) at a newer partition epoch
    c.run_until(lambda: c.partition(t).isr == (1, 3), limit_ms=15_000)
    known = leader.sim.leading()[(t, 0)]
    assert known == (1, 2, 3)
    c.run_until(lambda: leader.sim.counters.alter_partition_errors == 1, limit_ms=60_000)
    (_, stale), = leader.alter_partitions
    assert stale.topics[0].partitions[0].partition_epoch < c.partition(t).partition_epoch
    assert leader.sim.pending_isr((t, 0)) == (1,)  # waits for the metadata
    c.run(60_000)
    assert len(leader.alter_partitions) == 1 and leader.sim.counters.not_attempted == 0  # no loop

    leader.hold_image = False  # the image catches up: the pending change is dropped, a fresh one goes
    c.run_until(lambda: c.partition(t).isr == (1,), limit_ms=20_000)
    assert len(leader.alter_partitions) == 2
    assert leader.alter_partitions[1][1].topics[0].partitions[0].partition_epoch == \
        c.partition(t).partition_epoch - 1


def test_a_lost_alter_partition_is_resent_after_50_ms_and_one_stays_in_flight() -> None:
    c = running(1, 2)
    t = c.create_topic("t", [(1, 2)])
    c.run(1000)
    c.nodes[2].sim.set_fetch_delay_ms(10 ** 9)
    leader = c.nodes[1]
    c.answer_alter_partition = False
    c.run_until(lambda: len(leader.alter_partitions) == 1, limit_ms=60_000)
    request = leader.sim.alter_partition_in_flight
    c.run(2000)
    assert len(leader.alter_partitions) == 1  # no answer yet: nothing else goes
    sent_at = c.now_ms
    leader.sim.handle_alter_partition_response(request, None, sent_at)  # the edge gives up on it
    assert leader.sim.poll(sent_at + ALTER_PARTITION_RETRY_MS - 1) == []
    again = [r for d, r in leader.sim.poll(sent_at + ALTER_PARTITION_RETRY_MS) if d == CONTROLLER]
    assert len(again) == 1 and again[0].topics == request.topics
    top_level = _AP_RESPONSE.AlterPartitionResponse(throttle_time=lc_zero(), error_code=ErrorCode.not_controller,
                                                    topics=())
    assert leader.sim.handle_alter_partition_response(again[0], top_level, sent_at + 60)
    assert leader.sim.counters.alter_partition_failures == 2 and leader.sim.pending_isr((t, 0)) == (1,)


def lc_zero() -> Any:
    return datetime.timedelta(0)


def test_a_failed_log_dir_takes_its_partitions_offline_and_stops_their_fetches() -> None:
    c = running(1, 2, replica_lag_time_max_ms=4000)
    t = c.create_topic("t", [(1, 2), (1, 2)])
    c.run_until(lambda: c.nodes[2].dirs.pending() == 0 and c.nodes[1].dirs.pending() == 0, limit_ms=5000)
    c.run(1000)
    follower = c.nodes[2]
    failed = c.partition(t, 0).directories[1]
    other = c.partition(t, 1).directories[1]
    assert failed != other  # spread over both dirs
    follower.sim.set_failed_dirs([failed], c.now_ms)
    follower.dirs.set_failed_dirs([failed])
    c.brokers[2].life.set_offline_dirs([failed], c.now_ms)
    assert follower.sim.following() == {(t, 1): 1}
    before = fetches_of(follower, (t, 0)), fetches_of(follower, (t, 1))
    c.run(3000)
    assert fetches_of(follower, (t, 0)) == before[0] and fetches_of(follower, (t, 1)) > before[1]
    # Kafka's controller takes the replica out of the ISR when the heartbeat reports the dir
    # (handleDirectoriesOffline); without that, the leader does once the lag time passes
    c.run_until(lambda: c.partition(t, 0).isr == (1,), limit_ms=10_000)
    assert c.partition(t, 1).isr == (1, 2)
    # the leader answers a fetch for a partition in its own failed dir with KAFKA_STORAGE_ERROR
    leader = c.nodes[1].sim
    own = c.partition(t, 1).directories[0]
    leader.set_failed_dirs([own], c.now_ms)
    request = replica_fetch_request(18, 2, c.brokers[2].life.broker_epoch, [FetchTarget(t, 1, 0)])
    assert response_errors(leader.handle_fetch(request, c.now_ms), 18) == {(t, 1): ErrorCode.kafka_storage_error}


# -- the leader's answers, one by one ----------------------------------------------------------------

@pytest.fixture(scope="module")
def three() -> ReplicaCluster:
    c = running(1, 2, 3)
    c.create_topic("a", [(1, 2, 3), (2, 1, 3)])
    c.run(1000)
    return c


def test_the_leader_answers_each_partition_as_kafka(three: ReplicaCluster) -> None:
    c = three
    a = c.image.topics.by_name["a"]
    leader = c.nodes[1].sim
    epoch3 = c.brokers[3].life.broker_epoch
    unknown = uuid.UUID(int=(1 << 64) + 999)
    targets = [FetchTarget(a, 0, 0), FetchTarget(a, 1, 0), FetchTarget(unknown, 0, 0), FetchTarget(a, 7, 0)]
    response = leader.handle_fetch(replica_fetch_request(17, 3, epoch3, targets), c.now_ms)
    assert response.__version__ == 17 and response.error_code == ErrorCode.none and response.session_id == 0
    errors = response_errors(response, 17)
    assert errors == {(a, 0): ErrorCode.none, (a, 1): ErrorCode.not_leader_or_follower,
                      (unknown, 0): ErrorCode.unknown_topic_id, (a, 7): ErrorCode.unknown_topic_or_partition}
    parts = {(t.topic_id, p.partition_index): p for t in response.responses for p in t.partitions}
    ok, moved = parts[(a, 0)], parts[(a, 1)]
    assert (ok.high_watermark, ok.last_stable_offset, ok.log_start_offset, bytes(ok.records)) == (0, 0, 0, b"")
    assert (moved.high_watermark, moved.log_start_offset) == (-1, -1)
    assert (moved.current_leader.leader_id, moved.current_leader.leader_epoch) == (2, 0)
    # the follower's leader epoch: older is fenced, newer unknown; -1 is not checked
    for epoch, code in ((-1, ErrorCode.none), (1, ErrorCode.unknown_leader_epoch)):
        request = replica_fetch_request(18, 3, epoch3, [FetchTarget(a, 0, epoch)])
        assert response_errors(leader.handle_fetch(request, c.now_ms), 18) == {(a, 0): code}
    # a broker that is not a replica
    request = replica_fetch_request(18, 9, 1, [FetchTarget(a, 0, 0)])
    assert response_errors(leader.handle_fetch(request, c.now_ms), 18) == {(a, 0): ErrorCode.not_leader_or_follower}


def test_fetch_request_and_response_round_trip_through_kio(three: ReplicaCluster) -> None:
    c = three
    a = c.image.topics.by_name["a"]
    apis = {1: ApiSpec(1, "fetch", 4, 18)}
    for version in (13, 15, 17, 18):
        request = replica_fetch_request(version, 3, 42, [FetchTarget(a, 0, 0), FetchTarget(a, 1, 0)])
        frame = encode_request(request, 7, "broker-3-fetcher")
        header, decoded = decode_request_frame(frame[4:], apis)
        assert decoded == request and header.api_version == version and header.correlation_id == 7
        response = c.nodes[1].sim.handle_fetch(decoded, c.now_ms)
        correlation, back = decode_response_frame(encode_response(response, 7)[4:], 1, version)
        assert correlation == 7 and back == response
        assert response_errors(back, version) == {(a, 0): ErrorCode.none, (a, 1): ErrorCode.not_leader_or_follower}


def test_fetch_version_follows_metadata_version() -> None:
    # MetadataVersion.fetchRequestVersion in Kafka 4.3.1 (jshell)
    levels = {7: 13, 9: 14, 10: 15, 18: 15, 19: 16, 20: 16, 21: 17, 26: 17, 27: 18, 30: 18}
    assert {level: fetch_version(level) for level in levels} == levels
    assert replica_fetch_request(14, 2, 5, []).replica_id == 2


def test_a_follower_handles_errors_backoff_and_fencing() -> None:
    sim = ReplicaSim(ReplicaConfig(2), random.Random(1))
    c = ReplicaCluster()
    c.add_node(1), c.add_node(2)
    c.run_until(lambda: all(b.life.state is BrokerState.RUNNING for b in c.brokers.values()))
    t = c.create_topic("t", [(1, 2), (1, 2)])
    sim.set_image(c.image, 0, 5)
    ((leader, request),) = sim.poll(0)
    assert leader == 1 and sim.poll(10) == []  # one in flight per leader
    answers = [PartitionAnswer(t, 0, ErrorCode.fenced_leader_epoch), PartitionAnswer(t, 1, ErrorCode.not_leader_or_follower)]
    assert not sim.handle_fetch_response(1, object(), None, 20)
    assert sim.handle_fetch_response(1, request, fetch_response(request, answers), 20)
    assert sim.next_poll_ms(20) == 1020  # partition 1 after replica.fetch.backoff.ms; partition 0 fenced
    ((_, second),) = sim.poll(1020)
    assert [(tp.topic_id, p.partition) for tp in second.topics for p in tp.partitions] == [(t, 1)]
    assert sim.handle_fetch_response(1, second, None, 1030)  # a failed fetch: backoff for all
    assert sim.next_poll_ms(1030) == 2030 and sim.fetcher.counters.fetch_failures == 1
    sim.set_fetch_delay_ms(500)
    assert sim.next_poll_ms(1030) == 2530
    lossy = ReplicaSim(ReplicaConfig(2), random.Random(3), fetch_failure_rate=1.0)
    lossy.set_image(c.image, 0, 5)
    assert lossy.poll(0) == [] and lossy.fetcher.counters.fetches_lost == 1 and lossy.next_poll_ms(0) == 1000


def test_alter_partition_errors_as_kafkas_partition() -> None:
    c = running(1, 2)
    t = c.create_topic("t", [(1, 2)])
    c.run(1000)
    sim = ReplicaSim(ReplicaConfig(1, replica_lag_time_max_ms=1000), random.Random(0))
    sim.set_image(c.image, c.now_ms, c.brokers[1].life.broker_epoch)
    p = c.partition(t)

    def proposal(at_ms: int) -> Any:
        (request,) = [r for d, r in sim.poll(at_ms) if d == CONTROLLER]
        return request

    def answer(request: Any, code: ErrorCode, isr: tuple[int, ...] = (), epoch: int = 0) -> Any:
        return _AP_RESPONSE.AlterPartitionResponse(throttle_time=lc_zero(), error_code=ErrorCode.none, topics=(
            _AP_RESPONSE.TopicData(topic_id=t, partitions=(_AP_RESPONSE.PartitionData(
                partition_index=i32(0), error_code=code, leader_id=i32(1), leader_epoch=i32(p.leader_epoch),
                isr=tuple(i32(r) for r in isr), leader_recovery_state=i8(0), partition_epoch=i32(epoch)),)),))

    now = c.now_ms + 1001  # follower 2 never fetched from this core: out of sync at the check
    first = proposal(now)
    assert sim.pending_isr((t, 0)) == (1,)
    sim.handle_alter_partition_response(first, answer(first, ErrorCode.ineligible_replica), now)
    assert sim.pending_isr((t, 0)) is None  # back to committed: proposed again at the next check
    second = proposal(now + 500)
    sim.handle_alter_partition_response(second, answer(second, ErrorCode.unknown_server_error), now + 500)
    assert sim.poll(now + 500 + ALTER_PARTITION_RETRY_MS - 1) == []
    third = proposal(now + 500 + ALTER_PARTITION_RETRY_MS)  # an unexpected error: the same proposal again
    assert third.topics == second.topics
    sim.handle_alter_partition_response(third, answer(third, ErrorCode.none, (1,), p.partition_epoch + 1), now + 600)
    assert sim.leading() == {(t, 0): (1,)} and sim.pending_isr((t, 0)) is None
    sim.set_image(c.image, now + 700, c.brokers[1].life.broker_epoch)  # an image behind the answer: skipped
    assert sim.leading() == {(t, 0): (1,)}


# -- invariants under random lag, loss and kills ----------------------------------------------------

@pytest.mark.parametrize("seed", [11, 23])
def test_random_lag_loss_and_kills_keep_the_invariants(seed: int) -> None:
    rng = random.Random(seed)
    c = running(1, 2, 3, 4, replica_lag_time_max_ms=4000)
    for n in range(3):
        c.create_topic(f"t{n}", [tuple(rng.sample([1, 2, 3, 4], 3)) for _ in range(3)])
    for node in c.nodes.values():
        node.sim.set_fetch_failure_rate(rng.choice([0.0, 0.1, 0.3]))
    for step in range(120):
        if step % 10 == 0:
            broker_id = rng.choice([1, 2, 3, 4])
            c.nodes[broker_id].sim.set_fetch_delay_ms(rng.choice([0, 0, 1000, 6000]))
            c.brokers[broker_id].paused = rng.random() < 0.2
        c.run(250)
        for topic in c.image.topics.by_id.values():
            for p in topic.partitions.values():
                assert set(p.isr) <= set(p.replicas)
                assert p.leader == -1 or p.leader in p.isr
        for node in c.nodes.values():
            request = node.sim.alter_partition_in_flight
            if request is not None:
                keys = [(tp.topic_id, q.partition_index) for tp in request.topics for q in tp.partitions]
                assert len(keys) == len(set(keys))  # one proposal per partition
            for key, isr in node.sim.leading().items():
                registration = c.image.topics.by_id[key[0]].partitions[key[1]]
                assert set(isr) <= set(registration.replicas) and node.sim.config.broker_id in isr
    for broker in c.brokers.values():
        broker.paused = False
    for node in c.nodes.values():
        node.sim.set_fetch_delay_ms(0)
        node.sim.set_fetch_failure_rate(0.0)
    c.run_until(lambda: all(p.isr == tuple(sorted(p.replicas)) or set(p.isr) == set(p.replicas)
                            for t in c.image.topics.by_id.values() for p in t.partitions.values()),
                limit_ms=30_000)


def test_expansion_needs_an_unfenced_broker_of_the_current_epoch_kip_841() -> None:
    c = running(1, 2)
    t = c.create_topic("t", [(1, 2)])
    epoch1, epoch2 = c.brokers[1].life.broker_epoch, c.brokers[2].life.broker_epoch

    def changed(*records: Any) -> Any:
        delta = MetadataDelta(c.image)
        for i, record in enumerate(records, start=c.image.provenance.last_offset + 1):
            delta.replay(record, i)
        return delta.apply()

    shrunk = m.PartitionChangeRecordV0(partition_id=i32(0), topic_id=t, isr=(i32(1),))
    fetch = replica_fetch_request(18, 2, epoch2, [FetchTarget(t, 0, 0)])
    for image, request in (
            (changed(shrunk), replica_fetch_request(18, 2, epoch2 + 1, [FetchTarget(t, 0, 0)])),  # another incarnation
            (changed(shrunk, m.BrokerRegistrationChangeRecordV1(broker_id=i32(2), broker_epoch=i64(epoch2),
                                                                fenced=i8(1))), fetch),
            (changed(shrunk, m.BrokerRegistrationChangeRecordV1(broker_id=i32(2), broker_epoch=i64(epoch2),
                                                                in_controlled_shutdown=i8(1))), fetch)):
        sim = ReplicaSim(ReplicaConfig(1))
        sim.set_image(image, 0, epoch1)
        assert response_errors(sim.handle_fetch(request, 10), 18) == {(t, 0): ErrorCode.none}
        assert sim.pending_isr((t, 0)) is None and sim.poll(10) == []
    sim = ReplicaSim(ReplicaConfig(1))
    sim.set_image(changed(shrunk), 0, epoch1)
    sim.handle_fetch(fetch, 10)
    assert sim.pending_isr((t, 0)) == (1, 2)
    ((destination, request),) = sim.poll(10)
    (data,) = request.topics[0].partitions
    assert destination == CONTROLLER and [(s.broker_id, s.broker_epoch) for s in data.new_isr_with_epochs] == \
        [(1, epoch1), (2, epoch2)]
    assert data.partition_epoch == c.partition(t).partition_epoch + 1 and data.leader_epoch == 0
