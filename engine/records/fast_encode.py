"""Compiled encoders for metadata records: kio's wire bytes, without kio's per-value cost.

kio's entity writer walks a record field by field through generic writer functions, one
BytesIO write per primitive, and builds a checked phantom value (``uvarint(n)``) for every
length and tag count. Encoding a large snapshot spends most of its time there. Here each
record class gets, once, a straight-line Python function generated from the same field facts
kio's writer reads (engine.records.kio_codec re-exports kio's introspection): consecutive
fixed-width fields packed by one ``struct.Struct``, int arrays packed by one struct per length,
varints of small lengths looked up, the parts joined once.

The bytes are kio's, exactly: the same field order, the same tagged-field section (tags sorted,
a tagged field written only when it differs from its default, compared the way kio compares),
the same null forms (a null array or nullable string as length 0, a null uuid as 16 zero bytes,
a nullable struct behind an int8 marker). A value that does not fit its field fails as kio's
writer fails: ``struct.error`` for an out-of-range or non-integer number (kio packs with the same
formats), TypeError for None in a non-nullable string. A class with a field shape not handled
here (non-flexible, a tagged field without an explicit default, an exotic kafka_type) is encoded
by kio itself: correct, only slower.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Any, Callable

from engine.records.kio_codec import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    encode_entity,
    encode_unsigned_varint,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

Encoder = Callable[[Any], bytes]

# kafka_type -> struct format of a fixed-width primitive ("16s" for uuid: its 16 bytes)
_FIXED = {
    "int8": "b", "int16": "h", "int32": "i", "int64": "q",
    "uint8": "B", "uint16": "H", "uint32": "I", "uint64": "Q",
    "float64": "d", "bool": "?", "uuid": "16s",
}
_STRINGS = ("string", "bytes")  # kio writes both as compact strings (str encoded as UTF-8)
_ZERO_UUID = bytes(16)
_SMALL = tuple(bytes((i,)) for i in range(128))  # one-byte unsigned varints
_PACKED_LENGTHS = 64  # arrays up to this length pack with a prebuilt Struct


class Unsupported(Exception):
    """A field shape this compiler does not handle: the class falls back to kio."""


def uvarint(value: int) -> bytes:
    """Kafka's unsigned varint of a non-negative int (a length, a count, a tag)."""
    # lengths past 127 are rare in metadata: kio's own varint writer does them
    return _SMALL[value] if value < 128 else encode_unsigned_varint(value)


def compact_string(value: str | bytes) -> bytes:
    """A non-nullable compact string (or bytes), as kio writes it: None is refused."""
    if value is None:
        raise TypeError("Unexpectedly received None value")
    return nullable_compact_string(value)


def nullable_compact_string(value: str | bytes | None) -> bytes:
    if value is None:
        return b"\x00"
    if isinstance(value, str):
        value = value.encode()
    size = len(value) + 1
    return (_SMALL[size] if size < 128 else uvarint(size)) + value


def _uuid_bytes(value: Any) -> bytes:
    return _ZERO_UUID if value is None else value.bytes


def _packed_array(code: str) -> Callable[[Any], bytes]:
    """Encoder of a compact array of one fixed-width number type, packed by one struct call."""
    structs = tuple(struct.Struct(f">{n}{code}") for n in range(_PACKED_LENGTHS))

    def encode(items: Any) -> bytes:
        if items is None:
            return b"\x00"
        size = len(items)
        if size < _PACKED_LENGTHS:  # size + 1 < 128: a one-byte length
            return _SMALL[size + 1] + structs[size].pack(*items)
        return uvarint(size + 1) + struct.pack(f">{size}{code}", *items)

    return encode


def _mapped_array(item: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """Encoder of a compact array whose items each encode by ``item`` (uuids, strings, structs)."""

    def encode(items: Any) -> bytes:
        if items is None:
            return b"\x00"
        size = len(items) + 1
        return (_SMALL[size] if size < 128 else uvarint(size)) + b"".join(map(item, items))

    return encode


def _nullable_struct(inner: Encoder) -> Encoder:
    # KIP-893's nullable struct: int8 -1 for null, int8 1 then the struct
    def encode(value: Any) -> bytes:
        return b"\xff" if value is None else b"\x01" + inner(value)

    return encode


class _Compiler:
    """Source and namespace of one class's encoder function."""

    def __init__(self) -> None:
        self.env: dict[str, Any] = {"_uvarint": uvarint, "_SMALL": _SMALL, "_ZERO_UUID": _ZERO_UUID}
        self._count = 0

    def temp(self) -> str:
        """A fresh local variable name."""
        self._count += 1
        return f"v{self._count}"

    def name(self, value: Any, stem: str) -> str:
        """A name in the function's namespace bound to ``value``."""
        self._count += 1
        key = f"_{stem}{self._count}"
        self.env[key] = value
        return key

    def writer(self, field: dataclasses.Field, tagged: bool) -> Callable[[Any], bytes]:
        """A one-value encoder of a field (used where the value's bytes are needed on their own)."""
        shape = classify_field(field)
        if isinstance(shape, (EntityField, EntityTupleField)):
            inner = _encoder_of(shape.type_, b"")
            if isinstance(shape, EntityTupleField):
                return _mapped_array(inner)
            # kio reads tagged fields as never nullable: their absence is their null
            return _nullable_struct(inner) if is_optional(field) and not tagged else inner
        kafka_type = get_schema_field_type(field)
        if isinstance(shape, PrimitiveTupleField):
            if kafka_type == "uuid":
                return _mapped_array(_uuid_bytes)
            if kafka_type in _STRINGS:
                return _mapped_array(compact_string)
            if kafka_type in _FIXED:
                return _packed_array(_FIXED[kafka_type])
            raise Unsupported(f"array of {kafka_type}")
        if kafka_type == "uuid":
            return _uuid_bytes
        if kafka_type in _STRINGS:
            return nullable_compact_string if is_optional(field) and not tagged else compact_string
        if kafka_type in _FIXED:
            if is_optional(field) and not tagged:
                raise Unsupported(f"nullable {kafka_type}")  # kio has no writer for it either
            return struct.Struct(">" + _FIXED[kafka_type]).pack
        raise Unsupported(kafka_type)


def _array_code(field: dataclasses.Field) -> str | None:
    """The struct code of a non-tagged array field the fast path packs ("16s": uuids), or None."""
    if not isinstance(classify_field(field), PrimitiveTupleField):
        return None
    return _FIXED.get(get_schema_field_type(field))


def _fixed_code(field: dataclasses.Field) -> str | None:
    """The struct code of a non-tagged single-value field that can join a packed run, or None."""
    if not isinstance(classify_field(field), PrimitiveField):
        return None
    kafka_type = get_schema_field_type(field)
    if kafka_type not in _FIXED or (is_optional(field) and kafka_type != "uuid"):
        return None
    return _FIXED[kafka_type]


def _string_nullable(field: dataclasses.Field) -> bool | None:
    """Whether a non-tagged string field is nullable; None for a field that is no string."""
    if not isinstance(classify_field(field), PrimitiveField) or get_schema_field_type(field) not in _STRINGS:
        return None
    return is_optional(field)


class _Segment:
    """A run of fields packed by one Struct: fixed-width values and, on the fast path, arrays of
    them, each array behind its one-byte length. Arrays make the format depend on their lengths,
    so the Structs are cached by the tuple of lengths (a few shapes in practice)."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []  # ("fixed", code) | ("array", code)
        self.args: list[str] = []
        self.lengths: list[str] = []  # local names of the arrays' length + 1 (0: null)

    def maker(self, lead: str, trail: str, cache: dict) -> Callable[[Any], Any]:
        items = tuple(self.items)

        def make(key: Any) -> Any:
            lengths = key if isinstance(key, tuple) else (key,)
            if max(lengths) >= 128:
                return None  # a length needs a multi-byte varint: the general encoder writes it
            fmt = [">", lead]
            remaining = iter(lengths)
            for kind, code in items:
                if kind == "fixed":
                    fmt.append(code)
                    continue
                count = max(next(remaining) - 1, 0)
                fmt.append("B" + (f"{16 * count}s" if code == "16s" else f"{count}{code}"))
            fmt.append(trail)
            pack = struct.Struct("".join(fmt)).pack
            if len(cache) < _MAX_SHAPES:
                cache[key] = pack
            return pack

        return make


_MAX_SHAPES = 4096  # cached Structs per segment; past it a shape's Struct is built per call


def _compile(cls: type, prefix: bytes, general: Encoder | None = None) -> Encoder:
    """The generated encoder of ``cls``. With ``general`` (an encoder of any lengths), arrays of
    numbers and uuids are packed into their segment's Struct, and a record with an array too
    long for a one-byte length goes to ``general``; without it, each array is written by its own
    helper."""
    if not getattr(cls, "__flexible__", False) or not dataclasses.is_dataclass(cls):
        raise Unsupported("not a flexible entity")
    c = _Compiler()
    packed = general is not None
    c.env["_general"] = general
    lines: list[str] = []
    parts: list[str] = []
    tagged: list[tuple[int, dataclasses.Field]] = []
    segment = _Segment()
    pending = [prefix] if prefix else []  # the prefix leads the first segment, or stands alone

    padded = False  # whether the last segment wrote the empty tagged-field section

    def flush(last: bool) -> None:
        nonlocal segment, padded
        if not segment.items:
            return
        lead = ""
        if pending and not parts:
            lead = f"{len(prefix)}s"
            segment.args.insert(0, c.name(pending.pop(), "prefix"))
        trail = "x" if last and not tagged else ""  # "x": the empty tagged-field section's 0 byte
        padded = padded or bool(trail)
        args = ", ".join(segment.args)
        if not segment.lengths:
            fmt = ">" + lead + "".join(code for _, code in segment.items) + trail
            parts.append(f"{c.name(struct.Struct(fmt).pack, 'pack')}({args})")
        else:
            cache: dict = {}
            key = segment.lengths[0] if len(segment.lengths) == 1 else f"({', '.join(segment.lengths)},)"
            shapes, make, local = c.name(cache, "shapes"), c.name(segment.maker(lead, trail, cache), "make"), c.temp()
            lines.extend([
                f"    {local} = {shapes}.get({key})",
                f"    if {local} is None:",
                f"        {local} = {make}({key})",
                f"        if {local} is None:",
                "            return _general(e)",
            ])
            parts.append(f"{local}({args})")
        segment = _Segment()

    fields = dataclasses.fields(cls)
    for field in fields:
        tag = get_field_tag(field)
        if tag is not None:
            tagged.append((int(tag), field))
    if len(tagged) >= 128:
        raise Unsupported("a tagged-field count past one varint byte")
    for field in fields:
        if get_field_tag(field) is not None:
            continue
        value = f"e.{field.name}"
        code = _fixed_code(field)
        if code is not None:
            segment.items.append(("fixed", code))
            # a uuid joins the run as its 16 bytes (None: all zeros, as kio writes it)
            segment.args.append(f"(_ZERO_UUID if (u := {value}) is None else u.int.to_bytes(16, 'big'))"
                                if code == "16s" else value)
            continue
        code = _array_code(field) if packed else None
        if code is not None:
            items, size = c.temp(), c.temp()
            lines += [f"    {items} = {value}", f"    {size} = 0 if {items} is None else len({items}) + 1"]
            if code == "16s":  # the uuids as one big int, written once
                lines += ["    acc = 0",
                          f"    for u in {items} or ():",
                          "        acc = acc << 128 | (0 if u is None else u.int)",
                          f"    {items} = acc.to_bytes(16 * len({items} or ()), 'big')"]
                segment.args += [size, items]
            else:
                segment.args += [size, f"*({items} or ())"]
            segment.items.append(("array", code))
            segment.lengths.append(size)
            continue
        nullable = _string_nullable(field)
        flush(last=False)
        if nullable is not None:
            text = c.temp()
            lines.append(f"    {text} = {value}")
            if nullable:
                lines += [f"    if {text} is None:", f"        {text} = b'\\x00'", "    else:"]
            else:
                lines += [f"    if {text} is None:", "        raise TypeError('Unexpectedly received None value')"]
            pad = "        " if nullable else "    "
            lines += [f"{pad}if isinstance({text}, str):",
                      f"{pad}    {text} = {text}.encode()",
                      f"{pad}{text} = (_SMALL[len({text}) + 1] if len({text}) < 127"
                      f" else _uvarint(len({text}) + 1)) + {text}"]
            parts.append(text)
            continue
        parts.append(f"{c.name(c.writer(field, tagged=False), 'w')}({value})")
    flush(last=True)
    if pending:
        parts.insert(0, c.name(pending.pop(), "prefix"))
    lines += _tagged_section(c, tagged)
    if tagged:
        parts += ["_SMALL[len(t)]", "*t"]
    elif not padded:
        parts.append("b'\\x00'")
    source = "def encode(e):\n" + "\n".join(lines) + f"\n    return b''.join(({', '.join(parts)},))\n"
    exec(compile(source, f"<fast_encode {cls.__name__}>", "exec"), c.env)
    encode: Encoder = c.env["encode"]
    encode.__doc__ = source  # the generated code, for whoever debugs it
    return encode


def _tagged_section(c: _Compiler, tagged: list[tuple[int, dataclasses.Field]]) -> list[str]:
    """Lines collecting the written tagged fields in ``t``, in tag order, as kio writes them."""
    if not tagged:
        return []
    lines = ["    t = []"]
    for tag, field in sorted(tagged, key=lambda pair: pair[0]):
        if field.default is dataclasses.MISSING:
            raise Unsupported(f"tagged field {field.name} with an implicit default")
        default = c.name(field.default, "default")
        # kio skips a tagged field whose value == its default (== as kio compares)
        lines += [f"    v = e.{field.name}", f"    if not (v == {default}):"]
        code = _fixed_code(field)
        if code is not None:  # a fixed size: tag and length are one constant
            size = 16 if code == "16s" else struct.calcsize(">" + code)
            key = c.name(uvarint(tag) + uvarint(size), "tag")
            value = ("(_ZERO_UUID if v is None else v.int.to_bytes(16, 'big'))" if code == "16s"
                     else f"{c.name(struct.Struct('>' + code).pack, 'pack')}(v)")
            lines.append(f"        t.append({key} + {value})")
            continue
        key = c.name(uvarint(tag), "tag")
        writer = c.name(c.writer(field, tagged=True), "w")
        lines += [f"        x = {writer}(v)", f"        t.append({key} + _uvarint(len(x)) + x)"]
    return lines


_COMPILED: dict[tuple[type, bytes], Encoder] = {}  # compiled encoders only
_ENCODERS: dict[tuple[type, bytes], Encoder] = {}  # compiled, or kio's behind the prefix


def _encoder_of(cls: type, prefix: bytes) -> Encoder:
    encoder = _COMPILED.get((cls, prefix))
    if encoder is None:
        encoder = _COMPILED[(cls, prefix)] = _compile(cls, prefix, _compile(cls, prefix))
    return encoder


def compiled_encoder(cls: type, prefix: bytes = b"") -> Encoder:
    """The encoder of ``cls``'s flexible wire form, ``prefix`` written first; compiled once per
    (class, prefix). A class this module cannot compile gets kio's encode_entity behind the prefix."""
    encoder = _ENCODERS.get((cls, prefix))
    if encoder is None:
        try:
            encoder = _encoder_of(cls, prefix)
        except Unsupported:
            encoder = _kio_encoder(prefix)
        _ENCODERS[(cls, prefix)] = encoder
    return encoder


def is_compiled(cls: type) -> bool:
    """Whether ``cls`` has its own compiled encoder (False: it goes through kio)."""
    try:
        _encoder_of(cls, b"")
    except Unsupported:
        return False
    return True


def _kio_encoder(prefix: bytes) -> Encoder:
    def encode(message: Any) -> bytes:
        return prefix + encode_entity(message)

    return encode


def encode(message: Any) -> bytes:
    """``message`` in Kafka's flexible encoding (the bytes kio's encode_entity writes)."""
    return compiled_encoder(type(message))(message)
