"""encode_entries (the batch encoder of every leader append and snapshot) against the plain
build-then-encode path, byte for byte, around the varint table's edges."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from engine.records.record_batch import _COUNT_VARINTS, build_batch, decode_batch, encode_batch, encode_entries, \
    zigzag_varint

# lengths just below and past the one-byte (64), two-byte (8192) and table (16384) edges
EDGES = [0, 1, 62, 63, 64, 65, 8190, 8191, 8192, 16370, 16383, 16384, 20000]
payload = st.one_of(st.none(), st.binary(max_size=100), st.sampled_from(EDGES).map(bytes))
entries = st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=20)), payload), min_size=1, max_size=80)


@settings(max_examples=300, deadline=None)
@given(entries, st.integers(0, 1 << 40), st.integers(0, 1 << 20), st.integers(0, 1 << 41), st.booleans())
def test_encode_entries_is_build_then_encode(records, base, epoch, timestamp, control):
    expected = encode_batch(build_batch(base, records, timestamp_ms=timestamp, leader_epoch=epoch, control=control))
    assert encode_entries(base, records, epoch=epoch, timestamp_ms=timestamp, control=control) == expected


def test_a_batch_past_the_table_frames_its_offset_deltas_alike():
    records = [(None, b"v" * (i % 70)) for i in range(len(_COUNT_VARINTS) + 5)]
    data = encode_entries(3, records, epoch=2, timestamp_ms=9, control=False)
    assert data == encode_batch(build_batch(3, records, timestamp_ms=9, leader_epoch=2))
    batch, end = decode_batch(data, 0)
    assert end == len(data) and [r.value for r in batch.records] == [v for _, v in records]


def test_the_table_is_the_zigzag_varints():
    for value in (0, 1, 63, 64, 8191, 8192, len(_COUNT_VARINTS) - 1):
        assert _COUNT_VARINTS[value] == zigzag_varint(value)
    assert zigzag_varint(64) == b"\x80\x01" and zigzag_varint(8192) == b"\x80\x80\x01"
