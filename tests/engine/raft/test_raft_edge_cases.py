"""Edge cases of the Raft core found in review, one test (or a few) per fix.

1. A voter whose epoch ran ahead of everyone (a candidacy nobody heard of) rejoins: it pre-votes
   in that epoch, which the others take on reading it (Kafka's rule), so only answers in it count;
   and the leader repeats BeginQuorumEpoch to voters that have not fetched for fetch.timeout/2.
2. FetchSnapshot from a voter keeps the leader's check-quorum timer alive.
3. A follower refuses a diverging-epoch answer that would truncate below its high watermark,
   and acts on a diverging epoch only when it names one (epoch >= 0).
4. FileRaftLog fsyncs what it found on open before counting it as flushed.
5. BeginQuorumEpoch naming a second leader of an epoch (or ourselves) is refused, changes nothing.
6. Requests naming another topic or partition than __cluster_metadata-0 are refused.
7. The simulator's replay line carries --voters/--observers/--kraft-version.
"""

from __future__ import annotations

import dataclasses
import os
import random
import uuid

import pytest

from engine.records.kio_codec import ErrorCode as E, encode_entity
from engine.records.bounds_check import decode_entity
from engine.raft import raft_messages as rm
from engine.raft.election_store import ElectionState
from engine.raft.file_raft_log import FileRaftLog
from engine.raft.memory_raft_log import MemoryRaftLog
from engine.raft.quorum_state import IllegalTransition
from engine.raft.raft_client import InboundRequest, InboundResponse, OutboundRequest, OutboundResponse
from engine.sim.state_machine import data_record
from engine.raft.voter_set import ReplicaKey
from test_raft_client_rpcs import CID, Replica, append_history, endpoints


def _fingerprint(r: Replica) -> tuple:
    """What a refused request must leave alone."""
    c = r.client
    state = c.quorum.state
    progress = {i: (p.end_offset, p.last_fetch_ms) for i, p in getattr(state, "progress", {}).items()}
    observers = {k: (p.end_offset, p.last_fetch_ms) for k, p in getattr(state, "observers", {}).items()}
    return (c.role, c.epoch, c.quorum.leader_id, r.store.writes, r.store.state, c.high_watermark,
            r.log.end_offset, progress, observers)


# -- 1. a voter whose epoch ran ahead rejoins --------------------------------------------------

def test_pre_vote_in_an_epoch_that_ran_ahead_counts_only_answers_in_it():
    store = Replica().store
    store.write(ElectionState(2))  # our epoch 2: a candidacy nobody heard of
    r = Replica(store=store)
    c = r.client
    now = c.quorum.state.election_deadline_ms
    pre = r.requests(c.poll(now), "VoteRequest")
    assert c.role == "prospective" and c.epoch == 2
    assert pre and all(rm.only_partition(m.request).pre_vote for m in pre)
    # Kafka's pre-vote carries the current epoch, not the one it would run for.
    assert {rm.only_partition(m.request).replica_epoch for m in pre} == {2}
    # An answer in epoch 1 predates our epoch: stale, it does not count (as Kafka drops it).
    c.receive(now + 1, InboundResponse(pre[0].correlation_id, rm.vote_response(E.none, -1, 1, True)))
    c.poll(now + 1)
    assert (c.role, c.epoch) == ("prospective", 2) and r.store.state == ElectionState(2)
    # Voter 3, in epoch 1, took epoch 2 on reading the pre-vote and grants it in epoch 2.
    c.receive(now + 2, InboundResponse(pre[1].correlation_id, rm.vote_response(E.none, -1, 2, True)))
    votes = r.requests(c.poll(now + 2), "VoteRequest")
    assert (c.role, c.epoch) == ("candidate", 3)
    assert r.store.state == ElectionState(3, -1, r.local)
    assert votes and not any(rm.only_partition(m.request).pre_vote for m in votes)
    # An answer to a real Vote from an older epoch is stale and still does not count.
    c.receive(now + 3, InboundResponse(votes[0].correlation_id, rm.vote_response(E.none, -1, 2, True)))
    c.poll(now + 3)
    assert (c.role, c.epoch) == ("candidate", 3)


def test_leader_repeats_begin_quorum_epoch_to_a_voter_that_stopped_fetching():
    r = Replica()
    c = r.client
    now = r.elect(0)
    for m in r.requests(r.ready, "BeginQuorumEpochRequest"):  # both voters acknowledge at once
        c.receive(now, InboundResponse(m.correlation_id, rm.begin_epoch_response(E.none, 1, c.epoch)))
    t0 = now + 10
    r.fetch(t0, 2, r.log.end_offset, c.epoch)
    r.fetch(t0, 3, r.log.end_offset, c.epoch)
    half = r.config.fetch_timeout_ms // 2
    sent = []  # (time, node) of every BeginQuorumEpoch
    t = t0
    while not sent and t < t0 + 3 * half:
        t += 50
        if (t - t0) % 200 == 0:
            r.fetch(t, 2, r.log.end_offset, c.epoch)  # node 2 keeps fetching, node 3 went quiet
        for m in r.requests(c.poll(t), "BeginQuorumEpochRequest"):
            sent.append((t, m.destination.node_id, m))
    assert sent and {node for _, node, _ in sent} == {3}, sent  # not to node 2, which fetches
    at, _, m = sent[0]
    assert t0 + half < at <= t0 + half + 50  # as soon as it was quiet for fetch.timeout/2
    assert c.role == "leader"
    # Node 3 is in epoch 2 (a candidacy nobody heard of): its answer makes the leader step down.
    c.receive(at + 5, InboundResponse(m.correlation_id, rm.begin_epoch_response(E.fenced_leader_epoch, -1, 2)))
    c.poll(at + 5)
    assert (c.role, c.epoch) == ("unattached", 2)


def _wire(message):
    return decode_entity(type(message), encode_entity(message))[0]


class Net:
    """Real RaftClients (kraft.version 0) on a perfect network with a fixed delay."""

    def __init__(self, n: int = 3, delay_ms: int = 5):
        self.nodes = {i: Replica(local_id=i, voter_ids=tuple(range(1, n + 1))) for i in range(1, n + 1)}
        for i, r in self.nodes.items():
            r.client.rng = random.Random(100 + i)
        self.now = 0
        self.delay = delay_ms
        self.queue: list = []  # (deliver_at, src, dst, kind, meta, message)

    def restart(self, node_id: int) -> None:
        old = self.nodes[node_id]
        self.queue = [q for q in self.queue if node_id not in (q[1], q[2])]
        self.nodes[node_id] = Replica(local_id=node_id, voter_ids=tuple(sorted(self.nodes)), log=old.log,
                                      store=old.store, now_ms=self.now)
        self.nodes[node_id].client.rng = random.Random(200 + node_id)

    def step(self, dt: int = 5) -> None:
        self.now += dt
        due = [q for q in self.queue if q[0] <= self.now]
        self.queue = [q for q in self.queue if q[0] > self.now]
        for _, src, dst, kind, meta, message in due:
            client = self.nodes[dst].client
            if kind == "req":
                client.receive(self.now, InboundRequest((src, meta), message))
            else:
                client.receive(self.now, InboundResponse(meta, message))
        for i, r in self.nodes.items():
            for m in r.client.poll(self.now).messages:
                if isinstance(m, OutboundRequest):
                    dst, kind, meta, message = int(m.destination.address[0][4:]), "req", m.correlation_id, m.request
                else:
                    assert isinstance(m, OutboundResponse)
                    (dst, meta), kind, message = m.token, "resp", m.response
                self.queue.append((self.now + self.delay, i, dst, kind, meta, _wire(message)))

    def run_until(self, done, limit_ms: int) -> bool:
        end = self.now + limit_ms
        while self.now < end:
            self.step()
            if done():
                return True
        return False

    def settled(self) -> bool:
        leaders = [i for i, r in self.nodes.items() if r.client.role == "leader"]
        return len(leaders) == 1 and all(r.client.leader_and_epoch == self.nodes[leaders[0]].client.leader_and_epoch
                                         for r in self.nodes.values())


def test_a_voter_whose_epoch_ran_ahead_rejoins_the_quorum():
    net = Net()
    assert net.run_until(lambda: net.settled() and all(r.client.high_watermark == 1 for r in net.nodes.values()),
                         20_000)
    leader = next(i for i, r in net.nodes.items() if r.client.role == "leader")
    epoch = net.nodes[leader].client.epoch
    x = max(set(net.nodes) - {leader})
    # x ran a candidacy in epoch + 1 that nobody heard of (its Vote requests were lost), then restarted.
    net.nodes[x].store.write(ElectionState(epoch + 1, -1, net.nodes[x].local))
    net.restart(x)
    assert net.nodes[x].client.epoch == epoch + 1
    # From here on the network is perfect: the quorum must take x back within a few timeouts.
    assert net.run_until(net.settled, 15_000), {i: (r.client.role, r.client.epoch) for i, r in net.nodes.items()}
    lead = next(r.client for r in net.nodes.values() if r.client.role == "leader")
    assert lead.epoch > epoch + 1
    lead.append_now(lead.epoch, [data_record("after")], net.now)
    end = lead.log.end_offset
    assert net.run_until(lambda: all(r.client.high_watermark == end for r in net.nodes.values()), 5_000)


def test_liveness_seed_that_stranded_a_voter_in_a_higher_epoch():
    from engine.sim.raft_runner import run_seed
    from engine.sim.raft_simulation import SimConfig

    result = run_seed(1006, 8000, SimConfig(voters=2, observers=2))
    assert result.violation is None, result.violation


# -- 2. FetchSnapshot keeps check-quorum alive -------------------------------------------------

def test_fetch_snapshot_from_voters_keeps_the_leader_check_quorum_alive():
    r = Replica()
    c = r.client
    now = r.elect(0)
    r.commit_leader_change(now, 2)
    c.append_now(c.epoch, [data_record(f"v{i}") for i in range(5)], now)
    r.fetch(now, 2, c.log.end_offset, c.epoch)
    sid = c.create_snapshot(c.log.end_offset, [data_record("state")], last_contained_log_timestamp_ms=0,
                            now_ms=now)
    check_period = int(r.config.fetch_timeout_ms * 1.5)
    t = now
    while t < now + 2 * check_period:  # twice the check-quorum period, with no Fetch at all
        t += 250
        for node in (2, 3):
            response = r.answer(t, rm.fetch_snapshot_request(CID, ReplicaKey(node), c.epoch,
                                                            (sid.end_offset, sid.epoch), 0, 100))
            assert c.role == "leader", f"{c.role} {t - now} ms after the last Fetch, the voters downloading a snapshot"
            p = rm.only_partition(response)
            assert p.error_code == E.none and len(p.unaligned_records) > 0
    assert {node: c.quorum.state.progress[node].last_fetch_ms for node in (2, 3)} == {2: t, 3: t}


# -- 3. no truncation below the high watermark ------------------------------------------------

def _follower_with_fetch_answers():
    log = MemoryRaftLog()
    append_history(log, [(1, 5)])
    r = Replica(log=log)
    r.request(10, rm.begin_epoch_request(CID, 2, 2, r.local, endpoints(2)))  # follow node 2 in epoch 2
    c = r.client

    def answer(now: int, **kw) -> None:
        c.poll(now)
        cid = next(cid for cid, f in c.inflight.items() if f.api == "fetch")
        c.receive(now + 1, InboundResponse(cid, rm.fetch_response(E.none, leader_id=2, epoch=2, **kw)))
        c.poll(now + 1)

    return r, answer


def test_diverging_epoch_below_the_high_watermark_is_refused():
    r, answer = _follower_with_fetch_answers()
    c = r.client
    answer(20, high_watermark=2)
    assert (c.log.end_offset, c.high_watermark) == (5, 2)
    answer(100, high_watermark=2, diverging=(1, 1))  # would cut the committed offset 1
    assert (c.role, c.epoch, c.quorum.leader_id) == ("follower", 2, 2)
    assert (c.log.end_offset, c.high_watermark) == (5, 2)
    answer(200, high_watermark=2, diverging=(2, 1))  # down to the high watermark itself: fine
    assert (c.log.end_offset, c.high_watermark) == (2, 2)


def test_diverging_epoch_without_an_epoch_is_not_a_truncation():
    r, answer = _follower_with_fetch_answers()
    c = r.client
    answer(20, high_watermark=-1, diverging=(3, -1))  # end offset set, epoch undefined
    assert c.log.end_offset == 5
    answer(100, high_watermark=4)
    assert (c.log.end_offset, c.high_watermark) == (5, 4)


# -- 4. FileRaftLog fsyncs what it finds on open ----------------------------------------------

def test_file_raft_log_fsyncs_unflushed_bytes_found_on_open(tmp_path, monkeypatch):
    log = FileRaftLog.open(tmp_path)
    log.append_as_leader([data_record("a")], epoch=1, timestamp_ms=0)
    log.flush()
    log.append_as_leader([data_record("b")], epoch=1, timestamp_ms=1)  # written, never fsynced
    assert (log.end_offset, log.flushed_end_offset) == (2, 1)
    del log  # a process crash: no flush, no close; the bytes sit in the page cache
    real_fsync, synced = os.fsync, []

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    again = FileRaftLog.open(tmp_path)
    assert (again.end_offset, again.flushed_end_offset) == (2, 2)
    assert [p for p in synced if p.endswith(".log")], synced  # the segment went to disk first
    again.close()


# -- 5. BeginQuorumEpoch for an epoch that has a leader ------------------------------------------

def _refused_begin_epoch(r: Replica, now: int, leader_id: int, epoch: int):
    before = _fingerprint(r)
    response = r.answer(now, rm.begin_epoch_request(CID, leader_id, epoch, r.local, endpoints(leader_id)))
    p = rm.only_partition(response)
    assert (response.error_code, p.error_code) == (E.none, E.invalid_request)
    assert _fingerprint(r) == before
    return p


def test_begin_epoch_naming_a_second_leader_is_refused_by_a_follower():
    r = Replica()
    r.request(10, rm.begin_epoch_request(CID, 2, 3, r.local, endpoints(2)))
    address = r.client.quorum.state.leader_address
    p = _refused_begin_epoch(r, 20, 3, 3)  # another leader of epoch 3
    assert (p.leader_id, p.leader_epoch) == (2, 3)
    _refused_begin_epoch(r, 30, 1, 3)  # ourselves, in an epoch we did not lead
    assert r.client.quorum.state.leader_address == address
    again = rm.only_partition(r.answer(40, rm.begin_epoch_request(CID, 2, 3, r.local, endpoints(2))))
    assert again.error_code == E.none  # the real leader repeating itself is fine


def test_begin_epoch_naming_another_leader_of_our_own_epoch_is_refused_by_the_leader():
    r = Replica()
    now = r.elect(0)
    p = _refused_begin_epoch(r, now + 1, 2, r.client.epoch)
    assert (p.leader_id, p.leader_epoch) == (1, 1) and r.client.role == "leader"


def test_a_resigned_leader_never_follows_another_leader_of_its_epoch():
    r = Replica()
    now = r.elect(0)
    r.client.resign(r.client.epoch, now)
    r.client.poll(now)
    assert r.client.role == "resigned"
    _refused_begin_epoch(r, now + 1, 2, r.client.epoch)
    assert (r.client.role, r.client.epoch) == ("resigned", 1)
    with pytest.raises(IllegalTransition):  # QuorumState itself forbids it too
        r.client.quorum.to_follower(1, 2, None, now + 2)
    accepted = rm.only_partition(r.answer(now + 3, rm.begin_epoch_request(CID, 2, 2, r.local, endpoints(2))))
    assert accepted.error_code == E.none  # the leader of the next epoch is followed
    assert (r.client.role, r.client.epoch, r.client.quorum.leader_id) == ("follower", 2, 2)


# -- 6. only __cluster_metadata-0 --------------------------------------------------------------

def _retarget(request, what: str):
    topic = request.topics[0]
    part = topic.partitions[0]
    if what == "partition":
        field = next(f for f in ("partition_index", "partition", "index") if hasattr(part, f))
        return dataclasses.replace(request, topics=(dataclasses.replace(
            topic, partitions=(dataclasses.replace(part, **{field: 5}),)),))
    if hasattr(topic, "topic_id"):
        return dataclasses.replace(request, topics=(dataclasses.replace(topic, topic_id=uuid.UUID(int=99)),))
    field = "topic_name" if hasattr(topic, "topic_name") else "name"
    return dataclasses.replace(request, topics=(dataclasses.replace(topic, **{field: "other"}),))


def _leader_with_snapshot():
    r = Replica()
    c = r.client
    now = r.elect(0)
    r.commit_leader_change(now, 2)
    c.append_now(c.epoch, [data_record(f"v{i}") for i in range(3)], now)
    r.fetch(now, 2, c.log.end_offset, c.epoch)
    sid = c.create_snapshot(c.log.end_offset, [data_record("state")], last_contained_log_timestamp_ms=0,
                            now_ms=now)
    return r, now, sid


@pytest.mark.parametrize("what", ["topic", "partition"])
@pytest.mark.parametrize("api", ["vote", "begin_quorum_epoch", "end_quorum_epoch", "fetch", "fetch_snapshot"])
def test_requests_for_another_topic_or_partition_are_refused(api, what):
    r, now, sid = _leader_with_snapshot()
    c = r.client
    end, epoch = c.log.end_offset, c.epoch
    request = {
        "vote": lambda: rm.vote_request(CID, ReplicaKey(3), epoch + 1, r.local, epoch, end, False),
        "begin_quorum_epoch": lambda: rm.begin_epoch_request(CID, 2, epoch + 1, r.local, endpoints(2)),
        "end_quorum_epoch": lambda: rm.end_epoch_request(CID, 2, epoch + 1, (), endpoints(2)),
        "fetch": lambda: rm.fetch_request(CID, ReplicaKey(3), epoch, end, epoch, 0, 1 << 20),
        "fetch_snapshot": lambda: rm.fetch_snapshot_request(CID, ReplicaKey(3), epoch, (sid.end_offset, sid.epoch),
                                                            0, 1 << 20),
    }[api]()
    before = _fingerprint(r)
    response = r.answer(now + 100, _retarget(request, what))
    assert response.error_code == E.invalid_request
    assert _fingerprint(r) == before
    # The same request for __cluster_metadata-0 is served: only the partition was wrong.
    assert r.answer(now + 200, request).error_code == E.none


# -- 7. the simulator's replay line ------------------------------------------------------------

def test_replay_line_reproduces_the_failing_configuration(monkeypatch):
    from engine.tools.cli import build_parser
    from engine.sim import raft_runner as sim_runner
    from engine.sim.raft_simulation import SimConfig

    monkeypatch.setattr(sim_runner, "run_seed", lambda seed, events, config=None, trace=None: sim_runner.SeedResult(
        seed, events, 0, 0, 0, "liveness: planted" if seed == 42 else None))
    for voters, observers, kraft_version in [(2, 2, 1), (3, 1, 0), (5, 0, 1), (3, 1, 1)]:  # the last: defaults
        lines: list[str] = []
        config = SimConfig(voters=voters, observers=observers, kraft_version=kraft_version)
        sim_runner.run_seeds(41, 3, 700, out=lines.append, config=config)
        replay = [line for line in lines if line.startswith("replay a failing seed: kraftd ")]
        assert len(replay) == 1, lines
        args = build_parser().parse_args(replay[0].split("kraftd ", 1)[1].split())
        assert (args.first_seed, args.seeds, args.events) == (42, 1, 700)
        assert (args.voters, args.observers, args.kraft_version) == (voters, observers, kraft_version), replay[0]


def test_a_snapshot_built_while_a_newer_one_arrived_is_dropped_not_installed():
    from engine.storage.snapshot_writer import snapshot_bytes

    r = Replica()
    c = r.client
    now = r.elect(0)
    r.commit_leader_change(now, 2)
    c.append_now(c.epoch, [data_record("a")], now)
    r.fetch(now, 2, c.log.end_offset, c.epoch)
    older = c.prepare_snapshot(c.log.end_offset)  # being built (in slices, on a node) ...
    c.append_now(c.epoch, [data_record("b")], now)
    r.fetch(now, 2, c.log.end_offset, c.epoch)
    newer = c.create_snapshot(c.log.end_offset, [data_record("state")], last_contained_log_timestamp_ms=0,
                              now_ms=now)  # ... when a newer one is installed (or downloaded)
    data = snapshot_bytes([data_record("old")], epoch=older.snapshot_id.epoch, last_contained_log_timestamp_ms=0,
                          now_ms=now, kraft_control=older.kraft_control)
    assert c.install_snapshot(older.snapshot_id, c.log.stage_snapshot(older.snapshot_id, data)) is False
    assert c.log.latest_snapshot_id() == newer and newer.end_offset > older.snapshot_id.end_offset
    assert c.prepare_snapshot(newer.end_offset) is None  # nothing newer to build at that offset
