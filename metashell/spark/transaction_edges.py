"""A metadata transaction (KIP-868) that straddles segment files, settled from one file's task.

A record's ``aborted`` (metashell/history/transactions.py's rule, the export's) depends on the
transaction it is in: whether one was open when its segment began, and how the one open at its
segment's end ended. A task reads its own segment whole; for the edges it looks only as far as
it must:

- ``open_before``: whether a transaction is open at a segment's first offset. The segments
  before it are looked at newest first, and only until one holds a transaction marker: the last
  marker says it (a Begin: open). A segment whose bytes hold no marker's frame (the record value
  starts with frame version 1 and the marker's api key, 23, 24 or 25) is passed over without
  decoding it.
- ``outcome_after``: how the transaction open at a segment's end ended: the first End (committed:
  False) or Abort (True) marker in the segments after it; none before the log ends (or before
  ``endOffset``, or before a hole or damage, where a replay stops too): None, still open.

The marker rules are MetadataDelta's (Kafka's MetadataBatchLoader): a Begin inside a transaction
and an End or Abort outside one are skipped; control records and records of unknown types are
never part of a transaction.
"""

from __future__ import annotations

import mmap
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Sequence

from engine.common.errors import MetadataError
from engine.storage.log_reader import LogEntry, entries_by_batch
from metashell.history.transactions import ABORT, BEGIN, END, in_transactions, marker_of  # noqa: F401 (re-exported)

# a record value's first bytes: frame version 1, then the api key (one byte below 64)
_MARKER_FRAMES = (b"\x01\x17", b"\x01\x18", b"\x01\x19")


def may_hold_markers(path: str) -> bool:
    """False only when no record of the file can be a transaction marker: no marker frame in its
    bytes (a scan in C over the mapped file; a match is then decoded to be sure). Cached per
    worker process by the file's size and time: each task of a log asks of the files before it."""
    try:
        stat = Path(path).stat()
    except OSError:
        return False
    return _may_hold_markers(path, stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=4096)
def _may_hold_markers(path: str, size: int, mtime_ns: int) -> bool:
    if size == 0:
        return False
    try:
        with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return any(mapped.find(frame) != -1 for frame in _MARKER_FRAMES)
    except (OSError, ValueError):
        return False


def _entries(path: str, end: int | None) -> Iterator[LogEntry]:
    """The file's records up to offset ``end``; damage (or a torn tail) ends them quietly: a replay
    stops there too."""
    try:
        for batch in entries_by_batch(Path(path), lambda pos, err: None, False):
            for entry in batch:
                if end is not None and entry.offset > end:
                    return
                yield entry
    except MetadataError:
        return


@lru_cache(maxsize=256)
def _summary(path: str, size: int, mtime_ns: int) -> tuple[str | None, int | None, int | None]:
    """(the last marker's effect: BEGIN, END or None when none, first offset, last offset) of a
    whole segment; cached per worker process (a worker reads many tasks of one log)."""
    last_marker, first, last = None, None, None
    for entry in _entries(path, None):
        first = entry.offset if first is None else first
        last = entry.offset
        marker = marker_of(entry)
        if marker is not None:
            last_marker = BEGIN if marker == BEGIN else END
    return last_marker, first, last


def summary(path: str) -> tuple[str | None, int | None, int | None]:
    stat = Path(path).stat()
    return _summary(path, stat.st_size, stat.st_mtime_ns)


def open_before(segments: Sequence[tuple[int, str]], index: int) -> bool:
    """Whether a metadata transaction is open at segment ``index``'s first offset."""
    for _, path in reversed(segments[:index]):
        if not may_hold_markers(path):
            continue
        last_marker, _, last = summary(path)
        if last_marker is None:
            continue
        # open only if nothing between that segment and ours breaks the log (a hole: the
        # segments after it start a replay of their own, with no transaction open)
        return last_marker == BEGIN and last is not None and _contiguous(segments, path, last, index)
    return False


def _contiguous(segments: Sequence[tuple[int, str]], path: str, last: int, index: int) -> bool:
    """Whether the segments from ``path`` (ending at ``last``) up to ``index`` follow on unbroken."""
    position = [p for _, p in segments].index(path)
    for base, between in segments[position + 1:index]:
        if base != last + 1:
            return False
        _, _, last_between = summary(between)
        if last_between is None:
            return False
        last = last_between
    return segments[index][0] == last + 1


def outcome_after(segments: Sequence[tuple[int, str]], index: int, last: int, end: int | None) -> bool | None:
    """How the transaction open after offset ``last`` (segment ``index``'s last record) ended: False
    committed, True aborted, None still open where the log (or ``end``) stops."""
    for base, path in segments[index + 1:]:
        if base != last + 1 or (end is not None and base > end):
            return None
        if not may_hold_markers(path):
            last_here = _last_offset(path)
            if last_here is None or (end is not None and last_here >= end):
                return None  # damage, or the log (as read) ends inside it: still open
            last = last_here
            continue
        for entry in _entries(path, end):
            marker = marker_of(entry)
            if marker == END:
                return False
            if marker == ABORT:
                return True
            last = entry.offset
        if end is not None and last >= end:
            return None
    return None


def _last_offset(path: str) -> int | None:
    """The segment's last offset, from its batch headers only; None when a batch does not read
    (damage or a torn tail: a replay stops there)."""
    from engine.storage.log_reader import read_batch_headers

    last = None
    try:
        for _, header in read_batch_headers(Path(path)):
            last = header.last_offset
    except MetadataError:
        return None
    return last
