"""Record JSON written straight to text, by a function compiled once per record class.

The same characters as engine.records.record_json (Kafka's JsonConverters' form, as
``kafka-dump-log --cluster-metadata-decoder`` prints it), without building a dict per record
and walking it again: for ``PartitionRecord`` v2 the compiled function is one f-string
expression over the record's attributes. ``kraftd dump-log`` prints hundreds of thousands of
these, and the generic path spent most of its time in per-value ``json.dumps`` calls and dicts.

Exactness: every value kind is written by the helper the generic path ends in (strings by
``jackson_string``, json's own C escaper with Jackson's upper-case hex digits; doubles by
``java_double_string``; UUIDs by ``uuid_to_kafka``), and anything the compiler does not know
is handed to the generic path. A record carrying tagged fields its schema does not define
(``_unknown_tagged_fields``) takes the generic path whole, as do UnknownRecords.
tests/engine/records/test_record_text.py checks equality with record_json on random records
of every class.

orjson writes the arrays of integers (replicas, ISR and the like): its text for a tuple of ints,
or for None, is Jackson's, and it is four times faster than joining ``str`` of each. It is not
used for the whole object: it writes a double in the shortest form with a lower-case exponent
(``1e+16``) where Java writes ``1.0E16``, it escapes control characters with lower-case hex
(``\\u001f``) where Jackson writes ``\\u001F``, and it needs a dict per record, the very cost
being removed. msgspec behaves the same on all three counts (its double: ``1e16``).
"""

from __future__ import annotations

import base64
import dataclasses
import typing
import uuid
from typing import Any, Callable

import orjson

from engine.common.kafka_uuid import uuid_to_kafka
from engine.records.metadata_record_serde import AnyRecord, ControlRecord, MetadataRecord
from engine.records.record_json import (
    CONTROL_LABELS,
    camel_case,
    control_payload,
    dumps,
    jackson_string,
    java_double_string,
    record_to_json,
    _value,
)

# A quoted string as Jackson writes it: json's C escaper, with Jackson's upper-case hex digits.
_escape: Callable[[str], str] = jackson_string
_INTS = frozenset({"int8", "int16", "int32", "int64", "uint16", "uint32"})
_ZERO = '"' + uuid_to_kafka(None) + '"'

# Kafka's ids repeat (a topic's id in each of its partitions, directories in every replica):
# their text is remembered, up to a bound, so a long log does not grow this without end.
_uuid_texts: dict[uuid.UUID, str] = {}
_UUID_CACHE_LIMIT = 1 << 16


def _uuid(value: uuid.UUID | None) -> str:
    if value is None:
        return _ZERO
    text = _uuid_texts.get(value)
    if text is None:
        if len(_uuid_texts) >= _UUID_CACHE_LIMIT:
            _uuid_texts.clear()
        text = _uuid_texts[value] = '"' + uuid_to_kafka(value) + '"'
    return text


def _bytes(value: bytes) -> str:
    return '"' + base64.b64encode(value).decode("ascii") + '"'


def _double(value: float) -> str:
    return java_double_string(value)


def _generic(value: Any) -> str:
    return dumps(_value(value))


_compiled: dict[type, Callable[[Any], str]] = {}


def message_text(message: Any) -> str:
    """``dumps(message_to_jsonable(message))`` for a message without unknown tagged fields."""
    cls = type(message)
    fmt = _compiled.get(cls)
    if fmt is None:
        fmt = _compile(cls)
    return fmt(message)


def _compile(cls: type) -> Callable[[Any], str]:
    """One f-string over the message's fields (Python joins its parts once); a tagged field is a
    conditional part, empty at its default."""
    namespace: dict[str, Any] = {"U": _uuid, "E": _escape, "B": _bytes, "D": _double, "G": _generic,
                                 "ZERO": _ZERO, "OJ": orjson.dumps}
    hints = typing.get_type_hints(cls)
    parts: list[str] = []  # f-string source, each field's part starting with its comma
    for index, f in enumerate(dataclasses.fields(cls)):
        attr = f"m.{f.name}"
        expr = _expression(attr, hints[f.name], f.metadata.get("kafka_type"), namespace)
        key = f',"{camel_case(f.name)}":'
        if "tag" in f.metadata:
            namespace[f"DEFAULT{index}"], namespace[f"KEY{index}"] = f.default, key
            parts.append(f'{{("" if {attr} == DEFAULT{index} else KEY{index} + {expr})}}')
        else:
            parts.append(f"{key}{{{expr}}}")
    if parts and parts[0].startswith(","):
        source = f"def fmt(m):\n    return f'''{{{{{parts[0][1:]}{''.join(parts[1:])}}}}}'''\n"
    else:  # a tagged field first, or none at all: its comma comes off at run time
        source = f"def fmt(m):\n    return '{{' + f'''{''.join(parts)}'''[1:] + '}}'\n"
    exec(source, namespace)  # noqa: S102 - generated from our own dataclass shapes
    fmt = namespace["fmt"]
    _compiled[cls] = fmt
    return fmt


def _json_quoted(name: str) -> str:
    """A Python literal of the JSON text of ``name`` (field names are plain identifiers)."""
    return repr(_escape(name))[1:-1].replace('"', '\\"')


def _expression(attr: str, hint: Any, kafka_type: str | None, namespace: dict[str, Any]) -> str:
    """A Python expression of the JSON text of the value at ``attr``, as record_json writes it."""
    inner, nullable = _optional(hint)
    if typing.get_origin(inner) is tuple:
        (element,) = typing.get_args(inner)[:1]
        if kafka_type == "uuid":  # kio reads an all-zero element as None; U prints it as Kafka does
            items = f"map(U, {attr})"
        else:
            items = f"map(lambda v: {_expression('v', element, kafka_type, namespace)}, {attr})"
            element_inner, element_nullable = _optional(element)
            if kafka_type in _INTS and not element_nullable:
                # orjson writes an array of ints (or None as null) exactly as Jackson does, 4x faster
                return f"OJ({attr}).decode()"
            elif kafka_type == "string" and not element_nullable:
                items = f"map(E, {attr})"
        text = f'"[" + ",".join({items}) + "]"'
        # record_json shows a None array as null (a nullable array, or kio's None for zero uuids)
        return f'("null" if {attr} is None else {text})'
    if dataclasses.is_dataclass(inner):
        name = f"S_{inner.__name__}"
        namespace[name] = lambda value, cls=inner: (_compiled.get(cls) or _compile(cls))(value)
        text = f"{name}({attr})"
    elif kafka_type == "uuid":
        return f"U({attr})"  # None is Kafka's zero uuid here, never null
    elif kafka_type in _INTS and inner is not bool:
        text = f"str({attr})"
    elif kafka_type == "bool":
        text = f'("true" if {attr} else "false")'
    elif kafka_type == "string":
        text = f"E({attr})"
    elif kafka_type == "bytes":
        text = f"B({attr})"
    elif kafka_type == "float64":
        text = f"D({attr})"
    else:
        return f"G({attr})"
    return f'("null" if {attr} is None else {text})' if nullable or kafka_type not in _INTS else text


def _optional(hint: Any) -> tuple[Any, bool]:
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, getattr(__import__("types"), "UnionType")) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else hint), True
    return hint, False


def payload_text(record: AnyRecord) -> str:
    """``record_to_json(record)``, compiled where the record allows it."""
    fn = PAYLOADS.get(type(record))
    if fn is None:
        if not isinstance(record, MetadataRecord):
            return record_to_json(record)
        fn = payload_function(type(record))
    return fn(record)


# The payload function of each metadata record class met so far (payload_function).
PAYLOADS: dict[type, Callable[[Any], str]] = {}


def payload_function(cls: type) -> Callable[[Any], str]:
    """``record_to_json`` for records of the metadata record class ``cls``: its type and version
    written once, here; a record with unknown tagged fields goes the generic way."""
    head = f'{{"type":"{cls.type_name}","version":{cls.__version__},"data":'
    fmt = _compiled.get(cls) or _compile(cls)

    def payload(record: Any) -> str:
        if getattr(record, "_unknown_tagged_fields", None):
            return record_to_json(record)
        return head + fmt(record) + "}"

    PAYLOADS[cls] = payload
    return payload


def control_text(record: ControlRecord) -> str:
    """``control_payload(record)``, compiled where the record allows it."""
    if record.unknown_tagged_fields or getattr(record.message, "_unknown_tagged_fields", None):
        return control_payload(record)
    return f"{CONTROL_LABELS.get(record.type_name, record.type_name)} {message_text(record.message)}"
