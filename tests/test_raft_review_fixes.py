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
from test_raft_client_rpcs import Replica


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
