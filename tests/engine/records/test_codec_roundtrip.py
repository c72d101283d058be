"""Round trips of the byte codecs: metadata record values, control records, record batches."""

from __future__ import annotations

import dataclasses
import io
import struct
import uuid

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine.records import compression
from engine.common.errors import CorruptRecordError, TruncatedError
from engine.records.kio_codec import (
    KRaftVersionRecord,
    LeaderChangeMessage,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    VotersRecord,
    crc32c,
    encode_unsigned_varint,
    read_signed_varlong,
    read_unsigned_varint,
    write_signed_varlong,
)
from engine.records.metadata_record_serde import (
    ABORT,
    COMMIT,
    CONTROL_CLASSES,
    ControlRecord,
    MetadataRecord,
    UnknownRecord,
    control_record,
    decode_control,
    decode_metadata_value,
    decode_record,
    encode_control,
    encode_metadata_value,
    encode_record,
)
from engine.records.metadata_records import RECORD_CLASSES, RECORD_TYPE_NAMES, NoOpRecordV0, PartitionRecordV0, TopicRecordV0
from engine.records.record_batch import (
    ATTR_CONTROL,
    BatchRecord,
    RecordBatch,
    build_batch,
    decode_batch,
    encode_batch,
    zigzag_varint,
)
from tests.strategies import (
    INT16,
    all_codecs,
    batch_records,
    record_batches,
    record_strategy,
    simplest_record,
)


FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MEDIUM = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

RECORD_KEYS = sorted(RECORD_CLASSES)
RECORD_IDS = [f"{RECORD_CLASSES[k].__name__}-k{k[0]}v{k[1]}" for k in RECORD_KEYS]
CONTROL_CLASS_LIST = [LeaderChangeMessage, SnapshotHeaderRecord, SnapshotFooterRecord, KRaftVersionRecord,
                      VotersRecord]
CODECS = sorted(compression.CODEC_NAMES)
CODEC_IDS = [compression.CODEC_NAMES[c] for c in CODECS]


def _header(api_key: int, version: int) -> bytes:
    return encode_unsigned_varint(1) + encode_unsigned_varint(api_key) + encode_unsigned_varint(version)


def _replace(obj, **changes):
    """dataclasses.replace, or NamedTuple._replace (BatchRecord and friends may be either)."""
    if hasattr(obj, "_replace"):
        return obj._replace(**changes)
    return dataclasses.replace(obj, **changes)


def _strip_disk_fields(batch: RecordBatch) -> RecordBatch:
    """The batch without what decoding fills in (crc, size_bytes); compressed_records is compare=False."""
    return _replace(batch, crc=None, size_bytes=0)


def _assert_unknown_keeps_bytes(record, key, value) -> None:
    assert isinstance(record, UnknownRecord), record
    assert record.key == key
    assert record.value == value
    assert encode_record(record) == (key, value)
    assert isinstance(record.type_name, str)


# --------------------------------------------------------------------------- strategy sanity

def test_strategy_covers_all_record_and_control_classes():
    for cls in [*RECORD_CLASSES.values(), *CONTROL_CLASS_LIST]:
        assert record_strategy(cls) is record_strategy(cls)  # cached; building it must not raise
        assert isinstance(_minimal(cls), cls)
    assert set(CONTROL_CLASSES.values()) == set(CONTROL_CLASS_LIST)


# --------------------------------------------------------------------------- metadata record values

@pytest.mark.parametrize("key", RECORD_KEYS, ids=RECORD_IDS)
def test_metadata_record_roundtrip(key):
    cls = RECORD_CLASSES[key]

    @FAST
    @given(record_strategy(cls))
    def check(msg):
        value = encode_metadata_value(msg)
        decoded = decode_metadata_value(value)
        assert isinstance(decoded, MetadataRecord), decoded
        assert decoded == msg
        assert type(decoded.message) is cls
        assert (decoded.api_key, decoded.version) == key
        assert decoded.type_name == RECORD_TYPE_NAMES[key[0]]
        assert encode_metadata_value(decoded.message) == value
        # and through the generic record door
        assert decode_record(None, value, control=False) == decoded
        assert encode_record(decoded) == (None, value)

    check()


@pytest.mark.parametrize("key", RECORD_KEYS, ids=RECORD_IDS)
def test_metadata_frame_header(key):
    api_key, version = key
    msg = _minimal(RECORD_CLASSES[key])  # deterministic: the simplest instance
    value = encode_metadata_value(msg)
    pos = 0
    fields = []
    for _ in range(3):
        n, size = read_unsigned_varint(value, pos)
        fields.append(n)
        pos += size
    assert fields == [1, api_key, version]
    assert value.startswith(_header(api_key, version))
    assert value[:pos] == bytes([1, api_key, version])  # all current keys/versions fit one varint byte


def _minimal(cls):
    return simplest_record(cls)


# --------------------------------------------------------------------------- control records

@pytest.mark.parametrize("cls", CONTROL_CLASS_LIST, ids=lambda c: c.__name__)
def test_control_record_roundtrip(cls):
    @FAST
    @given(record_strategy(cls), st.integers(*INT16))
    def check(msg, key_version):
        record = control_record(msg)
        assert record.key_version == 0
        assert CONTROL_CLASSES[record.control_type] is cls
        key, value = encode_control(record)
        assert key == struct.pack(">hh", 0, record.control_type)
        assert decode_control(key, value) == record
        assert decode_record(key, value, control=True) == record
        assert encode_record(decode_control(key, value)) == (key, value)

        other = ControlRecord(record.control_type, msg, key_version)
        key2, value2 = encode_control(other)
        assert value2 == value
        decoded = decode_control(key2, value2)
        assert decoded == other
        assert encode_control(decoded) == (key2, value2)

    check()


# --------------------------------------------------------------------------- record batches

@MEDIUM
@given(record_batches())
def test_batch_roundtrip(batch):
    data = encode_batch(batch)
    decoded, end = decode_batch(data)
    assert end == len(data)
    assert _strip_disk_fields(decoded) == batch
    assert decoded.size_bytes == len(data)
    assert decoded.crc == crc32c(data[21:])
    assert decoded.compressed_records is None
    assert encode_batch(decoded) == data
    # bytes -> batch -> bytes is the identity, at an offset too
    prefix = b"\xaa" * 7
    again, end2 = decode_batch(prefix + data, len(prefix))
    assert end2 == len(prefix) + len(data)
    assert again == decoded


def test_batch_roundtrip_explicit_edge_records():
    records = (
        BatchRecord(0, -1, None, None),
        BatchRecord(1, -(2**63), b"", b"", ((b"", None), (b"h", b"")), 255),
        BatchRecord(-1, 2**63 - 1, b"k" * 64, b"v" * 8192, tuple((bytes([i]), None) for i in range(70)), 1),
        BatchRecord(2**31 - 1, -300, None, b"x", (), 0),
        BatchRecord(-(2**31), 64, b"\x00", None, (), 128),
    )
    batch = RecordBatch(2**63 - 1, -1, -8, -1, -(2**63), 2**63 - 1, records, 2**63 - 1, -(2**15), 2**31 - 1)
    raw = encode_batch(batch)
    decoded, end = decode_batch(raw)
    assert end == len(raw)
    assert decoded.records == records
    assert _strip_disk_fields(decoded) == batch
    assert encode_batch(decoded) == raw


@FAST
@given(record_batches(min_records=1), st.data())
def test_batch_roundtrip_multibyte_varints(batch, data):
    """Force records whose deltas, lengths and header counts all need multi-byte varints."""
    big = data.draw(st.lists(batch_records(key=st.binary(min_size=64, max_size=300),
                                           value=st.binary(min_size=64, max_size=300)),
                             min_size=1, max_size=3))
    big = [_replace(r, offset_delta=r.offset_delta | (1 << 20),
           timestamp_delta=-(abs(r.timestamp_delta) % (1 << 60)) - (1 << 40)) for r in big]
    batch = _replace(batch, records=batch.records + tuple(big))
    raw = encode_batch(batch)
    decoded, _ = decode_batch(raw)
    assert _strip_disk_fields(decoded) == batch
    assert encode_batch(decoded) == raw


@pytest.mark.parametrize("codec", CODECS, ids=CODEC_IDS)
def test_compressed_build_batch_roundtrip(codec):
    @FAST
    @given(
        st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=40)), st.binary(max_size=300)),
                 min_size=1, max_size=8),
        st.integers(0, 2**62), st.integers(-(2**40), 2**40), st.integers(0, 2**31 - 1), st.booleans(),
    )
    def check(entries, base_offset, ts, epoch, control):
        built = build_batch(base_offset, entries, timestamp_ms=ts, leader_epoch=epoch, control=control,
                            codec=codec)
        assert built.compression == codec
        raw = encode_batch(built)
        decoded, end = decode_batch(raw)
        assert end == len(raw)
        assert decoded.records == built.records
        assert [(r.key, r.value) for r in decoded.records] == [tuple(e) for e in entries]
        assert _strip_disk_fields(decoded) == built
        assert decoded.compression == codec
        assert decoded.is_control == control
        if codec == compression.NONE:
            assert decoded.compressed_records is None
        else:
            assert decoded.compressed_records == raw[61:]
        # re-encoding a decoded batch gives identical bytes (kept compressed section) ...
        assert encode_batch(decoded) == raw
        # ... and compressing afresh is deterministic too
        assert encode_batch(_replace(decoded, compressed_records=None)) == raw

    check()


@FAST
@given(record_batches(codec=all_codecs))
def test_arbitrary_compressed_batch_roundtrip(batch):
    raw = encode_batch(batch)
    decoded, _ = decode_batch(raw)
    assert _strip_disk_fields(decoded) == batch
    assert encode_batch(decoded) == raw


@MEDIUM
@given(st.lists(record_batches(codec=all_codecs), min_size=1, max_size=5))
def test_concatenated_batches_decode_in_sequence(batches):
    chunks = [encode_batch(b) for b in batches]
    buf = b"".join(chunks)
    pos = 0
    decoded = []
    while pos < len(buf):
        batch, end = decode_batch(buf, pos)
        assert end - pos == batch.size_bytes == len(chunks[len(decoded)])
        decoded.append(batch)
        pos = end
    assert pos == len(buf)
    assert [_strip_disk_fields(b) for b in decoded] == batches
    assert b"".join(encode_batch(b) for b in decoded) == buf
    # memoryview input decodes the same
    view = memoryview(buf)
    pos = 0
    for expected in decoded:
        batch, pos = decode_batch(view, pos)
        assert batch == expected


@FAST
@given(st.lists(record_batches(), min_size=1, max_size=3), st.data())
def test_concatenated_batches_with_truncated_tail(batches, data):
    chunks = [encode_batch(b) for b in batches]
    cut = data.draw(st.integers(1, len(chunks[-1]) - 1))
    buf = b"".join(chunks[:-1]) + chunks[-1][:cut]
    pos = 0
    for chunk in chunks[:-1]:
        _, pos = decode_batch(buf, pos)
    with pytest.raises(TruncatedError):
        decode_batch(buf, pos)


# --------------------------------------------------------------------------- metadata records in batches

@FAST
@given(st.lists(st.sampled_from(RECORD_KEYS).flatmap(lambda k: record_strategy(RECORD_CLASSES[k])),
                min_size=1, max_size=6),
       all_codecs)
def test_metadata_records_through_a_batch(messages, codec):
    entries = [(None, encode_metadata_value(m)) for m in messages]
    raw = encode_batch(build_batch(0, entries, timestamp_ms=1, leader_epoch=1, codec=codec))
    batch, _ = decode_batch(raw)
    records = [decode_record(r.key, r.value, batch.is_control) for r in batch.records]
    assert records == [m for m in messages]


@FAST
@given(st.lists(st.sampled_from(CONTROL_CLASS_LIST).flatmap(record_strategy), min_size=1, max_size=4))
def test_control_records_through_a_batch(messages):
    entries = [encode_control(control_record(m)) for m in messages]
    raw = encode_batch(build_batch(5, entries, timestamp_ms=1, leader_epoch=1, control=True))
    batch, _ = decode_batch(raw)
    assert batch.attributes & ATTR_CONTROL
    assert [decode_record(r.key, r.value, batch.is_control) for r in batch.records] == \
        [control_record(m) for m in messages]


# --------------------------------------------------------------------------- UnknownRecord

def test_unknown_api_key_is_kept():
    value = _header(99, 0) + b"\x00\x01\x02payload"
    record = decode_metadata_value(value)
    _assert_unknown_keeps_bytes(record, None, value)
    assert (record.api_key, record.version) == (99, 0)
    assert record.type_name == "UNKNOWN_RECORD(99)"
    assert "unknown record type" in record.reason


def test_unknown_multibyte_api_key_is_kept():
    value = _header(300, 7) + b"x"
    record = decode_metadata_value(value)
    _assert_unknown_keeps_bytes(record, None, value)
    assert (record.api_key, record.version) == (300, 7)


def test_too_new_version_is_kept():
    good = encode_metadata_value(_minimal(PartitionRecordV0))
    value = _header(3, 99) + good[3:]
    record = decode_metadata_value(value)
    _assert_unknown_keeps_bytes(record, None, value)
    assert (record.api_key, record.version) == (3, 99)
    assert record.type_name == "PARTITION_RECORD"
    assert "unknown version" in record.reason


def test_unknown_frame_version_is_kept():
    value = b"\x02" + encode_metadata_value(NoOpRecordV0())[1:]
    _assert_unknown_keeps_bytes(decode_metadata_value(value), None, value)


@pytest.mark.parametrize("value", [b"", b"\x01", b"\x01\x02", b"\x80", b"\xff" * 12, b"\x01" + b"\xff" * 10],
                         ids=["empty", "frame-only", "no-version", "cut-varint", "ff12", "huge-api-key"])
def test_truncated_header_is_kept(value):
    _assert_unknown_keeps_bytes(decode_metadata_value(value), None, value)


def test_null_value_and_keyed_value_are_kept():
    _assert_unknown_keeps_bytes(decode_metadata_value(None), None, None)
    value = encode_metadata_value(TopicRecordV0(name="t", topic_id=uuid.uuid4()))
    _assert_unknown_keeps_bytes(decode_metadata_value(value, b"k"), b"k", value)


@pytest.mark.parametrize("key", RECORD_KEYS, ids=RECORD_IDS)
def test_truncated_and_trailing_values_are_kept(key):
    @settings(max_examples=20, deadline=None)
    @given(record_strategy(RECORD_CLASSES[key]), st.data())
    def check(msg, data):
        value = encode_metadata_value(msg)
        cut = data.draw(st.integers(0, len(value) - 1), label="cut")
        truncated = value[:cut]
        _assert_unknown_keeps_bytes(decode_metadata_value(truncated), None, truncated)
        trailing = value + data.draw(st.binary(min_size=1, max_size=10), label="trailing")
        record = decode_metadata_value(trailing)
        _assert_unknown_keeps_bytes(record, None, trailing)
        assert "trailing bytes" in record.reason
        assert (record.api_key, record.version) == key

    check()


# Garbage after a valid header that kio rejects: kept as an UnknownRecord, never raised.
# (An unknown tagged field is no garbage: the record decodes and keeps it, see
# tests/engine/records/test_newest_records.py; one whose length runs past the value still is.)
_RAISING_VALUES = [
    pytest.param(_header(2, 0) + b"\x00" + b"\x00" * 17, id="TopicRecord-null-name-UnexpectedNull"),
    pytest.param(_header(2, 0) + b"\x03\xff\xfe" + b"\x00" * 17, id="TopicRecord-bad-utf8-InvalidUnicode"),
    pytest.param(_header(20, 0) + b"\x01\x00\x06abcde", id="NoOpRecord-unknown-tag-past-the-end"),
]


@pytest.mark.parametrize("value", _RAISING_VALUES)
def test_undecodable_value_is_kept_not_raised(value):
    _assert_unknown_keeps_bytes(decode_metadata_value(value), None, value)


def test_garbage_values_are_kept_when_they_underflow_or_are_invalid():
    # shapes the engine handles today: buffer exhausted, varint too long, bad boolean
    for value in [
        _header(2, 0),
        _header(2, 0) + b"\x80\x80\x80\x80\x80\x80\x01",
        _header(11, 0) + b"\x02a\x00\xff\xff\xff\xff\x0f",
        _header(27, 0) + b"\x00\x00\x00\x01" + b"\x00" * 16 + b"\x07\x01\x01\x00",
    ]:
        _assert_unknown_keeps_bytes(decode_metadata_value(value), None, value)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(RECORD_KEYS), st.binary(max_size=64))
@example(key=(2, 0), garbage=b"\x00" + b"\x00" * 17)
def test_garbage_after_header_never_raises(key, garbage):
    value = _header(*key) + garbage
    record = decode_metadata_value(value)
    if not isinstance(record, MetadataRecord):  # garbage may be a valid message by chance
        _assert_unknown_keeps_bytes(record, None, value)


# --------------------------------------------------------------------------- unknown control records

@pytest.mark.parametrize("control_type", [ABORT, COMMIT, 7, 99, -1])
def test_raw_control_types_are_kept(control_type):
    key = struct.pack(">hh", 0, control_type)
    value = struct.pack(">hi", 0, 0)  # Kafka's EndTransactionMarker shape
    record = decode_control(key, value)
    _assert_unknown_keeps_bytes(record, key, value)
    assert record.control and record.type_name == "UNKNOWN_CONTROL_RECORD"


@pytest.mark.parametrize("key", [None, b"", b"\x00\x00\x02", b"\x00\x00\x00\x02\x00"])
def test_bad_control_key_is_kept(key):
    value = encode_control(control_record(SnapshotFooterRecord(version=0)))[1]
    _assert_unknown_keeps_bytes(decode_control(key, value), key, value)


@pytest.mark.parametrize("cls", CONTROL_CLASS_LIST, ids=lambda c: c.__name__)
def test_truncated_and_trailing_control_values_are_kept(cls):
    @settings(max_examples=20, deadline=None)
    @given(record_strategy(cls), st.data())
    def check(msg, data):
        key, value = encode_control(control_record(msg))
        cut = data.draw(st.integers(0, len(value) - 1), label="cut")
        _assert_unknown_keeps_bytes(decode_control(key, value[:cut]), key, value[:cut])
        trailing = value + data.draw(st.binary(min_size=1, max_size=10), label="trailing")
        _assert_unknown_keeps_bytes(decode_control(key, trailing), key, trailing)
        _assert_unknown_keeps_bytes(decode_control(key, None), key, None)

    check()


@pytest.mark.parametrize("key,value", [
    pytest.param(struct.pack(">hh", 0, 4), b"\x00\x00\x01\x00\x06abcde", id="SnapshotFooter-unknown-tag-past-the-end"),
    pytest.param(struct.pack(">hh", 0, 6),
                 b"\x00\x00\x02" + b"\x00\x00\x00\x01" + b"\x00" * 16 + b"\x02\x00",
                 id="Voters-null-endpoint-name-UnexpectedNull"),
])
def test_undecodable_control_value_is_kept_not_raised(key, value):
    _assert_unknown_keeps_bytes(decode_control(key, value), key, value)


# --------------------------------------------------------------------------- corrupt batches

def _raw_batch(records_section: bytes, count: int = 1) -> bytes:
    tail = struct.pack(">hiqqqhii", 0, 0, 1, 1, -1, -1, -1, count) + records_section
    return struct.pack(">qiibI", 0, 49 + len(records_section), 0, 2, crc32c(tail)) + tail


@pytest.mark.parametrize("section", [b"\x14\x00\xff", b"\x14\x00\x00\xff\xff"], ids=["ts-varlong", "offset-varint"])
def test_cut_varint_in_records_is_corrupt_record_error(section):
    with pytest.raises(CorruptRecordError):
        decode_batch(_raw_batch(section))


@given(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1))
@example(0)
@example(-1)
@example(63)
@example(-64)
@example(64)
@example(-65)
@example((1 << 63) - 1)
@example(-(1 << 63))
def test_zigzag_varint_writes_kafkas_varlong(value):
    # the record framing's own writer (no kio checks on the hot path) against kio's writer
    out = io.BytesIO()
    write_signed_varlong(out, value)
    assert zigzag_varint(value) == out.getvalue()
    assert read_signed_varlong(zigzag_varint(value), 0)[0] == value


@pytest.mark.parametrize("value", [1 << 63, -(1 << 63) - 1])
def test_zigzag_varint_refuses_what_is_not_an_int64(value):
    with pytest.raises(struct.error):
        zigzag_varint(value)
