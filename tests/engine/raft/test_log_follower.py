"""The anonymous log follower's core (engine.raft.log_follower), without sockets.

- Against the seeded simulated quorum (engine.sim.raft_simulation: real RaftClients, a lossy,
  reordering network, crashes, partitions, snapshots, voter changes, every message through
  kio): whatever it hands over is committed (below a high watermark some leader announced),
  each offset once and in order, equal to what the quorum committed there; a reset only at
  the start (empty) or from a downloaded snapshot; at the end it catches up.
- On scripted answers: leader discovery through a bootstrap controller, no leader elected (asks
  the bootstrap controllers in turn, backing off, without an error), a diverging epoch cut back,
  INCONSISTENT_CLUSTER_ID fatal, the Fetch versions 13 to 18 (v18's high watermark -1 when unknown).
"""

from __future__ import annotations

import heapq
import random

import pytest

from engine.common.errors import CorruptRecordError
from engine.raft import raft_messages as rm
from engine.raft.log_follower import Committed, FollowerSettings, LogFollower, fetch_at_version
from engine.raft.raft_io import InboundResponse
from engine.sim.raft_runner import Chaos, check_liveness
from engine.sim.state_machine import InvariantViolation
from engine.sim.raft_simulation import CLUSTER_ID, SimConfig, Simulation, address_of
from engine.records.kio_codec import ErrorCode as E
from engine.storage.snapshot_writer import SnapshotId

FOLLOWER = 99


def _snapshot_id(entries: list, snapshot_id: SnapshotId) -> SnapshotId:
    """The state the core hands over for a snapshot (the simulated state machine has no image)."""
    return snapshot_id


class AttachedSimulation(Simulation):
    """The simulated quorum with one LogFollower on the network as node 99 (addressed by the
    voters' answers through the request token), checked after each take."""

    def __init__(self, seed: int, config: SimConfig, *, start_ms: int = 0):
        super().__init__(seed, config)
        servers = [address_of(i) for i in sorted(self.nodes)]
        self.follower = LogFollower(servers, snapshot_state=_snapshot_id, empty_state=None, cluster_id=CLUSTER_ID,
                                    rng=random.Random(seed),
                                    settings=FollowerSettings(request_timeout_ms=1000, retry_backoff_ms=50,
                                                              fetch_timeout_ms=1000))
        self.follower_wake = None
        self.handed: dict[int, str] = {}  # offset -> item, as the simulation's CommitRecord writes them
        self.next_offset = 0
        self.resets: list[int] = []
        self._push(start_ms, "follower", None)

    def step(self) -> bool:
        # The follower's timer events are its own kind: the liveness phase drops every "fault".
        if self.queue and self.queue[0][2] == "follower":
            at_ms, _, _, payload = heapq.heappop(self.queue)
            self.now_ms = max(self.now_ms, at_ms)
            if payload is None or self.follower_wake == at_ms:
                self.follower_wake = None
                self._follower_poll()
            return True
        return super().step()

    def max_high_watermark(self) -> int:
        return max([n.last_hw for n in self.nodes.values()] + [-1])

    def _follower_poll(self) -> None:
        ready = self.follower.poll(self.now_ms)
        for message in ready.messages:
            target = int(message.destination.address[0][4:])
            self._send(FOLLOWER, target, ("request", (FOLLOWER, 1, message.correlation_id), message.request))
        self._check_taken()
        at = ready.next_poll_ms
        if self.follower_wake is None or at < self.follower_wake:
            self.follower_wake = at
            self._push(at, "follower", at)

    def _deliver(self, source, target, kind, meta, message) -> None:
        if target != FOLLOWER:
            return super()._deliver(source, target, kind, meta, message)
        if (source, target) in self.blocked or (target, source) in self.blocked:
            return
        self.follower.receive(self.now_ms, InboundResponse(meta[1], message))
        self._follower_poll()

    def _check_taken(self) -> None:
        from engine.sim.state_machine import log_item

        taken = self.follower.take()
        if taken.reset is not None:
            state, offset = taken.reset
            if offset >= 0 and self.follower.fetch_offset != offset + 1:
                raise InvariantViolation(f"reset at {offset} but fetching from {self.follower.fetch_offset}")
            if (state.end_offset - 1 if state is not None else -1) != offset:
                raise InvariantViolation(f"reset at {offset} from snapshot {state}: not the snapshot's own state")
            self.resets.append(offset)
            self.next_offset = offset + 1
        hw = self.max_high_watermark()
        for batch in taken.batches:
            for entry in batch:
                if entry.offset != self.next_offset:
                    raise InvariantViolation(f"handed offset {entry.offset}, expected {self.next_offset}")
                if entry.offset >= hw:
                    raise InvariantViolation(f"handed offset {entry.offset} at or past every high watermark {hw}")
                record = entry.record
                item = f"{entry.leader_epoch}:" + (f"control{record.control_type}" if entry.control
                                                   else getattr(record, "value", type(record).__name__))
                known = self.commits.items.get(entry.offset)
                if known is not None and known != item:
                    raise InvariantViolation(f"handed {item!r} at {entry.offset}, where {known!r} was committed")
                self.handed[entry.offset] = item
                self.next_offset += 1
        del log_item


@pytest.mark.parametrize("seed", [1, 3, 4])  # 1 and 4 download a snapshot midway, 3 truncates
def test_follower_in_a_chaotic_simulated_quorum_hands_over_only_committed_records_once_in_order(seed: int) -> None:
    sim = AttachedSimulation(seed, SimConfig(voters=3, observers=1))
    chaos = Chaos(sim)
    chaos.schedule_next()
    while sim.events < 4000 and sim.step():
        pass
    check_liveness(sim)
    leader = sim.leader()
    target = leader.client.high_watermark
    assert sim.run_until(lambda: sim.follower.applied_offset + 1 >= target, 20_000), sim.follower.__dict__
    assert sim.resets and sim.resets[0] in (-1,) + tuple(range(0, target))
    assert sim.follower.error is None
    assert sim.next_offset >= target


def test_follower_starts_from_the_leaders_snapshot_when_the_log_was_trimmed() -> None:
    sim = AttachedSimulation(7, SimConfig(voters=3, observers=0, loss=0.0, duplicate=0.0), start_ms=10**9)
    assert sim.run_until(lambda: sim.leader() is not None, 10_000)
    for _ in range(5):
        sim.append(10)
        sim.run_until(lambda: False, 200)
    for node_id in sim.nodes:
        sim.snapshot(node_id)
    leader = sim.leader()
    assert leader.log.start_offset > 0
    sim.queue = [e for e in sim.queue if e[0] < 10**9]
    sim._push(sim.now_ms, "follower", None)
    assert sim.run_until(lambda: sim.follower.applied_offset + 1 >= leader.client.high_watermark, 10_000)
    snapshot = leader.log.latest_snapshot_id()
    assert sim.resets == [snapshot.end_offset - 1]
    image_offset = sim.resets[0]
    assert image_offset >= 0 and sim.follower.error is None


# -- scripted answers ----------------------------------------------------------------------

BOOT = [("c1", 9093), ("c2", 9093)]


def _follower(**kw) -> LogFollower:
    return LogFollower(BOOT, snapshot_state=_snapshot_id, empty_state=None, cluster_id="cid", rng=random.Random(0),
                       **kw)


def _ask(f: LogFollower, now_ms: int):
    (request,) = f.poll(now_ms).messages
    return request


def test_a_bootstrap_controller_names_the_leader_and_the_follower_moves_there() -> None:
    f = _follower()
    first = _ask(f, 0)
    assert first.destination.node_id < 0 and first.destination.address in BOOT
    part = rm.only_partition(first.request)
    assert first.request.replica_state.replica_id == -1 and (part.fetch_offset, part.last_fetched_epoch) == (0, 0)
    f.receive(1, InboundResponse(first.correlation_id, rm.fetch_response(
        E.not_leader_or_follower, leader_id=3, epoch=5, high_watermark=-1, leader_address=("c3", 9093))))
    second = _ask(f, 1)
    assert second.destination.address == ("c3", 9093) and rm.only_partition(second.request).current_leader_epoch == 5
    assert (f.leader_id, f.epoch, f.connected) == (3, 5, False)


def test_a_diverging_epoch_cuts_the_uncommitted_tail_back() -> None:
    from engine.raft.memory_raft_log import MemoryRaftLog
    from engine.sim.state_machine import data_record

    log = MemoryRaftLog()
    log.append_as_leader([data_record("a"), data_record("b")], epoch=1, timestamp_ms=0)
    log.append_as_leader([data_record("c"), data_record("d")], epoch=2, timestamp_ms=0)
    f = _follower()
    f.leader_id, f.epoch, f.leader_address = 3, 3, ("c3", 9093)
    request = _ask(f, 0)
    f.receive(1, InboundResponse(request.correlation_id, rm.fetch_response(
        E.none, leader_id=3, epoch=3, high_watermark=1, records=log.read(0, 1 << 20), leader_address=("c3", 9093))))
    assert f.take().batches == []  # the batch [0, 1] is not wholly below the high watermark 1
    assert f.fetch_offset == 4
    request = _ask(f, 2)
    assert rm.only_partition(request.request).last_fetched_epoch == 2
    # The leader's epoch 1 ended at 2 (it never had our epoch 2): cut back to 2.
    f.receive(3, InboundResponse(request.correlation_id, rm.fetch_response(
        E.none, leader_id=3, epoch=3, high_watermark=2, diverging=(2, 1), leader_address=("c3", 9093))))
    assert f.fetch_offset == 2
    request = _ask(f, 4)
    assert rm.only_partition(request.request).last_fetched_epoch == 1
    f.receive(5, InboundResponse(request.correlation_id, rm.fetch_response(
        E.none, leader_id=3, epoch=3, high_watermark=2, leader_address=("c3", 9093))))
    taken = f.take()
    assert [[e.offset for e in b] for b in taken.batches] == [[0, 1]] and f.applied_offset == 1


def test_another_clusters_controller_stops_the_follower_with_one_line() -> None:
    f = _follower()
    request = _ask(f, 0)
    f.receive(1, InboundResponse(request.correlation_id, rm.fetch_response(
        E.none, leader_id=-1, epoch=0, high_watermark=-1, top_error=E.inconsistent_cluster_id)))
    assert f.error is not None and "INCONSISTENT_CLUSTER_ID" in f.error and "\n" not in f.error
    assert f.poll(2).messages == []


@pytest.mark.parametrize("code", [E.cluster_authorization_failed, E.topic_authorization_failed])
def test_a_refused_principal_is_fatal(code) -> None:
    """Kafka answers a Fetch from a principal without CLUSTER_ACTION with an answer-wide error; asking
    again as the same principal is refused again, so the follower stops with one line."""
    f = _follower()
    request = _ask(f, 0)
    f.receive(1, InboundResponse(request.correlation_id, rm.fetch_response(
        E.none, leader_id=-1, epoch=0, high_watermark=-1, top_error=code)))
    assert f.error is not None and E(code).name.upper() in f.error and "CLUSTER_ACTION" in f.error
    assert "\n" not in f.error
    assert f.poll(2).messages == []


def test_no_answer_backs_off_then_asks_the_next_bootstrap_controller() -> None:
    f = _follower(settings=FollowerSettings(retry_backoff_ms=100))
    first = _ask(f, 0)
    f.receive(5, InboundResponse(first.correlation_id, None, "connection refused"))
    assert f.last_failure == "connection refused" and f.error is None  # kept for the tools' note
    assert f.poll(50).messages == []  # backing off
    second = _ask(f, 105)
    assert second.destination.address != first.destination.address
    f.receive(106, InboundResponse(second.correlation_id, rm.fetch_response(
        E.none, leader_id=-1, epoch=0, high_watermark=-1)))
    assert f.last_failure is None  # an answer, even one without a leader, ends the failure


def test_while_no_leader_is_elected_it_keeps_asking_the_bootstrap_controllers_without_error() -> None:
    f = _follower(settings=FollowerSettings(retry_backoff_ms=100))
    asked, now = [], 0
    while len(asked) < 6:  # each answers as a candidate would: no leader, in a newer epoch
        ready = f.poll(now)
        for request in ready.messages:
            asked.append(request.destination.address)
            f.receive(now + 1, InboundResponse(request.correlation_id, rm.fetch_response(
                E.not_leader_or_follower, leader_id=-1, epoch=7, high_watermark=-1)))
        now = now + 1 if ready.messages else ready.next_poll_ms
    assert set(asked) == set(BOOT) and now >= 4 * 100  # in turn, backing off between rounds
    assert (f.leader_id, f.connected, f.error, f.high_watermark) == (-1, False, None, -1)
    assert f.take() == Committed()  # nothing handed over, not even the starting image
    now = f.poll(now).next_poll_ms  # the backoff
    request = _ask(f, now)
    f.receive(now + 1, InboundResponse(request.correlation_id, rm.fetch_response(
        E.not_leader_or_follower, leader_id=2, epoch=8, high_watermark=-1, leader_address=("c2", 9093))))
    assert _ask(f, now + 1).destination.address == ("c2", 9093) and (f.leader_id, f.epoch) == (2, 8)


@pytest.mark.parametrize("served, version", [((4, 17), 17), ((13, 18), 18), ((0, 13), 13), ((0, 12), None),
                                             (None, None)])
def test_fetch_is_sent_in_the_newest_version_from_13_to_18_the_peer_serves(served, version) -> None:
    request = rm.fetch_request(None, rm.ReplicaKey(-1, None), 2, 10, 1, 500, 1024)
    sent = fetch_at_version(request, served, high_watermark=7)
    if version is None:
        assert sent is None
        return
    assert type(sent).__version__ == version
    if version < 15:
        assert sent.replica_id == -1
    else:
        assert sent.replica_state.replica_id == -1
    if version >= 18:
        assert rm.only_partition(sent).high_watermark == 7
        # Not known yet: -1, as Kafka's followers send (the default 2**63-1 means "not supported").
        assert rm.only_partition(fetch_at_version(request, served)).high_watermark == -1
    assert sent.cluster_id is None


def test_snapshot_id_is_downloaded_in_chunks_before_any_fetch() -> None:
    f = _follower(settings=FollowerSettings(snapshot_max_bytes=10))
    f.leader_id, f.epoch, f.leader_address = 3, 3, ("c3", 9093)
    request = _ask(f, 0)
    f.receive(1, InboundResponse(request.correlation_id, rm.fetch_response(
        E.none, leader_id=3, epoch=3, high_watermark=20, snapshot=(20, 2), leader_address=("c3", 9093))))
    assert f.downloading == SnapshotId(20, 2)
    ask = _ask(f, 2)
    assert type(ask.request).__name__ == "FetchSnapshotRequest" and ask.request.max_bytes == 10


def _download_answer(f: LogFollower, now_ms: int, data: bytes) -> None:
    """Answer the follower's FetchSnapshot with all of ``data`` in one chunk."""
    ask = _ask(f, now_ms)
    assert type(ask.request).__name__ == "FetchSnapshotRequest"
    f.receive(now_ms + 1, InboundResponse(ask.correlation_id, rm.fetch_snapshot_response(
        E.none, leader_id=3, epoch=3, snapshot_id=(20, 2), size=len(data), position=0, data=data,
        leader_address=("c3", 9093))))


def test_a_snapshot_damaged_once_is_downloaded_again_and_damaged_twice_stops_with_its_line() -> None:
    built: list[tuple[bytes, SnapshotId, str]] = []

    def from_bytes(data: bytes, snapshot_id: SnapshotId, where: str) -> object:
        built.append((data, snapshot_id, where))
        if data.startswith(b"bad"):
            raise CorruptRecordError("batch CRC mismatch", path=where, byte_offset=3)
        return "the image"

    f = LogFollower(BOOT, snapshot_bytes_state=from_bytes, empty_state=None, rng=random.Random(0),
                    settings=FollowerSettings(retry_backoff_ms=10))
    f.leader_id, f.epoch, f.leader_address = 3, 3, ("c3", 9093)
    request = _ask(f, 0)
    f.receive(1, InboundResponse(request.correlation_id, rm.fetch_response(
        E.none, leader_id=3, epoch=3, high_watermark=25, snapshot=(20, 2), leader_address=("c3", 9093))))
    assert f.high_watermark == 25  # told beside the snapshot: catching up reaches past it
    _download_answer(f, 2, b"bad bytes")
    where = "snapshot 00000000000000000020-0000000002.checkpoint from controller c3:9093"
    assert built[-1] == (b"bad bytes", SnapshotId(20, 2), where)
    assert f.error is None and f.last_failure == f"{where}, byte offset 3: batch CRC mismatch"
    request = _ask(f, 20)  # after the backoff: asked again, and told the snapshot again
    f.receive(21, InboundResponse(request.correlation_id, rm.fetch_response(
        E.none, leader_id=3, epoch=3, high_watermark=25, snapshot=(20, 2), leader_address=("c3", 9093))))
    _download_answer(f, 22, b"good bytes")
    assert f.take().reset == ("the image", 19) and f.error is None
    # a later download of the same snapshot damaged twice in a row: the leader's copy is bad
    f2 = LogFollower(BOOT, snapshot_bytes_state=from_bytes, empty_state=None, rng=random.Random(0),
                     settings=FollowerSettings(retry_backoff_ms=10))
    f2.leader_id, f2.epoch, f2.leader_address = 3, 3, ("c3", 9093)
    for now in (0, 100):
        request = _ask(f2, now)
        f2.receive(now + 1, InboundResponse(request.correlation_id, rm.fetch_response(
            E.none, leader_id=3, epoch=3, high_watermark=25, snapshot=(20, 2), leader_address=("c3", 9093))))
        _download_answer(f2, now + 2, b"bad bytes")
    assert f2.error == f"{where}, byte offset 3: batch CRC mismatch"
    assert f2.poll(200).messages == []
