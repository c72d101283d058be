"""Record batch compression codecs, as Kafka frames them.

gzip comes from the standard library; snappy, lz4 and zstd from cramjam when it
is installed. Kafka's snappy uses the xerial block framing of snappy-java, and
its lz4 the standard LZ4 frame format.
"""

from __future__ import annotations

import gzip
import struct
import zlib

from engine.common.errors import CorruptRecordError, UnsupportedCompressionError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
CODEC_IDS = {name: codec for codec, name in CODEC_NAMES.items()}

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")

try:  # optional: a clear error names the codec when it is absent
    import cramjam
except ImportError:  # pragma: no cover - cramjam is a core dependency
    cramjam = None


def codec_name(codec: int) -> str:
    return CODEC_NAMES.get(codec, f"unknown({codec})")


def decompress(codec: int, data: bytes) -> bytes:
    """Inflate a batch's records section; raises UnsupportedCompressionError or CorruptRecordError."""
    if codec == NONE:
        return data
    if codec == GZIP:
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise CorruptRecordError(f"bad gzip data: {exc}") from None
    if cramjam is None or codec not in CODEC_NAMES:
        raise UnsupportedCompressionError(f"unsupported compression codec {codec_name(codec)}")
    try:
        if codec == SNAPPY:
            return _snappy_decompress(data)
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(data))
        return bytes(cramjam.zstd.decompress(data))
    except (cramjam.DecompressionError, ValueError, struct.error) as exc:
        raise CorruptRecordError(f"bad {codec_name(codec)} data: {exc}") from None


def compress(codec: int, data: bytes) -> bytes:
    if codec == NONE:
        return data
    if codec == GZIP:
        return gzip.compress(data, mtime=0)
    if cramjam is None or codec not in CODEC_NAMES:
        raise UnsupportedCompressionError(f"unsupported compression codec {codec_name(codec)}")
    if codec == SNAPPY:
        return _snappy_compress(data)
    if codec == LZ4:
        return bytes(cramjam.lz4.compress(data))
    return bytes(cramjam.zstd.compress(data))


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):  # a bare snappy block (rare, but legal)
        return bytes(cramjam.snappy.decompress_raw(data))
    out = bytearray()
    pos = _XERIAL_HEADER.size
    while pos < len(data):
        (length,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if length < 0 or pos + length > len(data):
            raise ValueError("snappy block length runs past the data")
        out += cramjam.snappy.decompress_raw(data[pos:pos + length])
        pos += length
    return bytes(out)


def _snappy_compress(data: bytes) -> bytes:
    block = bytes(cramjam.snappy.compress_raw(data))
    return _XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1) + struct.pack(">i", len(block)) + block
