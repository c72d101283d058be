"""Committed batches reach a listener at most DELIVERY_RECORDS a poll (at least one batch), the
rest at the next poll, which the client asks for at once; every batch once, in order."""

from __future__ import annotations

from engine.raft import raft_client
from engine.sim.state_machine import data_record
from tests.engine.raft.test_raft_client_rpcs import Replica


class Recorder:
    def __init__(self) -> None:
        self.calls: list[list[tuple[int, int]]] = []

    def handle_commit(self, batches) -> None:
        self.calls.append([(b.base_offset, b.last_offset) for b in batches])

    def handle_load_snapshot(self, snapshot_id, batches) -> None:
        pass

    def handle_leader_change(self, leader) -> None:
        pass


def committed_leader(monkeypatch, limit: int) -> tuple[Replica, Recorder, int]:
    monkeypatch.setattr(raft_client, "DELIVERY_RECORDS", limit)
    r = Replica()
    recorder = Recorder()
    r.client.register(recorder)
    now = r.elect()
    r.commit_leader_change(now)
    r.client.poll(now)
    recorder.calls.clear()
    start = r.log.end_offset
    for n in range(4):  # four batches of three records
        r.client.append_now(r.client.epoch, [data_record(f"{n}-{i}") for i in range(3)], now)
    r.fetch(now, 2, r.log.end_offset, r.client.epoch)  # a follower has them all: committed
    return r, recorder, start


def test_a_poll_hands_over_whole_batches_up_to_the_bound_then_asks_to_be_polled_at_once(monkeypatch):
    r, recorder, start = committed_leader(monkeypatch, limit=5)
    now = 10_000_000
    ready = r.client.poll(now)
    polls = 1
    while ready.next_poll_ms == now:
        ready = r.client.poll(now)
        polls += 1
    delivered = [span for call in recorder.calls for span in call]
    assert delivered == [(start + 3 * n, start + 3 * n + 2) for n in range(4)]
    assert [len(call) for call in recorder.calls] == [2, 2]  # 3 records, then 6 >= 5: the bound
    assert ready.next_poll_ms > now  # nothing left: the timer decides again


def test_one_batch_larger_than_the_bound_still_goes(monkeypatch):
    r, recorder, start = committed_leader(monkeypatch, limit=1)
    now = 10_000_000
    while r.client.poll(now).next_poll_ms == now:
        pass
    assert [len(call) for call in recorder.calls] == [1, 1, 1, 1]
