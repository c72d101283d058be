"""History tables, from a log directory: pure Python, no pyspark.

``history_rows(log_dir)`` replays the log once through MetadataDelta, from the earliest point
the directory can rebuild (offset 0, or the oldest snapshot the segments continue from: the
partitions and brokers that snapshot holds are known from the first row on), and gives four
tables: ``records`` (every record replayed, its JSON with secrets redacted),
``partition_changes`` (partition creations and changes, and the partitions a ClearElrRecord
cleared, with the partition's state after each), ``broker_fencing`` (registrations, fencing,
controlled shutdown) and ``leader_changes`` (the quorum's LeaderChangeMessages). ``start``/
``end`` keep rows with start <= offset <= end; the state is replayed from the start regardless.

What a record did (the partitions a ClearElrRecord cleared, a new quorum leader) is read from
its change set (engine/image/change_set.py), what it says from record_columns.py, and every
state column from the delta after the record, so it is the image's own:
- records of a metadata transaction (KIP-868) take effect together at its
  EndTransactionRecord: their rows show the state once it committed;
- records of an aborted transaction (its markers included) have ``aborted`` true and change
  no state: their rows show the state as it stayed;
- records of a transaction still open where the log (or ``end``) stops have ``aborted`` null:
  Kafka has not applied them, and their rows show the state without them.
Rows come in log order: those of a transaction are written when it ends.

``images_at(log_dir, offsets)``: the partitions table of the image at each offset, with an
``as_of_offset`` column, so "ISR over time" is a query. The log is read once for all offsets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from engine.common.kafka_uuid import uuid_to_kafka
from engine.image.change_set import EMPTY_CHANGE_SET, ChangeSet
from engine.image.metadata_delta import ABORTED, APPLIED, COMMITTED, PENDING, MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import replay_start, segment_batches
from engine.records.record_json import dumps, record_to_jsonable
from engine.storage.log_reader import LogEntry
from metashell.export.record_columns import BrokerFields, Fields, PartitionFields, TopicName, record_fields
from metashell.export.schemas import column_names
from metashell.export.tables import Table, partitions_table
from metashell.source import Source
from metashell.tree.tree_layout import redact_record_json

HISTORY_TABLES = ("records", "partition_changes", "broker_fencing", "leader_changes")

def history_rows(log_dir: Path | str, *, start: int | None = None, end: int | None = None,
                 tables: Iterable[str] = HISTORY_TABLES) -> dict[str, Table]:
    """The history tables of ``log_dir`` (a node's log directory or its __cluster_metadata-0)."""
    wanted = _wanted(tables)
    begin = replay_start(Path(log_dir), earliest=True)
    return history_rows_of(begin.image, segment_batches(begin.listing, begin.begin, []), start=start, end=end,
                           tables=wanted)


def history_rows_of(start_image: MetadataImage, batches: Iterable[list[LogEntry]], *, start: int | None = None,
                    end: int | None = None, tables: Iterable[str] = HISTORY_TABLES) -> dict[str, Table]:
    """The history tables of ``batches`` replayed from ``start_image`` (a live session's fetched
    history: the snapshot it attached from, then every batch committed since)."""
    wanted = _wanted(tables)
    rows = _Rows(MetadataDelta(start_image, per_record=True), wanted, start)
    for batch in batches:
        if end is not None and batch[0].offset > end:
            break
        for entry in batch:
            if end is not None and entry.offset > end:
                break
            rows.replay(entry)
    rows.finish()
    return {kind: Table(kind, column_names(kind), rows.out[kind]) for kind in HISTORY_TABLES if kind in wanted}


def _wanted(tables: Iterable[str]) -> set[str]:
    wanted = set(tables)
    unknown = wanted - set(HISTORY_TABLES)
    if unknown:
        raise ValueError(f"unknown history table {sorted(unknown)[0]!r} (known: {', '.join(HISTORY_TABLES)})")
    return wanted


class _Rows:
    """The rows of one pass. Rows wait while a transaction is open: whether its records were
    aborted, and the state they leave, are known at its end.

    What a record did comes from its change set (``MetadataDelta.record_changes()``): the quorum's
    new leader, the partitions a ClearElrRecord cleared. A record held in an open transaction has
    changed nothing yet; what it would change is asked then of a delta over the state without
    the transaction (as Kafka's replay would see it, were it committed at once). What a record
    itself says is printed by record_columns.py."""

    def __init__(self, delta: MetadataDelta, wanted: set[str], start: int | None):
        self.delta = delta
        self.start = start
        self.want_records, self.want_changes = "records" in wanted, "partition_changes" in wanted
        self.want_fencing, self.want_leaders = "broker_fencing" in wanted, "leader_changes" in wanted
        self.out: dict[str, list[tuple]] = {kind: [] for kind in HISTORY_TABLES}
        self.names: dict = {}  # topic id -> name, from TopicRecords (an aborted creation's too)
        # (entry, its fields, what it changed, in the transaction)
        self.waiting: list[tuple[LogEntry, Fields | None, ChangeSet, bool]] = []

    def replay(self, entry: LogEntry) -> None:
        record = entry.record
        fields = record_fields(record)
        if isinstance(fields, TopicName):
            self.names[fields.topic_id] = fields.name
        outcome = self.delta.replay(record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
        changes = EMPTY_CHANGE_SET  # asked only of the records whose rows read it (most have none)
        if self.want_changes and _rows_per_change(fields):
            changes = self._would_change(entry) if outcome is PENDING else self.delta.record_changes()
        elif self.want_leaders and entry.control:  # a LeaderChangeMessage: never held in a transaction
            changes = self.delta.record_changes()
        if outcome is APPLIED and not self.waiting:
            self._emit(entry, fields, changes, False)
        elif outcome is APPLIED or outcome is PENDING:
            self.waiting.append((entry, fields, changes, outcome is PENDING))
        elif outcome is COMMITTED or outcome is ABORTED:
            self.waiting.append((entry, fields, changes, True))
            self._flush(outcome is ABORTED)

    def finish(self) -> None:
        """A transaction still open: its rows, ``aborted`` null."""
        self._flush(None)

    def _flush(self, aborted: bool | None) -> None:
        waiting, self.waiting = self.waiting, []
        for entry, fields, changes, in_transaction in waiting:
            self._emit(entry, fields, changes, aborted if in_transaction else False)

    def _would_change(self, entry: LogEntry) -> ChangeSet:
        """What a record held in the open transaction would change, applied now: the delta's
        state is without the transaction's records (rare: a ClearElrRecord in a transaction)."""
        scratch = MetadataDelta(self.delta.apply(), per_record=True)
        scratch.replay(entry.record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
        return scratch.record_changes()

    # -- one record's rows, with the state as the delta now stands ---------------------------

    def _emit(self, entry: LogEntry, fields: Fields | None, changes: ChangeSet, aborted: bool | None) -> None:
        offset = entry.offset
        if self.start is not None and offset < self.start:
            return
        out = self.out
        if self.want_records:
            data = redact_record_json(record_to_jsonable(entry.record))
            out["records"].append((offset, entry.leader_epoch, entry.timestamp_ms, entry.control, data.get("type"),
                                   data.get("version") if not entry.control else None,
                                   dumps(data.get("data", data)), aborted))
        if self.want_leaders:
            for leader in changes.leader_changes:
                out["leader_changes"].append((leader.offset, leader.timestamp_ms, leader.epoch, leader.leader_id,
                                              list(leader.voters), list(leader.granting_voters)))
        if isinstance(fields, PartitionFields):
            if self.want_changes:
                for topic_id, partition in _partitions_of(fields, changes):
                    out["partition_changes"].append((offset, entry.timestamp_ms, fields.type, *self._topic(topic_id),
                                                     partition, *fields[3:], *self._after(topic_id, partition),
                                                     aborted))
        elif isinstance(fields, BrokerFields) and self.want_fencing:
            out["broker_fencing"].append((offset, entry.timestamp_ms, *fields, *self._broker_after(fields), aborted))

    def _topic(self, topic_id) -> tuple[str | None, str]:
        return self.delta.topic_name(topic_id) or self.names.get(topic_id), uuid_to_kafka(topic_id)

    def _after(self, topic_id, partition_id) -> tuple:
        after = self.delta.partitions(topic_id).get(partition_id)
        if after is None:  # not there: its creation is not in the log, was aborted or is pending
            return (None,) * 6
        return (after.leader, after.leader_epoch, after.partition_epoch, list(after.isr), list(after.replicas),
                list(after.elr))

    def _broker_after(self, fields: BrokerFields) -> tuple[bool | None, bool | None]:
        """(fenced, in controlled shutdown) after the record; null unless the broker is registered
        at the record's epoch after it."""
        after = self.delta.broker(fields.broker_id)
        if after is None or after.epoch != fields.broker_epoch:
            return None, None
        return after.fenced, after.in_controlled_shutdown


def _rows_per_change(fields: Fields | None) -> bool:
    """A partition record that names no partition of its own: a row per partition it changed."""
    return isinstance(fields, PartitionFields) and fields.topic_id is None


def _partitions_of(fields: PartitionFields, changes: ChangeSet) -> list[tuple]:
    """The record's own partition, or every partition it changed: topics in the order it changed
    them, each one's partitions by id."""
    if fields.topic_id is not None:
        return [(fields.topic_id, fields.partition)]
    by_topic: dict = {}
    for topic_id, partition in changes.partitions:
        by_topic.setdefault(topic_id, []).append(partition)
    return [(topic_id, partition) for topic_id, partitions in by_topic.items() for partition in sorted(partitions)]


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
