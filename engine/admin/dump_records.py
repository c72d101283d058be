"""Record batches read for ``kraftd dump-log``'s hot path: the records of an uncompressed batch
in the shape KRaft writes them, parsed in one loop with their varints inline.

``plain_batch(buf, pos)`` is ``decode_batch(buf, pos)`` (engine.records.record_batch), field for
field, or None: for a compressed batch, a record with headers or a varint longer than three
bytes, or anything wrong at all. The caller then takes decode_batch, which says precisely what
is wrong, so damage is reported exactly as before; this module only makes the common case
cheaper (decode_batch calls a function per varint and per field of every record).
"""

from __future__ import annotations

import struct

from engine.common.errors import MetadataError
from engine.records.record_batch import ATTR_COMPRESSION_MASK, HEADER_SIZE, BatchRecord, RecordBatch, decode_batch

_COUNT = struct.Struct(">i")
_new = tuple.__new__


def plain_batch(buf: bytes, pos: int) -> tuple[RecordBatch, int] | None:
    """``decode_batch(buf, pos)`` for an uncompressed batch of plain records; else None."""
    try:
        header, end = decode_batch(buf, pos, decode_records=False)  # lengths, magic, CRC, count
    except MetadataError:
        return None
    if header.attributes & ATTR_COMPRESSION_MASK:
        return None
    (count,) = _COUNT.unpack_from(buf, pos + 57)
    records = _plain_records(buf, pos + HEADER_SIZE, end, count)
    if records is None:
        return None
    return RecordBatch(header.base_offset, header.partition_leader_epoch, header.attributes,
                       header.last_offset_delta, header.base_timestamp, header.max_timestamp, records,
                       header.producer_id, header.producer_epoch, header.base_sequence, header.crc,
                       header.size_bytes), end


def _varint3(buf: bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most three bytes at ``pos`` (still zigzag-encoded) and the position
    after it; (-1, pos) for a longer one, which the general decoder reads. IndexError past the end."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    c = buf[pos + 1]
    if c < 0x80:
        return (b & 0x7F) | (c << 7), pos + 2
    d = buf[pos + 2]
    if d >= 0x80:
        return -1, pos
    return (b & 0x7F) | ((c & 0x7F) << 7) | (d << 14), pos + 3


def _plain_records(buf: bytes, pos: int, end: int, count: int) -> tuple[BatchRecord, ...] | None:
    """The records filling buf[pos:end], ``count`` of them, none with headers; None otherwise."""
    records = []
    append = records.append
    try:
        while pos < end:
            # record length (zigzag varint), up to three bytes
            length, pos = _varint3(buf, pos)
            if length < 0:
                return None
            if length & 1:
                return None  # negative
            body = pos
            attributes = buf[pos]
            b = buf[pos + 1]  # timestamp delta, one byte or the general path
            if b >= 0x80:
                return None
            ts_delta = (b >> 1) ^ -(b & 1)
            pos += 2
            raw, pos = _varint3(buf, pos)  # offset delta
            if raw < 0:
                return None
            offset_delta = (raw >> 1) ^ -(raw & 1)
            key = None
            b = buf[pos]  # key: null (zigzag -1) or a short one
            if b == 1:
                pos += 1
            elif b < 0x80 and not b & 1:
                key_end = pos + 1 + (b >> 1)
                key = buf[pos + 1:key_end]
                pos = key_end
            else:
                return None
            raw, pos = _varint3(buf, pos)  # value length
            if raw < 0:
                return None
            if raw == 1:
                value = None
            elif raw & 1:
                return None
            else:
                value_end = pos + (raw >> 1)
                value = buf[pos:value_end]
                pos = value_end
            if buf[pos] != 0:  # headers: the general path
                return None
            pos += 1
            if pos - body != length >> 1 or pos > end:
                return None
            append(_new(BatchRecord, (offset_delta, ts_delta, key, value, (), attributes)))
    except IndexError:
        return None
    if pos != end or len(records) != count:
        return None
    return tuple(records)
