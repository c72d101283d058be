"""``metashell bench dash``: how long one step of history takes to redraw, with 100,000 partitions.

Generates a log directory: a snapshot of ``partitions`` partitions (100 per topic, three
replicas) followed by ``steps`` batches of one PartitionChangeRecord each (an ISR shrinking,
then expanding). Opens it the way ``metashell dash`` does, runs the real app headless
(``App.run_test``) and presses → once per batch, timing each press from the key to the end of
the refresh it causes (the app has processed every message and the screen is composed). Prints
the time to open, the first full render, and p50 / p99 / max per step; asserts nothing.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

from engine.records import metadata_records as m
from engine.bench.replay import partition_heavy_records
from engine.records.kio_codec import i32
from engine.storage.metadata_log import MetadataLog
from engine.storage.snapshot_writer import SnapshotId


def write_bench_history(directory: Path, partitions: int, steps: int) -> Path:
    records = partition_heavy_records(partitions)
    log = MetadataLog.create(directory, fsync_policy="never")
    try:
        log.truncate_fully_and_start_at(len(records))
        log.write_snapshot(SnapshotId(len(records), 1), records, last_contained_log_timestamp_ms=0, now_ms=0)
        first = next(r for r in records if isinstance(r, m.PartitionRecordV2))
        replicas = tuple(first.replicas)
        for step in range(steps):
            isr = replicas if step % 2 else replicas[:2]  # shrink, expand, shrink, ...
            change = m.PartitionChangeRecordV2(partition_id=first.partition_id, topic_id=first.topic_id,
                                               isr=tuple(i32(b) for b in isr))
            log.append([change], epoch=1, timestamp_ms=1_000 * (step + 1))
    finally:
        log.close()
    return Path(directory)


async def _press_times(pilot, key: str, count: int) -> list[float]:
    times_ms = []
    for _ in range(count):
        started = time.perf_counter()
        await pilot.press(key)
        await pilot.pause()
        times_ms.append((time.perf_counter() - started) * 1000)
    return times_ms


async def _measure(directory: Path, steps: int) -> tuple[float, float, list[float], list[float]]:
    from metashell.dashboard.app import DashboardApp
    from metashell.dashboard.history import History

    started = time.perf_counter()
    history = History.open_log_dir(directory)
    opened_s = time.perf_counter() - started
    from engine.common.heap import settle_heap

    settle_heap()  # as `metashell dash` does
    app = DashboardApp(history, offset=max(history.first_offset - 1, 0))
    async with app.run_test(size=(200, 60)) as pilot:
        started = time.perf_counter()
        await pilot.pause()
        first_render_s = time.perf_counter() - started
        # The pilot itself costs time per key (posting it, waiting for idle): measured with a
        # key nothing is bound to, and reported beside the steps.
        idle_ms = await _press_times(pilot, "x", min(steps, 20))
        step_ms = await _press_times(pilot, "right", steps)
    return opened_s, first_render_s, step_ms, idle_ms


def _stats(times_ms: list[float]) -> tuple[float, float, float]:
    ordered = sorted(times_ms)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], ordered[-1]


def bench_dash(partitions: int = 100_000, steps: int = 50, out: Callable[[str], None] = print) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="metashell-bench-dash-") as tmp:
        started = time.perf_counter()
        write_bench_history(Path(tmp), partitions, steps)
        out(f"generated {partitions:,} partitions in a snapshot + {steps} one-record batches "
            f"({time.perf_counter() - started:.1f} s)")
        try:
            opened_s, first_s, step_ms, idle_ms = asyncio.run(_measure(Path(tmp), steps))
        finally:
            import gc

            gc.unfreeze()  # settle_heap froze it for the run; the caller's process lives on
    p50, p99, worst = _stats(step_ms)
    idle50, _, _ = _stats(idle_ms)
    out(f"history opened in {opened_s:.2f} s; first render {first_s:.2f} s")
    out(f"one step, key to idle, {len(step_ms)} steps: p50 {p50:.0f} ms, p99 {p99:.0f} ms, max {worst:.0f} ms")
    out(f"the test pilot alone (an unbound key, to idle): p50 {idle50:.0f} ms")
    out(f"redraw of one step (step minus pilot): p50 {p50 - idle50:.0f} ms, p99 {p99 - idle50:.0f} ms")
    return step_ms
