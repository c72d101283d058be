"""Record batch compression codecs, as Kafka frames them.

gzip comes from the standard library; snappy, lz4 and zstd from cramjam when it
is installed. Kafka's snappy uses the xerial block framing of snappy-java, and
its lz4 the standard LZ4 frame format.

Inflating is bounded (``inflated_limit``): a few KB of zstd or lz4 can claim gigabytes
(a frame of run-length blocks), and a reader must refuse such a batch, not allocate it.
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

# No real metadata batch comes near these: KRaft caps a batch at 8 MiB as written
# (KafkaRaftClient.MAX_BATCH_SIZE_BYTES), and gzip cannot exceed about 1032:1.
MAX_INFLATED_BYTES = 128 << 20
MAX_INFLATE_RATIO = 1024
_MIN_INFLATE_LIMIT = 16 << 20

try:  # optional: a clear error names the codec when it is absent
    import cramjam
except ImportError:  # pragma: no cover - cramjam is a core dependency
    cramjam = None


def codec_name(codec: int) -> str:
    return CODEC_NAMES.get(codec, f"unknown({codec})")


def inflated_limit(compressed_size: int) -> int:
    """The most bytes a records section of ``compressed_size`` bytes may inflate to."""
    return min(MAX_INFLATED_BYTES, max(_MIN_INFLATE_LIMIT, MAX_INFLATE_RATIO * compressed_size))


class _TooLarge(Exception):
    pass


def decompress(codec: int, data: bytes) -> bytes:
    """Inflate a batch's records section; raises UnsupportedCompressionError or CorruptRecordError."""
    if codec == NONE:
        return data
    limit = inflated_limit(len(data))
    if codec == GZIP:
        try:
            return _gzip_decompress(data, limit)
        except (OSError, EOFError, zlib.error) as exc:
            raise CorruptRecordError(f"bad gzip data: {exc}") from None
        except _TooLarge:
            raise _bomb(codec, data, limit) from None
    if cramjam is None or codec not in CODEC_NAMES:
        raise UnsupportedCompressionError(f"unsupported compression codec {codec_name(codec)}")
    try:
        if codec == SNAPPY:
            return _snappy_decompress(data, limit)
        return _bounded_cramjam(getattr(cramjam, codec_name(codec)).decompress_into, data, limit)
    except (cramjam.DecompressionError, ValueError, struct.error) as exc:
        raise CorruptRecordError(f"bad {codec_name(codec)} data: {exc}") from None
    except _TooLarge:
        raise _bomb(codec, data, limit) from None


def _bomb(codec: int, data: bytes, limit: int) -> CorruptRecordError:
    return CorruptRecordError(f"{codec_name(codec)} data of {len(data)} bytes inflates past {limit} bytes "
                              "(the most a batch this size may hold)")


def _gzip_decompress(data: bytes, limit: int) -> bytes:
    """gzip.decompress (members one after another, zero padding between), inflating at most ``limit`` bytes."""
    out = bytearray()
    while data:
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out += member.decompress(data, limit + 1 - len(out))
        if len(out) > limit:
            raise _TooLarge()
        if not member.eof:
            raise EOFError("compressed data ended before the end-of-stream marker")
        data = member.unused_data.lstrip(b"\0")
    return bytes(out)


def _bounded_cramjam(decompress_into, data: bytes, limit: int) -> bytes:
    """Inflate into a buffer that grows (x8) up to ``limit``: cramjam refuses to overrun it."""
    size = min(limit, max(1 << 16, 8 * len(data)))
    while True:
        buffer = bytearray(size)
        try:
            written = decompress_into(data, buffer)
        except cramjam.DecompressionError as exc:
            if "failed to write whole buffer" not in str(exc):
                raise
            if size >= limit:
                raise _TooLarge() from None
            size = min(limit, size * 8)
            continue
        return bytes(buffer[:written])


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


def _snappy_decompress(data: bytes, limit: int) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):  # a bare snappy block (rare, but legal)
        return _snappy_block(data, limit)
    out = bytearray()
    pos = _XERIAL_HEADER.size
    while pos < len(data):
        (length,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if length < 0 or pos + length > len(data):
            raise ValueError("snappy block length runs past the data")
        out += _snappy_block(data[pos:pos + length], limit - len(out))
        pos += length
    return bytes(out)


def _snappy_block(block: bytes, limit: int) -> bytes:
    # a snappy block states its inflated length up front: check it before inflating
    if cramjam.snappy.decompress_raw_len(block) > limit:
        raise _TooLarge()
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy_compress(data: bytes) -> bytes:
    block = bytes(cramjam.snappy.compress_raw(data))
    return _XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1) + struct.pack(">i", len(block)) + block
