"""JSON for records, in the form Kafka's tools print it.

``{"type":"TOPIC_RECORD","version":0,"data":{"name":"bar","topicId":"GU_rXds2FGppL1JqXYpx2g"}}``:
compact separators, fields in schema order with camelCase names, tagged fields
only when they differ from their default (as Kafka's generated JsonConverters
do), UUIDs in Kafka's URL-safe base64, bytes in standard base64, doubles as
Java prints them.

Tagged fields a record carried that its schema does not define (a newer Kafka's, see
engine.records.tagged_fields) are shown where they sat, in the struct that held them:
``"_unknownTaggedFields":[{"tag":7,"data":"AQID"}]``, after its known fields, the data in
standard base64 as Kafka's JSON prints bytes. Kafka's own JSON leaves them out; every
record without them prints exactly as Kafka prints it.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import json.encoder
import math
import re
import typing
import uuid
from typing import Any

from engine.common.kafka_uuid import uuid_to_kafka
from engine.records.metadata_record_serde import AnyRecord, ControlRecord, MetadataRecord

_field_cache: dict[type, list[tuple[str, str, bool, Any, bool | str]]] = {}

# Labels printed before control records' JSON, as Kafka's dump tool (4.1 to 4.3 at least)
# labels them; only the leader change's carries a colon there ("LeaderChange: {...}").
CONTROL_LABELS = {
    "LEADER_CHANGE": "LeaderChange:",
    "SNAPSHOT_HEADER": "SnapshotHeader",
    "SNAPSHOT_FOOTER": "SnapshotFooter",
    "KRAFT_VERSION": "KRaftVersion",
    "KRAFT_VOTERS": "KRaftVoters",
}


def camel_case(snake: str) -> str:
    head, *rest = snake.rstrip("_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _fields(cls: type) -> list[tuple[str, str, bool, Any, bool | str]]:
    cached = _field_cache.get(cls)
    if cached is None:
        hints = typing.get_type_hints(cls)
        cached = [
            (f.name, camel_case(f.name), "tag" in f.metadata, f.default,
             "uuid-array" if f.metadata.get("kafka_type") == "uuid" and "tuple" in str(hints[f.name])
             else f.metadata.get("kafka_type") == "uuid")
            for f in dataclasses.fields(cls)
        ]
        _field_cache[cls] = cached
    return cached


def message_to_jsonable(message: Any) -> dict[str, Any]:
    """A kio-style message as Kafka's JsonConverter would write it (plus unknown tagged fields)."""
    out: dict[str, Any] = {}
    for name, json_name, tagged, default, is_uuid in _fields(type(message)):
        value = getattr(message, name)
        if tagged and value == default:
            continue
        if is_uuid == "uuid-array":  # kio reads Kafka's all-zero UUID as None; Kafka prints it
            out[json_name] = None if value is None else [uuid_to_kafka(v) for v in value]
        elif is_uuid:
            out[json_name] = uuid_to_kafka(value)
        else:
            out[json_name] = _value(value)
    unknown = getattr(message, "_unknown_tagged_fields", None)  # set on metadata records only
    if unknown:
        add_unknown_tagged_fields(out, unknown)
    return out


def add_unknown_tagged_fields(data: dict[str, Any], fields: Any) -> dict[str, Any]:
    """Put each UnknownTaggedField into the JSON object of the struct it sat in (``data`` is the
    message's); one whose struct is not shown (inside a tagged field left at its default)
    goes on the message itself, with its path."""
    for field in fields:
        target: Any = data
        for step in field.path:
            if isinstance(step, int):
                target = target[step] if isinstance(target, list) and step < len(target) else None
            else:
                target = target.get(camel_case(step)) if isinstance(target, dict) else None
        shown = {"tag": field.tag, "data": base64.b64encode(field.data).decode("ascii")}
        if not isinstance(target, dict):
            target = data
            shown = {"path": ".".join(str(step) if isinstance(step, int) else camel_case(step)
                                      for step in field.path), **shown}
        target.setdefault("_unknownTaggedFields", []).append(shown)
    return data


def _value(value: Any) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, uuid.UUID):
        return uuid_to_kafka(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, tuple):
        return [_value(item) for item in value]
    if dataclasses.is_dataclass(value):
        return message_to_jsonable(value)
    return str(value)


def java_double_string(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    magnitude = abs(value)
    if value == 0 or 1e-3 <= magnitude < 1e7:
        text = repr(float(value))
        return text if ("." in text or "e" in text) else text + ".0"
    mantissa, exponent = f"{value:.16e}".split("e")
    for digits in range(1, 18):  # the shortest mantissa that round-trips, as Java prints
        candidate = f"{value:.{digits - 1}e}"
        if float(candidate) == value:
            mantissa, exponent = candidate.split("e")
            break
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}E{int(exponent)}"


_escape = json.encoder.encode_basestring  # type: ignore[attr-defined]
# An escaped backslash, or a control character's escape: scanning left to right keeps them
# apart (a text holding a backslash then "u001f" is escaped as "\\\\u001f" and is no escape).
_ESCAPES = re.compile(r"\\\\|\\u00[01][0-9a-f]")


def _upper_hex(match: re.Match) -> str:
    text = match.group()
    return text if text == "\\\\" else text[:4] + text[4:].upper()


def jackson_string(text: str) -> str:
    """``text`` as a quoted JSON string the way Jackson writes it: json's escapes (``\\n``,
    ``\\"``, ``\\\\``; other control characters as ``\\u00XX``; the rest as it is), except that
    Jackson's hex digits are upper case (``\\u001F``, where Python writes ``\\u001f``)."""
    quoted = _escape(text)
    return _ESCAPES.sub(_upper_hex, quoted) if "\\u" in quoted else quoted


def dumps(obj: Any) -> str:
    """Compact JSON as Jackson writes it: no spaces, doubles in Java's form."""
    if isinstance(obj, dict):
        return "{" + ",".join(f"{jackson_string(k)}:{dumps(v)}" for k, v in obj.items()) + "}"
    if isinstance(obj, list):
        return "[" + ",".join(dumps(v) for v in obj) + "]"
    if isinstance(obj, float):
        return java_double_string(obj)
    if isinstance(obj, str):
        return jackson_string(obj)
    return json.dumps(obj, ensure_ascii=False)


def record_to_jsonable(record: AnyRecord) -> dict[str, Any]:
    """The record as a JSON-ready dict: metadata records as the dump tool prints their payload."""
    if isinstance(record, MetadataRecord):
        return {"type": record.type_name, "version": record.version, "data": message_to_jsonable(record.message)}
    if isinstance(record, ControlRecord):
        return {"type": record.type_name, "data": _control_data(record)}
    out: dict[str, Any] = {"type": record.type_name}
    if record.api_key is not None:
        out["apiKey"] = record.api_key
    if record.version is not None:
        out["version"] = record.version
    out["error"] = record.reason
    if record.key is not None:
        out["key"] = base64.b64encode(record.key).decode("ascii")
    out["value"] = None if record.value is None else base64.b64encode(record.value).decode("ascii")
    return out


def record_to_json(record: AnyRecord) -> str:
    return dumps(record_to_jsonable(record))


def control_payload(record: ControlRecord) -> str:
    """``SnapshotHeader {"version":0,...}``, as the dump tool prints a control record."""
    label = CONTROL_LABELS.get(record.type_name, record.type_name)
    return f"{label} {dumps(_control_data(record))}"


def _control_data(record: ControlRecord) -> dict[str, Any]:
    return add_unknown_tagged_fields(message_to_jsonable(record.message), record.unknown_tagged_fields)
