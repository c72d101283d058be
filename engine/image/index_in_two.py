"""The snapshot walk (engine.image.snapshot_index) on both cores: the second half of the batches
in a forked process, the first half here, at the same time.

The walk is a Python loop over every record (about half a second for a million partitions);
its result is small (the TopicRecords, the byte ranges, the other domains' records), so a fork
that shares the bytes and sends back only that halves the walk's wall time on two idle cores.
The halves are joined as the one walk would have found them: the first half's last topic
claims the PartitionRecords the second half began with (by their topic id), and a topic id
named in both halves is not the grouped shape.

Refused (None: the caller walks alone) where it cannot help or is not safe: small files, no
``os.fork``, a process with other threads (a fork copies their locks mid-use), a second half
that failed for any reason other than the shape.
"""

from __future__ import annotations

import os
import pickle
import threading

from engine.image.snapshot_index import NotGrouped, SnapshotIndex, _batch_headers, _Indexer, walk_alone
from engine.records.record_batch import RecordBatch

# below this many bytes a fork, its pickles and the join cost more than half a walk saves
MIN_BYTES = 16 << 20


def index_snapshot_on_two(buf: bytes, where: str) -> SnapshotIndex | None:
    """As snapshot_index.index_snapshot, the walk in two processes where that is possible and
    pays, else alone: the same index, or None when the bytes are not in the grouped shape."""
    headers, positions = _batch_headers(buf, where)
    try:
        index = index_in_two(buf, where, headers, positions)
    except NotGrouped:
        return None
    return index if index is not None else walk_alone(buf, where, headers, positions)


def index_in_two(buf: bytes, where: str, headers: list[RecordBatch], positions: list[int]) -> SnapshotIndex | None:
    """The index, walked in two processes; None when that is not possible here (see above).
    Raises NotGrouped as the one walk does."""
    if len(buf) < MIN_BYTES or not hasattr(os, "fork") or not _alone() or len(headers) < 4:
        return None
    split = _middle(positions)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the second half; it only computes, writes and leaves (no atexit, no flush)
        os.close(read_end)
        try:
            payload = pickle.dumps(_second_half(buf, where, headers, positions, split), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException:  # noqa: BLE001 - any failure: the parent walks that half itself
            payload = pickle.dumps(("failed", None))
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(payload)
        os._exit(0)
    os.close(write_end)
    first = _Indexer(buf, where, headers, positions)
    try:
        first.walk(0, split)
    finally:  # the second half is read and reaped whatever the first half found
        with os.fdopen(read_end, "rb") as pipe:
            payload = pipe.read()
        os.waitpid(pid, 0)
    try:
        kind, second = pickle.loads(payload)
    except Exception:  # noqa: BLE001 - the second half died mid-write (killed): walk it here
        return None
    if kind == "not grouped":
        raise NotGrouped
    if kind != "walked":
        return None
    return _joined(first, second)


def _alone() -> bool:
    """No other thread in this process: a fork copies another thread's locks as they are."""
    return threading.active_count() == 1


def _middle(positions: list[int]) -> int:
    """The first batch of the second half: the one where half the bytes are behind."""
    half = positions[-1] // 2
    for batch, pos in enumerate(positions):
        if pos >= half:
            return max(batch, 1)
    return len(positions) - 1


def _second_half(buf, where, headers, positions, split) -> tuple[str, object]:
    second = _Indexer(buf, where, headers, positions, leading=True)
    try:
        second.walk(split, len(headers))
    except NotGrouped:
        return "not grouped", None
    return "walked", (second.leading.runs, second.lead_id, second.topics, second.entries, second.seen)


def _joined(first: _Indexer, second: tuple) -> SnapshotIndex:
    leading_runs, lead_id, topics, entries, seen = second
    if leading_runs:
        if first.current is None or first.current_id != lead_id:
            raise NotGrouped  # the second half began with the partitions of no topic of the first
        first.current.runs.extend(leading_runs)
    if first.seen & seen:
        raise NotGrouped  # a topic made twice
    first.topics.extend(topics)
    first.entries.extend(entries)
    first.seen |= seen
    return first.finish()


__all__ = ["MIN_BYTES", "index_in_two", "index_snapshot_on_two"]
