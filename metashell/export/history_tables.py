"""History tables, from a log directory: pure Python, no pyspark.

``history_rows(log_dir)`` reads the log's segments (not its snapshots: a snapshot is a
state, not history) once and gives four tables: ``records`` (every record, its JSON
with secrets redacted), ``partition_changes`` (partition creations and changes, with the
partition's state after each), ``broker_fencing`` (registrations, fencing, controlled
shutdown) and ``leader_changes`` (the quorum's LeaderChangeMessages). ``start``/``end``
keep rows with start <= offset <= end; state is tracked from the log's beginning regardless.

``images_at(log_dir, offsets)``: the partitions table of the image at each offset, with an
``as_of_offset`` column, so "ISR over time" is a query.

Records inside a metadata transaction are reported as they stand in the log (the image
applies them at the EndTransactionRecord).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from engine.common.kafka_uuid import uuid_to_kafka
from engine.storage.log_reader import read_log_dir
from engine.image.metadata_loader import load_log_dir
from engine.image.partition_registration import PartitionRegistration
from engine.records.record_json import dumps, record_to_jsonable
from metashell.export.schemas import column_names
from metashell.export.tables import Table, partitions_table
from metashell.tree.tree_layout import redact_record_json

HISTORY_TABLES = ("records", "partition_changes", "broker_fencing", "leader_changes")


def _list(values) -> list | None:
    return None if values is None else list(values)


def history_rows(log_dir: Path | str, *, start: int | None = None, end: int | None = None,
                 tables: Iterable[str] = HISTORY_TABLES) -> dict[str, Table]:
    """The history tables of ``log_dir`` (a node's log directory or its __cluster_metadata-0)."""
    wanted = set(tables)
    unknown = wanted - set(HISTORY_TABLES)
    if unknown:
        raise ValueError(f"unknown history table {sorted(unknown)[0]!r} (known: {', '.join(HISTORY_TABLES)})")
    records: list[tuple] = []
    changes: list[tuple] = []
    fencing: list[tuple] = []
    leaders: list[tuple] = []
    topic_names: dict = {}
    partitions: dict[tuple, PartitionRegistration] = {}
    brokers: dict[int, list] = {}  # id -> [epoch, fenced, in_controlled_shutdown]
    want_records, want_changes, want_fencing = "records" in wanted, "partition_changes" in wanted, \
        "broker_fencing" in wanted
    for entry in read_log_dir(Path(log_dir), use_snapshot=False):
        offset = entry.offset
        if end is not None and offset > end:
            break
        keep = start is None or offset >= start
        record = entry.record
        name = getattr(record, "type_name", None)
        if keep and want_records:
            data = redact_record_json(record_to_jsonable(record))
            payload = data.get("data", data)
            records.append((offset, entry.leader_epoch, entry.timestamp_ms, entry.control, data.get("type"),
                            data.get("version") if not entry.control else None, dumps(payload)))
        if name == "TOPIC_RECORD":
            topic_names[record.topic_id] = record.name
        elif name in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
            key = (record.topic_id, record.partition_id)
            if name == "PARTITION_RECORD":
                after = partitions[key] = PartitionRegistration.from_record(record)
            else:
                before = partitions.get(key)
                after = partitions[key] = before.merge(record) if before is not None else None
                if after is None:
                    del partitions[key]
            if keep and want_changes:
                v = getattr(record, "__version__", 0)
                changes.append((
                    offset, entry.timestamp_ms, name, topic_names.get(record.topic_id), uuid_to_kafka(record.topic_id),
                    record.partition_id, record.leader, _list(record.isr), _list(record.replicas),
                    _list(record.adding_replicas), _list(record.removing_replicas),
                    _list(record.eligible_leader_replicas) if v >= 2 else None,
                    _list(record.last_known_elr) if v >= 2 else None, record.leader_recovery_state,
                    *((after.leader, after.leader_epoch, after.partition_epoch, list(after.isr), list(after.replicas),
                       list(after.elr)) if after is not None else (None,) * 6)))
        elif name == "REMOVE_TOPIC_RECORD":
            for key in [k for k in partitions if k[0] == record.topic_id]:
                del partitions[key]
        elif name in _BROKER_EVENTS:
            row = _broker_event(name, record, brokers)
            if keep and want_fencing:
                fencing.append((offset, entry.timestamp_ms, *row))
        elif entry.control and name == "LEADER_CHANGE" and keep:
            m = record.message
            leaders.append((offset, entry.timestamp_ms, entry.leader_epoch, m.leader_id,
                            [v.voter_id for v in m.voters], [v.voter_id for v in m.granting_voters]))
    out = {"records": records, "partition_changes": changes, "broker_fencing": fencing, "leader_changes": leaders}
    return {kind: Table(kind, column_names(kind), out[kind]) for kind in HISTORY_TABLES if kind in wanted}


_BROKER_EVENTS = ("REGISTER_BROKER_RECORD", "UNREGISTER_BROKER_RECORD", "FENCE_BROKER_RECORD",
                  "UNFENCE_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD")


def _broker_event(name: str, r, brokers: dict[int, list]) -> tuple:
    """(broker_id, broker_epoch, event, fenced after, in controlled shutdown after), with the
    image's rules: a change applies only at the broker's current epoch."""
    if name == "REGISTER_BROKER_RECORD":
        state = brokers[r.broker_id] = [r.broker_epoch, bool(r.fenced), bool(getattr(r, "in_controlled_shutdown",
                                                                                       False))]
        return r.broker_id, r.broker_epoch, "register", state[1], state[2]
    if name in ("FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD"):
        broker_id, epoch = r.id, r.epoch
        event = "fence" if name == "FENCE_BROKER_RECORD" else "unfence"
        state = brokers.get(broker_id)
        if state is not None and state[0] == epoch:
            state[1] = event == "fence"
    else:
        broker_id, epoch = r.broker_id, r.broker_epoch
        state = brokers.get(broker_id)
        if name == "UNREGISTER_BROKER_RECORD":
            event = "unregister"
            if state is not None and state[0] == epoch:
                del brokers[broker_id]
                return broker_id, epoch, event, None, None
        else:
            fence = {1: "fence", -1: "unfence"}.get(r.fenced)
            shutdown = getattr(r, "in_controlled_shutdown", 0) == 1
            event = "controlled_shutdown" if shutdown else (fence or "change")
            if state is not None and state[0] == epoch:
                if fence:
                    state[1] = fence == "fence"
                if shutdown:
                    state[2] = True
    if state is None or state[0] != epoch:
        return broker_id, epoch, event, None, None
    return broker_id, epoch, event, state[1], state[2]


def images_at(log_dir: Path | str, offsets: Iterable[int]) -> Table:
    """The partitions of the image at (or just before) each offset, each row led by ``as_of_offset``."""
    rows: list[tuple] = []
    for offset in sorted(set(offsets)):
        image, _ = load_log_dir(Path(log_dir), offset=offset)
        rows.extend((offset, *row) for row in partitions_table(image).rows)
    return Table("partitions_over_time", column_names("partitions_over_time"), rows)
