"""``kraftd dump-log``: print segments and snapshots as ``kafka-dump-log --cluster-metadata-decoder`` does."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from engine.errors import StorageError
from engine.log_reader import list_log_dir, read_batches
from engine.log_segment import parse_segment_name
from engine.metadata_record_serde import ControlRecord, MetadataRecord, decode_record
from engine.record_batch import ATTR_DELETE_HORIZON, NO_SEQUENCE, RecordBatch
from engine.compression import codec_name
from engine.record_json import control_payload, record_to_json
from engine.snapshot_writer import BOOTSTRAP_FILE_NAME, parse_snapshot_name


def expand_paths(paths: Iterable[str]) -> list[Path]:
    """Files as given; a directory stands for its segments and snapshots, in order."""
    out: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            listing = list_log_dir(path)
            out.extend(p for _, p in listing.snapshots)
            out.extend(p for _, p in listing.segments)
        elif not path.exists():
            raise StorageError("no such file", path=name)
        else:
            out.append(path)
    return out


def file_banner(path: Path) -> str | None:
    base = parse_segment_name(path.name)
    if base is not None:
        return f"Log starting offset: {base}"
    if path.name == BOOTSTRAP_FILE_NAME:
        return "KRaft bootstrap snapshot"
    snapshot_id = parse_snapshot_name(path.name)
    if snapshot_id is not None:
        return f"Snapshot end offset: {snapshot_id.end_offset}, epoch: {snapshot_id.epoch}"
    return None


def batch_line(batch: RecordBatch, position: int) -> str:
    base_seq = batch.base_sequence
    last_seq = NO_SEQUENCE if base_seq == NO_SEQUENCE else base_seq + batch.last_offset_delta
    horizon = (str(batch.base_timestamp) if batch.attributes & ATTR_DELETE_HORIZON else "OptionalLong.empty")
    return (f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {len(batch.records)} "
            f"baseSequence: {base_seq} lastSequence: {last_seq} producerId: {batch.producer_id} "
            f"producerEpoch: {batch.producer_epoch} partitionLeaderEpoch: {batch.partition_leader_epoch} "
            f"isTransactional: {_bool(batch.is_transactional)} isControl: {_bool(batch.is_control)} "
            f"deleteHorizonMs: {horizon} position: {position} {batch.timestamp_type}: {batch.max_timestamp} "
            f"size: {batch.size_bytes} magic: 2 compresscodec: {codec_name(batch.compression)} "
            f"crc: {batch.crc} isvalid: true")


def record_lines(batch: RecordBatch, skip_record_metadata: bool) -> Iterable[str]:
    for record in batch.records:
        decoded = decode_record(record.key, record.value, batch.is_control)
        # Kafka's tool drops the "|" along with the metadata: " payload: {...}".
        parts = [""] if skip_record_metadata else ["|"]
        if not skip_record_metadata:
            seq = NO_SEQUENCE if batch.base_sequence == NO_SEQUENCE else batch.base_sequence + record.offset_delta
            headers = ",".join(k.decode("utf-8", "replace") for k, _ in record.headers)
            parts.append(f"offset: {batch.record_offset(record)} {batch.timestamp_type}: "
                         f"{batch.record_timestamp(record)} keySize: {_size(record.key)} "
                         f"valueSize: {_size(record.value)} sequence: {seq} headerKeys: [{headers}]")
        if isinstance(decoded, ControlRecord):
            parts.append(control_payload(decoded))
        elif isinstance(decoded, MetadataRecord) or not batch.is_control:
            parts.append(f"payload: {record_to_json(decoded)}")
        else:
            parts.append(f"controlRecord: {record_to_json(decoded)}")
        yield " ".join(parts)


def dump_file(path: Path, out: Callable[[str], None], *, skip_record_metadata: bool = False) -> int:
    """Print one file; returns the number of records. Damage raises an error naming file and offset."""
    out(f"Dumping {path}")
    banner = file_banner(path)
    if banner:
        out(banner)
    if path.stat().st_size == 0:
        raise StorageError("empty file: no record batches", path=str(path), byte_offset=0)
    count = 0
    for position, batch in read_batches(path):
        out(batch_line(batch, position))
        for line in record_lines(batch, skip_record_metadata):
            out(line)
        count += len(batch.records)
    return count


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _size(value: bytes | None) -> int:
    return -1 if value is None else len(value)
