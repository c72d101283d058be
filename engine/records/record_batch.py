"""Kafka record batches, magic v2: decode, validate and encode byte-exactly.

A decoded batch keeps every field as it stood on disk (offset and timestamp
*deltas*, attributes, the CRC it carried), so that encoding it again gives the
same bytes. Compressed batches also keep their compressed records section.

Layout (offsets in bytes from the batch start)::

    0 baseOffset int64 | 8 batchLength int32 | 12 partitionLeaderEpoch int32
    16 magic int8 | 17 crc uint32 (CRC32C of byte 21..end) | 21 attributes int16
    23 lastOffsetDelta int32 | 27 baseTimestamp int64 | 35 maxTimestamp int64
    43 producerId int64 | 51 producerEpoch int16 | 53 baseSequence int32
    57 recordsCount int32 | 61 records...
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple, Sequence

from engine.records import compression
from engine.common.errors import CorruptRecordError, MetadataError, TruncatedError
from engine.records.kio_codec import (
    DECODE_ERRORS,
    crc32c,
    read_signed_varint,
    read_signed_varlong,
)

MAGIC_V2 = 2
LOG_OVERHEAD = 12  # baseOffset + batchLength, not counted in batchLength
HEADER_SIZE = 61
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
MAX_BATCH_BYTES = 1 << 30  # larger is never a real batch: an absurd length

_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC_START = 21

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08  # 1 = LogAppendTime
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1


class BatchRecord(NamedTuple):
    """One record inside a batch, with offset and timestamp as deltas from the batch's bases.

    A NamedTuple rather than a frozen dataclass: decoding builds millions of them.
    """

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[bytes, bytes | None], ...] = ()
    attributes: int = 0


@dataclass(frozen=True, slots=True)
class RecordBatch:
    base_offset: int
    partition_leader_epoch: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    records: tuple[BatchRecord, ...]
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    crc: int | None = None  # as read from disk; None for a batch built in memory
    size_bytes: int = 0  # on-disk size including the 12-byte log overhead; 0 until encoded
    compressed_records: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def timestamp_type(self) -> str:
        return "LogAppendTime" if self.attributes & ATTR_TIMESTAMP_TYPE else "CreateTime"

    def record_offset(self, record: BatchRecord) -> int:
        return self.base_offset + record.offset_delta

    def record_timestamp(self, record: BatchRecord) -> int:
        return self.base_timestamp + record.timestamp_delta


def peek_batch_extent(buf: bytes | memoryview, pos: int) -> int | None:
    """The end position the batch at ``pos`` claims, or None if even its length is cut off."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    (length,) = struct.unpack_from(">i", buf, pos + 8)
    return pos + LOG_OVERHEAD + length


def decode_batch(buf: bytes | memoryview, pos: int = 0, *, verify_crc: bool = True,
                 decode_records: bool = True) -> tuple[RecordBatch, int]:
    """Decode the batch at ``pos``; returns (batch, end position).

    With ``decode_records=False`` the batch is validated (lengths, magic, CRC) but
    its records are left for the caller: ``records`` is empty and they stand,
    compressed or not, at buf[pos + HEADER_SIZE:end].

    Raises TruncatedError when the buffer ends inside the batch, CorruptRecordError
    for anything else wrong. Error byte offsets are positions in ``buf``.
    """
    available = len(buf) - pos
    if available < LOG_OVERHEAD:
        raise TruncatedError(f"truncated batch header: {available} of {LOG_OVERHEAD} bytes", byte_offset=pos)
    (length,) = struct.unpack_from(">i", buf, pos + 8)
    if length < MIN_BATCH_LENGTH or length > MAX_BATCH_BYTES:
        raise CorruptRecordError(f"absurd batch length {length}", byte_offset=pos)
    end = pos + LOG_OVERHEAD + length
    if end > len(buf):
        raise TruncatedError(f"truncated batch: needs {length + LOG_OVERHEAD} bytes, {available} remain",
                             byte_offset=pos)
    (base_offset, _, leader_epoch, magic, crc, attributes, last_delta, base_ts, max_ts,
     producer_id, producer_epoch, base_seq, count) = _HEADER.unpack_from(buf, pos)
    if magic != MAGIC_V2:
        raise CorruptRecordError(f"unsupported record batch magic {magic} (expected 2)", byte_offset=pos + 16)
    if verify_crc:
        actual = crc32c(buf[pos + _CRC_START:end])
        if actual != crc:
            raise CorruptRecordError(f"batch CRC mismatch: stored {crc}, computed {actual}", byte_offset=pos)
    if count < 0 or count > length:
        raise CorruptRecordError(f"absurd record count {count}", byte_offset=pos + 57)
    codec = attributes & ATTR_COMPRESSION_MASK
    compressed = None
    if not decode_records:
        records = ()
    elif codec == compression.NONE:
        records = _decode_records(buf, pos + HEADER_SIZE, end, count)
    else:
        compressed = bytes(buf[pos + HEADER_SIZE:end])
        try:
            inflated = compression.decompress(codec, compressed)
        except MetadataError as exc:
            raise exc.at(base_offset=pos) from None
        records = _decode_records(inflated, 0, len(inflated), count, error_base=pos)
    batch = RecordBatch(base_offset, leader_epoch, attributes, last_delta, base_ts, max_ts, records,
                        producer_id, producer_epoch, base_seq, crc, end - pos, compressed)
    return batch, end


def _decode_records(buf, pos: int, end: int, count: int, error_base: int | None = None) -> tuple[BatchRecord, ...]:
    """Decode ``count`` records filling exactly buf[pos:end]."""
    records = []
    start = pos
    try:
        for _ in range(count):
            record, pos = _decode_record(buf, pos)
            records.append(record)
    except DECODE_ERRORS as exc:
        raise CorruptRecordError(f"malformed record {len(records)} of {count}: {exc}",
                                 byte_offset=error_base if error_base is not None else pos) from None
    if pos != end:
        raise CorruptRecordError(f"records end at byte {pos - start} of a {end - start}-byte records section",
                                 byte_offset=error_base if error_base is not None else pos)
    return tuple(records)


def _varint(buf, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:  # the common single-byte case, without a call into kio
        return (b >> 1) ^ -(b & 1), pos + 1
    value, size = read_signed_varint(buf, pos)
    return value, pos + size


def _bytes_field(buf, pos: int) -> tuple[bytes | None, int]:
    length, pos = _varint(buf, pos)
    if length < 0:
        if length != -1:
            raise ValueError(f"negative length {length}")
        return None, pos
    end = pos + length
    if end > len(buf):
        raise ValueError(f"length {length} runs past the data")
    return bytes(buf[pos:end]), end


def _decode_record(buf, pos: int) -> tuple[BatchRecord, int]:
    length, pos = _varint(buf, pos)
    body_start = pos
    attributes = buf[pos]
    pos += 1
    b = buf[pos]
    if b < 0x80:
        ts_delta = (b >> 1) ^ -(b & 1)
        pos += 1
    else:
        ts_delta, size = read_signed_varlong(buf, pos)
        pos += size
    offset_delta, pos = _varint(buf, pos)
    key, pos = _bytes_field(buf, pos)
    value, pos = _bytes_field(buf, pos)
    header_count, pos = _varint(buf, pos)
    headers = ()
    if header_count:
        if header_count < 0:
            raise ValueError(f"negative header count {header_count}")
        items = []
        for _ in range(header_count):
            hkey, pos = _bytes_field(buf, pos)
            if hkey is None:
                raise ValueError("null header key")
            hvalue, pos = _bytes_field(buf, pos)
            items.append((hkey, hvalue))
        headers = tuple(items)
    if pos - body_start != length:
        raise ValueError(f"record length {length} does not match its {pos - body_start} bytes")
    return BatchRecord(offset_delta, ts_delta, key, value, headers, attributes), pos


_SMALL_VARINTS = [bytes([(v << 1) if v >= 0 else ((-v << 1) - 1)]) for v in range(-64, 64)]
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def zigzag_varint(value: int) -> bytes:
    """Kafka's signed varint/varlong (zigzag, 7 bits a byte). A record's lengths and deltas are
    small: those come from a table, with no per-value type checks (a snapshot of a million
    partitions writes three per record)."""
    if -64 <= value < 64:
        return _SMALL_VARINTS[value + 64]
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise struct.error(f"varlong {value} is outside the int64 range")
    z = (value << 1) ^ (value >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


_NULL = zigzag_varint(-1)
# the zigzag varints of 0 .. 16383: offset deltas inside a batch, record and value lengths
_COUNT_VARINTS = [zigzag_varint(v) for v in range(1 << 14)]


def encode_record(record: BatchRecord) -> bytes:
    key, value = record.key, record.value
    parts = [bytes((record.attributes & 0xFF,)), zigzag_varint(record.timestamp_delta),
             zigzag_varint(record.offset_delta)]
    parts += (_NULL,) if key is None else (zigzag_varint(len(key)), key)
    parts += (_NULL,) if value is None else (zigzag_varint(len(value)), value)
    parts.append(zigzag_varint(len(record.headers)))
    for hkey, hvalue in record.headers:
        parts += (_NULL,) if hkey is None else (zigzag_varint(len(hkey)), hkey)
        parts += (_NULL,) if hvalue is None else (zigzag_varint(len(hvalue)), hvalue)
    body = b"".join(parts)
    return zigzag_varint(len(body)) + body


_TAIL = struct.Struct(">hiqqqhii")
_HEAD = struct.Struct(">qiibI")


def encode_entries(base_offset: int, entries: Sequence[tuple[bytes | None, bytes | None]], *, epoch: int,
                   timestamp_ms: int, control: bool) -> bytes:
    """``encode_batch(build_batch(...))`` byte for byte, without the intermediate objects:
    the simulator appends millions of batches, and a snapshot of a million partitions
    writes a hundred thousand records a batch."""
    parts: list[bytes] = []
    put = parts.append
    table, size = _COUNT_VARINTS, len(_COUNT_VARINTS)
    for delta, (key, value) in enumerate(entries):
        # attributes 0, timestamp delta 0, offset delta, key, value, no headers; the varints of
        # the offset delta, the value's length and the record's length from a table (each is
        # past 63, the small table's end, for most records of a 10,000-record batch)
        offset_delta = table[delta] if delta < size else zigzag_varint(delta)
        if key is None and value is not None:
            value_size = len(value)
            value_length = table[value_size] if value_size < size else zigzag_varint(value_size)
            length = 4 + len(offset_delta) + len(value_length) + value_size
            put(table[length] if length < size else zigzag_varint(length))
            put(b"\x00\x00")
            put(offset_delta)
            put(b"\x01")
            put(value_length)
            put(value)
            put(b"\x00")
            continue
        body = b"\x00\x00" + offset_delta + (b"\x01" if key is None else zigzag_varint(len(key)) + key) \
            + (b"\x01" if value is None else zigzag_varint(len(value)) + value) + b"\x00"
        put(zigzag_varint(len(body)))
        put(body)
    records = b"".join(parts)
    count = len(entries)
    tail = _TAIL.pack(ATTR_CONTROL if control else 0, count - 1, timestamp_ms, timestamp_ms, NO_PRODUCER_ID,
                      NO_PRODUCER_EPOCH, NO_SEQUENCE, count) + records
    return _HEAD.pack(base_offset, HEADER_SIZE - LOG_OVERHEAD + len(records), epoch, MAGIC_V2, crc32c(tail)) + tail


def encode_batch(batch: RecordBatch) -> bytes:
    """The batch's bytes on disk; the CRC is always computed, never trusted."""
    if batch.compressed_records is not None:
        records = batch.compressed_records
    else:
        records = b"".join(encode_record(r) for r in batch.records)
        records = compression.compress(batch.compression, records)
    length = HEADER_SIZE - LOG_OVERHEAD + len(records)
    tail = struct.pack(">hiqqqhii", batch.attributes, batch.last_offset_delta, batch.base_timestamp,
                       batch.max_timestamp, batch.producer_id, batch.producer_epoch,
                       batch.base_sequence, len(batch.records)) + records
    crc = crc32c(tail)
    return struct.pack(">qiibI", batch.base_offset, length, batch.partition_leader_epoch, MAGIC_V2, crc) + tail


def build_batch(
    base_offset: int,
    entries: Iterable[tuple[bytes | None, bytes | None]],
    *,
    timestamp_ms: int,
    leader_epoch: int,
    control: bool = False,
    codec: int = compression.NONE,
) -> RecordBatch:
    """A new batch of (key, value) records, all stamped ``timestamp_ms``, as KRaft writes them."""
    records = tuple(BatchRecord(i, 0, key, value) for i, (key, value) in enumerate(entries))
    if not records:
        raise ValueError("a record batch needs at least one record")
    attributes = (codec & ATTR_COMPRESSION_MASK) | (ATTR_CONTROL if control else 0)
    return RecordBatch(base_offset, leader_epoch, attributes, len(records) - 1, timestamp_ms, timestamp_ms,
                       records)
