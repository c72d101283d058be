"""What a history holds per record, read from a file or grown from a feed, with and without a window.

    python -m metashell.bench.window [RECORDS] [WINDOW]

Writes a log directory (a snapshot of 1,000 partitions, then RECORDS one-record batches of a
PartitionChangeRecord: a live controller's usual batch) and measures, with tracemalloc, the
bytes each way of holding it keeps once built:

* ``file``: the dashboard's History read from the directory (``metashell dash --log-dir``);
* ``engine file``: the engine's MetadataHistory alone (the shell's ``seek``, no observer);
* ``grown``: a History grown by ``extend`` in drains of 100 batches (a live source), no window;
* ``grown, window``: the same with ``window_records=WINDOW``: bounded whatever RECORDS is.

Prints bytes per record kept (the window's: per record in the window); asserts nothing.
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Callable

from engine.image.metadata_history import MetadataHistory
from engine.image.metadata_loader import replay_start, segment_batches
from metashell.bench.dash import write_bench_history
from metashell.dashboard.history import History

DRAIN_BATCHES = 100


def _held(build: Callable[[], object]) -> tuple[object, int]:
    """The object ``build`` makes and the bytes it holds once built (the garbage collected)."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept = build()
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return kept, held


def _grown(directory: Path, window_records: int) -> History:
    start = replay_start(directory)  # the snapshot, as a live attachment starts from the leader's
    history = History.growing(start.info, start.image, start.start_offset, window_records=window_records)
    drain: list = []
    for batch in segment_batches(start.listing, start.begin, []):
        drain.append(batch)
        if len(drain) == DRAIN_BATCHES:
            history.extend(drain)
            drain = []
    history.extend(drain)
    return history


def bench_window(records: int = 50_000, window_records: int = 10_000, out: Callable[[str], None] = print) -> None:
    with tempfile.TemporaryDirectory(prefix="metashell-bench-window-") as tmp:
        directory = Path(tmp)
        write_bench_history(directory, 1000, records)
        _, image_only = _held(lambda: replay_start(directory).image)  # the starting image, in every figure
        out(f"{records:,} one-record batches after a snapshot of 1,000 partitions "
            f"(its image: {image_only / 1e6:.1f} MB, taken off below)")
        cases = [("file (History.open_log_dir)", lambda: History.open_log_dir(directory), None),
                 ("engine file (MetadataHistory)", lambda: MetadataHistory.open_log_dir(directory), None),
                 ("grown (extend, no window)", lambda: _grown(directory, records * 2), None),
                 (f"grown, window {window_records:,}", lambda: _grown(directory, window_records), window_records)]
        for name, build, window in cases:
            started = time.perf_counter()
            history, held = _held(build)
            seconds = time.perf_counter() - started
            kept = len(history.entries)
            per = (held - image_only) / max(1, kept)
            out(f"{name:32} {kept:>8,} records kept  {held / 1e6:6.1f} MB  {per:5.0f} bytes/record  "
                f"(built in {seconds:.1f} s under tracemalloc)")
            del history


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    bench_window(*args)
