"""One interval's rows of a table that needs state (every table but ``records``), on the executor.

``read_interval(task, table, permissive)`` replays the task's range (metashell.spark.intervals)
from its starting snapshot with the export's own code (metashell.export.history_tables'
``history_rows_of``, the change tables' too: the rows are the export's, not a second reading of
the records), and keeps the rows of the records at offsets in its range:
- a replay starts from the snapshot's image; for ``feature_changes`` and ``voter_changes`` (the
  only rows that read the quorum's state: kraft.version and the voters before a change) with the
  quorum a replay of the whole run stands at there (engine.image.run_replay.snapshot_in_run);
- the rows of a metadata transaction are made at its end marker: a transaction still open at the
  range's end is read on until it closes (Kafka's snapshots, and ours, are never inside one);
- damage or an archive's hole stops the replay, as it stops the export's run; the replay starts
  again at the first snapshot of the range past the gap (its own image), so rows never speak
  across a gap. The ``gaps`` table is the export's (engine.image.run_replay.log_runs), from the
  cluster's first task.

The pushed filters (metashell.spark.pushed) are applied exactly, as Spark would apply them to the
rows: offsets and times on the table's ``offset`` and ``timestamp_ms`` columns, record types on
its ``type`` column (``record`` for the change tables), cluster ids on ``cluster_id``.

Bad input: a starting snapshot that does not read fails the task with one line naming the file
and byte offset (FAILFAST); in PERMISSIVE mode it is a ``_corrupt`` row (its ``offset`` the
snapshot's end offset) and the task starts from the previous snapshot that reads (or the log's
start), keeping only its own range's rows. Damage the replay meets is a gap, as in the export
(the ``gaps`` table names it); in PERMISSIVE mode it is also a ``_corrupt`` row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from engine.common.errors import MetadataError
from engine.image.log_holes import LogHoleError
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import load_snapshot, replay_start, segment_batches
from engine.image.run_replay import log_runs, snapshot_in_run
from engine.storage.log_reader import LogDirListing, LogEntry, list_log_dir
from metashell.export.schemas import CHANGE_TABLES, column_names
from metashell.history.transactions import ABORT, BEGIN, END, marker_of
from metashell.spark.intervals import IntervalTask
from metashell.spark.pushed import Pushed
from metashell.spark.table_schema import SOURCE_TABLES, source_arrow_schema

from metashell.spark.corrupt import KraftReadError

STATE_TABLES = tuple(table for table in SOURCE_TABLES if table != "records")
QUORUM_TABLES = ("feature_changes", "voter_changes")  # their rows read the quorum's state before a change
BATCH_ROWS = 8192  # rows per Arrow batch handed to Spark


def type_column(table: str) -> str | None:
    """The column holding Kafka's record type name, that ``Pushed.types`` filters: ``type`` for
    the record tables that have one, ``record`` for the change tables, None otherwise."""
    names = column_names(table)
    return "type" if "type" in names else "record" if "record" in names else None


def read_interval(task: IntervalTask, table: str, permissive: bool = False) -> Iterator[Any]:
    """The task's rows of ``table`` as pyarrow RecordBatches of ``source_arrow_schema(table,
    permissive)``, in log order."""
    if table not in STATE_TABLES:
        raise ValueError(f"table {table!r} is not one that needs state (known: {', '.join(STATE_TABLES)})")
    rows = interval_rows(task, table, permissive)
    keep = _keeper(table, task.pushed)
    rows = [row for row in rows if keep(row)]
    yield from arrow_batches(rows, table, task.cluster_id, permissive)


def interval_rows(task: IntervalTask, table: str, permissive: bool = False) -> list[tuple]:
    """The task's rows of ``table`` as tuples of the export's columns (``_corrupt`` last when
    ``permissive``), before the pushed filters: what ``read_interval`` turns into batches."""
    return interval_tables(task, [table], permissive)[table]


def interval_tables(task: IntervalTask, tables: Iterable[str], permissive: bool = False) -> dict[str, list[tuple]]:
    """``interval_rows`` of several tables from one replay of the task's range."""
    tables = list(tables)
    gaps = _gap_rows(task) if task.first and "gaps" in tables else []
    out = {"gaps": [(*row, None) for row in gaps] if permissive else gaps} if "gaps" in tables else {}
    replayed = [table for table in tables if table != "gaps"]
    if replayed:
        out.update(_interval_rows(task, replayed, permissive))
    return {table: out[table] for table in tables}


# -- the replay ---------------------------------------------------------------------------------

def _interval_rows(task: IntervalTask, tables: list[str], permissive: bool) -> dict[str, list[tuple]]:
    listing = list_log_dir(Path(task.log_dir))
    quorum = any(table in QUORUM_TABLES for table in tables)
    out: dict[str, list[tuple]] = {table: [] for table in tables}

    def corrupt(offset: int, line: str) -> None:  # a PERMISSIVE row in each table
        for table in tables:
            out[table].append((offset, *([None] * (len(column_names(table)) - 1)), line))

    points = [(task.begin, task.snapshot)] + list(task.restarts)
    index: int | None = 0
    while index is not None:
        begin, path = points[index]
        start = _start(task, quorum, listing, begin, path, permissive, corrupt)
        if start is None:  # PERMISSIVE, and nothing before it reads: on at the next snapshot
            index = index + 1 if index + 1 < len(points) else None
            continue
        found, damage, reached, inside = _replay(listing, tables, *start, task.end, task.end_offset)
        if inside:  # the snapshot stands inside a transaction (never Kafka's): from an older point
            start = _older_start(task, quorum, listing, begin)
            if start is not None:
                found, damage, reached, _ = _replay(listing, tables, *start, task.end, task.end_offset)
        for table in tables:
            at_record = 1 if table in CHANGE_TABLES else 0  # the record's own offset: which task's row it is
            for row in found[table]:
                offset = row[at_record]
                if offset >= begin and (task.end is None or offset < task.end) and _in_windows(task, offset):
                    out[table].append((*row, None) if permissive else row)
        if not damage or (task.end is not None and reached + 1 >= task.end):
            break
        if permissive and not isinstance(damage[0], LogHoleError):
            corrupt(reached + 1, damage[0].one_line())
        # the export's next run: the first snapshot past the gap (its state is past the damage)
        index = next((j for j in range(index + 1, len(points)) if points[j][0] > reached + 1), None)
    return out


def _replay(listing: LogDirListing, tables: list[str], image: MetadataImage, replay_from: int, end: int | None,
            end_offset: int | None) -> tuple[dict[str, list[tuple]], list[MetadataError], int, bool]:
    """(rows of ``tables`` replayed from ``image`` at ``replay_from`` up to ``end``, read on while
    a transaction is open there, the log taken to end at ``end_offset`` (the export's ``end``); the
    damage that stopped it; the last offset replayed; whether a transaction's end marker came
    before any begin: the start stood inside a transaction)."""
    from metashell.export.history_tables import history_rows_of

    damage: list[MetadataError] = []
    seen = {"reached": replay_from - 1, "inside": False}
    batches = _until_closed(segment_batches(listing, replay_from, [], damage=damage), end, seen)
    found = history_rows_of(image, batches, end=end_offset, tables=tables)
    return {table: found[table].rows for table in tables}, damage, seen["reached"], seen["inside"]


def _start(task: IntervalTask, quorum: bool, listing: LogDirListing, begin: int, path: str | None,
           permissive: bool, corrupt: Callable[[int, str], None]) -> tuple[MetadataImage, int] | None:
    """(image, first offset to replay) for rows from ``begin``: the snapshot ``path`` (None: the
    directory's earliest point, as the export's first run); in PERMISSIVE mode, when it does not
    read, a ``_corrupt`` row and an older snapshot that reads, or the log's start."""
    try:
        return _image_at(task, quorum, listing, begin, path)
    except MetadataError as exc:
        if not permissive:
            raise KraftReadError(exc.one_line()) from None
        corrupt(begin, exc.one_line())
    return _older_start(task, quorum, listing, begin)


def _older_start(task: IntervalTask, quorum: bool, listing: LogDirListing,
                 begin: int) -> tuple[MetadataImage, int] | None:
    """The newest start before ``begin`` that reads: an older snapshot the segments continue
    from, or the log's start; None when there is none."""
    older = [(sid.end_offset, str(p)) for sid, p in listing.snapshots if sid.end_offset < begin]
    first_segment = listing.segments[0][0] if listing.segments else None
    for end_offset, older_path in reversed(older):
        if first_segment is None or first_segment > end_offset:
            break  # the segments do not continue from it
        try:
            return _image_at(task, quorum, listing, end_offset, older_path)
        except MetadataError:
            continue
    if first_segment == 0 and begin > 0:
        return MetadataImage(), 0
    return None


def _image_at(task: IntervalTask, quorum: bool, listing: LogDirListing, begin: int,
              path: str | None) -> tuple[MetadataImage, int]:
    """The image to replay from and its first offset; ``quorum``: with the quorum the run
    stands at there (kraft.version and voters, which the quorum tables' rows read)."""
    if path is None:
        found = replay_start(Path(task.log_dir), earliest=True)
        return found.image, found.begin
    image = load_snapshot(Path(path))[0]
    if quorum:
        image = snapshot_in_run(listing, begin, image)
    return image, begin


def _until_closed(batches: Iterable[list[LogEntry]], end: int | None, seen: dict) -> Iterator[list[LogEntry]]:
    """``batches`` up to ``end`` (exclusive; None: all), read on while a metadata transaction is
    open there (its rows are made at its end marker). ``seen``: ``reached``, the last offset handed
    on; ``inside``, an end marker came before any begin marker."""
    open_ = begun = False
    for batch in batches:
        if end is not None and batch and batch[0].offset >= end and not open_:
            return
        for entry in batch:
            name = marker_of(entry)
            if name == BEGIN:
                open_ = begun = True
            elif name in (END, ABORT):
                seen["inside"] = seen["inside"] or not begun
                open_ = False
        if batch:
            seen["reached"] = batch[-1].offset
        yield batch


def _in_windows(task: IntervalTask, offset: int) -> bool:
    return task.windows is None or any(lo <= offset and (hi is None or offset < hi) for lo, hi in task.windows)


# -- gaps -----------------------------------------------------------------------------------------

def _gap_rows(task: IntervalTask) -> list[tuple]:
    """The export's gaps table of the cluster (engine.image.run_replay: the damage scan, the
    manifest's reasons), with the export's start/end rule for the pushed offsets: a gap that meets
    them."""
    try:
        gaps = log_runs(Path(task.log_dir)).gaps
    except MetadataError as exc:
        raise KraftReadError(exc.one_line()) from None
    low, high = task.pushed.offset_min, task.pushed.offset_max
    return [(g.first, g.resume, g.reason, g.recorded_ms) for g in gaps
            if (high is None or g.first <= high) and (low is None or g.resume is None or g.resume > low)]


# -- filters and batches --------------------------------------------------------------------------

def _keeper(table: str, pushed: Pushed):
    """The pushed filters as a test of one row (the export's columns), as Spark would test it: a
    null fails a comparison. The gaps table's offsets were applied as the export's start/end."""
    names = column_names(table)
    if table == "gaps":
        return lambda row: True
    offset_at = names.index("offset")
    time_at = names.index("timestamp_ms") if "timestamp_ms" in names else None
    kind = type_column(table)
    type_at = names.index(kind) if kind is not None else None
    tests = []
    if pushed.offset_min is not None:
        tests.append(lambda row: row[offset_at] is not None and row[offset_at] >= pushed.offset_min)
    if pushed.offset_max is not None:
        tests.append(lambda row: row[offset_at] is not None and row[offset_at] <= pushed.offset_max)
    if time_at is not None and pushed.time_min_ms is not None:
        tests.append(lambda row: row[time_at] is not None and row[time_at] >= pushed.time_min_ms)
    if time_at is not None and pushed.time_max_ms is not None:
        tests.append(lambda row: row[time_at] is not None and row[time_at] <= pushed.time_max_ms)
    if type_at is not None and pushed.types is not None:
        tests.append(lambda row: row[type_at] in pushed.types)
    return lambda row: all(test(row) for test in tests)


def arrow_batches(rows: list[tuple], table: str, cluster_id: str | None, permissive: bool) -> Iterator[Any]:
    """``rows`` (the export's columns, ``_corrupt`` last when permissive) as RecordBatches of the
    source's schema, ``cluster_id`` first."""
    import pyarrow as pa

    schema = source_arrow_schema(table, permissive)
    for at in range(0, len(rows), BATCH_ROWS):
        chunk = rows[at:at + BATCH_ROWS]
        columns = [[cluster_id] * len(chunk)] + [list(column) for column in zip(*chunk)]
        yield pa.RecordBatch.from_arrays([pa.array(column, type=field.type) for column, field in
                                          zip(columns, schema)], schema=schema)
