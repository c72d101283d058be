"""Our record classes against the message schemas of the Kafka release under test, field by field.

Kafka ships the JSON definitions its serdes are generated from inside its jars: the metadata
records in kafka-metadata (``common/metadata/*.json``), the KRaft control records in
kafka-clients (``common/message/*.json``). Each tested version's jars are read here, at test
time: every record type and version they define must be a class of ours (engine.records:
metadata_records for the metadata records, kio's classes for the control records) with the same
api key and name, the same fields in the same order, each with its wire type, array-ness,
nullability, tag and (for a tagged field, which is left out when it holds its default) default.
Kafka 4.4.0's RegisterBrokerRecord v4 and BrokerRegistrationChangeRecord v3 (KIP-1066 cordoned
log directories) and UnregisterControllerRecord (KIP-1312) are among them.

A type or version of ours that the release does not define is allowed (we read newer releases
than 4.1.2); a field, type or version it defines that we lack or shape otherwise is not.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
import zipfile
from pathlib import Path

import pytest

from engine.records import kio_codec
from engine.records.metadata_records import RECORD_CLASSES

# KRaft's control records, by schema name: the classes we encode them with (kio's, version 0)
CONTROL_CLASSES = {name: getattr(kio_codec, name) for name in (
    "LeaderChangeMessage", "SnapshotHeaderRecord", "SnapshotFooterRecord", "VotersRecord", "KRaftVersionRecord")}
PRIMITIVES = {"int8", "int16", "int32", "int64", "uint16", "float64", "bool", "string", "bytes", "uuid"}


def kafka_schemas(jar: Path, folder: str) -> dict[str, dict]:
    """The JSON message definitions in ``folder`` of one of Kafka's jars, by name (// comments dropped)."""
    with zipfile.ZipFile(jar) as archive:
        texts = [archive.read(n).decode() for n in archive.namelist()
                 if n.startswith(folder) and n.endswith(".json")]
    schemas = [json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M)) for text in texts]
    return {schema["name"]: schema for schema in schemas}


def with_common_structs(schema: dict) -> list[dict]:
    """The schema's fields, a field typed as one of its ``commonStructs`` given that struct's fields."""
    common = {struct["name"]: struct["fields"] for struct in schema.get("commonStructs", [])}

    def resolved(spec: dict) -> dict:
        inner = spec["type"].removeprefix("[]")
        fields = spec.get("fields", common.get(inner))
        return {**spec, "fields": [resolved(f) for f in fields]} if fields is not None else spec

    return [resolved(f) for f in schema["fields"]]


def versions_of(spec: str | None, top: int) -> set[int]:
    """Kafka's version range ("0+", "1-3", "2", "none") as the versions up to ``top``."""
    if spec is None or spec == "none":
        return set()
    if spec.endswith("+"):
        return set(range(int(spec[:-1]), top + 1))
    low, _, high = spec.partition("-")
    return set(range(int(low), int(high or low) + 1))


def snake(name: str) -> str:
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def kafka_default(spec: dict, nullable: bool) -> object:
    """A tagged field's default as our classes hold it."""
    kind, value = spec["type"], spec.get("default")
    if value == "null" or (kind.startswith("[]") and value is None and nullable):
        return None
    if kind.startswith("[]"):
        return ()
    if kind == "bool":
        return value == "true"
    if kind in ("int8", "int16", "int32", "int64", "uint16"):
        return int(value or 0)
    if kind == "float64":
        return float(value or 0.0)
    if kind == "string":
        return None if nullable and value is None else (value or "")
    return None if kind == "uuid" else b""


def shape(annotation: object) -> tuple[bool, object]:
    """(nullable, the type without None) of one of our fields' annotations."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return True, args[0]
    return False, annotation


def differences(where: str, fields: list[dict], cls: type, version: int, top: int) -> list[str]:
    """How ``cls`` (our class for ``version``) differs from Kafka's field list, one line each."""
    problems: list[str] = []
    wanted = [f for f in fields if version in versions_of(f["versions"], top)]
    ours = {f.name: f for f in dataclasses.fields(cls)}
    if [snake(f["name"]) for f in wanted] != list(ours):
        return [f"{where}: fields {list(ours)}, Kafka's {[snake(f['name']) for f in wanted]}"]
    for spec in wanted:
        mine, at = ours[snake(spec["name"])], f"{where}.{spec['name']}"
        kind = spec["type"]
        is_array, inner = kind.startswith("[]"), kind.removeprefix("[]")
        nullable, annotation = shape(mine.type)
        if (version in versions_of(spec.get("nullableVersions"), top)) != nullable and inner != "uuid":
            problems.append(f"{at}: nullable {nullable} in ours")  # a uuid is UUID | None (zero is None)
        if is_array != (typing.get_origin(annotation) is tuple):
            problems.append(f"{at}: array {not is_array} in ours")
        tagged = version in versions_of(spec.get("taggedVersions"), top)
        tag = mine.metadata.get("tag")
        if (int(spec["tag"]) if tagged else None) != tag:
            problems.append(f"{at}: tag {tag} in ours, Kafka's {spec.get('tag') if tagged else None}")
        if tagged and mine.default != kafka_default(spec, version in versions_of(spec.get("nullableVersions"), top)):
            problems.append(f"{at}: default {mine.default!r} in ours, Kafka's {spec.get('default')!r}")
        if inner in PRIMITIVES:
            if mine.metadata.get("kafka_type") != inner:
                problems.append(f"{at}: type {mine.metadata.get('kafka_type')} in ours, Kafka's {inner}")
        else:  # a nested structure: its own fields, recursively
            nested = typing.get_args(annotation)[0] if is_array else annotation
            problems += differences(at, spec["fields"], nested, version, top)
    return problems


@pytest.mark.kafka
def test_every_metadata_record_schema_of_kafka_is_ours_field_by_field(kafka_dist) -> None:
    schemas = kafka_schemas(kafka_dist.libs / f"kafka-metadata-{kafka_dist.version}.jar", "common/metadata/")
    assert len(schemas) >= 26, sorted(schemas)  # not vacuous: the jar's definitions were found
    problems: list[str] = []
    for name, schema in sorted(schemas.items()):
        key = schema["apiKey"]
        top = max(int(v) for v in re.findall(r"\d+", schema["validVersions"]))
        for version in sorted(versions_of(schema["validVersions"], top)):
            cls = RECORD_CLASSES.get((key, version))
            if cls is None:
                problems.append(f"{name} v{version} (api key {key}): no class of ours")
                continue
            if (cls.record_name, cls.type_name) != (name, snake(name).upper()):
                problems.append(f"{name} v{version}: ours is {cls.record_name} ({cls.type_name})")
            if cls.__flexible__ != (version in versions_of(schema["flexibleVersions"], top)):
                problems.append(f"{name} v{version}: flexible {cls.__flexible__} in ours")
            problems += differences(f"{name} v{version}", with_common_structs(schema), cls, version, top)
    assert problems == [], f"Kafka {kafka_dist.version}'s metadata schemas and ours differ:\n" + "\n".join(problems)


@pytest.mark.kafka
def test_every_kraft_control_record_schema_of_kafka_is_ours_field_by_field(kafka_dist) -> None:
    """At version 0: Kafka reads and writes each control record at ControlRecordUtils' current
    version, 0 for all five from 4.1.2 to 4.4.0 (LeaderChangeMessage v1 is defined, not written)."""
    schemas = kafka_schemas(kafka_dist.libs / f"kafka-clients-{kafka_dist.version}.jar", "common/message/")
    problems: list[str] = []
    for name, cls in CONTROL_CLASSES.items():
        schema = schemas[name]
        top = max(int(v) for v in re.findall(r"\d+", schema["validVersions"]))
        problems += differences(f"{name} v0", with_common_structs(schema), cls, 0, top)
    assert problems == [], f"Kafka {kafka_dist.version}'s control records and ours differ:\n" + "\n".join(problems)


def test_the_comparison_sees_a_field_out_of_place() -> None:
    """The check itself: a schema whose tagged field moved to another tag, or lost a field, differs."""
    schema_fields = [{"name": "ControllerId", "type": "int32", "versions": "0+"}]
    cls = RECORD_CLASSES[(29, 0)]  # UnregisterControllerRecord v0: ControllerId only
    assert differences("x", schema_fields, cls, 0, 0) == []
    assert differences("x", schema_fields + [{"name": "Epoch", "type": "int64", "versions": "0+"}], cls, 0, 0)
    assert differences("x", [{**schema_fields[0], "type": "int64"}], cls, 0, 0)
    cordoned = RECORD_CLASSES[(17, 3)]
    spec = BROKER_REGISTRATION_CHANGE_V3
    assert differences("x", spec, cordoned, 3, 3) == []
    moved = [{**f, "tag": 9} if f["name"] == "CordonedLogDirs" else f for f in spec]
    assert differences("x", moved, cordoned, 3, 3) == ["x.CordonedLogDirs: tag 3 in ours, Kafka's 9"]


# BrokerRegistrationChangeRecord's fields as Kafka 4.4.0 defines them, for the check's own test
# (which runs without Kafka's jars)
BROKER_REGISTRATION_CHANGE_V3 = [
    {"name": "BrokerId", "type": "int32", "versions": "0+"},
    {"name": "BrokerEpoch", "type": "int64", "versions": "0+"},
    {"name": "Fenced", "type": "int8", "versions": "0+", "taggedVersions": "0+", "tag": 0},
    {"name": "InControlledShutdown", "type": "int8", "versions": "1+", "taggedVersions": "1+", "tag": 1},
    {"name": "LogDirs", "type": "[]uuid", "versions": "2+", "taggedVersions": "2+", "tag": 2},
    {"name": "CordonedLogDirs", "type": "[]uuid", "versions": "3+", "taggedVersions": "3+", "tag": 3,
     "nullableVersions": "3+", "default": "null"},
]
