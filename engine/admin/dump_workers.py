"""The second core for ``kraftd dump-log``: worker processes print spans of whole batches of a
large file while the parent writes the spans already printed, in file order.

A span is a run of whole batches found by walking the batch lengths alone (``span_bounds``);
each is printed by engine.admin.log_dump.span_text, the very function the one-process dump
uses, so the output is the same characters whichever way it was made, and damage is met at
the same place: a span that stops at damage is written, its error raised, and the spans after
it are never written. Workers are forked (the parent's modules are theirs at no cost) and read
the file themselves, once, from the page cache.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any, Callable, Iterator

from engine.records.record_batch import LOG_OVERHEAD, MIN_BATCH_LENGTH

# About what one worker prints per task: large enough that a task's pickling is noise, small
# enough that the parent starts writing soon and both workers stay busy to the end.
SPAN_BYTES = 1 << 20
# Files smaller than this are printed in the parent: forking would cost more than it saves.
PARALLEL_FROM_BYTES = 8 << 20
_LENGTH = struct.Struct(">i")


def span_bounds(buf: bytes, span_bytes: int | None = None) -> list[tuple[int, int | None]]:
    """(start, stop) of consecutive spans of whole batches covering ``buf``; the last one's stop
    is None (the end of the file, where the dump meets whatever is there). The walk trusts only
    lengths that fit: the first length that does not ends it, and the last span holds the rest."""
    span_bytes = SPAN_BYTES if span_bytes is None else span_bytes
    bounds: list[tuple[int, int | None]] = []
    start = pos = 0
    size = len(buf)
    while pos + LOG_OVERHEAD <= size:
        (length,) = _LENGTH.unpack_from(buf, pos + 8)
        if length < MIN_BATCH_LENGTH or pos + LOG_OVERHEAD + length > size:
            break
        pos += LOG_OVERHEAD + length
        if pos - start >= span_bytes and pos < size:
            bounds.append((start, pos))
            start = pos
    bounds.append((start, None))
    return bounds


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def spans_in_workers(task: Callable[..., Any], buf: bytes, path: Path, bounds: list[tuple[int, int | None]],
                     workers: int, *args: Any) -> Iterator[Any]:
    """``task(buf, path, start, stop, *args)`` for each span, in forked workers; the results in
    span order. The workers see the parent's very bytes (forked after ``buf`` was read, so an
    active segment growing meanwhile cannot make them disagree). Leaving the iteration early
    (damage, an error, a closed pipe) stops the workers."""
    import multiprocessing  # here: a small dump never pays for importing it

    global _file
    _file = (buf, path)
    try:
        pool = multiprocessing.get_context("fork").Pool(workers)
    finally:
        _file = None
    try:
        yield from pool.imap(_run, [(task, start, stop, args) for start, stop in bounds], chunksize=1)
    finally:
        pool.terminate()
        pool.join()


_file: tuple[bytes, Path] | None = None  # set only while the pool forks: the workers keep it


def _run(job: tuple[Callable[..., Any], int, int | None, tuple]) -> Any:
    task, start, stop, args = job
    assert _file is not None
    return task(_file[0], _file[1], start, stop, *args)
