"""The layout of the metadata filesystem over an image (names are part of the interface).

    /brokers/<id>/        registration fields, state, endpoints, features, directories and the cordoned
                          ones, leader-of, replica-of
    /controllers/<id>/    registration fields
    /topics/<name>/       id, configs/, and one file per partition (its JSON)
    /topic-ids/<uuid>/    the same topic, by id
    /quorum/              leader, epoch, kraft-version, read-end-offset, voters/<id>/, leader-changes/<n>
    /features/<name>      finalized levels
    /configs/<TYPE>/<name>/<key>
    /client-quotas/<entity>/<key>, /acls/<uuid>, /scram/<mechanism>/<user>,
    /delegation-tokens/<id>, /producer-ids, /local/ (where the image came from)
    /metrics/<Name>       Kafka's controller metrics of the image (engine.controller.controller_metrics)
    /image/...            the layout of Kafka's kafka-metadata-shell (metashell/tree/image_layout.py)

Names from the image (topics, users, config keys, groups, quota entities) are encoded as
metashell.tree.nodes says, so that every name shown can be typed back. Files hold Kafka's
numbers; their ``human`` functions name the enums (metashell.tree.kafka_names).

Secrets are redacted unless ``show_secrets``: SCRAM salts and keys, and config values
whose names say they are passwords, keys or JAAS configs.

What a path shows, in change-set terms (``shown_domains``), is kept here beside the layout: the
live shell's ``watch`` prints a path again only when a change set reaches it, and a refreshed
tree keeps the leadership maps a change set left as they were (``TreeBuilder.carried``).
"""

from __future__ import annotations

import base64
from typing import Any, Callable

from engine.common.kafka_uuid import kafka_to_uuid, uuid_to_kafka
from engine.controller.controller_metrics import EXTRA_METRIC_NAMES, KAFKA_METRIC_NAMES, controller_metrics
from engine.common.config_resource import ConfigResource, config_resource_type_name, topic_resource
from engine.image.metadata_image import MetadataImage
from engine.image.change_set import ChangeSet
from engine.image.metadata_loader import LoadInfo
from engine.image.partition_registration import PartitionRegistration
from engine.records.record_json import message_to_jsonable
from metashell.tree.kafka_names import (SCRAM_MECHANISMS, human_acl, human_directories, human_endpoints,
                                        human_feature, human_partition, human_scram)
from metashell.tree.nodes import (DEFAULT_NAME, DirNode, FileNode, Node, encode_name, keyed_dir, name_to_int,
                                  split_path, static_dir)

REDACTED = "[redacted]"
BROKER_STATES = "BrokerRegistrationState"
_SECRET_MARKERS = ("password", "secret", "jaas", "keystore.key", "private.key", "credentials")


def is_secret_config(key: str) -> bool:
    return any(marker in key.lower() for marker in _SECRET_MARKERS)


def redact_record_json(data: dict) -> dict:
    """A record's JSON (as record_json makes it) with its secrets replaced: SCRAM salts and keys,
    secret config values."""
    kind, fields = data.get("type"), data.get("data")
    if kind == "USER_SCRAM_CREDENTIAL_RECORD" and fields:
        fields = {**fields, "salt": REDACTED, "storedKey": REDACTED, "serverKey": REDACTED}
    elif kind == "CONFIG_RECORD" and fields and fields.get("value") is not None \
            and is_secret_config(fields.get("name", "")):
        fields = {**fields, "value": REDACTED}
    else:
        return data
    return {**data, "data": fields}


def partition_json(topic_id: Any, partition_id: int, p: PartitionRegistration) -> dict:
    return {"partitionId": partition_id, "topicId": uuid_to_kafka(topic_id), "replicas": list(p.replicas),
            "isr": list(p.isr), "removingReplicas": list(p.removing_replicas),
            "addingReplicas": list(p.adding_replicas), "leader": p.leader,
            "leaderRecoveryState": p.leader_recovery_state, "leaderEpoch": p.leader_epoch,
            "partitionEpoch": p.partition_epoch, "directories": [uuid_to_kafka(d) for d in p.directories],
            "eligibleLeaderReplicas": list(p.elr), "lastKnownElr": list(p.last_known_elr)}


class TreeBuilder:
    """Builds the nodes of one image; every node reads the image only when asked."""

    def __init__(self, image: MetadataImage, info: LoadInfo | None = None, show_secrets: bool = False):
        self.image, self.info, self.show_secrets = image, info, show_secrets
        self._leadership: tuple[dict, dict] | None = None

    @property
    def holds_work(self) -> bool:
        """Something was computed over the whole image that ``carried`` could keep."""
        return self._leadership is not None

    def carried(self, image: MetadataImage, info: LoadInfo | None, changes: ChangeSet | None) -> TreeBuilder:
        """A builder over ``image``, the one ``changes`` led to from this builder's, keeping what
        they left as it was: the leadership maps when no topic or partition changed (a live shell's
        refresh on NoOpRecords or broker heartbeats). ``changes`` None (unknown): nothing is kept."""
        tree = TreeBuilder(image, info, self.show_secrets)
        if changes is not None and not changes.topics and not changes.partitions:
            tree._leadership = self._leadership
        return tree

    # -- brokers and controllers ---------------------------------------------------

    def brokers(self) -> DirNode:
        brokers = self.image.cluster.brokers
        return DirNode("brokers", lambda: map(str, brokers),
                       lambda n: self.broker(name_to_int(n)) if name_to_int(n) in brokers else None)

    def broker(self, broker_id: int) -> DirNode:
        b = self.image.cluster.brokers[broker_id]
        return _files(str(broker_id), {
            "id": lambda: b.id, "epoch": lambda: b.epoch, "incarnation-id": lambda: uuid_to_kafka(b.incarnation_id),
            "state": lambda: b.state, "fenced": lambda: b.fenced, "in-controlled-shutdown": lambda: b.in_controlled_shutdown,
            "rack": lambda: b.rack, "endpoints": lambda: [_endpoint_json(e) for e in b.endpoints],
            "features": lambda: {f.name: [f.min_version, f.max_version] for f in b.supported_features},
            "directories": lambda: [uuid_to_kafka(d) for d in b.directories],
            # KIP-1066 (Kafka 4.3+): null until the broker reported which, [] when none is cordoned
            "cordoned-directories": lambda: (None if b.cordoned_directories is None
                                             else [uuid_to_kafka(d) for d in b.cordoned_directories]),
            "leader-of": lambda: self.leadership()[0].get(broker_id, []),
            "replica-of": lambda: self.leadership()[1].get(broker_id, []),
        }, {"endpoints": human_endpoints, "directories": human_directories, "cordoned-directories": human_directories})

    def leadership(self) -> tuple[dict, dict]:
        """broker -> partitions it leads, broker -> partitions it hosts ("topic-partition")."""
        if self._leadership is None:
            leads: dict[int, list[str]] = {}
            hosts: dict[int, list[str]] = {}
            for topic in self.image.topics.by_id.values():
                for pid, p in topic.partitions.items():
                    name = f"{topic.name}-{pid}"
                    if p.leader >= 0:
                        leads.setdefault(p.leader, []).append(name)
                    for replica in p.replicas:
                        hosts.setdefault(replica, []).append(name)
            self._leadership = (leads, hosts)
        return self._leadership

    def controllers(self) -> DirNode:
        controllers = self.image.cluster.controllers

        def make(n: str) -> Node | None:
            c = controllers.get(name_to_int(n))
            return None if c is None else _files(n, {
                "id": lambda: c.id, "incarnation-id": lambda: uuid_to_kafka(c.incarnation_id),
                "zk-migration-ready": lambda: c.zk_migration_ready,
                "endpoints": lambda: [_endpoint_json(e) for e in c.endpoints],
                "features": lambda: {f.name: [f.min_version, f.max_version] for f in c.supported_features}},
                {"endpoints": human_endpoints})
        return DirNode("controllers", lambda: map(str, controllers), make)

    # -- topics ---------------------------------------------------------------------------

    def topics(self) -> DirNode:
        topics = self.image.topics
        return keyed_dir("topics", topics.by_name, lambda shown, name: self.topic(topics.by_name[name], shown))

    def topic_ids(self) -> DirNode:
        topics = self.image.topics

        def make(text: str) -> Node | None:
            try:
                topic_id = kafka_to_uuid(text)
            except ValueError:
                return None
            return self.topic(topic_id, text) if topic_id in topics.by_id else None
        return DirNode("topic-ids", lambda: (uuid_to_kafka(t) for t in topics.by_id), make)

    def topic(self, topic_id: Any, name: str) -> DirNode:
        topic = self.image.topics.by_id[topic_id]
        fixed = {"id": lambda: FileNode("id", lambda: uuid_to_kafka(topic_id)),
                 "name": lambda: FileNode("name", lambda: topic.name),
                 "configs": lambda: self.config_dir("configs", topic_resource(topic.name))}

        def make(n: str) -> Node | None:
            if n in fixed:
                return fixed[n]()
            pid = name_to_int(n)
            if pid in topic.partitions:
                return FileNode(n, lambda: partition_json(topic_id, pid, topic.partitions[pid]), human_partition)
            return None
        return DirNode(name, lambda: [*fixed, *map(str, topic.partitions)], make)

    # -- configs, features, security ---------------------------------------------------------

    def config_dir(self, name: str, resource: ConfigResource) -> DirNode:
        values = self.image.configs.config_map(resource)
        return keyed_dir(name, values, lambda shown, key: FileNode(shown, lambda: self._config_value(key, values[key])))

    def _config_value(self, key: str, value: str) -> str:
        return REDACTED if is_secret_config(key) and not self.show_secrets else value

    def configs(self) -> DirNode:
        by_type: dict[str, dict[str, ConfigResource]] = {}
        for resource in self.image.configs:
            by_type.setdefault(config_resource_type_name(resource.type), {})[
                encode_name(resource.name) if resource.name else DEFAULT_NAME] = resource
        return DirNode("configs", lambda: by_type.keys(), lambda t: DirNode(
            t, lambda: by_type[t].keys(), lambda n: self.config_dir(n, by_type[t][n]) if n in by_type[t] else None)
            if t in by_type else None)

    def features(self) -> DirNode:
        levels = self.image.features
        return keyed_dir("features", levels, lambda shown, name: FileNode(
            shown, lambda: levels[name], lambda level: human_feature(name, level)))

    def client_quotas(self) -> DirNode:
        entities = {quota_entity_name(e): e for e in self.image.client_quotas}
        return DirNode("client-quotas", lambda: entities.keys(), lambda n: _map_dir(
            n, self.image.client_quotas[entities[n]]) if n in entities else None)

    def acls(self) -> DirNode:
        acls = {uuid_to_kafka(k): (k, v) for k, v in self.image.acls.items()}
        return keyed_dir("acls", acls, lambda shown, key: FileNode(
            shown, lambda: message_to_jsonable(acls[key][1].to_record(acls[key][0])), human_acl))

    def scram(self) -> DirNode:
        by_mechanism: dict[str, dict[str, Any]] = {}
        for (mechanism, user), credential in self.image.scram.items():
            by_mechanism.setdefault(SCRAM_MECHANISMS.get(mechanism, str(mechanism)), {})[user] = \
                credential.to_record(mechanism, user)
        return keyed_dir("scram", by_mechanism, lambda shown, m: keyed_dir(
            shown, by_mechanism[m],
            lambda user_shown, user: FileNode(user_shown, lambda: self.scram_json(by_mechanism[m][user]),
                                              human_scram)))

    def scram_json(self, record: Any) -> dict:
        """A UserScramCredentialRecord's JSON, its salt and keys in base64 or redacted."""
        data = message_to_jsonable(record)
        for key in ("salt", "storedKey", "serverKey"):
            data[key] = base64.b64encode(getattr(record, _snake(key))).decode() if self.show_secrets else REDACTED
        return data

    def delegation_tokens(self) -> DirNode:
        tokens = self.image.delegation_tokens
        return keyed_dir("delegation-tokens", tokens, lambda shown, token_id: FileNode(
            shown, lambda: message_to_jsonable(tokens[token_id].to_record())))

    # -- quorum and local -----------------------------------------------------------------

    def quorum(self) -> DirNode:
        q = self.image.quorum
        state = self.info.quorum_state if self.info else None
        leader = q.leader
        changes = {str(i): c for i, c in enumerate(q.leader_changes)}
        voters = quorum_voters(self.image, self.info)
        return static_dir("quorum", {
            "leader": lambda: FileNode("leader", lambda: leader.leader_id if leader else
                                       (state.leader_id if state else -1)),
            "epoch": lambda: FileNode("epoch", lambda: leader.epoch if leader else (state.leader_epoch if state else -1)),
            "kraft-version": lambda: FileNode("kraft-version", lambda: q.kraft_version or 0),
            # offline the high watermark is unknown: what there is, is how far the log was read
            "read-end-offset": lambda: FileNode("read-end-offset", lambda: self.info.end_offset if self.info else None),
            "voters": lambda: DirNode("voters", lambda: map(str, voters), lambda n: _files(n, {
                "id": lambda: voters[int(n)]["id"], "directory-id": lambda: voters[int(n)]["directoryId"],
                "endpoints": lambda: voters[int(n)]["endpoints"], "source": lambda: voters[int(n)]["source"],
            }) if name_to_int(n) in voters else None),
            # observers are known only to a live leader (DescribeQuorum); offline the directory is empty
            "observers": lambda: static_dir("observers", {}),
            "leader-changes": lambda: DirNode("leader-changes", lambda: changes.keys(), lambda n: FileNode(
                n, lambda: changes[n]._asdict()) if n in changes else None),
        })

    def metrics(self) -> DirNode:
        """One file per metric, named as Kafka names it, and BrokerRegistrationState/<broker id>;
        counted (one pass over the partitions) when first read, not when listed."""
        files = {name: field for field, name in {**KAFKA_METRIC_NAMES, **EXTRA_METRIC_NAMES}.items()}
        computed: list = []

        def metrics() -> Any:
            if not computed:
                computed.append(controller_metrics(self.image))
            return computed[0]

        def child(n: str) -> Node | None:
            if n == BROKER_STATES:
                return DirNode(n, lambda: (str(b) for b, _ in metrics().broker_registration_states),
                               lambda b: FileNode(b, lambda: dict(metrics().broker_registration_states)[int(b)])
                               if name_to_int(b) in dict(metrics().broker_registration_states) else None)
            return FileNode(n, lambda: getattr(metrics(), files[n])) if n in files else None
        return DirNode("metrics", lambda: sorted([*files, BROKER_STATES]), child)

    def local(self) -> DirNode:
        info = self.info
        if info is None:
            return static_dir("local", {})
        return _files("local", {
            "version": _tool_version,
            "source": lambda: str(info.source),
            "snapshot": lambda: info.snapshot.file_name if info.snapshot else None,
            "end-offset": lambda: info.end_offset, "log-end-offset": lambda: info.log_end_offset,
            "cluster-id": lambda: info.meta.cluster_id if info.meta else None,
            "node-id": lambda: info.meta.node_id if info.meta else None,
            "last-offset": lambda: self.image.provenance.last_offset,
            "last-timestamp-ms": lambda: self.image.provenance.last_timestamp_ms,
        })


# The change-set domains (engine/image/change_set.py) each top directory shows; missing: the
# log's position or the whole image too (/quorum's read-end-offset, /local, /metrics, /image).
_SHOWN_DOMAINS = {
    "brokers": frozenset({"brokers"}), "controllers": frozenset({"controllers"}),
    "topics": frozenset({"topics", "partitions", "configs"}), "topic-ids": frozenset({"topics", "partitions", "configs"}),
    "features": frozenset({"features"}), "configs": frozenset({"configs"}),
    "client-quotas": frozenset({"client_quotas"}), "acls": frozenset({"acls"}), "scram": frozenset({"scram"}),
    "delegation-tokens": frozenset({"tokens"}), "producer-ids": frozenset({"producer_ids"}),
}
_BROKER_LEADERSHIP = frozenset({"brokers", "topics", "partitions"})  # leader-of, replica-of: partitions' names


def shown_domains(path: str) -> frozenset[str] | None:
    """The change-set domains (and single values: ``producer_ids``, ...) whose changes can alter
    what absolute ``path`` shows; None when it shows more than a change set says (the log's
    position, the whole image). ``/`` lists fixed names: nothing changes it."""
    parts = split_path(path)
    if not parts:
        return frozenset()
    if parts[0] == "brokers" and len(parts) >= 3 and parts[2] in ("leader-of", "replica-of"):
        return _BROKER_LEADERSHIP
    return _SHOWN_DOMAINS.get(parts[0])


def reaches(changes: ChangeSet | None, path: str) -> bool:
    """Whether ``changes`` may alter what ``path`` shows (``changes`` None, unknown: it may)."""
    domains = shown_domains(path)
    return changes is None or domains is None or any(getattr(changes, domain) for domain in domains)


def quorum_voters(image: MetadataImage, info: LoadInfo | None) -> dict[int, dict]:
    """The voters, from the best source there is: the log's VotersRecord (KIP-853), else the
    last leader change's voter set, else quorum-state's currentVoters (data_version 0)."""
    q = image.quorum
    if q.voters:
        return {v.id: {"id": v.id, "directoryId": uuid_to_kafka(v.directory_id),
                       "endpoints": [{"name": n, "host": h, "port": p} for n, h, p in v.endpoints],
                       "source": "VotersRecord"} for v in q.voters}
    if q.leader is not None:
        return {v: {"id": v, "directoryId": None, "endpoints": [], "source": "LeaderChangeMessage"}
                for v in q.leader.voters}
    state = info.quorum_state if info else None
    if state is not None and state.current_voters:
        return {v: {"id": v, "directoryId": None, "endpoints": [], "source": "quorum-state"}
                for v in state.current_voters}
    return {}


def _tool_version() -> str:
    """This tool's version, as Kafka's shell shows its own under /local/version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("metashell")
    except PackageNotFoundError:
        return "unknown"


def quota_entity_name(entity: tuple) -> str:
    """``client-id=<default>,user=alice``: each part's name encoded, so that a ``,`` or ``=`` in a
    name (``user=CN=kafka,OU=ops``) cannot be read as a separator."""
    return ",".join(f"{encode_name(t)}={DEFAULT_NAME if n is None else encode_name(n)}" for t, n in entity)


def _files(name: str, getters: dict[str, Callable[[], Any]],
           human: dict[str, Callable[[Any], Any]] | None = None) -> DirNode:
    human = human or {}
    return DirNode(name, lambda: getters.keys(),
                   lambda n: FileNode(n, getters[n], human.get(n)) if n in getters else None)


def _endpoint_json(endpoint: Any) -> dict:
    return {"name": endpoint.name, "host": endpoint.host, "port": endpoint.port,
            "securityProtocol": endpoint.security_protocol}


def _map_dir(name: str, values: Any) -> DirNode:
    return keyed_dir(name, values, lambda shown, key: FileNode(shown, lambda: values[key]))


def _snake(camel: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in camel)
