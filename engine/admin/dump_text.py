"""The text ``kraftd dump-log`` prints for one record batch: its batch line and one line a
record, exactly as ``kafka-dump-log --cluster-metadata-decoder`` prints them, made as one
block so the dump writes once a batch (engine.admin.log_dump frames the files).

The records' JSON comes from engine.records.record_text (compiled per record class), and a
metadata record is read by the replay's table of checked kio readers when it has the shape
KRaft writes (engine.records.metadata_record_serde.FAST_READER_TABLE); anything else takes
``decode_record``, the general path that names what is wrong with a record.
"""

from __future__ import annotations

import struct
from typing import Callable, Iterable

from engine.records.compression import codec_name
from engine.records.metadata_record_serde import (
    ABORT,
    COMMIT,
    FAST_READER_TABLE,
    ControlRecord,
    MetadataRecord,
    UnknownRecord,
    decode_record,
)
from engine.records.record_batch import ATTR_DELETE_HORIZON, NO_SEQUENCE, RecordBatch
from engine.records.record_text import PAYLOADS, control_text, payload_text
from engine.records.record_json import record_to_json

OnUnreadable = Callable[[int, str], None]


def _ignore(offset: int, reason: str) -> None:
    pass


def batch_line(batch: RecordBatch, position: int, valid: bool = True, count: int | None = None) -> str:
    """Kafka's batch line; ``count``: the header's record count, for a batch whose records are not decoded."""
    base_seq = batch.base_sequence
    last_seq = NO_SEQUENCE if base_seq == NO_SEQUENCE else base_seq + batch.last_offset_delta
    horizon = (str(batch.base_timestamp) if batch.attributes & ATTR_DELETE_HORIZON else "OptionalLong.empty")
    return (f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
            f"count: {len(batch.records) if count is None else count} "
            f"baseSequence: {base_seq} lastSequence: {last_seq} producerId: {batch.producer_id} "
            f"producerEpoch: {batch.producer_epoch} partitionLeaderEpoch: {batch.partition_leader_epoch} "
            f"isTransactional: {_bool(batch.is_transactional)} isControl: {_bool(batch.is_control)} "
            f"deleteHorizonMs: {horizon} position: {position} {batch.timestamp_type}: {batch.max_timestamp} "
            f"size: {batch.size_bytes} magic: 2 compresscodec: {codec_name(batch.compression)} "
            f"crc: {batch.crc} isvalid: {_bool(valid)}")


def _decode(key: bytes | None, value: bytes | None, control: bool):
    """decode_record's answer; by the replay's checked reader where the record is a plain
    metadata record (no key, frame 1, one-byte api key and version), which gives the same
    message when it gives one at all."""
    if control or key is not None or value is None or len(value) < 3 or value[0] != 1 or value[2] >= 64:
        return decode_record(key, value, control)
    try:
        message = FAST_READER_TABLE[(value[1] << 6) | value[2]](value, 3, len(value))
    except Exception:  # noqa: BLE001 - any surprise (an unknown tag, bad bytes): the general path says what
        message = None
    return message if message is not None else decode_record(key, value, control)


def record_lines(batch: RecordBatch, skip_record_metadata: bool,
                 on_unreadable: OnUnreadable = _ignore) -> Iterable[str]:
    """One line a record of ``batch``, as Kafka's tool prints it."""
    control = batch.is_control
    base_offset, base_ts, ts_type = batch.base_offset, batch.base_timestamp, batch.timestamp_type
    base_seq = batch.base_sequence
    payloads = PAYLOADS
    for record in batch.records:
        key, value = record.key, record.value
        decoded = _decode(key, value, control)
        fn = payloads.get(type(decoded))  # a metadata record's compiled JSON: the common case first
        if fn is not None:
            payload = "payload: " + fn(decoded)
        elif control and skip_record_metadata:
            if isinstance(decoded, UnknownRecord) and decoded.problem:
                on_unreadable(base_offset + record.offset_delta, decoded.reason)
            yield ""  # Kafka's tool skips control records then, but still ends their (empty) line
            continue
        elif isinstance(decoded, MetadataRecord):
            payload = "payload: " + payload_text(decoded)
        elif isinstance(decoded, ControlRecord):
            payload = control_text(decoded)
        else:
            if isinstance(decoded, UnknownRecord) and decoded.problem:
                on_unreadable(base_offset + record.offset_delta, decoded.reason)
            if not control:
                payload = "payload: " + record_to_json(decoded)
            else:
                payload = _end_txn_marker(key, value) or "controlRecord: " + record_to_json(decoded)
        if skip_record_metadata:
            # "| payload: {...}" as Kafka 4.3 prints it (4.1's tool dropped the "|" too)
            yield "| " + payload
            continue
        seq = NO_SEQUENCE if base_seq == NO_SEQUENCE else base_seq + record.offset_delta
        headers = ",".join(k.decode("utf-8", "replace") for k, _ in record.headers) if record.headers else ""
        yield (f"| offset: {base_offset + record.offset_delta} {ts_type}: {base_ts + record.timestamp_delta} "
               f"keySize: {-1 if key is None else len(key)} valueSize: {-1 if value is None else len(value)} "
               f"sequence: {seq} headerKeys: [{headers}] {payload}")


def _end_txn_marker(key: bytes | None, value: bytes | None) -> str | None:
    """A transaction's end marker as Kafka's tool prints it (its EndTransactionMarker: the
    control type, then the coordinator's epoch from the value's version 0 layout)."""
    if key is None or value is None or len(key) != 4 or len(value) < 6:
        return None
    key_version, control_type = _MARKER_KEY.unpack(key)
    version, epoch = _MARKER_VALUE.unpack_from(value)
    if key_version != 0 or version != 0 or control_type not in _MARKER_TYPES:
        return None
    return f"endTxnMarker: {_MARKER_TYPES[control_type]} coordinatorEpoch: {epoch}"


_MARKER_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")
_MARKER_TYPES = {ABORT: "ABORT", COMMIT: "COMMIT"}


def batch_text(batch: RecordBatch, position: int, valid: bool, skip_record_metadata: bool,
               on_unreadable: OnUnreadable = _ignore) -> str:
    """The batch line and its records' lines, each ending in a newline."""
    lines = [batch_line(batch, position, valid)]
    lines.extend(record_lines(batch, skip_record_metadata, on_unreadable))
    lines.append("")
    return "\n".join(lines)


def last_control_type(batch: RecordBatch) -> str | None:
    """The type of a control batch's last record (a snapshot must end in its footer)."""
    if not batch.is_control or not batch.records:
        return None
    last = batch.records[-1]
    return decode_record(last.key, last.value, True).type_name


def _bool(value: bool) -> str:
    return "true" if value else "false"
