"""Kafka's ``meta.properties``: what makes a directory a formatted Kafka log directory.

Version 0 (ZooKeeper-era brokers) has ``broker.id`` and maybe ``cluster.id``;
version 1 (KRaft) has ``node.id``, ``cluster.id`` and, since Kafka 3.7, ``directory.id``.
The cluster id is kept as the string found: real files hold values such as
``Some(5L6g3nShT-eMCtK--X86sw)`` or ``test-cluster-id`` that Kafka accepts.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from engine.common.errors import StorageError
from engine.common.java_properties import KeyOrder, StrPath, load_properties, write_properties_atomically
from engine.common.kafka_uuid import kafka_to_uuid, uuid_to_kafka

META_PROPERTIES_FILE = "meta.properties"
VERSION_KEY = "version"
CLUSTER_ID_KEY = "cluster.id"
BROKER_ID_KEY = "broker.id"
NODE_ID_KEY = "node.id"
DIRECTORY_ID_KEY = "directory.id"
_JAVA_INT = re.compile(r"[+-]?[0-9]+")  # what Integer.parseInt accepts (ASCII digits only)


@dataclass(frozen=True)
class MetaProperties:
    """The content of a meta.properties; ``extra`` holds keys Kafka does not define."""

    version: int
    cluster_id: str | None = None
    node_id: int | None = None
    directory_id: uuid.UUID | None = None
    extra: dict[str, str] = field(default_factory=dict, hash=False)

    @property
    def id_key(self) -> str:
        """The key the node id is stored under in this version."""
        return BROKER_ID_KEY if self.version == 0 else NODE_ID_KEY


def meta_properties_path(dir_or_file: StrPath) -> Path:
    """The meta.properties file meant by a log directory or by the file itself."""
    p = Path(dir_or_file)
    if p.is_dir():
        return p / META_PROPERTIES_FILE
    return p if p.is_file() or p.name == META_PROPERTIES_FILE else p / META_PROPERTIES_FILE


def read_meta_properties(dir_or_file: StrPath) -> MetaProperties:
    """Read the meta.properties of a log directory (or the file named directly)."""
    path = meta_properties_path(dir_or_file)
    if not path.is_file():
        raise StorageError(f"no {META_PROPERTIES_FILE} in {path.parent}: "
                           "not a formatted Kafka log directory")
    return meta_from_properties(load_properties(path), path=path)


def meta_from_properties(props: dict[str, str], path: StrPath | None = None) -> MetaProperties:
    """Validate and convert parsed properties, with Kafka's rules for each version."""
    where = None if path is None else str(path)
    if VERSION_KEY not in props:
        raise StorageError(f"missing required key '{VERSION_KEY}'", path=where)
    version = _parse_int(props, VERSION_KEY, where)
    if version not in (0, 1):
        raise StorageError(f"unknown meta.properties {VERSION_KEY} {version} (expected 0 or 1)",
                           path=where)
    id_key = BROKER_ID_KEY if version == 0 else NODE_ID_KEY
    if version == 1:
        for key in (NODE_ID_KEY, CLUSTER_ID_KEY):  # v1 always has both
            if key not in props:
                raise StorageError(f"missing required key '{key}' in version 1", path=where)
    node_id = _parse_int(props, id_key, where) if id_key in props else None
    directory_id = None
    if DIRECTORY_ID_KEY in props:
        try:
            directory_id = kafka_to_uuid(props[DIRECTORY_ID_KEY].strip())
        except ValueError as e:
            raise StorageError(f"bad '{DIRECTORY_ID_KEY}': {e}", path=where) from None
    known = {VERSION_KEY, CLUSTER_ID_KEY, DIRECTORY_ID_KEY, id_key}  # the rest is kept as is
    extra = {k: v for k, v in props.items() if k not in known}
    return MetaProperties(version, props.get(CLUSTER_ID_KEY), node_id, directory_id, extra)


def _parse_int(props: dict[str, str], key: str, where: str | None) -> int:
    text = props[key].strip() if key == VERSION_KEY else props[key]  # Kafka trims only the version
    if not _JAVA_INT.fullmatch(text) or not -(1 << 31) <= int(text) < (1 << 31):
        raise StorageError(f"'{key}' is not a 32-bit integer: {props[key]!r}", path=where)
    return int(text)


def meta_to_properties(meta: MetaProperties) -> dict[str, str]:
    """The properties Kafka would write for ``meta``, in the order Kafka sets them."""
    if meta.version not in (0, 1):
        raise ValueError(f"meta.properties version must be 0 or 1, not {meta.version}")
    if meta.version == 1 and (meta.node_id is None or meta.cluster_id is None):
        raise ValueError("meta.properties version 1 needs both node_id and cluster_id")
    props = {VERSION_KEY: str(meta.version)}
    if meta.cluster_id is not None:
        props[CLUSTER_ID_KEY] = meta.cluster_id
    if meta.node_id is not None:
        props[meta.id_key] = str(meta.node_id)
    if meta.directory_id is not None:
        props[DIRECTORY_ID_KEY] = uuid_to_kafka(meta.directory_id)
    for key, value in meta.extra.items():
        props.setdefault(key, value)  # never let an extra override a defined key
    return props


def write_meta_properties(directory: StrPath, meta: MetaProperties, now: datetime | None = None,
                          *, key_order: KeyOrder = "sorted") -> Path:
    """Write ``directory``/meta.properties atomically, as Kafka writes it; returns its path.

    ``key_order`` "sorted" matches Kafka on JDK 18+; "jdk-hash" matches Kafka on JDK 9-17.
    """
    path = Path(directory) / META_PROPERTIES_FILE
    write_properties_atomically(path, meta_to_properties(meta), now, header_comment="",
                                key_order=key_order)
    return path
