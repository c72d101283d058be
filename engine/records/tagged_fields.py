"""Tagged fields a message's schema does not define: kept, shown, and written back.

Kafka extends a record version by adding tagged fields to it, so a newer Kafka may write a
record whose api key and version we know, carrying a tag we do not. Kafka's own generated
readers keep such fields (as raw tag and bytes) and write them back; kio's reader refuses
the whole message instead. So when kio refuses a message for an unknown tag, we walk the
message's shape once (the slow path; every known message takes kio's fast one), lift the
unknown tags out of every tag section — the message's own and its nested structs' — let
kio decode the rest, and keep the lifted fields beside the decoded message. Writing merges
them back into their sections in tag order, as Kafka's writers place them, so a record
read and written again is byte for byte the one that was read.

Where a field sits is its ``path``: () for the message itself, ("end_points", 2) for the
third element of its ``end_points`` array, ("voters", 0, "endpoints", 1) deeper down.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Callable, NamedTuple

from engine.records.kio_codec import (BoundsError, encode_entity, encode_unsigned_varint, is_unknown_tag_error,
                                     read_unsigned_varint)
from engine.records.bounds_check import _FIXED_SIZES, decode_entity  # wire sizes of fixed-size kafka types


class UnknownTaggedField(NamedTuple):
    """One tagged field a message carried that its schema does not define."""

    path: tuple  # where it sat: () for the message itself, else field names and array indexes
    tag: int
    data: bytes  # the field's value bytes, exactly as they were written


class _Field(NamedTuple):
    name: str
    tag: int | None
    kafka_type: str | None
    struct: type | None  # the nested struct class, for struct and struct-array fields
    is_array: bool
    nullable: bool


Edit = Callable[[tuple, type, list], list]  # (path, struct class, [(tag, data)]) -> [(tag, data)]

_shapes: dict[type, tuple[list[_Field], dict[int, _Field]]] = {}


def _shape(cls: type) -> tuple[list[_Field], dict[int, _Field]]:
    """(untagged fields in wire order, tagged fields by tag) of a kio-style message class."""
    shape = _shapes.get(cls)
    if shape is None:
        hints = typing.get_type_hints(cls)
        untagged, tagged = [], {}
        for f in dataclasses.fields(cls):
            tp = hints[f.name]
            is_union = typing.get_origin(tp) in (typing.Union, types.UnionType)
            args = [a for a in typing.get_args(tp) if a is not type(None)] if is_union else [tp]
            inner, is_array = args[0], False
            if typing.get_origin(inner) is tuple:
                inner, is_array = typing.get_args(inner)[0], True
            item = _Field(f.name, f.metadata.get("tag"), f.metadata.get("kafka_type"),
                          inner if dataclasses.is_dataclass(inner) else None, is_array, is_union)
            if item.tag is None:
                untagged.append(item)
            else:
                tagged[item.tag] = item
        shape = _shapes[cls] = (untagged, tagged)
    return shape


def _uvarint(buf: Any, pos: int, end: int) -> tuple[int, int]:
    if pos >= end:
        raise BoundsError("a varint runs past the message")
    value, size = read_unsigned_varint(buf, pos)
    return value, pos + size


def _step(pos: int, size: int, end: int) -> int:
    if size < 0 or pos + size > end:
        raise BoundsError("a length inside the message runs past its bytes")
    return pos + size


class _Walker:
    """Copies a message's bytes, passing each tag section through ``edit``."""

    def __init__(self, buf: Any, end: int, edit: Edit) -> None:
        self.buf, self.end, self.edit = buf, end, edit
        self.out = bytearray()

    def copy_to(self, start: int, stop: int) -> int:
        self.out += self.buf[start:stop]
        return stop

    def struct(self, cls: type, pos: int, path: tuple) -> int:
        if not cls.__flexible__:
            raise TypeError(f"{cls.__name__} is not a flexible message: it has no tagged fields")
        untagged, tagged = _shape(cls)
        for f in untagged:
            pos = self.value(f, pos, path + (f.name,))
        count, pos = _uvarint(self.buf, pos, self.end)
        entries = []
        for _ in range(count):
            tag, pos = _uvarint(self.buf, pos, self.end)
            size, pos = _uvarint(self.buf, pos, self.end)
            stop = _step(pos, size, self.end)
            known = tagged.get(tag)
            if known is not None and known.struct is not None:  # structs inside: their sections too
                inner = _Walker(self.buf, stop, self.edit)
                if inner.value(known, pos, path + (known.name,)) != stop:
                    raise BoundsError(f"tagged field {tag} of {cls.__name__} has trailing bytes")
                entries.append((tag, bytes(inner.out)))
            else:
                entries.append((tag, bytes(self.buf[pos:stop])))
            pos = stop
        entries = self.edit(path, cls, entries)
        self.out += encode_unsigned_varint(len(entries))
        for tag, data in entries:
            self.out += encode_unsigned_varint(tag) + encode_unsigned_varint(len(data)) + data
        return pos

    def value(self, f: _Field, pos: int, path: tuple) -> int:
        """Copy one field's value (all of an array) starting at ``pos``; returns where it ends."""
        if f.is_array:
            start = pos
            count, pos = _uvarint(self.buf, pos, self.end)
            pos = self.copy_to(start, pos)
            count -= 1  # compact arrays count one more than they hold; 0 is null
            if count > self.end - pos:  # every element takes at least one byte
                raise BoundsError("an array count runs past the message")
            size = _FIXED_SIZES.get(f.kafka_type or "") if f.struct is None else None
            if size is not None:  # replicas, directories: all in one step
                return self.copy_to(pos, _step(pos, max(count, 0) * size, self.end))
            for index in range(max(count, 0)):
                pos = self.element(f, pos, path + (index,))
            return pos
        if f.struct is not None and f.nullable and f.tag is None:  # KIP-893: a marker byte first (kio
            # writes none for a tagged struct: the tag's presence says whether it is there)
            marker = self.buf[pos] if pos < self.end else None
            if marker is None:
                raise BoundsError("a struct runs past the message")
            pos = self.copy_to(pos, pos + 1)
            if marker == 0xFF:
                return pos
        return self.element(f, pos, path)

    def element(self, f: _Field, pos: int, path: tuple) -> int:
        if f.struct is not None:
            return self.struct(f.struct, pos, path)
        size = _FIXED_SIZES.get(f.kafka_type or "")
        if size is not None:
            return self.copy_to(pos, _step(pos, size, self.end))
        if f.kafka_type not in ("string", "bytes"):
            raise TypeError(f"no wire rule for field {f.name} of kafka_type {f.kafka_type!r}")
        start = pos
        length, pos = _uvarint(self.buf, pos, self.end)  # compact: length + 1, 0 for null
        return self.copy_to(start, _step(pos, max(length - 1, 0), self.end))


def decode_message(cls: type, buf: Any, start: int = 0) -> tuple[Any, int, tuple[UnknownTaggedField, ...]]:
    """(message, bytes it took, unknown tagged fields) by kio's reader, or by the slow path
    below when kio refuses the message only for a tag it does not know."""
    try:
        message, size = decode_entity(cls, buf, start)
    except KeyError as exc:
        if not is_unknown_tag_error(exc):
            raise
        return decode_keeping_unknown(cls, buf, start)
    return message, size, ()


def decode_keeping_unknown(cls: type, buf: Any, start: int = 0,
                           end: int | None = None) -> tuple[Any, int, tuple[UnknownTaggedField, ...]]:
    """(message, bytes it took, its unknown tagged fields) for the ``cls`` message at ``start``.

    For messages kio refuses because of a tag it does not know; raises what kio or the walk
    raises on bytes that are bad for other reasons.
    """
    end = len(buf) if end is None else end
    found: list[UnknownTaggedField] = []

    def lift(path: tuple, struct: type, entries: list) -> list:
        known = _shape(struct)[1]
        found.extend(UnknownTaggedField(path, tag, data) for tag, data in entries if tag not in known)
        return [(tag, data) for tag, data in entries if tag in known]

    walker = _Walker(buf, end, lift)
    stop = walker.struct(cls, start, ())
    stripped = bytes(walker.out)
    message, used = decode_entity(cls, stripped)
    if used != len(stripped):
        raise BoundsError(f"{cls.__name__} decoded short of its known fields")
    return message, stop - start, tuple(found)


def encode_with_unknown(message: Any, unknown: tuple[UnknownTaggedField, ...]) -> bytes:
    """The message's bytes with its unknown tagged fields back in their sections, by tag."""
    encoded = encode_entity(message)
    if not unknown:
        return encoded
    by_path: dict[tuple, list[tuple[int, bytes]]] = {}
    for field in unknown:
        by_path.setdefault(tuple(field.path), []).append((field.tag, field.data))

    def merge(path: tuple, struct: type, entries: list) -> list:
        extra = by_path.get(path)
        return sorted(entries + extra, key=lambda entry: entry[0]) if extra else entries

    walker = _Walker(encoded, len(encoded), merge)
    walker.struct(type(message), 0, ())
    return bytes(walker.out)

