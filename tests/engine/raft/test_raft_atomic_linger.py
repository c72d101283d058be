"""Atomic appends lingered as Kafka's scheduleAtomicAppend: whole in one batch, flushed together.

The controller's atomic appends (a request's records, which must commit together or not at
all) wait append.linger.ms with the other appends instead of each being written and fsynced at
once: a busy leader flushes once per linger, not once per request."""

from __future__ import annotations

import pytest

from engine.raft.raft_config import MAX_BATCH_RECORDS
from engine.raft.replica_context import batch_ranges
from engine.sim.state_machine import data_record
from test_raft_client_rpcs import Replica


def _records(count: int, tag: str) -> list:
    return [data_record(f"{tag}{i}") for i in range(count)]


def test_scheduled_atomic_appends_wait_for_the_linger_and_share_one_flush(monkeypatch) -> None:
    r = Replica(voter_ids=(1,), append_linger_ms=25)
    r.client.poll(0)
    start = r.log.end_offset
    flushes = []
    monkeypatch.setattr(r.log, "flush", lambda: flushes.append(r.log.end_offset))
    first = r.client.schedule_append(1, _records(3, "a"), 0, atomic=True)
    second = r.client.schedule_append(1, _records(2, "b"), 5, atomic=True)
    assert (first, second) == (start + 2, start + 4)  # offsets known before the batch is written
    r.client.poll(10)
    assert r.log.end_offset == start and not flushes  # still lingering
    r.client.poll(25)
    assert r.log.end_offset == start + 5
    assert flushes == [start + 5]  # both appends, one flush
    assert len(list(r.log.batches(start))) == 1


def test_an_atomic_append_that_does_not_fit_starts_the_next_batch() -> None:
    r = Replica(voter_ids=(1,), append_linger_ms=25)
    r.client.poll(0)
    start = r.log.end_offset
    loose = MAX_BATCH_RECORDS - 2
    r.client.schedule_append(1, _records(loose, "l"), 0)
    last = r.client.schedule_append(1, _records(5, "t"), 0, atomic=True)
    r.client.poll(25)
    sizes = [len(b.records) for b in r.log.batches(start)]
    assert sizes == [loose, 5]  # never split: Kafka's accumulator completes the batch first
    assert last == start + loose + 4 == r.log.end_offset - 1


def test_an_atomic_append_larger_than_a_batch_is_written_at_once_whole() -> None:
    r = Replica(voter_ids=(1,), append_linger_ms=25)
    r.client.poll(0)
    start = r.log.end_offset
    r.client.schedule_append(1, _records(3, "l"), 0)
    last = r.client.schedule_append(1, _records(MAX_BATCH_RECORDS + 1, "big"), 0, atomic=True)
    # the pending records go first, then the big one in its own batch, without waiting
    assert [len(b.records) for b in r.log.batches(start)] == [3, MAX_BATCH_RECORDS + 1]
    assert last == r.log.end_offset - 1


def test_lingered_appends_die_with_the_leadership() -> None:
    r = Replica(voter_ids=(1, 2, 3))
    now = r.elect()
    r.commit_leader_change(now)
    r.client.schedule_append(r.client.epoch, _records(2, "x"), now, atomic=True)
    assert r.client.pending_atomic
    r.client.resign(r.client.epoch, now)
    r.client.poll(now)
    assert r.client.pending_records == [] and r.client.pending_atomic == []


@pytest.mark.parametrize("count, atomic, expected", [
    (25, [], [(0, 10), (10, 20), (20, 25)]),
    (25, [(8, 14)], [(0, 8), (8, 18), (18, 25)]),
    (20, [(0, 10), (10, 20)], [(0, 10), (10, 20)]),
    (12, [(0, 3), (3, 6), (6, 9), (9, 12)], [(0, 9), (9, 12)]),
    (15, [(2, 4)], [(0, 10), (10, 15)]),
    (0, [], []),
])
def test_batch_ranges(count: int, atomic: list, expected: list) -> None:
    ranges = batch_ranges(count, atomic, 10)
    assert ranges == expected
    # every record once, in order; no batch over the limit; no atomic append split
    assert [i for a, b in ranges for i in range(a, b)] == list(range(count))
    assert all(b - a <= 10 for a, b in ranges)
    assert all(any(a <= s and e <= b for a, b in ranges) for s, e in atomic)
