"""The replay hot path (log_reader._entries_in_place) against the general decoder, on shapes it
takes and shapes it must hand over: multi-byte varints, keys, headers, unknown records."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.bench.replay import partition_heavy_records
from engine.storage.log_reader import entries_of_batch, read_batches, read_file
from engine.records.metadata_record_serde import encode_metadata_value
from engine.records.record_batch import BatchRecord, RecordBatch, encode_batch
from engine.storage.log_segment import segment_file_name


def _general(path: Path):
    return [e for _, b in read_batches(path) for e in entries_of_batch(b)]


def test_generated_partition_heavy_log(tmp_path: Path) -> None:
    values = [encode_metadata_value(r.message) for r in partition_heavy_records(1200)]
    records = tuple(BatchRecord(i, 0, None, v) for i, v in enumerate(values[:300]))
    batch = RecordBatch(0, 3, 0, len(records) - 1, 1000, 1000, records)
    path = tmp_path / segment_file_name(0)
    path.write_bytes(encode_batch(batch))
    fast = list(read_file(path))
    assert fast == _general(path) and len(fast) == 300
    assert [e.offset for e in fast] == list(range(300))


values = st.one_of(
    st.sampled_from([encode_metadata_value(r.message) for r in partition_heavy_records(150)[:5]]),
    st.binary(max_size=300),
)
records = st.builds(
    BatchRecord,
    offset_delta=st.integers(0, 20_000),
    timestamp_delta=st.integers(-10_000, 10_000),
    key=st.one_of(st.none(), st.binary(max_size=3)),
    value=st.one_of(st.none(), values),
    headers=st.one_of(st.just(()), st.lists(st.tuples(st.binary(max_size=2), st.none()), max_size=2).map(tuple)),
    attributes=st.integers(0, 3),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(records, min_size=1, max_size=12), st.integers(0, 2**40))
def test_any_batch_reads_the_same_both_ways(tmp_path_factory, recs, base_offset) -> None:
    batch = RecordBatch(base_offset, 1, 0, max(r.offset_delta for r in recs), 5, 5, tuple(recs))
    path = tmp_path_factory.mktemp("fast") / segment_file_name(0)
    path.write_bytes(encode_batch(batch))
    assert list(read_file(path)) == _general(path)
