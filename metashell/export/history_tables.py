"""History tables, from a log directory: pure Python, no pyspark.

``history_rows(log_dir)`` replays the log through MetadataDelta run by run (engine.image.run_replay,
as every history does): from the earliest point the directory can rebuild (offset 0, or the
oldest snapshot the segments continue from: the partitions and brokers that snapshot holds are
known from the first row on) up to the first gap (an archive's hole, or damage), then from the
snapshot after each gap, from that snapshot's own image. The rows after a gap are there; none
speaks across it (the gaps are the ``gaps`` table's). The ``records`` table also holds what the segments
keep below that earliest point (a segment straddling the oldest snapshot): those rows need no state
(``records_before_replay``). It gives five tables: ``records`` (every record replayed, its JSON with secrets redacted),
``partition_changes`` (partition creations and changes, and the partitions a ClearElrRecord
cleared, with the partition's state after each), ``broker_fencing`` (registrations, fencing,
controlled shutdown, cordoned log directories), ``controller_registrations`` (controllers
registered and unregistered) and ``leader_changes`` (the quorum's LeaderChangeMessages). ``start``/
``end`` keep rows with start <= offset <= end; the state is replayed from each run's start regardless.

Every row beside the records table comes from a record's change set (engine/image/change_set.py,
``MetadataDelta.record_changes()``): a ``partition_changes`` row for each partition it created
or changed, a ``broker_fencing`` row for each broker registration it changed, a
``controller_registrations`` row for each controller registration it made or removed, a
``leader_changes`` row for each leader change. Nothing here looks at a record's type: the
``type`` column and the record's own columns are what its Kafka JSON (the records table's
printer) says, and every state column is the delta's after the record, so it is the image's own:
- records of a metadata transaction (KIP-868) take effect together at its
  EndTransactionRecord: their rows show the state once it committed;
- records of an aborted transaction (its markers included) have ``aborted`` true and change
  no state: their rows show the state as it stayed;
- records of a transaction still open where the log (or ``end``) stops have ``aborted`` null:
  Kafka has not applied them, and their rows show the state without them.
Rows come in log order: those of a transaction are written when it ends. (When a transaction's
records took effect, and what each changed, is metashell/history/transactions.py's, shared with
the change items of ``log`` and ``diff``.)

The change tables (``config_changes``, ..., ``gaps``: metashell.export.change_tables) are asked of
the same two functions: they are built from the change items, and over a log directory they
replay run by run, never across an archive's gap.

``images_at(log_dir, offsets)``: the partitions table of the image at each offset, with an
``as_of_offset`` column, so "ISR over time" is a query. The log is read once for all offsets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from engine.common.config_resource import BROKER_DEFAULT, topic_resource
from engine.common.kafka_uuid import uuid_to_kafka
from engine.image.change_set import Change, ChangeSet
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.image.run_replay import log_runs
from engine.records.record_json import dumps, record_to_jsonable
from engine.storage.log_reader import LogEntry
from metashell.export.schemas import CHANGE_TABLES, HISTORY_TABLES, RECORD_TABLES, column_names
from metashell.export.tables import Table, partitions_table
from metashell.history.item_values import broker_event
from metashell.history.transactions import TransactionReplay, replay_outcomes
from metashell.source import Source
from metashell.tree.tree_layout import redact_record_json


def history_rows(log_dir: Path | str, *, start: int | None = None, end: int | None = None,
                 tables: Iterable[str] = HISTORY_TABLES) -> dict[str, Table]:
    """The history tables of ``log_dir`` (a node's log directory or its __cluster_metadata-0)."""
    wanted = _wanted(tables)
    found = log_runs(log_dir)  # every table replays run by run: never across a gap
    runs = [run for run in found.runs if (start is None or run.last >= start) and (end is None or run.begin <= end)]
    out = {}
    if wanted & set(CHANGE_TABLES):
        from metashell.export.change_tables import tables_of

        out = tables_of(((run.image, run.batches()) for run in runs), found.gaps, start=start, end=end,
                        tables=wanted & set(CHANGE_TABLES))
    kinds = wanted & set(RECORD_TABLES)
    if kinds:
        rows: dict[str, list[tuple]] = {kind: [] for kind in RECORD_TABLES if kind in kinds}
        if "records" in kinds:
            rows["records"].extend(records_before_replay(found, start=start, end=end))
        for run in runs:
            for kind, table in history_rows_of(run.image, run.batches(), start=start, end=end, tables=kinds).items():
                rows[kind].extend(table.rows)
        out.update({kind: Table(kind, column_names(kind), kind_rows) for kind, kind_rows in rows.items()})
    return {kind: out[kind] for kind in HISTORY_TABLES if kind in out}


def records_before_replay(found, *, start: int | None = None, end: int | None = None) -> list[tuple]:
    """The records rows of what the segments hold before the earliest point a replay starts: the
    records below the oldest snapshot the log was cut back to (a segment that straddles it keeps
    them; Kafka's log start offset moved past them, its files still hold them). They need no state:
    their ``aborted`` is the markers' (metashell.history.transactions.marker_outcomes), and an
    operator auditing the files finds every record they hold, as the kraft data source gives it."""
    from engine.image.metadata_loader import segment_batches
    from metashell.history.transactions import marker_outcomes

    segments = found.listing.segments
    if not found.runs or not segments or segments[0][0] >= found.runs[0].begin:
        return []
    before = found.runs[0].begin - 1
    last = before if end is None else min(before, end)
    entries = (entry for batch in segment_batches(found.listing, segments[0][0], [], end=end + 1 if end is not None
                                                  else None) for entry in batch)
    return [records_row(entry, aborted) for entry, aborted in marker_outcomes(entries, stop_after=last)
            if start is None or entry.offset >= start]


def history_rows_of(start_image: MetadataImage, batches: Iterable[list[LogEntry]], *, start: int | None = None,
                    end: int | None = None, tables: Iterable[str] = HISTORY_TABLES) -> dict[str, Table]:
    """The history tables of ``batches`` replayed from ``start_image`` (a live session's fetched
    history: the snapshot it attached from, then every batch committed since)."""
    wanted = _wanted(tables)
    out = {}
    if wanted & set(CHANGE_TABLES):
        from metashell.export.change_tables import change_rows_of

        if wanted & set(RECORD_TABLES):
            batches = list(batches)  # read twice
        out = change_rows_of(start_image, batches, start=start, end=end, tables=wanted & set(CHANGE_TABLES))
        if not wanted & set(RECORD_TABLES):
            return out
    rows = _Rows(MetadataDelta(start_image, per_record=True), wanted, start)
    for outcome in replay_outcomes(rows.replay, batches, end=end):
        rows.emit(outcome.entry, outcome.changes, outcome.aborted)
    out.update({kind: Table(kind, column_names(kind), rows.out[kind]) for kind in RECORD_TABLES if kind in wanted})
    return {kind: out[kind] for kind in HISTORY_TABLES if kind in out}


def records_row(entry: LogEntry, aborted: bool | None, printed: dict | None = None) -> tuple:
    """The ``records`` table's row of one record (its Kafka JSON, secrets redacted): the export's
    and the kraft data source's one printer. ``printed``: the record's JSON if already made."""
    data = redact_record_json(printed if printed is not None else record_to_jsonable(entry.record))
    return (entry.offset, entry.leader_epoch, entry.timestamp_ms, entry.control, data.get("type"),
            data.get("version") if not entry.control else None, dumps(data.get("data", data)), aborted)


def _wanted(tables: Iterable[str]) -> set[str]:
    wanted = set(tables)
    unknown = wanted - set(HISTORY_TABLES)
    if unknown:
        raise ValueError(f"unknown history table {sorted(unknown)[0]!r} (known: {', '.join(HISTORY_TABLES)})")
    return wanted


class _Rows:
    """The rows of one pass, from each record's outcome (metashell/history/transactions.py: when a
    transaction's records took effect, and what each changed, is worked out there)."""

    def __init__(self, delta: MetadataDelta, wanted: set[str], start: int | None):
        self.replay = TransactionReplay(delta)
        self.delta = delta
        self.start = start
        self.want_records, self.want_changes = "records" in wanted, "partition_changes" in wanted
        self.want_fencing, self.want_leaders = "broker_fencing" in wanted, "leader_changes" in wanted
        self.want_controllers = "controller_registrations" in wanted
        self.out: dict[str, list[tuple]] = {kind: [] for kind in RECORD_TABLES}

    # -- one record's rows, with the state as the delta now stands ---------------------------

    def emit(self, entry: LogEntry, changes: ChangeSet, aborted: bool | None) -> None:
        offset = entry.offset
        if self.start is not None and offset < self.start:
            return
        out, printed = self.out, None
        if self.want_records:
            printed = record_to_jsonable(entry.record)
            out["records"].append(records_row(entry, aborted, printed))
        if self.want_leaders:
            for leader in changes.leader_changes:
                out["leader_changes"].append((leader.offset, leader.timestamp_ms, leader.epoch, leader.leader_id,
                                              list(leader.voters), list(leader.granting_voters)))
        if self.want_changes and changes.partitions:
            printed = printed or record_to_jsonable(entry.record)
            fields = printed.get("data", {})
            for (topic_id, partition), change in _by_topic(changes.partitions):
                out["partition_changes"].append((offset, entry.timestamp_ms, printed.get("type"),
                                                 *self._topic(topic_id), partition, *_asked(fields, change),
                                                 *self._after(topic_id, partition), aborted))
        if self.want_fencing:
            for broker_id, change in changes.brokers.items():
                epoch = (change.after or change.before).epoch
                out["broker_fencing"].append((offset, entry.timestamp_ms, broker_id, epoch, broker_event(change),
                                              *self._broker_after(broker_id, epoch), aborted))
        if self.want_controllers:
            for controller_id, change in changes.controllers.items():
                registration = change.after or change.before
                out["controller_registrations"].append((
                    offset, entry.timestamp_ms, controller_id, "unregister" if change.after is None else "register",
                    uuid_to_kafka(registration.incarnation_id) if registration.incarnation_id else None, aborted))

    def _topic(self, topic_id) -> tuple[str | None, str]:
        return self.replay.topic_name(topic_id), uuid_to_kafka(topic_id)

    def _after(self, topic_id, partition_id) -> tuple:
        after = self.delta.partitions(topic_id).get(partition_id)
        if after is None:  # not there: deleted, or its creation aborted or pending
            return (None,) * 7
        return (after.leader, after.leader_epoch, after.partition_epoch, list(after.isr), list(after.replicas),
                list(after.elr), self._min_isr(self.replay.topic_name(topic_id)))

    def _min_isr(self, topic: str | None) -> int:
        """min.insync.replicas as the delta stands (the dashboard's rule: engine.image.min_isr):
        a config changed in the same transaction counts."""
        configs = self.delta.configs_delta()
        for resource in ((topic_resource(topic),) if topic is not None else ()) + (BROKER_DEFAULT,):
            value = configs.value_now("configs", (resource, "min.insync.replicas"))
            if value is not None and value.isdigit():
                return int(value)
        return 1

    def _broker_after(self, broker_id: int, epoch: int) -> tuple[bool | None, bool | None]:
        """(fenced, in controlled shutdown) after the record; null unless the broker is registered
        at that epoch after it."""
        after = self.delta.broker(broker_id)
        if after is None or after.epoch != epoch:
            return None, None
        return after.fenced, after.in_controlled_shutdown


# The partition_changes columns a record states, by their names in Kafka's JSON of a partition
# record, and what the column says where the record is silent: -2 / -1 "unchanged", null the same.
_ASKED = (("leader", -2), ("isr", None), ("replicas", None), ("addingReplicas", None), ("removingReplicas", None),
          ("eligibleLeaderReplicas", None), ("lastKnownElr", None), ("leaderRecoveryState", -1))
_AFTER = {"isr": "isr", "replicas": "replicas", "addingReplicas": "adding_replicas",
          "removingReplicas": "removing_replicas", "eligibleLeaderReplicas": "elr", "lastKnownElr": "last_known_elr"}


def _asked(fields: dict, change: Change) -> tuple:
    """A row's own columns: what the record states; where it states nothing but its change moved
    a list (a ClearElrRecord empties ELRs), the list after; else the column's "unchanged"."""
    before, after = change.before, change.after
    columns = []
    for name, silent in _ASKED:
        value = fields.get(name, silent)
        attribute = _AFTER.get(name)
        if name not in fields and attribute is not None and before is not None and after is not None \
                and getattr(before, attribute) != getattr(after, attribute):
            value = list(getattr(after, attribute))
        columns.append(value)
    return tuple(columns)


def _by_topic(partitions) -> list[tuple]:
    """The partitions a record created or changed, grouped by topic in the order it changed the
    topics, each topic's partitions by id."""
    by_topic: dict = {}
    for (topic_id, partition), change in partitions.items():
        if change.after is not None:  # a deleted topic's partitions: the topic's deletion is the one fact
            by_topic.setdefault(topic_id, []).append((partition, change))
    return [((topic_id, partition), change) for topic_id, changes in by_topic.items()
            for partition, change in sorted(changes, key=lambda pc: pc[0])]


def images_at(log_dir: Path | str, offsets: Iterable[int]) -> Table:
    """The partitions of the image at (or just before) each offset, each row led by ``as_of_offset``."""
    points = sorted(set(offsets))
    rows: list[tuple] = []
    if points:
        source = Source(log_dir=Path(log_dir))  # read once, from the first point, for every point
        for offset in points:
            image, _ = source.load(offset=offset)
            rows.extend((offset, *row) for row in partitions_table(image).rows)
    return Table("partitions_over_time", column_names("partitions_over_time"), rows)
