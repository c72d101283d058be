"""``/image``: the image as Kafka's own ``kafka-metadata-shell`` shows it, path for path and byte
for byte, so that a runbook written for Kafka's tool works unchanged.

    /image/provenance, /image/features/{metadataVersion, finalized_<name>},
    /image/cluster/{brokers,controllers}/<id>, /image/topics/{byName/<name>, byId/<uuid>}/{name,id,<p>},
    /image/configs/<TYPE>[:<name>]/<key>, /image/clientQuotas/<entity>/<key>,
    /image/producerIds/nextProducerId, /image/acls/byId/<uuid>, /image/scram/<mechanism>/<user>,
    /image/delegationToken/<id>

What Kafka's newest shell (4.3.1) prints is the model: each leaf's text is Kafka's objects'
``toString()`` (metashell.tree.kafka_text), names sort as Java sorts them, configs Kafka's
version no longer defines are not shown (metashell.tree.kafka_shell_configs), there is no
zkMigrationState, and the provenance is what Kafka's shell reads from the same file: for a file
(``--snapshot``), its last data batch's offset, epoch and time, as Kafka's shell takes them
(inside a snapshot, the offsets are the file's own). From a log directory or a live quorum,
where Kafka's shell cannot go, it is the image's. ``cat --json`` keeps our JSON of each leaf.

Where ours differs on purpose (docs/shell.md): a name with a character a path cannot hold is
encoded as metashell.tree.nodes says (Kafka shows it raw); a quota entity with a default part is
``clientId(<default>)`` (Kafka leaves the part out, so the entity reads as another or, all
default, gets the empty name, and cannot be opened); SCRAM salts and keys and secret config
values are redacted unless --show-secrets, as Kafka's strict printer redacts them.
tests/metashell/tree/test_kafka_metadata_shell.py and test_kafka_shell_corpus.py compare this
tree with Kafka's shell, command by command.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable

from engine.common.config_resource import config_resource_type_name
from engine.common.kafka_uuid import uuid_to_kafka
from engine.image.metadata_version import version_name
from engine.records.record_json import message_to_jsonable
from engine.storage.log_reader import read_batch_headers
from metashell.tree import kafka_text as text
from metashell.tree.kafka_names import SCRAM_MECHANISMS
from metashell.tree.kafka_shell_configs import shown_in_kafka_shell
from metashell.tree.nodes import DEFAULT_NAME, EMPTY_NAME, DirNode, FileNode, Node, decode_name, encode_name
from metashell.tree.tree_layout import REDACTED, TreeBuilder, is_secret_config, partition_json

FINALIZED = "finalized_"


def java_name_order(shown: str) -> bytes:
    """Our shown (encoded) names in the order Kafka's shell lists the names they stand for."""
    decoded = decode_name(shown)
    return text.java_order(shown if decoded is None else decoded)


def java_sorted(shown: Any) -> list[str]:
    """``shown`` sorted by java_name_order. Names of ASCII only, with no ``%`` (none encoded)
    and not the empty name's ``<empty>``, stand for themselves, and Java's order of ASCII is
    Python's: one plain sort (a topic's hundreds of partitions, listed for every topic by ``find``)."""
    names = list(shown)
    joined = "".join(names)
    if joined.isascii() and "%" not in joined and EMPTY_NAME not in names:
        names.sort()
        return names
    names.sort(key=java_name_order)
    return names


def kafka_dir(name: str, names: Callable[[], Any], make: Callable[[str], Node | None],
              files_only: bool = False) -> DirNode:
    return DirNode(name, names, make, java_name_order, java_sorted, files_only)


def fixed_dir(name: str, children: dict[str, Callable[[], Node]]) -> DirNode:
    return kafka_dir(name, lambda: children.keys(), lambda n: children[n]() if n in children else None)


def leaf(name: str, value: Callable[[], Any], shown: Callable[[], str]) -> FileNode:
    """A leaf whose value is our JSON (``cat --json``) and whose text is Kafka's (``cat``)."""
    return FileNode(name, value, lambda _value: shown())


def image_dir(tree: TreeBuilder) -> DirNode:
    image = tree.image
    return fixed_dir("image", {
        "provenance": lambda: _provenance(tree),
        "features": lambda: _features(tree),
        "cluster": lambda: fixed_dir("cluster", {
            "brokers": lambda: _registrations("brokers", image.cluster.brokers, text.broker_text, _registration_json),
            "controllers": lambda: _registrations("controllers", image.cluster.controllers, text.controller_text,
                                                  _registration_json)}),
        "topics": lambda: fixed_dir("topics", {"byName": lambda: _topics_by_name(tree),
                                               "byId": lambda: _topics_by_id(tree)}),
        "configs": lambda: _configs(tree),
        "clientQuotas": lambda: _client_quotas(tree),
        "producerIds": lambda: fixed_dir("producerIds", {"nextProducerId": lambda: leaf(
            "nextProducerId", lambda: image.producer_ids.next_producer_id,
            lambda: str(image.producer_ids.next_producer_id))}),
        "acls": lambda: fixed_dir("acls", {"byId": lambda: _acls(tree)}),
        "scram": lambda: _scram(tree),
        "delegationToken": lambda: _delegation_tokens(tree),
    })


# -- provenance -------------------------------------------------------------------------------

def shell_provenance(tree: TreeBuilder) -> tuple[int, int, int]:
    """(offset, epoch, time ms) as Kafka's shell has them: for a file, its last data batch's (the
    shell reads any file as a log and skips control batches); else the image's own."""
    source = tree.info.source if tree.info is not None else None
    if isinstance(source, Path) and source.is_file():
        stat = source.stat()
        found = _last_data_batch(str(source), stat.st_size, stat.st_mtime_ns)
        if found is not None:
            return found
    p = tree.image.provenance
    return p.last_offset, p.last_epoch, p.last_timestamp_ms


@functools.lru_cache(maxsize=8)
def _last_data_batch(path: str, size: int, mtime_ns: int) -> tuple[int, int, int] | None:
    last = None
    for _, header in read_batch_headers(Path(path)):
        if not header.is_control:
            last = header
    return None if last is None else (last.last_offset, last.partition_leader_epoch, last.max_timestamp)


def _provenance(tree: TreeBuilder) -> FileNode:
    return leaf("provenance", lambda: dict(zip(("last_offset", "last_epoch", "last_timestamp_ms"),
                                               shell_provenance(tree))),
                lambda: text.provenance_text(*shell_provenance(tree)))


# -- features, cluster, topics -------------------------------------------------------------------

def _features(tree: TreeBuilder) -> DirNode:
    """metadataVersion, and finalized_<name> for the other features. As in Kafka, any
    ``finalized_<name>`` opens (metadata.version's too), at level 0 when the feature is not
    finalized (it is not listed)."""
    features = tree.image.features
    version = features.metadata_version
    names = ["metadataVersion", *(encode_name(FINALIZED + n) for n in features if n != "metadata.version")]

    def make(shown: str) -> Node | None:
        if shown == "metadataVersion":
            return leaf(shown, lambda: version_name(version) if version is not None else None,
                        lambda: text.metadata_version_text(version_name(version) if version is not None else None))
        name = decode_name(shown)
        if name is None or not name.startswith(FINALIZED):
            return None
        feature = name[len(FINALIZED):]
        level = 0 if feature == "metadata.version" else features.get(feature, 0)
        return leaf(shown, lambda: level, lambda: str(level))
    return kafka_dir("features", lambda: names, make)


def _registrations(name: str, registrations, shown: Callable[[Any], str], as_json: Callable[[Any], dict]) -> DirNode:
    def make(text_id: str) -> Node | None:
        node_id = text.java_int(text_id)  # as Kafka's Integer.valueOf: 01 and +1 open node 1
        if node_id not in registrations:
            return None
        return leaf(text_id, lambda: as_json(registrations[node_id]), lambda: shown(registrations[node_id]))
    return kafka_dir(name, lambda: map(str, registrations), make)


def _registration_json(registration) -> dict:
    data = registration._asdict()
    data["incarnation_id"] = uuid_to_kafka(registration.incarnation_id)
    data["endpoints"] = [e._asdict() for e in registration.endpoints]
    data["supported_features"] = {f.name: [f.min_version, f.max_version] for f in registration.supported_features}
    if "directories" in data:
        data["directories"] = [uuid_to_kafka(d) for d in registration.directories]
    if data.get("cordoned_directories") is not None:
        data["cordoned_directories"] = [uuid_to_kafka(d) for d in registration.cordoned_directories]
    return data


def _topic(tree: TreeBuilder, topic_id, shown: str) -> DirNode:
    topic = tree.image.topics.by_id[topic_id]

    def make(n: str) -> Node | None:
        if n == "name":
            return leaf(n, lambda: topic.name, lambda: topic.name)
        if n == "id":
            return leaf(n, lambda: uuid_to_kafka(topic_id), lambda: uuid_to_kafka(topic_id))
        pid = text.java_int(n)
        if pid not in topic.partitions:
            return None
        return leaf(n, lambda: partition_json(topic_id, pid, topic.partitions[pid]),
                    lambda: text.partition_text(topic.partitions[pid]))
    return kafka_dir(shown, lambda: ["name", "id", *map(str, topic.partitions)], make, files_only=True)


def _topics_by_name(tree: TreeBuilder) -> DirNode:
    by_name = tree.image.topics.by_name
    shown = {encode_name(name): topic_id for name, topic_id in by_name.items()}
    return kafka_dir("byName", lambda: shown.keys(),
                     lambda n: _topic(tree, shown[n], n) if n in shown else None)


def _topics_by_id(tree: TreeBuilder) -> DirNode:
    shown = {uuid_to_kafka(topic_id): topic_id for topic_id in tree.image.topics.by_id}
    return kafka_dir("byId", lambda: shown.keys(), lambda n: _topic(tree, shown[n], n) if n in shown else None)


# -- configs and quotas ---------------------------------------------------------------------------------

def _configs(tree: TreeBuilder) -> DirNode:
    """One directory per resource with a config Kafka's shell keeps (kafka_shell_configs)."""
    resources = {}
    for resource, configs in tree.image.configs.items():
        keys = [k for k in configs if shown_in_kafka_shell(resource.type, k)]
        if keys:
            type_name = config_resource_type_name(resource.type)
            shown = type_name if resource.name == "" else encode_name(f"{type_name}:{resource.name}")
            resources[shown] = (configs, {encode_name(k): k for k in keys})
    return kafka_dir("configs", lambda: resources.keys(),
                     lambda n: _config_dir(tree, n, *resources[n]) if n in resources else None)


def _config_dir(tree: TreeBuilder, name: str, configs, keys: dict[str, str]) -> DirNode:
    def make(shown: str) -> Node | None:
        if shown not in keys:
            return None
        key = keys[shown]
        value = REDACTED if is_secret_config(key) and not tree.show_secrets else configs[key]
        return leaf(shown, lambda: value, lambda: value)
    return kafka_dir(name, lambda: keys.keys(), make)


_QUOTA_ENTITY_NAMES = (("client-id", "clientId"), ("ip", "ip"), ("user", "user"))


def kafka_quota_entity_name(entity: tuple) -> str:
    """``clientId(x)_ip(y)_user(z)``, as Kafka's ClientQuotasImageNode names an entity. Kafka leaves
    a default (null) part out, so an entity of default parts only has the empty name (which its
    shell lists but cannot open)."""
    return "_".join(_kafka_quota_parts(entity, None))


def quota_node_name(entity: tuple) -> str:
    """Our node's name for an entity: Kafka's, each part encoded, a default part as
    ``clientId(<default>)`` (Kafka's name would be another entity's, or empty)."""
    return "_".join(_kafka_quota_parts(entity, DEFAULT_NAME))


def _kafka_quota_parts(entity: tuple, default: str | None) -> list[str]:
    values = dict(entity)
    parts = []
    for entity_type, label in _QUOTA_ENTITY_NAMES:
        value = values.get(entity_type, "")
        if entity_type not in values or (value is None and default is None):
            continue
        if value is None:
            parts.append(f"{label}({default})")
            continue
        escaped = value.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        parts.append(f"{label}({escaped})" if default is None else encode_name(f"{label}({escaped})"))
    return parts


def _client_quotas(tree: TreeBuilder) -> DirNode:
    quotas = tree.image.client_quotas
    names = {quota_node_name(entity): entity for entity in quotas}

    def make(name: str) -> Node | None:
        values = quotas.get(names.get(name))
        if values is None:
            return None
        keys = {encode_name(k): k for k in values}
        return kafka_dir(name, lambda: keys.keys(), lambda n: leaf(
            n, lambda: values[keys[n]], lambda: text.quota_text(values[keys[n]])) if n in keys else None)
    return kafka_dir("clientQuotas", lambda: names.keys(), make)


# -- security ------------------------------------------------------------------------------------------

def _acls(tree: TreeBuilder) -> DirNode:
    acls = {uuid_to_kafka(acl_id): (acl_id, acl) for acl_id, acl in tree.image.acls.items()}

    def make(n: str) -> Node | None:
        if n not in acls:
            return None
        acl_id, acl = acls[n]
        return leaf(n, lambda: message_to_jsonable(acl.to_record(acl_id)), lambda: text.acl_text(acl))
    return kafka_dir("byId", lambda: acls.keys(), make)


def _scram(tree: TreeBuilder) -> DirNode:
    """Kafka lists both mechanisms it knows, with users or without."""
    by_mechanism: dict[str, dict[str, tuple[int, str]]] = {name: {} for name in SCRAM_MECHANISMS.values()}
    for mechanism, user in tree.image.scram:
        if mechanism in SCRAM_MECHANISMS:
            by_mechanism[SCRAM_MECHANISMS[mechanism]][encode_name(user)] = (mechanism, user)

    def user_leaf(shown: str, key: tuple[int, str]) -> FileNode:
        credential = tree.image.scram[key]
        return leaf(shown, lambda: tree.scram_json(credential.to_record(*key)),
                    lambda: text.scram_text(credential, redact=not tree.show_secrets))
    return kafka_dir("scram", lambda: by_mechanism.keys(), lambda m: kafka_dir(
        m, lambda: by_mechanism[m].keys(),
        lambda u: user_leaf(u, by_mechanism[m][u]) if u in by_mechanism[m] else None) if m in by_mechanism else None)


def _delegation_tokens(tree: TreeBuilder) -> DirNode:
    tokens = tree.image.delegation_tokens
    shown = {encode_name(token_id): token_id for token_id in tokens}

    def make(n: str) -> Node | None:
        if n not in shown:
            return None
        token = tokens[shown[n]]
        return leaf(n, lambda: message_to_jsonable(token.to_record()), lambda: text.token_text(token))
    return kafka_dir("delegationToken", lambda: shown.keys(), make)
