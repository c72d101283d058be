"""Rows of the exported tables, from an image: pure Python, no pyspark.

``table_for(image, path)`` gives a ``Table`` (kind, columns, rows) for a path of the node
tree: the typed tables for ``/topics`` (partitions), ``/brokers``, ``/quorum`` (voters),
``/configs``, ``/features``, ``/acls``, ``/client-quotas``, ``/scram``,
``/delegation-tokens`` and ``/producer-ids``; a ``generic`` (path, name, kind, value_json)
table walked from the tree for any other path. Column names and order are
metashell.export.schemas.COLUMNS[kind]; values are what the tree shows (ids in Kafka's
base64, secrets redacted unless ``show_secrets``).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, NamedTuple

from engine.common.kafka_uuid import uuid_to_kafka
from engine.common.config_resource import ConfigResourceType, config_resource_type_name
from engine.image.metadata_image import MetadataImage
from metashell.export.schemas import column_names
from metashell.tree.kafka_names import ACL_OPERATIONS, ACL_PATTERN_TYPES, ACL_PERMISSIONS, ACL_RESOURCE_TYPES
from metashell.tree.nodes import NodeError, decode_name, locate, normalize, split_path, walk
from metashell.tree.tree_layout import REDACTED, SCRAM_MECHANISMS, is_secret_config, quorum_voters
from metashell.tree.root import build_tree


class Table(NamedTuple):
    kind: str  # a key of metashell.export.schemas.COLUMNS
    columns: list[str]
    rows: list[tuple]


def table_for(image: MetadataImage, path: str = "/topics", *, show_secrets: bool = False) -> Table:
    """The table for ``path`` of ``image``'s tree (see the module docstring). A path that is not
    in the tree raises ExportError (one line, like every user-facing error)."""
    from metashell.export.spark_session import ExportError

    try:
        return _table_for(image, path, show_secrets)
    except NodeError as e:
        raise ExportError(str(e)) from None


def _table_for(image: MetadataImage, path: str, show_secrets: bool) -> Table:
    root = build_tree(image, None, show_secrets)
    parts = split_path(locate(root, normalize("/", path))[0])  # as the tree spells it: names encoded
    top = parts[0] if parts else ""
    if top == "topics" and len(parts) <= 3:
        if len(parts) == 1:
            return partitions_table(image)
        topic = image.topics.topic(decode_name(parts[1]))
        if topic is None:
            raise NodeError(f"/topics/{parts[1]}: no such node")
        if len(parts) == 2:
            return partitions_table(image, [topic])
        if parts[2].lstrip("-").isdigit():
            pid = int(parts[2])
            if pid not in topic.partitions:
                raise NodeError(f"/topics/{parts[1]}/{parts[2]}: no such node")
            return partitions_table(image, [topic], only=pid)
    if len(parts) == 1 and top in _BUILDERS:
        if top == "configs":
            return configs_table(image, show_secrets=show_secrets)
        return _BUILDERS[top](image)
    return generic_table(image, path, show_secrets=show_secrets)


def partitions_table(image: MetadataImage, topics: Any = None, only: int | None = None) -> Table:
    """One row per partition, sorted by topic name and partition id. Built straight from the
    PartitionRegistration tuples: a million partitions take seconds."""
    from engine.image.metadata_image import min_isr

    if topics is None:
        topics = sorted(image.topics.by_id.values(), key=lambda t: t.name)
    dir_texts: dict[tuple, tuple] = {}  # directory tuples repeat: convert each distinct one once

    def dirs(directories: tuple) -> tuple:
        text = dir_texts.get(directories)
        if text is None:
            text = dir_texts[directories] = tuple(uuid_to_kafka(d) for d in directories)
        return text

    rows: list[tuple] = []
    append = rows.append
    for topic in topics:
        name, tid, needed = topic.name, uuid_to_kafka(topic.id), min_isr(image, topic.name)
        partitions = topic.partitions
        for pid in sorted(partitions) if only is None else (only,):
            p = partitions[pid]
            # PartitionRegistration: replicas, isr, removing, adding, leader, recovery, leader epoch,
            # partition epoch, directories, elr, last known elr
            replicas, isr, removing, adding, leader, recovery, leader_epoch, partition_epoch, directories, elr, \
                last_known = p
            append((name, tid, pid, leader, leader_epoch, partition_epoch, replicas, isr, elr, last_known, adding,
                    removing, dirs(directories), recovery, len(isr) < needed, leader < 0, needed))
    return Table("partitions", column_names("partitions"), rows)


def brokers_table(image: MetadataImage) -> Table:
    led: Counter = Counter()
    hosted: Counter = Counter()
    for topic in image.topics.by_id.values():
        for p in topic.partitions.values():
            if p.leader >= 0:
                led[p.leader] += 1
            hosted.update(p.replicas)
    rows = [(b.id, b.epoch, uuid_to_kafka(b.incarnation_id), b.rack, b.fenced, b.in_controlled_shutdown, b.state,
             [(e.name, e.host, e.port, e.security_protocol) for e in b.endpoints],
             [uuid_to_kafka(d) for d in b.directories],
             None if b.cordoned_directories is None else [uuid_to_kafka(d) for d in b.cordoned_directories],
             led[b.id], hosted[b.id])
            for _, b in sorted(image.cluster.brokers.items())]
    return Table("brokers", column_names("brokers"), rows)


def voters_table(image: MetadataImage, info: Any = None) -> Table:
    leader = image.quorum.leader
    leader_id = leader.leader_id if leader else (info.quorum_state.leader_id if info and info.quorum_state else -1)
    ranges = {v.id: v.kraft_version_range for v in image.quorum.voters or ()}
    rows = []
    for node_id, v in sorted(quorum_voters(image, info).items()):
        low, high = ranges.get(node_id, (None, None))
        rows.append((node_id, v["directoryId"], [f"{e['name']}://{e['host']}:{e['port']}" for e in v["endpoints"]],
                     low, high, node_id == leader_id, v["source"]))
    return Table("voters", column_names("voters"), rows)


def config_resource_type(resource_type: int, name: str) -> str:
    """topic, broker, cluster (the broker default, name ""), broker_logger, client_metrics, group."""
    if resource_type == ConfigResourceType.BROKER and not name:
        return "cluster"
    return config_resource_type_name(resource_type).lower()


def configs_table(image: MetadataImage, *, show_secrets: bool = False) -> Table:
    rows = []
    for (resource_type, name), values in sorted(image.configs.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        kind = config_resource_type(resource_type, name)
        for key, value in sorted(values.items()):
            if is_secret_config(key) and not show_secrets:
                value = REDACTED
            rows.append((kind, name or None, key, value))
    return Table("configs", column_names("configs"), rows)


def features_table(image: MetadataImage) -> Table:
    return Table("features", column_names("features"), sorted(image.features.items()))


def acls_table(image: MetadataImage) -> Table:
    rows = sorted((uuid_to_kafka(acl_id), _name(ACL_RESOURCE_TYPES, a.resource_type), a.resource_name,
                   _name(ACL_PATTERN_TYPES, a.pattern_type), a.principal, a.host, _name(ACL_OPERATIONS, a.operation),
                   _name(ACL_PERMISSIONS, a.permission_type)) for acl_id, a in image.acls.items())
    return Table("acls", column_names("acls"), rows)


def client_quotas_table(image: MetadataImage) -> Table:
    rows = [([(t, n) for t, n in entity], key, float(value))
            for entity, values in image.client_quotas.items() for key, value in sorted(values.items())]
    rows.sort(key=lambda r: (str(r[0]), r[1]))
    return Table("client_quotas", column_names("client_quotas"), rows)


def scram_table(image: MetadataImage) -> Table:
    rows = sorted((user, SCRAM_MECHANISMS.get(mechanism, str(mechanism)), r.iterations)
                  for (mechanism, user), r in image.scram.items())
    return Table("scram_users", column_names("scram_users"), rows)


def delegation_tokens_table(image: MetadataImage) -> Table:
    rows = [(t.token_id, t.owner, t.requester, list(t.renewers), t.issue_timestamp, t.expiration_timestamp,
             t.max_timestamp) for _, t in sorted(image.delegation_tokens.items())]
    return Table("delegation_tokens", column_names("delegation_tokens"), rows)


def producer_ids_table(image: MetadataImage) -> Table:
    return Table("producer_ids", column_names("producer_ids"), [(image.producer_ids.next_producer_id,)])


def generic_table(image: MetadataImage, path: str, *, show_secrets: bool = False, info: Any = None) -> Table:
    """Every node under ``path``, depth first in listing order: directories with a null value,
    files with their value as compact JSON."""
    root = build_tree(image, info, show_secrets)
    start, top = locate(root, normalize("/", path))
    rows = []
    for node_path, node in walk(top, start):  # paths spelt as the shell prints them
        if node.is_directory:
            rows.append((node_path, node.name, "dir", None))
        else:
            rows.append((node_path, node.name, "file",
                         json.dumps(node.value(), separators=(",", ":"), default=str)))
    return Table("generic", column_names("generic"), rows)


def _name(names: dict[int, str], value: int) -> str:
    return names.get(value, str(value))


_BUILDERS = {
    "topics": partitions_table, "brokers": brokers_table, "quorum": voters_table, "configs": configs_table,
    "features": features_table, "acls": acls_table, "client-quotas": client_quotas_table, "scram": scram_table,
    "delegation-tokens": delegation_tokens_table, "producer-ids": producer_ids_table,
}

__all__ = ["Table", "table_for"]
