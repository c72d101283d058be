"""``/image``: the same data in the layout of Kafka's own ``kafka-metadata-shell`` (3.6+),
so runbooks written for Kafka's tool work unchanged.

    /image/provenance, /image/features/{metadataVersion, [zkMigrationState], finalized_<name>},
    /image/cluster/{brokers,controllers}/<id>, /image/topics/{byName/<name>, byId/<uuid>}/{name,id,<p>},
    /image/configs/<TYPE>[:<name>]/<key>, /image/clientQuotas/<entity>/<key>,
    /image/producerIds/nextProducerId, /image/acls/byId/<uuid>, /image/scram/<mechanism>/<user>,
    /image/delegationToken/<id>

Values are our JSON, where Kafka's tool prints Java objects' toString(). Names are encoded as
metashell.tree.nodes says (Kafka's tool shows them raw, so a name with ``/`` cannot be reached there).
tests/metashell/tree/test_kafka_metadata_shell.py compares this tree with Kafka's tool's, path by path and field
by field. Where ours differs on purpose: a quota entity with a default part (Kafka leaves the part
out of the name, so the entity reads as another or, all default, cannot be opened) is
``clientId(<default>)``; zkMigrationState is shown only where a ZkMigrationStateRecord was
read (Kafka 4.x has none); SCRAM keys are redacted unless --show-secrets.
"""

from __future__ import annotations

from engine.common.config_resource import config_resource_type_name
from engine.image.metadata_version import version_name
from metashell.tree.kafka_names import SCRAM_MECHANISMS, ZK_MIGRATION_STATES, human_registration
from metashell.tree.nodes import DEFAULT_NAME, DirNode, FileNode, Node, encode_name, keyed_dir, name_to_int, static_dir
from metashell.tree.tree_layout import TreeBuilder


def image_dir(tree: TreeBuilder) -> DirNode:
    image = tree.image
    return static_dir("image", {
        "provenance": lambda: FileNode("provenance", lambda: image.provenance._asdict()),
        "features": lambda: _features(tree),
        "cluster": lambda: static_dir("cluster", {
            "brokers": lambda: _leaves("brokers", image.cluster.brokers),
            "controllers": lambda: _leaves("controllers", image.cluster.controllers)}),
        "topics": lambda: static_dir("topics", {"byName": _renamed(lambda: _kafka_topics(tree.topics()), "byName"),
                                                "byId": _renamed(lambda: _kafka_topics(tree.topic_ids()), "byId")}),
        "configs": lambda: _configs(tree),
        "clientQuotas": lambda: _client_quotas(tree),
        "producerIds": lambda: static_dir("producerIds", {
            "nextProducerId": lambda: FileNode("nextProducerId", lambda: image.producer_ids.next_producer_id)}),
        "acls": lambda: static_dir("acls", {"byId": _renamed(tree.acls, "byId")}),
        "scram": lambda: _scram(tree),
        "delegationToken": _renamed(tree.delegation_tokens, "delegationToken"),
    })


def _leaves(name: str, registrations) -> DirNode:
    """Kafka's tool shows each registration as one leaf; here, its fields as JSON."""
    def make(text: str) -> Node | None:
        node_id = name_to_int(text)
        if node_id not in registrations:
            return None
        return FileNode(text, lambda: _registration_json(registrations[node_id]), human_registration)
    return DirNode(name, lambda: map(str, registrations), make)


def _registration_json(registration) -> dict:
    from engine.common.kafka_uuid import uuid_to_kafka

    data = registration._asdict()
    data["incarnation_id"] = uuid_to_kafka(registration.incarnation_id)
    data["endpoints"] = [e._asdict() for e in registration.endpoints]
    data["supported_features"] = {f.name: [f.min_version, f.max_version] for f in registration.supported_features}
    if "directories" in data:
        data["directories"] = [uuid_to_kafka(d) for d in registration.directories]
    if data.get("cordoned_directories") is not None:
        data["cordoned_directories"] = [uuid_to_kafka(d) for d in registration.cordoned_directories]
    return data


def _kafka_topics(topics: DirNode) -> DirNode:
    """Kafka's topic node has name, id and the partitions; our configs/ lives elsewhere there."""
    def make(name: str) -> Node | None:
        topic = topics.child(name)
        if topic is None:
            return None
        return DirNode(name, lambda: [n for n in topic.child_names() if n != "configs"],
                       lambda n: topic.child(n) if n != "configs" else None)
    return DirNode(topics.name, topics.child_names, make)


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
        return keyed_dir(name, values, lambda shown, key: FileNode(shown, lambda: values[key]))
    return DirNode("clientQuotas", lambda: names.keys(), make)


def _scram(tree: TreeBuilder) -> DirNode:
    """Kafka lists every mechanism it knows, with users or without."""
    users = tree.scram()
    mechanisms = set(SCRAM_MECHANISMS.values())

    def make(name: str) -> Node | None:
        return users.child(name) or (static_dir(name, {}) if name in mechanisms else None)
    return DirNode("scram", lambda: mechanisms | set(users.child_names()), make)


def _renamed(make, name: str):
    def build() -> Node:
        node = make()
        node.name = name
        return node
    return build


def _features(tree: TreeBuilder) -> DirNode:
    image = tree.image
    files = {"metadataVersion": lambda: version_name(image.metadata_version) if image.metadata_version else None}
    zk_migration_state = image.features.zk_migration_state
    if zk_migration_state is not None:
        # Kafka 3.x shows it; 4.0-4.2 list it without a node behind it, 4.3 not at all (no ZK any more):
        # shown where a ZkMigrationStateRecord says something
        files["zkMigrationState"] = lambda: ZK_MIGRATION_STATES.get(zk_migration_state, "NONE")
    files.update({encode_name(f"finalized_{name}"): (lambda level=level: level)
                  for name, level in image.features.items() if name != "metadata.version"})
    return DirNode("features", lambda: files.keys(), lambda n: FileNode(n, files[n]) if n in files else None)


def _configs(tree: TreeBuilder) -> DirNode:
    names = {}
    for resource in tree.image.configs:
        type_name = config_resource_type_name(resource.type)
        names[type_name if resource.name == "" else encode_name(f"{type_name}:{resource.name}")] = resource
    return DirNode("configs", lambda: names.keys(),
                   lambda n: tree.config_dir(n, names[n]) if n in names else None)
