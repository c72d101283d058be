"""The Raft core's review findings of issue 10, one test (or a few) per fix.

1. An observer asking a bootstrap server that knows no leader backs off for
   controller.quorum.retry.backoff.ms, whichever bootstrap server it asked (one back-off key).
2. A prospective or candidate replica knows it lost as soon as the votes granted plus those not
   yet answered fall below a majority (Kafka's EpochElection.isVoteRejected).
3. Fetches with a replica id below 0 (live attach, tools) get records but are not tracked:
   they never show up as observers, nor count for anything.
4. A voter set in the log must have an overlapping majority with the one before it (Kafka's
   VoterSetHistory.addAt); a Vote's epoch is handled before its voter key (Kafka's order).
5. The core's modules form layers, with no import cycle (tests/test_layout.py checks the
   whole tree; this names the raft layering).

Everything runs on the pure core with explicit times: no sockets, no wall clock.
"""

from __future__ import annotations

import ast
import uuid
from pathlib import Path

import pytest

import engine.raft
from engine.common.errors import MetadataError
from engine.records.kio_codec import ErrorCode as E
from engine.records.metadata_record_serde import control_record
from engine.raft import raft_messages as rm
from engine.raft.election_store import ElectionState
from engine.raft.memory_raft_log import MemoryRaftLog
from engine.raft.raft_client import InboundResponse
from engine.sim.state_machine import data_record
from engine.raft.voter_set import ReplicaKey, VoterNode, VoterSet, VoterSetChangeError, VoterSetHistory
from test_raft_client_rpcs import CID, Replica, dir_key, endpoints


# -- 1. an observer looking for the leader backs off ----------------------------------------------

def _bootstrap_fetches(r: Replica, ready) -> list:
    return [m for m in r.requests(ready, "FetchRequest") if m.destination.node_id < 0]


@pytest.mark.parametrize("answer", ["no leader", "top-level error", "no answer"])
def test_observer_backs_off_when_a_bootstrap_server_names_no_leader(answer: str) -> None:
    r = Replica(local_id=4)  # voters 1, 2, 3; node 4 observes and knows only the bootstrap servers
    c = r.client
    asked = _bootstrap_fetches(r, c.poll(0))
    assert len(asked) == 1 and c.role == "unattached"
    if answer == "no leader":  # a voter in our epoch, itself waiting for an election to end
        response = rm.fetch_response(E.not_leader_or_follower, leader_id=-1, epoch=c.epoch, high_watermark=-1)
    elif answer == "top-level error":
        response = rm.fetch_response(E.none, leader_id=-1, epoch=c.epoch, high_watermark=-1,
                                     top_error=E.unknown_server_error)
    else:
        response = None
    c.receive(5, InboundResponse(asked[0].correlation_id, response, None if response else "connection refused"))
    backoff = r.config.retry_backoff_ms
    ready = c.poll(5)
    assert not _bootstrap_fetches(r, ready)  # today's bug: asked again at once, at round-trip speed
    assert ready.next_poll_ms == 5 + backoff
    assert not _bootstrap_fetches(r, c.poll(5 + backoff - 1))
    again = _bootstrap_fetches(r, c.poll(5 + backoff))
    assert len(again) == 1 and again[0].destination.address != asked[0].destination.address  # the next one


def test_observer_that_finds_the_leader_fetches_from_it_at_once() -> None:
    r = Replica(local_id=4)
    c = r.client
    asked = _bootstrap_fetches(r, c.poll(0))
    c.receive(5, InboundResponse(asked[0].correlation_id, rm.fetch_response(
        E.not_leader_or_follower, leader_id=2, epoch=3, high_watermark=-1)))
    fetches = r.requests(c.poll(5), "FetchRequest")
    assert (c.role, c.epoch, c.quorum.leader_id) == ("follower", 3, 2)
    assert [m.destination.node_id for m in fetches] == [2]


# -- 2. an election is lost once a majority can no longer grant it ----------------------------------

def _vote_requests(r: Replica, ready) -> list:
    return r.requests(ready, "VoteRequest")


def _answer_votes(c, now: int, requests, granted: dict[int, bool]) -> None:
    for m in requests:
        node_id = m.destination.node_id
        if node_id in granted:
            c.receive(now, InboundResponse(m.correlation_id, rm.vote_response(E.none, -1, c.epoch, granted[node_id])))


def test_prospective_with_four_voters_gives_up_after_two_refusals() -> None:
    r = Replica(voter_ids=(1, 2, 3, 4))  # a majority is 3: after 2 refusals at most 2 can grant
    c = r.client
    now = c.quorum.state.election_deadline_ms
    pre = _vote_requests(r, c.poll(now))
    assert c.role == "prospective" and {m.destination.node_id for m in pre} == {2, 3, 4}
    first = c.quorum.state
    _answer_votes(c, now + 5, pre, {2: False, 3: False})
    c.poll(now + 5)
    # Lost at once (today's bug: it waited out the whole election timeout). No leader known, so
    # unattached in its epoch for a random election backoff (which may be 0: then a new round).
    assert c.election_retries == 1 and c.quorum.state is not first and c.epoch == 0
    assert c.role == "unattached" or (c.role == "prospective" and not c.quorum.state.rejected)


def test_prospective_with_four_voters_still_hopes_after_one_refusal() -> None:
    r = Replica(voter_ids=(1, 2, 3, 4))
    c = r.client
    now = c.quorum.state.election_deadline_ms
    pre = _vote_requests(r, c.poll(now))
    _answer_votes(c, now + 5, pre, {2: False, 3: True})
    c.poll(now + 5)
    assert c.role == "prospective"
    _answer_votes(c, now + 6, pre, {4: True})
    c.poll(now + 6)
    assert (c.role, c.epoch) == ("candidate", 1)


def test_prospective_that_followed_a_leader_goes_back_to_it_after_two_refusals() -> None:
    r = Replica(voter_ids=(1, 2, 3, 4))
    c = r.client
    r.answer(0, rm.begin_epoch_request(CID, 2, 1, r.local, endpoints(2)))
    assert (c.role, c.quorum.leader_id) == ("follower", 2)
    now = c.quorum.state.fetch_deadline_ms
    pre = _vote_requests(r, c.poll(now))  # no fetch answered within the fetch timeout: pre-vote
    assert c.role == "prospective"
    _answer_votes(c, now + 5, pre, {3: False, 4: False})
    c.poll(now + 5)
    assert (c.role, c.epoch, c.quorum.leader_id) == ("follower", 1, 2)


def test_candidate_with_four_voters_backs_off_after_two_refusals() -> None:
    r = Replica(voter_ids=(1, 2, 3, 4))
    c = r.client
    now = c.quorum.state.election_deadline_ms
    _answer_votes(c, now, _vote_requests(r, c.poll(now)), {2: True, 3: True})
    votes = _vote_requests(r, c.poll(now))
    assert (c.role, c.epoch) == ("candidate", 1) and {m.destination.node_id for m in votes} == {2, 3}
    deadline = c.quorum.state.election_deadline_ms
    _answer_votes(c, now + 5, votes, {2: False, 3: False})
    ready = c.poll(now + 5)
    state = c.quorum.state
    assert c.role == "candidate" and state.backoff_until_ms is not None  # lost: backing off already
    assert now + 5 <= state.backoff_until_ms <= now + 5 + r.config.election_backoff_max_ms < deadline
    assert ready.next_poll_ms == state.backoff_until_ms
    assert not _vote_requests(r, ready) and not _vote_requests(r, c.poll(state.backoff_until_ms - 1))
    pre = _vote_requests(r, c.poll(state.backoff_until_ms))
    assert (c.role, c.epoch) == ("prospective", 1)
    assert pre and all(rm.only_partition(m.request).pre_vote for m in pre)


# -- 3. a fetcher with a replica id below 0 reads but is not tracked -----------------------------------

@pytest.mark.parametrize("kraft_version", [0, 1])
def test_fetch_as_replica_minus_one_gets_records_but_is_no_observer(kraft_version: int) -> None:
    r = Replica(kraft_version=kraft_version)
    c = r.client
    now = r.elect()
    r.commit_leader_change(now)
    last = c.append_now(c.epoch, [data_record("a"), data_record("b")], now + 1)
    r.fetch(now + 2, 2, r.log.end_offset, c.epoch)  # voter 2 has it all: committed
    assert c.high_watermark == last + 1
    before = _describe(r, now + 4)
    [response] = r.fetch(now + 4, -1, 0, 0)  # what live attach sends: replica id -1, from the start
    p = rm.only_partition(response)
    assert (response.error_code, p.error_code, p.high_watermark) == (E.none, E.none, last + 1)
    assert bytes(p.records)  # it gets the log
    after = _describe(r, now + 4)
    assert after.observers == () and after.current_voters == before.current_voters
    assert c.high_watermark == last + 1


def _describe(r: Replica, now: int):
    return rm.only_partition(r.answer(now, rm.describe_quorum_request()))


# -- 4. voter-set history: overlapping majorities only ---------------------------------------------

def _set(*ids: int) -> VoterSet:
    return VoterSet.of(VoterNode(dir_key(i), endpoints(i)) for i in ids)


def test_history_refuses_a_voter_set_without_an_overlapping_majority() -> None:
    history = VoterSetHistory(VoterSet())
    history.add(3, _set(1, 2, 3))
    with pytest.raises(VoterSetChangeError) as err:
        history.add(8, _set(1, 4, 5))  # two voters gone, two new: two majorities that need not meet
    assert isinstance(err.value, MetadataError) and "\n" not in str(err.value)
    assert "offset 8" in str(err.value) and "offset 3" in str(err.value)
    assert history.latest() == _set(1, 2, 3) and history.offsets == [3]
    history.add(8, _set(1, 2, 3, 4))  # one at a time is fine
    history.add(9, _set(1, 2, 4))


def test_history_compares_nothing_with_the_bootstrap_checkpoint() -> None:
    # The 0-0 checkpoint's voters (offset -1) come from `kraftd storage format`, not from a leader.
    history = VoterSetHistory(_set(7, 8, 9))
    history.add(-1, _set(1, 2, 3))
    history.add(4, _set(4, 5, 6))
    assert history.latest() == _set(4, 5, 6)


def test_overlapping_majority_is_kafkas_one_gone_one_new() -> None:
    base = _set(1, 2, 3)
    moved = base.without_voter(dir_key(3)).with_voter(VoterNode(ReplicaKey(3, uuid.UUID(int=0xD15C)), endpoints(3)))
    assert base.has_overlapping_majority(moved) and moved.has_overlapping_majority(base)
    assert not base.has_overlapping_majority(_set(1, 2, 4, 5)) and not base.has_overlapping_majority(_set(1))


def _log_with_voter_sets(*sets: VoterSet) -> MemoryRaftLog:
    log = MemoryRaftLog()
    for i, voters in enumerate(sets):
        log.append_as_leader([control_record(voters.to_voters_record())], epoch=1, timestamp_ms=i, control=True)
    log.flush()
    return log


def test_follower_fails_on_a_voter_set_jump_from_its_leader() -> None:
    r = Replica(kraft_version=1)
    c = r.client
    r.answer(0, rm.begin_epoch_request(CID, 2, 1, r.keys[1], endpoints(2)))
    [fetch] = [m for m in r.requests(r.ready, "FetchRequest") if m.destination.node_id == 2]
    records = _log_with_voter_sets(_set(1, 2, 3), _set(1, 4, 5)).read(0, 1 << 20)
    with pytest.raises(VoterSetChangeError) as err:  # the node stops, as Kafka's replica fails
        c.receive(5, InboundResponse(fetch.correlation_id, rm.fetch_response(
            E.none, leader_id=2, epoch=1, high_watermark=0, records=records)))
    assert "offset 1" in str(err.value) and "offset 0" in str(err.value)


def test_replica_refuses_to_start_on_a_log_with_a_voter_set_jump() -> None:
    log = _log_with_voter_sets(_set(1, 2, 3), _set(1, 2, 3, 4), _set(1, 4, 5, 6))
    with pytest.raises(VoterSetChangeError, match="offset 2 has no overlapping majority"):
        Replica(log=log, voter_ids=(1, 2, 3), kraft_version=1)


# -- 4. a Vote's epoch comes before its voter key ------------------------------------------------------

WRONG_DISK = ReplicaKey(1, uuid.UUID(int=0xBAD))


def _vote(candidate: ReplicaKey, epoch: int, voter: ReplicaKey, *, pre_vote: bool = False, last_epoch: int = 0):
    return rm.vote_request(CID, candidate, epoch, voter, last_epoch, 0, pre_vote)


def test_vote_with_a_higher_epoch_and_another_voter_key_still_takes_the_epoch() -> None:
    r = Replica(kraft_version=1)
    p = rm.only_partition(r.answer(10, _vote(r.keys[2], 5, WRONG_DISK)))
    assert (p.error_code, p.vote_granted, p.leader_epoch) == (E.invalid_voter_key, False, 5)
    assert (r.client.role, r.client.epoch) == ("unattached", 5)
    assert r.store.state == ElectionState(5, -1, None)  # the epoch, but no vote


def test_vote_with_a_lower_epoch_and_another_voter_key_is_fenced_first() -> None:
    r = Replica(kraft_version=1)
    r.answer(10, _vote(r.keys[2], 4, r.local))
    p = rm.only_partition(r.answer(11, _vote(r.keys[3], 3, WRONG_DISK)))
    assert (p.error_code, p.vote_granted, p.leader_epoch) == (E.fenced_leader_epoch, False, 4)


def test_pre_vote_with_another_voter_key_takes_the_epoch_but_gives_no_vote() -> None:
    # Kafka takes a higher epoch from a pre-vote too (it carries the sender's current epoch).
    r = Replica(kraft_version=1)
    p = rm.only_partition(r.answer(10, _vote(r.keys[2], 5, WRONG_DISK, pre_vote=True)))
    assert (p.error_code, p.vote_granted, p.leader_epoch) == (E.invalid_voter_key, False, 5)
    assert (r.client.role, r.client.epoch) == ("unattached", 5)
    assert r.store.state == ElectionState(5, -1, None)


def test_vote_without_a_voter_id_is_for_whoever_receives_it() -> None:
    # Vote v0 carries no voter id (-1): Kafka's isValidVoterKey accepts it.
    r = Replica(kraft_version=1)
    p = rm.only_partition(r.answer(10, _vote(r.keys[2], 1, ReplicaKey(-1))))
    assert (p.error_code, p.vote_granted) == (E.none, True)
    assert r.store.state == ElectionState(1, -1, r.keys[2])


# -- 5. the core's modules form layers: no import cycle ------------------------------------------------

# From the bottom; a module may import only modules of lower layers (every import counts,
# also inside functions and under TYPE_CHECKING).
CORE_LAYERS = [
    ["raft_io"],
    ["replica_context"],
    ["describe_quorum", "voter_changes"],
    ["raft_polls", "raft_requests", "raft_responses"],
    ["raft_client"],
]


def _raft_imports(module: str) -> set[str]:
    tree = ast.parse((Path(engine.raft.__file__).parent / f"{module}.py").read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return {name.split(".")[2] for name in found if name.startswith("engine.raft.")}


@pytest.mark.parametrize("layer", range(len(CORE_LAYERS)))
def test_core_modules_import_only_lower_layers(layer: int) -> None:
    core = {m for modules in CORE_LAYERS for m in modules}
    below = {m for modules in CORE_LAYERS[:layer] for m in modules}
    for module in CORE_LAYERS[layer]:
        assert _raft_imports(module) & core <= below, module
