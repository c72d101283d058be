"""The ``records`` table of one segment file, read on the executor: one row per record, in
offset order, as pyarrow RecordBatches of ``source_arrow_schema("records", permissive)``.

The records are decoded by the engine's own reader (engine.storage.log_reader.batches_of_bytes:
its in-place fast path, the general decoder for anything else) and printed by the export's one
printer (metashell.export.history_tables.records_row), so a row is the export's row led by the
cluster id. ``aborted`` follows metashell/history/transactions.py: False outside a metadata
transaction and in a committed one, True in an aborted one (its markers included), None in one
still open where the log (or ``endOffset``) stops; a transaction that straddles files is settled
by metashell.spark.transaction_edges, reading the neighbouring files only as far as it must.

Rows of a transaction wait for its end (as the export's do), then go out in log order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from engine.common.errors import MetadataError
from engine.storage.log_reader import LogEntry, batches_of_bytes
from engine.storage.log_segment import is_torn_tail, read_segment_bytes
from metashell.export.history_tables import records_row
from metashell.spark.corrupt import Damage, corrupt_row, damage_at, failure
from metashell.spark.plan import RecordsTask
from metashell.spark.pushed import Pushed
from metashell.spark.table_schema import source_arrow_schema
from metashell.spark.transaction_edges import (ABORT, BEGIN, END, in_transactions, marker_of, open_before,
                                               outcome_after)

CHUNK_ROWS = 8192  # rows per Arrow batch handed to Spark


def read_records(task: RecordsTask, permissive: bool = False) -> Iterator["object"]:
    """The task's rows as pyarrow.RecordBatches (FAILFAST: damage raises KraftReadError)."""
    import pyarrow as pa

    schema = source_arrow_schema("records", permissive)
    rows: list[tuple] = []
    for row in _rows(task, permissive):
        rows.append(row)
        if len(rows) >= CHUNK_ROWS:
            yield pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(zip(*rows), schema)],
                                             schema=schema)
            rows = []
    if rows:
        yield pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(zip(*rows), schema)],
                                         schema=schema)


def _rows(task: RecordsTask, permissive: bool) -> Iterator[tuple]:
    cluster, pushed, end = task.cluster_id, task.pushed, task.log_end
    width = 10 if permissive else 9
    tail = (None,) if permissive else ()
    keep = _keeper(pushed, task.offsets)
    # a transaction open now: its entries wait (with whether each is in it) for its end
    waiting: list[tuple[LogEntry, bool]] | None = [] if open_before(task.segments, task.index) else None
    last = task.base_offset - 1
    for item in _batches(task, permissive):
        if isinstance(item, Damage):
            if _keeps_damage(pushed, task.offsets, item):
                yield corrupt_row(width, cluster, item)
            continue
        if end is not None and item and item[0].offset > end:
            break  # the log is read as if it ended at endOffset
        for entry in item:
            if end is not None and entry.offset > end:
                break
            last = entry.offset
            marker = marker_of(entry)
            if waiting is None:
                if marker == BEGIN:
                    waiting = [(entry, True)]
                elif keep(entry):
                    yield (cluster, *records_row(entry, False), *tail)
                continue
            waiting.append((entry, in_transactions(entry)))
            if marker in (END, ABORT):
                yield from _settled(cluster, waiting, marker == ABORT, keep, tail)
                waiting = None
    if waiting:
        outcome = outcome_after(task.segments, task.index, last, end)
        yield from _settled(cluster, waiting, outcome, keep, tail)


def _settled(cluster: str, waiting: list[tuple[LogEntry, bool]], aborted: bool | None, keep, tail: tuple):
    for entry, in_transaction in waiting:
        if keep(entry):
            yield (cluster, *records_row(entry, aborted if in_transaction else False), *tail)


def _keeper(pushed: Pushed, offsets: frozenset[int] | None):
    """entry -> whether its row is kept (exactly: the filters were reported pushed)."""
    low, high = pushed.offset_min, pushed.offset_max
    tmin, tmax, types = pushed.time_min_ms, pushed.time_max_ms, pushed.types

    def keep(entry: LogEntry) -> bool:
        if (low is not None and entry.offset < low) or (high is not None and entry.offset > high):
            return False
        if offsets is not None and entry.offset not in offsets:
            return False
        if (tmin is not None and entry.timestamp_ms < tmin) or (tmax is not None and entry.timestamp_ms > tmax):
            return False
        return types is None or entry.record.type_name in types
    return keep


def _keeps_damage(pushed: Pushed, offsets: frozenset[int] | None, damage: Damage) -> bool:
    """A damage row passes the pushed filters as SQL would pass it: its null columns pass none."""
    if pushed.time_min_ms is not None or pushed.time_max_ms is not None or pushed.types is not None:
        return False
    bounded = pushed.offset_min is not None or pushed.offset_max is not None or offsets is not None
    if not bounded:
        return True
    offset = damage.offset
    return offset is not None and (offsets is None or offset in offsets) \
        and (pushed.offset_min is None or offset >= pushed.offset_min) \
        and (pushed.offset_max is None or offset <= pushed.offset_max)


def _batches(task: RecordsTask, permissive: bool) -> Iterator[list[LogEntry] | Damage]:
    """The segment's records, a list per batch, with its damage (PERMISSIVE) in its place."""
    path = task.path
    try:
        buf = read_segment_bytes(Path(path))
    except MetadataError as exc:
        damage = Damage(exc.one_line(), None, None)
        if not permissive:
            raise failure(damage) from None
        yield damage
        return
    pos = 0
    while pos < len(buf):
        try:
            for header, entries in batches_of_bytes(buf, path, None, False, pos):
                pos += header.size_bytes
                yield entries
            return
        except MetadataError as exc:
            if task.active and is_torn_tail(buf, pos):
                return  # a write in progress (or a crash's leftover) at the log's end: not damage
            damage = damage_at(exc, path, buf, pos)
            if not permissive:
                raise failure(damage) from None
            yield damage
            if damage.resume_at is None:
                return
            pos = damage.resume_at
