"""Hypothesis strategies for metashell's codecs (no tests here).

``record_strategy(cls)`` builds instances of any kio-style dataclass — our
generated metadata records (engine.records.metadata_records) as well as kio's own
control record classes — from its fields' type hints and ``kafka_type``
metadata. ``batch_records()`` / ``record_batches()`` build record batches.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
import uuid

from hypothesis import strategies as st

from engine.records import compression
from engine.records.record_batch import ATTR_COMPRESSION_MASK, BatchRecord, RecordBatch

# --------------------------------------------------------------------------- ranges

INT8 = (-(2**7), 2**7 - 1)
INT16 = (-(2**15), 2**15 - 1)
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
UINT16 = (0, 2**16 - 1)


def _ints(bounds: tuple[int, int]) -> st.SearchStrategy[int]:
    """Integers in range, with the edges and the small values that hit 1-byte varints well represented."""
    lo, hi = bounds
    return st.one_of(
        st.integers(lo, hi),
        st.sampled_from(sorted({lo, hi, -1 if lo < 0 else 0, 0, 1, min(hi, 63), min(hi, 64), min(hi, 127),
                                min(hi, 128), max(lo, -64), max(lo, -65)})),
    )


def _uuids() -> st.SearchStrategy[uuid.UUID | None]:
    # kio writes None as the all-zero UUID and reads the all-zero UUID back as None,
    # so generate None rather than UUID(int=0).
    return st.one_of(
        st.none(),
        st.integers(1, 2**128 - 1).map(lambda i: uuid.UUID(int=i)),
    )


_PRIMITIVES: dict[str, st.SearchStrategy] = {
    "int8": _ints(INT8),
    "int16": _ints(INT16),
    "int32": _ints(INT32),
    "int64": _ints(INT64),
    "uint16": _ints(UINT16),
    # finite floats only: NaN != NaN would break equality. -0.0 is fine (== 0.0, and
    # encodes to its own bit pattern, which re-encodes identically).
    "float64": st.floats(allow_nan=False, allow_infinity=False),
    "bool": st.booleans(),
    "string": st.text(max_size=40),
    "bytes": st.binary(max_size=80),
    "uuid": _uuids(),
}


def primitive_strategy(kafka_type: str) -> st.SearchStrategy:
    try:
        return _PRIMITIVES[kafka_type]
    except KeyError:
        raise NotImplementedError(f"no strategy for kafka_type {kafka_type!r}") from None


# --------------------------------------------------------------------------- generic dataclass builder

def _split_optional(tp: typing.Any) -> tuple[typing.Any, bool]:
    """(inner type, nullable) of ``X | None`` / ``Optional[X]``; (tp, False) otherwise."""
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        args = typing.get_args(tp)
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) != 1:
            raise NotImplementedError(f"unsupported union {tp!r}")
        return non_none[0], len(non_none) != len(args)
    return tp, False


def _type_strategy(tp: typing.Any, kafka_type: str | None, max_items: int) -> st.SearchStrategy:
    inner, nullable = _split_optional(tp)
    if typing.get_origin(inner) is tuple:
        args = typing.get_args(inner)
        if len(args) != 2 or args[1] is not Ellipsis:
            raise NotImplementedError(f"unsupported tuple type {inner!r}")
        element = _type_strategy(args[0], kafka_type, max_items)
        strategy = st.lists(element, max_size=max_items).map(tuple)
    elif dataclasses.is_dataclass(inner):
        strategy = record_strategy(inner, max_items=max_items)
    else:
        if kafka_type is None:
            raise NotImplementedError(f"primitive field of type {inner!r} has no kafka_type")
        strategy = primitive_strategy(kafka_type)
        if kafka_type == "uuid":
            return strategy  # already includes None (the all-zero UUID)
    if nullable:
        strategy = st.one_of(st.none(), strategy)
    return strategy


@functools.cache
def record_strategy(cls: type, max_items: int = 4) -> st.SearchStrategy:
    """Instances of a kio-style frozen dataclass, built from its type hints and kafka_type metadata.

    Handles int8/int16/int32/int64/uint16, float64, bool, string, bytes, uuid,
    tuples of these, nested dataclasses (and tuples of them) and ``X | None``.
    Tagged fields (those with a default) also draw their default value often, so
    that both "tag omitted" and "tag written" paths are exercised.
    """
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, st.SearchStrategy] = {}
    for f in dataclasses.fields(cls):
        strategy = _type_strategy(hints[f.name], f.metadata.get("kafka_type"), max_items)
        if f.default is not dataclasses.MISSING:
            strategy = st.one_of(st.just(f.default), strategy)
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            strategy = st.one_of(st.builds(f.default_factory), strategy)  # type: ignore[misc]
        kwargs[f.name] = strategy
    return st.builds(cls, **kwargs)


def _simplest(tp: typing.Any, kafka_type: str | None) -> typing.Any:
    inner, nullable = _split_optional(tp)
    if typing.get_origin(inner) is tuple:
        return ()
    if dataclasses.is_dataclass(inner):
        return simplest_record(inner)
    return {"float64": 0.0, "bool": False, "string": "", "bytes": b"", "uuid": None}.get(kafka_type, 0)


def simplest_record(cls: type) -> typing.Any:
    """A deterministic, minimal instance of a kio-style dataclass (zeros, empty strings and tuples)."""
    hints = typing.get_type_hints(cls)
    return cls(**{f.name: _simplest(hints[f.name], f.metadata.get("kafka_type")) for f in dataclasses.fields(cls)})


# --------------------------------------------------------------------------- record batches

def _maybe_bytes(max_size: int = 200) -> st.SearchStrategy[bytes | None]:
    # lengths past 63 need a multi-byte zigzag varint
    return st.one_of(st.none(), st.binary(max_size=max_size))


headers_strategy = st.lists(
    st.tuples(st.binary(max_size=70), _maybe_bytes(70)), max_size=3,
).map(tuple)


def batch_records(
    *,
    key: st.SearchStrategy | None = None,
    value: st.SearchStrategy | None = None,
) -> st.SearchStrategy[BatchRecord]:
    """Arbitrary BatchRecords: deltas across the varint/varlong range (negative timestamp deltas too)."""
    return st.builds(
        BatchRecord,
        offset_delta=_ints(INT32),
        timestamp_delta=_ints(INT64),
        key=key if key is not None else _maybe_bytes(),
        value=value if value is not None else _maybe_bytes(),
        headers=headers_strategy,
        attributes=st.integers(0, 255),  # one byte on disk, read back unsigned
    )


def batch_attributes(codec: int | st.SearchStrategy[int] = compression.NONE) -> st.SearchStrategy[int]:
    """int16 batch attributes with arbitrary flag bits and the given compression codec."""
    codecs = codec if isinstance(codec, st.SearchStrategy) else st.just(codec)
    return st.builds(
        lambda bits, c: (bits & ~ATTR_COMPRESSION_MASK) | c,
        st.integers(*INT16),
        codecs,
    )


@st.composite
def record_batches(
    draw,
    codec: int | st.SearchStrategy[int] = compression.NONE,
    min_records: int = 0,
    max_records: int = 5,
) -> RecordBatch:
    """Arbitrary in-memory RecordBatches (crc None, size_bytes 0), as encode_batch takes them."""
    records = tuple(draw(st.lists(batch_records(), min_size=min_records, max_size=max_records)))
    return RecordBatch(
        base_offset=draw(_ints(INT64)),
        partition_leader_epoch=draw(_ints(INT32)),
        attributes=draw(batch_attributes(codec)),
        last_offset_delta=draw(_ints(INT32)),
        base_timestamp=draw(_ints(INT64)),
        max_timestamp=draw(_ints(INT64)),
        records=records,
        producer_id=draw(_ints(INT64)),
        producer_epoch=draw(_ints(INT16)),
        base_sequence=draw(_ints(INT32)),
    )


all_codecs = st.sampled_from(sorted(compression.CODEC_NAMES))
