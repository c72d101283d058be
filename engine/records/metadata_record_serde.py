"""Metadata record values and KRaft control records, framed as Kafka frames them.

A metadata record value is ``uvarint frameVersion (1) | uvarint apiKey |
uvarint version | message`` with the message in Kafka's flexible encoding. A
control record has a 4-byte key ``int16 version (0) | int16 type`` and a value
that is the control message at version 0.

Anything we cannot decode — an unknown api key, a version newer than we know,
an unknown control type, bytes that do not parse — becomes an UnknownRecord
that keeps its bytes, so it is shown, never dropped, and re-encodes exactly.

A record of a known type and version that carries tagged fields its schema does not
define (a newer Kafka's) is no UnknownRecord: its known fields are decoded and the
unknown ones kept beside them (``unknown_tagged_fields``, engine.records.tagged_fields),
shown, and written back where they were, as Kafka's own readers and writers do.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from engine.records import metadata_records
from engine.records.metadata_records import MetadataRecord
from engine.records.kio_codec import (
    DECODE_ERRORS,
    KRaftVersionRecord,
    LeaderChangeMessage,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    VotersRecord,
    entity_reader,
    encode_entity,
    encode_unsigned_varint,
    read_unsigned_varint,
)
from engine.records.bounds_check import checked_reader
from engine.records.fast_encode import compiled_encoder
from engine.records.tagged_fields import UnknownTaggedField, decode_message, encode_with_unknown

FRAME_VERSION = 1

# Control record types (ControlRecordType in Kafka).
ABORT, COMMIT, LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS = range(7)
CONTROL_TYPE_NAMES = {
    ABORT: "ABORT", COMMIT: "COMMIT", LEADER_CHANGE: "LEADER_CHANGE", SNAPSHOT_HEADER: "SNAPSHOT_HEADER",
    SNAPSHOT_FOOTER: "SNAPSHOT_FOOTER", KRAFT_VERSION: "KRAFT_VERSION", KRAFT_VOTERS: "KRAFT_VOTERS",
}
CONTROL_CLASSES: dict[int, type] = {
    LEADER_CHANGE: LeaderChangeMessage,
    SNAPSHOT_HEADER: SnapshotHeaderRecord,
    SNAPSHOT_FOOTER: SnapshotFooterRecord,
    KRAFT_VERSION: KRaftVersionRecord,
    KRAFT_VOTERS: VotersRecord,
}
_CONTROL_TYPE_OF = {cls: t for t, cls in CONTROL_CLASSES.items()}
_CONTROL_KEY = struct.Struct(">hh")

_RECORD_CLASSES = metadata_records.RECORD_CLASSES
_READERS = {cls: entity_reader(cls) for cls in _RECORD_CLASSES.values()}
# kio readers indexed by (api key << 6 | version), api key < 128 and version < 64: the
# one-byte header fields of every record Kafka writes today. A list lookup is the
# cheapest dispatch for the replay hot path (log_reader.entries_in_place).
# Each entry is read(buf, start, end) -> message or None: bounds walk, then kio's reader.
FAST_READER_TABLE: list = [lambda buf, start, end: None] * (128 << 6)
for (_key, _version), _cls in _RECORD_CLASSES.items():
    FAST_READER_TABLE[(_key << 6) | _version] = checked_reader(_cls, _READERS[_cls])
_HEADERS: dict[tuple[int, int], bytes] = {
    key: encode_unsigned_varint(FRAME_VERSION) + encode_unsigned_varint(key[0]) + encode_unsigned_varint(key[1])
    for key in _RECORD_CLASSES
}


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A decoded KRaft control record (leader change, snapshot header/footer, kraft.version, voters)."""

    control_type: int
    message: Any
    key_version: int = 0
    # tagged fields the message carried that its kio class does not define (a newer Kafka's)
    unknown_tagged_fields: tuple[UnknownTaggedField, ...] = ()

    @property
    def type_name(self) -> str:
        return CONTROL_TYPE_NAMES[self.control_type]


@dataclass(frozen=True, slots=True)
class UnknownRecord:
    """A record kept as its bytes: unknown type or version, or undecodable. Never fatal."""

    key: bytes | None
    value: bytes | None
    reason: str
    api_key: int | None = None
    version: int | None = None
    control: bool = False
    problem: bool = True  # False for what is raw by design (transaction markers)

    @property
    def type_name(self) -> str:
        if self.control:
            return "UNKNOWN_CONTROL_RECORD"
        if self.api_key is not None:
            return metadata_records.RECORD_TYPE_NAMES.get(self.api_key, f"UNKNOWN_RECORD({self.api_key})")
        return "UNKNOWN_RECORD"


AnyRecord = MetadataRecord | ControlRecord | UnknownRecord


def decode_metadata_value(value: bytes | None, key: bytes | None = None) -> MetadataRecord | UnknownRecord:
    """Decode a metadata record value; never raises on bad bytes."""
    if value is None:
        return UnknownRecord(key, value, "record has a null value")
    try:
        frame, pos = read_unsigned_varint(value, 0)
        api_key, size = read_unsigned_varint(value, pos)
        pos += size
        version, size = read_unsigned_varint(value, pos)
        pos += size
    except DECODE_ERRORS:
        return UnknownRecord(key, value, "truncated metadata record header")
    if frame != FRAME_VERSION:
        return UnknownRecord(key, value, f"unknown frame version {frame}", api_key, version)
    cls = _RECORD_CLASSES.get((api_key, version))
    if cls is None:
        reason = "unknown record type" if api_key not in metadata_records.RECORD_TYPE_NAMES else "unknown version"
        return UnknownRecord(key, value, f"{reason} (api key {api_key}, version {version})", api_key, version)
    try:
        message, size, unknown = decode_message(cls, value, pos)
    except DECODE_ERRORS as exc:
        return UnknownRecord(key, value, f"undecodable {cls.record_name} v{version}: {exc}", api_key, version)
    if unknown:  # records are frozen: the slot is set once, here, before anyone sees the record
        object.__setattr__(message, "_unknown_tagged_fields", unknown)
    if pos + size != len(value):
        return UnknownRecord(key, value, f"{len(value) - pos - size} trailing bytes after {cls.record_name}",
                             api_key, version)
    if key is not None:
        return UnknownRecord(key, value, "metadata record with a key", api_key, version)
    return message


def encode_metadata_value(message: Any) -> bytes:
    unknown = getattr(message, "_unknown_tagged_fields", None)
    if unknown:
        return _HEADERS[(message.api_key, message.__version__)] + encode_with_unknown(message, unknown)
    # kio's bytes, by an encoder compiled once per class with the record header built in
    encoder = _VALUE_ENCODERS.get(type(message))
    if encoder is None:
        header = _HEADERS[(message.api_key, message.__version__)]
        encoder = _VALUE_ENCODERS[type(message)] = compiled_encoder(type(message), header)
    return encoder(message)


_VALUE_ENCODERS: dict[type, Any] = {}


def decode_control(key: bytes | None, value: bytes | None) -> ControlRecord | UnknownRecord:
    """Decode a record of a control batch; never raises on bad bytes."""
    if key is None or len(key) != _CONTROL_KEY.size:
        return UnknownRecord(key, value, "control record key is not 4 bytes", control=True)
    key_version, control_type = _CONTROL_KEY.unpack(key)
    cls = CONTROL_CLASSES.get(control_type)
    if cls is None or value is None:
        name = CONTROL_TYPE_NAMES.get(control_type, f"UNKNOWN({control_type})")
        by_design = control_type in (ABORT, COMMIT) and value is not None
        return UnknownRecord(key, value, f"control record {name} is kept raw", control=True,
                             problem=not by_design)
    try:
        message, size, unknown = decode_message(cls, value, 0)
    except DECODE_ERRORS as exc:
        return UnknownRecord(key, value, f"undecodable control record {control_type}: {exc}", control=True)
    if size != len(value):
        return UnknownRecord(key, value, f"{len(value) - size} trailing bytes in control record", control=True)
    return ControlRecord(control_type, message, key_version, unknown)


def encode_control(record: ControlRecord) -> tuple[bytes, bytes]:
    value = (encode_with_unknown(record.message, record.unknown_tagged_fields) if record.unknown_tagged_fields
             else encode_entity(record.message))
    return _CONTROL_KEY.pack(record.key_version, record.control_type), value


def control_record(message: Any) -> ControlRecord:
    """Wrap a kio control message (LeaderChangeMessage, VotersRecord, ...) as a control record."""
    return ControlRecord(_CONTROL_TYPE_OF[type(message)], message)


def encode_record(record: AnyRecord) -> tuple[bytes | None, bytes | None]:
    """(key, value) bytes of any record, as it stands in a batch."""
    if isinstance(record, MetadataRecord):
        return None, encode_metadata_value(record.message)
    if isinstance(record, ControlRecord):
        return encode_control(record)
    return record.key, record.value


def decode_record(key: bytes | None, value: bytes | None, control: bool) -> AnyRecord:
    return decode_control(key, value) if control else decode_metadata_value(value, key)
