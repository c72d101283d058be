"""``partition.metadata``: the topic id a partition directory belongs to.

Two lines, the second without a final newline, exactly as Kafka writes them::

    version: 0
    topic_id: AAAAAAAAAAAAAAAAAAAAAQ

For ``__cluster_metadata-0`` the id is always METADATA_TOPIC_ID (the uuid 1).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from engine.common.errors import StorageError
from engine.common.file_io import StrPath, read_text_file, write_bytes_atomically
from engine.common.kafka_uuid import METADATA_TOPIC_ID, ZERO_UUID, kafka_to_uuid, uuid_to_kafka

PARTITION_METADATA_FILE = "partition.metadata"
PARTITION_METADATA_VERSION = 0
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class PartitionMetadata:
    version: int
    topic_id: uuid.UUID


def read_partition_metadata(path: StrPath) -> PartitionMetadata:
    """The version and topic id in the partition.metadata at ``path``."""
    return parse_partition_metadata(read_text_file(path), path=path)


def parse_partition_metadata(text: str, path: StrPath | None = None) -> PartitionMetadata:
    """Parse the two lines; StorageError naming the file and line otherwise."""
    where = None if path is None else str(path)
    lines = _LINE_BREAK.split(text)
    if not text:
        raise StorageError("empty partition.metadata file", path=where)
    version_text = _value(lines, 0, "version", where)
    if not re.fullmatch(r"[0-9]+", version_text) or int(version_text) >= 1 << 31:
        raise StorageError(f"line 1: version is not a non-negative integer: {version_text!r}",
                           path=where)
    # Any version >= 0 is read, as Kafka does, so a downgraded broker can still start.
    topic_text = _value(lines, 1, "topic_id", where)
    try:
        topic_id = kafka_to_uuid(topic_text)
    except ValueError as e:
        raise StorageError(f"line 2: bad topic_id: {e}", path=where) from None
    if topic_id == ZERO_UUID:
        raise StorageError("line 2: topic_id is the zero uuid, which no topic has", path=where)
    if any(line.strip() for line in lines[2:]):
        raise StorageError("line 3: unexpected content after the topic_id line", path=where)
    return PartitionMetadata(int(version_text), topic_id)


def dump_partition_metadata(topic_id: uuid.UUID = METADATA_TOPIC_ID) -> str:
    """The exact text Kafka writes (no newline after the topic id)."""
    return f"version: {PARTITION_METADATA_VERSION}\ntopic_id: {uuid_to_kafka(topic_id)}"


def write_partition_metadata(path: StrPath, topic_id: uuid.UUID = METADATA_TOPIC_ID) -> None:
    """Write a version-0 partition.metadata for ``topic_id`` atomically and durably."""
    if topic_id == ZERO_UUID:
        raise ValueError("the zero uuid is not a topic id")
    write_bytes_atomically(path, dump_partition_metadata(topic_id).encode("utf-8"))


def _value(lines: list[str], index: int, label: str, where: str | None) -> str:
    """The value of line ``index``, which must read "<label>: <value>"."""
    line_no = index + 1
    if index >= len(lines) or not lines[index].strip():
        raise StorageError(f"line {line_no}: missing '{label}: ...' line", path=where)
    parts = lines[index].split()
    if len(parts) != 2 or parts[0] != f"{label}:":
        raise StorageError(f"line {line_no}: expected '{label}: <value>', found {lines[index]!r}",
                           path=where)
    return parts[1]
