"""A benchmark load for a running controller: appends at a fixed rate, commit latency measured.

While its node leads, ``LoadGenerator`` schedules appends of NoOpRecords (the smallest real
metadata record, and one no state machine acts on) at ``rate`` records per second, ``batch``
records per ``schedule_append``. It remembers when each append was made and the offset of
its last record; when the leader's listener is handed the batch holding that offset (it
committed), the latency is the time since the append. Appends still pending when the
leadership goes are counted as lost (they die with it, or commit under another leader).

``report()`` is what the benchmark node's ``--load-report FILE`` (engine.bench.node)
gets every second and at shutdown, written atomically: count (committed records measured),
p50/p99/max latency in ms, committed records per second while leading.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import deque
from pathlib import Path
from typing import Callable, Sequence

from engine.records.metadata_records import NoOpRecordV0
from engine.raft.raft_log import LogBatch

BUCKETS_PER_MS = 10  # latencies are kept in a histogram of 0.1 ms buckets


class LatencyHistogram:
    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.count = 0
        self.max_ms = 0.0

    def add(self, latency_ms: float, weight: int = 1) -> None:
        bucket = int(latency_ms * BUCKETS_PER_MS)
        self.counts[bucket] = self.counts.get(bucket, 0) + weight
        self.count += weight
        self.max_ms = max(self.max_ms, latency_ms)

    def percentile(self, p: float) -> float | None:
        """The upper edge of the bucket holding the p-th percentile (nearest rank)."""
        if self.count == 0:
            return None
        rank = max(1, math.ceil(p / 100 * self.count))
        seen = 0
        for bucket in sorted(self.counts):
            seen += self.counts[bucket]
            if seen >= rank:
                return min((bucket + 1) / BUCKETS_PER_MS, self.max_ms)
        return self.max_ms


class LoadGenerator:
    """A RaftListener; ``tick(append)`` from a task, ``append(records) -> last offset | None``."""

    def __init__(self, rate: float, batch: int = 1, *, node_id: int = -1,
                 clock: Callable[[], float] = time.monotonic):
        if rate <= 0 or batch < 1:
            raise ValueError("the load rate and batch must be positive")
        self.rate = rate
        self.batch = batch
        self.node_id = node_id
        self.clock = clock
        self.histogram = LatencyHistogram()
        self.pending: deque[tuple[int, int, float]] = deque()  # (last offset, records, appended at)
        self.appended = 0
        self.lost = 0
        self.leading_since: float | None = None
        self.leading_s = 0.0  # time spent leading in earlier epochs
        self._owed = 0.0  # records due but not appended yet
        self._last_tick: float | None = None

    @property
    def interval_s(self) -> float:
        """How often ``tick`` should run: one batch's worth of time, 1 ms at least."""
        return max(0.001, min(0.1, self.batch / self.rate))

    def tick(self, leading: bool, append: Callable[[list], int | None]) -> None:
        now = self.clock()
        if not leading:
            self._stop_leading(now)
            return
        if self.leading_since is None:
            self.leading_since, self._last_tick, self._owed = now, now, 0.0
        self._owed = min(self._owed + (now - self._last_tick) * self.rate, self.rate)  # at most 1 s behind
        self._last_tick = now
        while self._owed >= self.batch:
            offset = append([NoOpRecordV0() for _ in range(self.batch)])
            if offset is None:
                self._stop_leading(now)
                return
            self._owed -= self.batch
            self.appended += self.batch
            self.pending.append((offset, self.batch, now))

    def _stop_leading(self, now: float) -> None:
        if self.leading_since is not None:
            self.leading_s += now - self.leading_since
            self.leading_since = None
        self.lost += sum(n for _, n, _ in self.pending)
        self.pending.clear()

    # -- RaftListener ----------------------------------------------------------------------

    def handle_commit(self, batches: Sequence[LogBatch]) -> None:
        if not batches or not self.pending:
            return
        committed = batches[-1].last_offset
        now = self.clock()
        while self.pending and self.pending[0][0] <= committed:
            _, records, at = self.pending.popleft()
            self.histogram.add((now - at) * 1000, records)

    def handle_load_snapshot(self, snapshot_id, batches) -> None:
        pass

    def handle_leader_change(self, leader) -> None:
        if leader.leader_id != self.node_id:
            self._stop_leading(self.clock())

    # -- the report ------------------------------------------------------------------------

    def report(self) -> dict:
        now = self.clock()
        leading_s = self.leading_s + (now - self.leading_since if self.leading_since is not None else 0.0)
        h = self.histogram

        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, 2)

        return {"node_id": self.node_id, "rate": self.rate, "batch": self.batch, "count": h.count,
                "p50_ms": rounded(h.percentile(50)), "p99_ms": rounded(h.percentile(99)),
                "max_ms": rounded(h.max_ms if h.count else None),
                "committed_records_per_s": round(h.count / leading_s, 1) if leading_s > 0 else 0.0,
                "appended": self.appended, "pending": sum(n for _, n, _ in self.pending), "lost": self.lost,
                "leading_s": round(leading_s, 3)}

    def write_report(self, path: Path) -> None:
        """Write ``report()`` as JSON to ``path`` atomically (a temporary file renamed over it)."""
        path = Path(path)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(self.report(), indent=1) + "\n")
        os.replace(tmp, path)


__all__ = ["LatencyHistogram", "LoadGenerator"]
