"""Compressed batches: every codec Kafka uses decodes; an unknown codec or bad data is a clear error."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from engine.records import compression
from engine.tools.cli import run
from engine.common.errors import CorruptRecordError, UnsupportedCompressionError
from engine.records.kio_codec import crc32c
from engine.records.record_batch import build_batch, decode_batch, encode_batch


def _with_attributes(data: bytes, attributes: int) -> bytes:
    """Rewrite a batch's attributes and fix its CRC, as a writer with that codec would."""
    tail = struct.pack(">h", attributes) + data[23:]
    return data[:17] + struct.pack(">I", crc32c(tail)) + tail


@pytest.mark.parametrize("codec", [6, 7])
def test_unknown_codec_names_codec_file_and_offset(tmp_path: Path, codec: int, capsys) -> None:
    plain = encode_batch(build_batch(0, [(None, b"x")], timestamp_ms=1, leader_epoch=0))
    bad = _with_attributes(plain, codec)
    with pytest.raises(UnsupportedCompressionError, match=f"unsupported compression codec unknown\\({codec}\\)"):
        decode_batch(plain + bad, len(plain))
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(plain + bad)
    lines: list[str] = []
    assert run(["dump-log", str(segment)], err=lines.append) == 1
    assert lines == [f"kraftd: {segment}, byte offset {len(plain)}: unsupported compression codec unknown({codec})"]


@pytest.mark.parametrize("codec", [compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD])
def test_garbage_compressed_data_is_corrupt_not_a_crash(codec: int) -> None:
    plain = encode_batch(build_batch(0, [(None, b"payload")], timestamp_ms=1, leader_epoch=0))
    garbage = plain[:61] + b"\x00\x01\x02not compressed at all"
    fixed = struct.pack(">qi", 0, len(garbage) - 12) + garbage[12:]
    bad = _with_attributes(fixed, codec)
    with pytest.raises(CorruptRecordError, match=f"bad {compression.codec_name(codec)} data"):
        decode_batch(bad)


@pytest.mark.parametrize("codec", [compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD])
def test_compressed_batch_in_a_segment_dumps(tmp_path: Path, codec: int, capsys) -> None:
    batch = build_batch(5, [(None, bytes([1, 20, 0, 0]))] * 3, timestamp_ms=7, leader_epoch=2, codec=codec)
    segment = tmp_path / "00000000000000000005.log"
    segment.write_bytes(encode_batch(batch))
    assert run(["dump-log", str(segment)]) == 0
    out = capsys.readouterr().out
    assert f"compresscodec: {compression.codec_name(codec)}" in out
    assert out.count('payload: {"type":"NO_OP_RECORD","version":0,"data":{}}') == 3
