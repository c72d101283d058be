"""History tables, from a log directory: pure Python, no pyspark.

``history_rows(log_dir)`` replays the log once through MetadataDelta, from the earliest point
the directory can rebuild (offset 0, or the oldest snapshot the segments continue from: the
partitions and brokers that snapshot holds are known from the first row on), and gives four
tables: ``records`` (every record replayed, its JSON with secrets redacted),
``partition_changes`` (partition creations and changes, and the partitions a ClearElrRecord
cleared, with the partition's state after each), ``broker_fencing`` (registrations, fencing,
controlled shutdown) and ``leader_changes`` (the quorum's LeaderChangeMessages). ``start``/
``end`` keep rows with start <= offset <= end; the state is replayed from the start regardless.

Every state column is read from the delta after the record, so it is the image's own:
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
from typing import Any, Iterable

from engine.common.kafka_uuid import uuid_to_kafka
from engine.image.metadata_delta import ABORTED, APPLIED, COMMITTED, PENDING, MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import replay_start, segment_batches
from engine.records.record_json import dumps, record_to_jsonable
from engine.storage.log_reader import LogEntry
from metashell.export.schemas import column_names
from metashell.export.tables import Table, partitions_table
from metashell.source import Source
from metashell.tree.tree_layout import redact_record_json

HISTORY_TABLES = ("records", "partition_changes", "broker_fencing", "leader_changes")

_BROKER_EVENTS = ("REGISTER_BROKER_RECORD", "UNREGISTER_BROKER_RECORD", "FENCE_BROKER_RECORD",
                  "UNFENCE_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD")


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
    rows = _Rows(MetadataDelta(start_image), wanted, start)
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
    aborted, and the state they leave, are known at its end."""

    def __init__(self, delta: MetadataDelta, wanted: set[str], start: int | None):
        self.delta = delta
        self.start = start
        self.want_records, self.want_changes = "records" in wanted, "partition_changes" in wanted
        self.want_fencing, self.want_leaders = "broker_fencing" in wanted, "leader_changes" in wanted
        self.out: dict[str, list[tuple]] = {kind: [] for kind in HISTORY_TABLES}
        self.names: dict = {}  # topic id -> name, from TopicRecords (an aborted creation's too)
        self.waiting: list[tuple[LogEntry, Any, bool]] = []  # (entry, what it cleared, in the transaction)

    def replay(self, entry: LogEntry) -> None:
        record = entry.record
        name = getattr(record, "type_name", None)
        if name == "TOPIC_RECORD":
            self.names[record.topic_id] = record.name
        cleared = self._elr_holders(record) if name == "CLEAR_ELR_RECORD" else None
        outcome = self.delta.replay(record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
        if outcome is APPLIED and not self.waiting:
            self._emit(entry, cleared, False)
        elif outcome is APPLIED or outcome is PENDING:
            self.waiting.append((entry, cleared, outcome is PENDING))
        elif outcome is COMMITTED or outcome is ABORTED:
            self.waiting.append((entry, cleared, True))
            self._flush(outcome is ABORTED)

    def finish(self) -> None:
        """A transaction still open: its rows, ``aborted`` null."""
        self._flush(None)

    def _flush(self, aborted: bool | None) -> None:
        waiting, self.waiting = self.waiting, []
        for entry, cleared, in_transaction in waiting:
            self._emit(entry, cleared, aborted if in_transaction else False)

    # -- one record's rows, with the state as the delta now stands ---------------------------

    def _emit(self, entry: LogEntry, cleared: list | None, aborted: bool | None) -> None:
        offset = entry.offset
        if self.start is not None and offset < self.start:
            return
        record, out = entry.record, self.out
        name = getattr(record, "type_name", None)
        if self.want_records:
            data = redact_record_json(record_to_jsonable(record))
            out["records"].append((offset, entry.leader_epoch, entry.timestamp_ms, entry.control, data.get("type"),
                                   data.get("version") if not entry.control else None,
                                   dumps(data.get("data", data)), aborted))
        if entry.control:
            if name == "LEADER_CHANGE" and self.want_leaders:
                m = record.message
                out["leader_changes"].append((offset, entry.timestamp_ms, entry.leader_epoch, m.leader_id,
                                              [v.voter_id for v in m.voters],
                                              [v.voter_id for v in m.granting_voters]))
        elif name in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
            if self.want_changes:
                out["partition_changes"].append(self._change_row(entry, name, aborted))
        elif name == "CLEAR_ELR_RECORD":
            if self.want_changes:
                for topic_id, partition_id in cleared or ():
                    out["partition_changes"].append(self._clear_row(entry, topic_id, partition_id, aborted))
        elif name in _BROKER_EVENTS and self.want_fencing:
            out["broker_fencing"].append((offset, entry.timestamp_ms, *self._broker_row(name, record), aborted))

    def _topic(self, topic_id) -> tuple[str | None, str]:
        return self.delta.topic_name(topic_id) or self.names.get(topic_id), uuid_to_kafka(topic_id)

    def _after(self, topic_id, partition_id) -> tuple:
        after = self.delta.partitions(topic_id).get(partition_id)
        if after is None:  # not there: its creation is not in the log, was aborted or is pending
            return (None,) * 6
        return (after.leader, after.leader_epoch, after.partition_epoch, list(after.isr), list(after.replicas),
                list(after.elr))

    def _change_row(self, entry: LogEntry, name: str, aborted: bool | None) -> tuple:
        r = entry.record
        v = getattr(r, "__version__", 0)
        return (entry.offset, entry.timestamp_ms, name, *self._topic(r.topic_id), r.partition_id, r.leader,
                _list(r.isr), _list(r.replicas), _list(r.adding_replicas), _list(r.removing_replicas),
                _list(r.eligible_leader_replicas) if v >= 2 else None, _list(r.last_known_elr) if v >= 2 else None,
                r.leader_recovery_state, *self._after(r.topic_id, r.partition_id), aborted)

    def _clear_row(self, entry: LogEntry, topic_id, partition_id: int, aborted: bool | None) -> tuple:
        """A ClearElrRecord as the change it is to one partition: ELR and last-known ELR emptied."""
        return (entry.offset, entry.timestamp_ms, "CLEAR_ELR_RECORD", *self._topic(topic_id), partition_id, -2,
                None, None, None, None, [], [], -1, *self._after(topic_id, partition_id), aborted)

    def _elr_holders(self, record) -> list[tuple]:
        """The partitions a ClearElrRecord names that hold an ELR or last-known ELR now."""
        delta = self.delta
        ids = [t for t in delta.topic_ids() if not record.topic_name or delta.topic_name(t) == record.topic_name]
        return [(t, pid) for t in ids for pid, reg in sorted(delta.partitions(t).items())
                if reg.elr or reg.last_known_elr]

    def _broker_row(self, name: str, r) -> tuple:
        """(broker_id, broker_epoch, event, fenced after, in controlled shutdown after); the state
        is null unless the broker is registered at the record's epoch after it."""
        if name in ("FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD"):
            broker_id, epoch = r.id, r.epoch
            event = "fence" if name == "FENCE_BROKER_RECORD" else "unfence"
        else:
            broker_id, epoch = r.broker_id, r.broker_epoch
            if name == "REGISTER_BROKER_RECORD":
                event = "register"
            elif name == "UNREGISTER_BROKER_RECORD":
                event = "unregister"
            elif getattr(r, "in_controlled_shutdown", 0) == 1:
                event = "controlled_shutdown"
            else:
                event = {1: "fence", -1: "unfence"}.get(r.fenced, "change")
        after = self.delta.broker(broker_id)
        if after is None or after.epoch != epoch:
            return broker_id, epoch, event, None, None
        return broker_id, epoch, event, after.fenced, after.in_controlled_shutdown


def _list(values) -> list | None:
    return None if values is None else list(values)


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
