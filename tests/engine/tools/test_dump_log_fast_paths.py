"""The dump's fast paths against the general ones they stand in for: ``plain_batch`` reads what
``decode_batch`` reads (or declines), and a file printed in spans, in one process or by forked
workers, is printed as one pass over it prints it, damage included."""

from __future__ import annotations

import contextlib
import io
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine.admin import dump_workers
from engine.admin.dump_records import plain_batch
from engine.common.errors import MetadataError
from engine.records.record_batch import BatchRecord, RecordBatch, decode_batch, encode_batch
from engine.tools.cli import run
from metashell.demo.shell_demo import write_demo_log_dir
from tests.strategies import batch_records, record_batches

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PLAIN = batch_records(key=st.one_of(st.none(), st.binary(max_size=5)), value=st.binary(max_size=300)).map(
    lambda r: r._replace(headers=(), timestamp_delta=r.timestamp_delta % 128 - 64, offset_delta=r.offset_delta % 100_000))


def _general(buf: bytes) -> tuple[RecordBatch, int] | str:
    try:
        return decode_batch(buf, 0)
    except MetadataError as exc:
        return exc.reason


@SETTINGS
@given(record_batches(max_records=6))
@example(RecordBatch(0, 0, 0, 0, 0, 0, (BatchRecord(1, 0, None, b"x" * 200),)))
def test_plain_batch_is_decode_batch_or_declines(batch: RecordBatch) -> None:
    buf = encode_batch(batch)
    plain = plain_batch(buf, 0)
    if plain is not None:
        assert plain == _general(buf)


@SETTINGS
@given(st.lists(PLAIN, min_size=1, max_size=8), st.data())
def test_plain_records_take_the_fast_path(records: list[BatchRecord], data) -> None:
    batch = RecordBatch(5, 1, 0, len(records) - 1, 1_700_000_000_000, 1_700_000_000_000, tuple(records))
    buf = bytearray(encode_batch(batch))
    plain = plain_batch(bytes(buf), 0)
    assert plain is not None and plain == _general(bytes(buf))
    # any one byte changed: the fast path declines or agrees with the general one, never differs
    index = data.draw(st.integers(0, len(buf) - 1))
    buf[index] ^= data.draw(st.integers(1, 255))
    changed = plain_batch(bytes(buf), 0)
    assert changed is None or changed == _general(bytes(buf))


def _dump(path: Path, workers: int) -> tuple[int, str, list[str]]:
    stdout, errors = io.StringIO(), []
    with contextlib.redirect_stdout(stdout):
        code = run(["dump-log", "--workers", str(workers), str(path)], err=errors.append)
    return code, stdout.getvalue(), errors


def _damaged(root: Path) -> dict[str, Path]:
    segment = write_demo_log_dir(root / "demo") / "__cluster_metadata-0" / "00000000000000000000.log"
    data = segment.read_bytes()
    positions = []
    pos = 0
    while pos < len(data):
        positions.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    middle = positions[len(positions) // 2]
    crc, too_long, records, torn = (bytearray(data) for _ in range(4))
    crc[middle + 20] ^= 0xFF
    too_long[middle + 8:middle + 12] = struct.pack(">i", 0x7FFFFF00)
    records[middle + 61] = 0x7F
    cases = {"whole": data, "crc": crc, "too-long": too_long, "records": records, "torn": data[:-7]}
    out = {}
    for name, content in cases.items():
        path = root / name / segment.name
        path.parent.mkdir(parents=True)
        path.write_bytes(bytes(content))
        out[name] = path
    return out


@pytest.mark.slow  # forks workers
@pytest.mark.parametrize("case", ["whole", "crc", "too-long", "records", "torn"])
def test_spans_and_workers_print_what_one_pass_prints(tmp_path: Path, monkeypatch, case: str) -> None:
    path = _damaged(tmp_path)[case]
    monkeypatch.setattr(dump_workers, "SPAN_BYTES", 1 << 40)  # one span: the file in one pass
    one_pass = _dump(path, 1)
    monkeypatch.setattr(dump_workers, "SPAN_BYTES", 1)  # every batch a span of its own
    assert _dump(path, 1) == one_pass
    monkeypatch.setattr("engine.admin.log_dump.PARALLEL_FROM_BYTES", 1)
    assert _dump(path, 2) == one_pass
    code, stdout, errors = one_pass
    assert stdout.startswith(f"Dumping {path}\n") and stdout.count("baseOffset: ") > 2
    assert (code, len(errors)) == ((0, 0) if case == "whole" else (1, 1)), errors
