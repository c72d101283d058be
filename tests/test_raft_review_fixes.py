"""The Raft core's review findings of issue 10, one test (or a few) per fix.

1. An observer asking a bootstrap server that knows no leader backs off for
   controller.quorum.retry.backoff.ms, whichever bootstrap server it asked (one back-off key).
2. A prospective or candidate replica knows it lost as soon as the votes granted plus those not
   yet answered fall below a majority (Kafka's EpochElection.isVoteRejected).
3. Fetches with a replica id below 0 (live attach, tools) get records but are not tracked:
   they never show up as observers, nor count for anything.
4. A voter set in the log must have an overlapping majority with the one before it (Kafka's
   VoterSetHistory.addAt); a Vote's epoch is handled before its voter key (Kafka's order).

Everything runs on the pure core with explicit times: no sockets, no wall clock.
"""

from __future__ import annotations

import pytest

from engine.records.kio_codec import ErrorCode as E
from engine.raft import raft_messages as rm
from engine.raft.raft_client import InboundResponse
from engine.raft.sim_state_machine import data_record
from test_raft_client_rpcs import CID, Replica, endpoints


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
