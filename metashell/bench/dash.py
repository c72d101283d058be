"""``metashell bench dash``: how long the dashboard takes to open, and one step of history to redraw.

Generates a log directory: a snapshot of ``partitions`` partitions (100 per topic, three
replicas) followed by ``steps`` batches of one PartitionChangeRecord each (an ISR shrinking,
then expanding). With ``--snapshot F`` (a snapshot as Kafka 4.x writes it, e.g. the one
``kraftd bench peer`` writes at 1,000,000 partitions) the log directory is that file followed
by the same batches; with ``--log-dir D`` it is D as it is.

Open: ``runs`` fresh processes, each timed from its start (spawned by this one) to the end of
the first full paint of the dashboard (``metashell.bench.dash_open``: the real app headless,
``App.run_test``, until the app is idle). That is what an operator waits for at
``metashell dash``: imports, the snapshot read, the screen composed and drawn.

Steps: opens the directory the way ``metashell dash`` does, runs the real app headless and
presses → once per batch, timing each press from the key to the end of the refresh it causes
(the app has processed every message and the screen is composed). Prints p50 / p99 / max per
step, beside the test pilot's own cost per key; asserts nothing.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
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


def write_history_after(directory: Path, snapshot: Path, steps: int) -> Path:
    """A log directory that is ``snapshot`` (copied in as it is: Kafka's bytes, not ours) followed
    by ``steps`` one-record batches, an ISR shrinking then expanding in its first topic."""
    from engine.image.metadata_loader import load_snapshot
    from engine.storage.log_reader import METADATA_PARTITION_DIR

    image, info = load_snapshot(snapshot)  # lazily: one topic is decoded
    target = Path(directory) / METADATA_PARTITION_DIR
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(snapshot, target / Path(snapshot).name)
    topic = next(iter(image.topics.by_id.values()))
    partition_id, first = next(iter(sorted(topic.partitions.items())))
    replicas = tuple(first.replicas)
    epoch = info.snapshot.epoch if info.snapshot is not None else 1
    log = MetadataLog.create(directory, fsync_policy="never")
    try:
        for step in range(steps):
            isr = replicas if step % 2 else replicas[:2]
            change = m.PartitionChangeRecordV2(partition_id=partition_id, topic_id=topic.id,
                                               isr=tuple(i32(b) for b in isr))
            log.append([change], epoch=epoch, timestamp_ms=image.provenance.last_timestamp_ms + 1_000 * (step + 1))
    finally:
        log.close()
    return Path(directory)


def open_times(directory: Path, runs: int) -> list[float]:
    """Seconds from spawning ``python -m metashell.bench.dash_open DIR`` to its line saying the
    first full paint is done, ``runs`` times (a fresh process each: cold imports, no cache)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "metashell.bench.dash_open", str(directory)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        line = child.stdout.readline()
        painted = time.perf_counter() - started
        child.stdout.close()
        _, err = child.communicate()
        if not line.startswith("painted"):
            raise RuntimeError(f"the dashboard did not open: {(err.strip().splitlines() or ['no answer'])[-1]}")
        times.append(painted)
    return times


async def _press_times(pilot, key: str, count: int) -> list[float]:
    times_ms = []
    for _ in range(count):
        started = time.perf_counter()
        await pilot.press(key)
        await pilot.pause()
        times_ms.append((time.perf_counter() - started) * 1000)
    return times_ms


async def _measure(directory: Path, steps: int) -> tuple[float, float, list[float], list[float], tuple]:
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
        # a big lazy image's whole-image counts are made in the background (metashell.dashboard.
        # counting): the steps are timed while they are (their arrival, once, lands in one step),
        # then again from the start once they are in
        counting_ms: list[float] = []
        if not app.main.counted:
            while not app.main.counted and len(counting_ms) < steps:
                counting_ms += await _press_times(pilot, "right", 1)
            started = time.perf_counter()
            await app.main.counted_event.wait()
            await pilot.pause()
            counted_s = time.perf_counter() - started + sum(counting_ms) / 1000
            await pilot.press("home")
            await pilot.pause()
        else:
            counted_s = 0.0
        step_ms = await _press_times(pilot, "right", steps)
    return opened_s, first_render_s, step_ms, idle_ms, (counting_ms, counted_s)


def _stats(times_ms: list[float]) -> tuple[float, float, float]:
    ordered = sorted(times_ms)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], ordered[-1]


def bench_dash(partitions: int = 100_000, steps: int = 50, out: Callable[[str], None] = print, *,
               snapshot: Path | None = None, log_dir: Path | None = None, runs: int = 0) -> list[float]:
    """``runs``: fresh processes timed to the first paint (0: none, as before issue 26)."""
    with tempfile.TemporaryDirectory(prefix="metashell-bench-dash-") as tmp:
        started = time.perf_counter()
        if log_dir is not None:
            directory = Path(log_dir)
            out(f"the log directory {directory}")
        elif snapshot is not None:
            directory = write_history_after(Path(tmp), Path(snapshot), steps)
            out(f"{Path(snapshot).name} copied + {steps} one-record batches ({time.perf_counter() - started:.1f} s)")
        else:
            directory = write_bench_history(Path(tmp), partitions, steps)
            out(f"generated {partitions:,} partitions in a snapshot + {steps} one-record batches "
                f"({time.perf_counter() - started:.1f} s)")
        if runs:
            opens = open_times(directory, runs)
            ordered = sorted(opens)
            out(f"open, process start to first full paint, {runs} runs: median {statistics.median(ordered):.2f} s "
                f"(range {ordered[0]:.2f}-{ordered[-1]:.2f} s)")
        try:
            opened_s, first_s, step_ms, idle_ms, counting = asyncio.run(_measure(directory, steps))
        finally:
            import gc

            gc.unfreeze()  # settle_heap froze it for the run; the caller's process lives on
    p50, p99, worst = _stats(step_ms)
    idle50, _, _ = _stats(idle_ms)
    out(f"history opened in {opened_s:.2f} s; first render {first_s:.2f} s")
    counting_ms, counted_s = counting
    if counting_ms:
        c50, c99, cworst = _stats(counting_ms)
        out(f"whole-image counts in {counted_s:.1f} s after the first render (in the background); "
            f"{len(counting_ms)} steps meanwhile, key to idle: p50 {c50:.0f} ms, p99 {c99:.0f} ms, max {cworst:.0f} ms "
            f"(the counts' arrival, once, included)")
    out(f"one step, key to idle, {len(step_ms)} steps: p50 {p50:.0f} ms, p99 {p99:.0f} ms, max {worst:.0f} ms")
    out(f"the test pilot alone (an unbound key, to idle): p50 {idle50:.0f} ms")
    out(f"redraw of one step (step minus pilot): p50 {p50 - idle50:.0f} ms, p99 {p99 - idle50:.0f} ms")
    return step_ms
