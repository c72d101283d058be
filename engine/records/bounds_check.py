"""A pre-flight check of message bytes before kio's native reader sees them.

kio's native reader sizes an array by its declared element count before reading
the elements; a count of billions (one flipped byte in a varint) makes it ask for
hundreds of gigabytes, and the allocation failure aborts the whole process — no
exception to catch. So before handing bytes to kio we walk the message's shape
once and check that every array count, string and bytes length, and tagged field
fits in the bytes that remain. The walk allocates nothing and decodes nothing.

For speed the walker of each message class is generated once as straight-line
Python (about half a microsecond for a PartitionRecord); classes with no arrays at
all (NoOpRecord, FeatureLevelRecord, TopicRecord, ...) need no walk and return None
from ``checker_for``.
"""

from __future__ import annotations

import dataclasses
import typing
import types
from typing import Any, Callable

from engine.records.kio_codec import BoundsError, entity_reader, read_unsigned_varint

_FIXED_SIZES = {
    "bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "error_code": 2, "int32": 4,
    "uint32": 4, "timedelta_i32": 4, "int64": 8, "uint64": 8, "float64": 8, "datetime_i64": 8,
    "timedelta_i64": 8, "uuid": 16,
}
_VARIABLE = ("string", "bytes", "records")

# STEPS[size][b]: bytes to step over a compact array (or string, size 1) whose count is
# the one-byte varint b: the count byte itself plus (b - 1) elements; 0 for a
# multi-byte count, which takes the careful path.
_STEPS = {size: tuple((1 if b < 2 else (b - 1) * size + 1) if b < 0x80 else 0 for b in range(256))
          for size in (1, 2, 4, 8, 16)}

Checker = Callable[[Any, int, int], int]  # (buffer, start, end) -> end position of the message, or -1

_checkers: dict[type, Checker | None] = {}


def checker_for(cls: type) -> Checker | None:
    """The bounds walker of a kio-style message class, or None when it needs none."""
    if cls not in _checkers:
        _checkers[cls] = _compile(cls) if _has_arrays(cls, set()) else None
    return _checkers[cls]


def fits(cls: type, buf: Any, start: int, end: int) -> bool:
    """Whether every length inside the ``cls`` message at buf[start:end] fits in its bytes."""
    checker = checker_for(cls)
    if checker is None:
        return True
    try:
        return checker(buf, start, end) >= 0
    except Exception:  # noqa: BLE001 - any surprise (an index past the end) means "not safe"
        return False


def _field_kinds(cls: type) -> list[tuple[dataclasses.Field, Any, bool]]:
    hints = typing.get_type_hints(cls)
    return [(f, hints[f.name], "tag" in f.metadata) for f in dataclasses.fields(cls)]


def _unwrap(tp: Any) -> tuple[Any, bool]:
    """(inner type, is array) of a field type such as ``tuple[X, ...] | None``."""
    is_union = typing.get_origin(tp) in (typing.Union, types.UnionType)
    args = [a for a in typing.get_args(tp) if a is not type(None)] if is_union else [tp]
    tp = args[0]
    if typing.get_origin(tp) is tuple:
        return typing.get_args(tp)[0], True
    return tp, False


def _has_arrays(cls: type, seen: set) -> bool:
    if cls in seen:
        return False
    seen.add(cls)
    for f, tp, _ in _field_kinds(cls):
        inner, is_array = _unwrap(tp)
        if is_array or (dataclasses.is_dataclass(inner) and _has_arrays(inner, seen)):
            return True
    return False


class _Source:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.functions: dict[type, str] = {}
        self.counter = 0

    def emit(self, depth: int, line: str) -> None:
        indent = "    " * depth
        last = self.lines[-1] if self.lines else ""
        if line.startswith("pos += ") and line[7:].isdigit() and last.startswith(indent + "pos += ") \
                and last[len(indent) + 7:].isdigit():  # fold runs of fixed-size fields into one step
            self.lines[-1] = f"{indent}pos += {int(last[len(indent) + 7:]) + int(line[7:])}"
            return
        self.lines.append(indent + line)


def _compile(cls: type, reader: Any = None) -> Callable:
    src = _Source()
    name = _function(cls, src, with_reader=reader is not None)
    namespace = {"uvarint": read_unsigned_varint, "i32": _int32, "i16": _int16, "long_array": _long_array,
                 "reader": reader}
    namespace.update({f"STEP{size}": _STEPS[size] for size in set(_FIXED_SIZES.values())})
    exec("\n".join(src.lines), namespace)  # noqa: S102 - generated from our own dataclass shapes
    return namespace[name]


def checked_reader(cls: type, reader: Callable) -> Callable[[Any, int, int], Any]:
    """``read(buf, start, end)``: the ``cls`` message filling exactly buf[start:end], decoded by
    ``reader`` (kio's) after the bounds walk; None when it does not fit. For the replay hot path,
    one call per record."""
    if not _has_arrays(cls, set()):
        def read(buf, start: int, end: int):
            message, size = reader(buf, start)
            return message if start + size == end else None
        return read
    return _compile(cls, reader)


def _long_array(buf, pos: int, end: int, size: int) -> int:
    """Step over a compact array of fixed-size elements with a multi-byte count; -1 if it cannot fit."""
    count, length = read_unsigned_varint(buf, pos)
    pos += length
    if count > 1 and (count - 1) * size > end - pos:
        return -1
    return pos + max(count - 1, 0) * size


def _int32(buf, pos: int) -> int:
    return int.from_bytes(buf[pos:pos + 4], "big", signed=True)


def _int16(buf, pos: int) -> int:
    return int.from_bytes(buf[pos:pos + 2], "big", signed=True)


def _function(cls: type, src: _Source, with_reader: bool = False) -> str:
    if cls in src.functions and not with_reader:
        return src.functions[cls]
    name = f"{'read' if with_reader else 'check'}_{cls.__name__}_{len(src.functions)}"
    if not with_reader:
        src.functions[cls] = name
    body = _Source()
    body.functions = src.functions
    flexible = cls.__flexible__
    body.emit(0, f"def {name}(buf, pos, end):")
    if with_reader:
        body.emit(1, "start = pos")
    tagged = []
    for f, tp, is_tag in _field_kinds(cls):
        if is_tag:
            tagged.append((f.metadata["tag"], f, tp))
        else:
            _field(f, tp, flexible, body, src, 1)
    if flexible:
        _tag_section(tagged, body, src)
    if with_reader:  # the walk agrees with the bytes: now let kio decode them
        body.lines = [line.replace("return -1", "return None") for line in body.lines]
        body.emit(1, "if pos != end: return None")
        body.emit(1, "message, size = reader(buf, start)")
        body.emit(1, "return message if size == end - start else None")
    else:
        body.emit(1, "return pos if pos <= end else -1")
    src.lines.extend(body.lines)
    return name


def _uvarint(body: _Source, depth: int, target: str) -> None:
    body.emit(depth, "b = buf[pos]")
    body.emit(depth, "if b < 0x80:")
    body.emit(depth + 1, f"{target} = b; pos += 1")
    body.emit(depth, "else:")
    body.emit(depth + 1, f"{target}, size = uvarint(buf, pos); pos += size")


def _count(body: _Source, flexible: bool, depth: int) -> None:
    """Leave the element count (or -1 for null) in ``n``."""
    if flexible:
        _uvarint(body, depth, "n")
        body.emit(depth, "n -= 1")
    else:
        body.emit(depth, "n = i32(buf, pos); pos += 4")


def _field(f: dataclasses.Field, tp: Any, flexible: bool, body: _Source, src: _Source, depth: int) -> None:
    inner, is_array = _unwrap(tp)
    kafka_type = f.metadata.get("kafka_type")
    if not is_array:
        _value(inner, kafka_type, flexible, body, src, depth, nullable_struct=_is_optional(tp))
        return
    size = _FIXED_SIZES.get(kafka_type) if not dataclasses.is_dataclass(inner) else None
    if size is not None and flexible:
        # A one-byte count (< 127 elements) cannot ask for much memory: step over it inline.
        body.emit(depth, f"step = STEP{size}[buf[pos]]")
        body.emit(depth, "if step:")
        body.emit(depth + 1, "pos += step")
        body.emit(depth, "else:")
        body.emit(depth + 1, f"pos = long_array(buf, pos, end, {size})")
        body.emit(depth + 1, "if pos < 0: return -1")
        return
    _count(body, flexible, depth)
    body.emit(depth, "if n > end - pos: return -1")  # every element takes at least one byte
    if size is not None:
        body.emit(depth, f"if n > 0: pos += n * {size}")
        return
    body.emit(depth, "for _ in range(max(n, 0)):")
    _value(inner, kafka_type, flexible, body, src, depth + 1, nullable_struct=False)


def _is_optional(tp: Any) -> bool:
    return type(None) in typing.get_args(tp)


def _value(inner: Any, kafka_type: str | None, flexible: bool, body: _Source, src: _Source, depth: int,
           nullable_struct: bool) -> None:
    if dataclasses.is_dataclass(inner):
        if nullable_struct:
            body.emit(depth, "if buf[pos] == 0xFF:")
            body.emit(depth + 1, "pos += 1")
            body.emit(depth, "else:")
            body.emit(depth + 1, "pos += 1")
            depth += 1
        body.emit(depth, f"pos = {_function(inner, src)}(buf, pos, end)")
        body.emit(depth, "if pos < 0: return -1")
        return
    if kafka_type in _FIXED_SIZES:
        body.emit(depth, f"pos += {_FIXED_SIZES[kafka_type]}")
        return
    if kafka_type not in _VARIABLE:
        raise TypeError(f"no bounds rule for kafka_type {kafka_type!r}")
    if flexible:  # a one-byte length b covers itself and b - 1 bytes (0 is null)
        body.emit(depth, "step = STEP1[buf[pos]]")
        body.emit(depth, "if step:")
        body.emit(depth + 1, "pos += step")
        body.emit(depth, "else:")
        body.emit(depth + 1, "n, size = uvarint(buf, pos); pos += size + n - 1")
    elif kafka_type == "string":
        body.emit(depth, "n = i16(buf, pos); pos += 2")
        body.emit(depth, "if n > 0: pos += n")
    else:
        body.emit(depth, "n = i32(buf, pos); pos += 4")
        body.emit(depth, "if n > 0: pos += n")
    body.emit(depth, "if pos > end: return -1")


def _tag_section(tagged: list, body: _Source, src: _Source) -> None:
    """Tagged fields: each must fit. Only tags holding arrays are looked into; the rest
    are stepped over by their length (kio slices strings and bytes, it does not size them)."""
    _uvarint(body, 1, "count")
    body.emit(1, "if count > end - pos: return -1")
    body.emit(1, "for _ in range(count):")
    body.emit(2, "tag = buf[pos]; length = buf[pos + 1]")
    body.emit(2, "if tag < 0x80 and length < 0x80:")
    body.emit(3, "pos += 2")
    body.emit(2, "else:")
    body.emit(3, "tag, size = uvarint(buf, pos); pos += size")
    body.emit(3, "length, size = uvarint(buf, pos); pos += size")
    body.emit(2, "stop = pos + length")
    body.emit(2, "if stop > end: return -1")
    simple, complex_ = [], []
    for tag, f, tp in tagged:
        inner, is_array = _unwrap(tp)
        size = _FIXED_SIZES.get(f.metadata.get("kafka_type")) if not dataclasses.is_dataclass(inner) else None
        if is_array and size is not None:
            simple.append((tag, size))
        elif is_array or (dataclasses.is_dataclass(inner) and _has_arrays(inner, set())):
            complex_.append((tag, f, tp))
    for index, (tag, f, tp) in enumerate(complex_):  # arrays of structs or strings: walk them
        body.emit(2, f"{'if' if index == 0 else 'elif'} tag == {tag}:")
        body.emit(3, "outer_end, end = end, stop")
        _field(f, tp, True, body, src, 3)
        body.emit(3, "end = outer_end")
        body.emit(3, "if pos > stop: return -1")
    if simple:  # fixed-size arrays: only a multi-byte count needs a closer look
        body.emit(2, "if length and buf[pos] >= 0x80:")
        for index, (tag, size) in enumerate(simple):
            body.emit(3, f"{'if' if index == 0 else 'elif'} tag == {tag}:")
            body.emit(4, f"if long_array(buf, pos, stop, {size}) < 0: return -1")
    body.emit(2, "pos = stop")


_readers: dict[type, Any] = {}


def decode_entity(entity_type: type, buffer: bytes | memoryview, offset: int = 0,
                  end: int | None = None) -> tuple[Any, int]:
    """Decode one kio-style entity at ``offset``; returns (entity, bytes consumed).

    Its lengths are checked against the bytes up to ``end`` first (``fits`` below):
    kio's native reader aborts the process on an absurd array count.
    """
    if not fits(entity_type, buffer, offset, len(buffer) if end is None else end):
        raise BoundsError(f"a length inside {entity_type.__name__} runs past its bytes")
    reader = _readers.get(entity_type)
    if reader is None:
        reader = _readers[entity_type] = entity_reader(entity_type)
    return reader(buffer, offset)
