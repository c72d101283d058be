"""A real cluster's history, written by Apache Kafka, as the comparison tests' data.

Three combined nodes (dynamic quorum), ELR on, ``min.insync.replicas=2``, StandardAuthorizer, and
snapshots every few kilobytes of records. Then, in order (``STEPS``): topics (one with thousands
of partitions), configs at topic, broker and cluster level, client quotas, SCRAM users and ACLs,
idempotent and transactional produce, a reassignment and a preferred leader election, a broker
killed (fencing, ISR shrink, ELR) and brought back, a controlled shutdown, the active controller
killed, and a fourth controller added and removed (KIP-853; from 4.4 also unregistered, KIP-1312,
and one ACL's host is a network, 10.20.0.0/16). Every node is then stopped with
SIGTERM and its directory kept as it is.

The clients are the real ones (confluent-kafka, kafka-python); where they have no call, Kafka's
own tools (add-controller / remove-controller) or, for client quotas and the cluster-wide default
config, one request each in kio's encoding (a JVM of kafka-configs per entity cost 11-17 s).
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from engine.cluster.kafka_dist import version_key
from engine.common.kafka_uuid import uuid_to_kafka
from engine.storage.meta_properties import read_meta_properties

from .cluster import KafkaCluster
from .distribution import KafkaDistribution
from .nodes import KafkaNode, metadata_brokers, wait_until

WIDE_PARTITIONS = 2000
# What a release's default metadata.version (4.4-IV2 for 4.4.0) lets the script do too
CIDR_ACLS = (4, 4, 0)  # ACL hosts as networks (metadata.version 4.4-IV1)
CIDR_HOST = "10.20.0.0/16"
CONTROLLER_UNREGISTRATION = (4, 4, 0)  # `remove-controller --unregister` (KIP-1312, 4.4-IV2)
SNAPSHOT_EVERY_BYTES = 20_000
CLIENT_TIMEOUT_S = 120.0
CONFIG = {
    "min.insync.replicas": "2",
    "default.replication.factor": "3",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
    "allow.everyone.if.no.acl.found": "true",
    "metadata.log.max.record.bytes.between.snapshots": str(SNAPSHOT_EVERY_BYTES),
    "auto.create.topics.enable": "false",
}


@dataclass(frozen=True)
class NodeData:
    """One node's kept directory."""

    node_id: int
    roles: tuple[str, ...]
    log_dir: Path

    @property
    def metadata_dir(self) -> Path:
        return self.log_dir / "__cluster_metadata-0"

    @property
    def segments(self) -> list[Path]:
        return sorted(self.metadata_dir.glob("*.log"))

    @property
    def snapshots(self) -> list[Path]:
        return sorted(self.metadata_dir.glob("*.checkpoint"))


@dataclass
class KafkaHistory:
    dist: KafkaDistribution
    root: Path
    cluster_id: str
    nodes: tuple[NodeData, ...] = ()
    steps: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def version(self) -> str:
        return self.dist.version

    @property
    def voters(self) -> tuple[NodeData, ...]:
        return tuple(n for n in self.nodes if "controller" in n.roles)

    def to_json(self) -> str:
        """What a history written in another process hands back (``--json``)."""
        bridge = self.dist.shell_bridge
        return json.dumps({"version": self.version, "libs": str(self.dist.libs), "root": str(self.root),
                           "shell_release": self.dist.shell_release, "shell_bridge": bridge and str(bridge),
                           "cluster_id": self.cluster_id, "steps": self.steps, "seconds": self.seconds,
                           "nodes": [[n.node_id, list(n.roles), str(n.log_dir)] for n in self.nodes]})

    @classmethod
    def from_json(cls, text: str) -> "KafkaHistory":
        made = json.loads(text)
        bridge = made.get("shell_bridge")
        dist = KafkaDistribution(made["version"], Path(made["libs"]), shell_release=made.get("shell_release"),
                                 shell_bridge=bridge and Path(bridge))
        return cls(dist, Path(made["root"]), made["cluster_id"],
                   tuple(NodeData(node_id, tuple(roles), Path(log_dir)) for node_id, roles, log_dir in made["nodes"]),
                   made["steps"], made["seconds"])


def _admin(cluster: KafkaCluster):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def _done(futures) -> None:
    for future in (futures.values() if isinstance(futures, dict) else [futures]):
        future.result(timeout=CLIENT_TIMEOUT_S)


def create_topics(cluster: KafkaCluster) -> None:
    from confluent_kafka.admin import NewTopic

    admin = _admin(cluster)
    _done(admin.create_topics([
        NewTopic("orders", 6, 3, config={"retention.ms": "86400000"}),
        NewTopic("payments", 3, 3, config={"cleanup.policy": "compact", "min.insync.replicas": "2"}),
        NewTopic("wide", WIDE_PARTITIONS, 1),
        NewTopic("scratch", 2, 3),
    ], operation_timeout=60, request_timeout=CLIENT_TIMEOUT_S))
    # Topics on chosen brokers, through kafka-python (confluent-kafka 2.16 refuses explicit assignments).
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewTopic as KNewTopic

    placed = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=60_000)
    try:
        placed.create_topics([
            # Two replicas under min.insync.replicas=2: one fenced replica puts the other in the ELR.
            KNewTopic("elr", -1, -1, replica_assignments={0: [1, 2], 1: [2, 1], 2: [1, 2]}),
            KNewTopic("moving", -1, -1, replica_assignments={0: [1, 2]}),
        ])
    finally:
        placed.close()
    _done(admin.delete_topics(["scratch"], operation_timeout=60))


def set_configs(cluster: KafkaCluster) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    def entry(name: str, value: str) -> ConfigEntry:
        return ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)

    admin = _admin(cluster)
    _done(admin.incremental_alter_configs([
        ConfigResource(ResourceType.TOPIC, "orders", incremental_configs=[
            entry("retention.ms", "172800000"), entry("max.message.bytes", "2097152")]),
        ConfigResource(ResourceType.BROKER, "1", incremental_configs=[entry("log.cleaner.threads", "2")]),
    ]))


# Client quotas by entity: ((entity type, name or None for the default), ...) -> {key: value}.
QUOTAS: tuple[tuple[tuple[tuple[str, str | None], ...], dict[str, float]], ...] = (
    ((("user", "alice"),), {"producer_byte_rate": 1048576, "consumer_byte_rate": 2097152}),
    ((("user", "bob"), ("client-id", "reporting")), {"request_percentage": 50}),
    ((("client-id", None),), {"producer_byte_rate": 4096}),
    ((("ip", "127.0.0.1"),), {"connection_creation_rate": 25}),
)
# The cluster-wide default broker config (the broker resource with an empty name).
CLUSTER_DEFAULTS = {"log.retention.ms": "259200000", "message.max.bytes": "2000000"}


def alter_quotas_and_cluster_defaults(cluster: KafkaCluster) -> None:
    """AlterClientQuotas and an IncrementalAlterConfigs of the empty-named broker resource, which
    the Python clients cannot send (no AlterClientQuotas; confluent-kafka refuses an empty name):
    one request each, encoded by kio (engine.net.kafka_client), to a broker, which forwards them
    to the active controller. Kafka's kafka-configs would take a JVM per entity (about 11 s for the
    five on two cores); what the controller writes is the same records."""
    from engine.net.kafka_client import request_once
    from engine.records.kio_codec import f64, i8, protocol_module

    quotas = protocol_module("alter_client_quotas", 1, "request")
    answer = request_once(cluster.brokers[0].broker_address, quotas.AlterClientQuotasRequest(
        validate_only=False, entries=tuple(quotas.EntryData(
            entity=tuple(quotas.EntityData(entity_type=kind, entity_name=name) for kind, name in entity),
            ops=tuple(quotas.OpData(key=key, value=f64(float(value)), remove=False)
                      for key, value in ops.items()))
            for entity, ops in QUOTAS)), timeout_ms=int(CLIENT_TIMEOUT_S * 1000))
    failed = [(e.error_code, e.error_message) for e in answer.entries if e.error_code != 0]
    assert not failed, f"AlterClientQuotas refused: {failed}"
    configs = protocol_module("incremental_alter_configs", 1, "request")
    answer = request_once(cluster.brokers[0].broker_address, configs.IncrementalAlterConfigsRequest(
        validate_only=False, resources=(configs.AlterConfigsResource(
            resource_type=i8(4), resource_name="", configs=tuple(  # 4: BROKER; 0: SET
                configs.AlterableConfig(name=name, config_operation=i8(0), value=value)
                for name, value in CLUSTER_DEFAULTS.items())),)), timeout_ms=int(CLIENT_TIMEOUT_S * 1000))
    failed = [(r.error_code, r.error_message) for r in answer.responses if r.error_code != 0]
    assert not failed, f"IncrementalAlterConfigs of the cluster default refused: {failed}"


def add_quotas_users_acls(cluster: KafkaCluster) -> None:
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, ResourcePatternType,
                                       ResourceType, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)

    alter_quotas_and_cluster_defaults(cluster)
    admin = _admin(cluster)
    # One alteration per user and request (Kafka refuses a user altered twice in one request).
    for upsert in ([UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
                                                 b"alice-secret", b"salt-alice"),
                    UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                                 b"bob-secret")],
                   [UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                                 b"alice-secret")]):
        _done(admin.alter_user_scram_credentials(upsert))
    _done(admin.create_acls([
        AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "pay", ResourcePatternType.PREFIXED, "User:bob", "127.0.0.1",
                   AclOperation.WRITE, AclPermissionType.ALLOW),
        AclBinding(ResourceType.GROUP, "*", ResourcePatternType.LITERAL, "User:mallory", "*",
                   AclOperation.ALL, AclPermissionType.DENY),
        AclBinding(ResourceType.TRANSACTIONAL_ID, "payments-tx", ResourcePatternType.LITERAL, "User:alice", "*",
                   AclOperation.WRITE, AclPermissionType.ALLOW),
        # librdkafka's BROKER is Kafka's CLUSTER resource type (4).
        AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:ops", "*",
                   AclOperation.ALTER_CONFIGS, AclPermissionType.ALLOW),
    ]))
    if version_key(cluster.dist.version) >= CIDR_ACLS:  # a host given as a network (4.4-IV1 and up)
        _done(admin.create_acls([AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:carol",
                                            CIDR_HOST, AclOperation.DESCRIBE, AclPermissionType.ALLOW)]))


def produce(cluster: KafkaCluster) -> None:
    from confluent_kafka import Producer

    idempotent = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True,
                           "acks": "all", "linger.ms": 5})
    for i in range(200):
        idempotent.produce("orders", key=str(i % 6).encode(), value=f"order-{i}".encode())
    assert idempotent.flush(CLIENT_TIMEOUT_S) == 0, "idempotent producer: messages left unsent"
    transactional = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "payments-tx",
                              "acks": "all"})
    transactional.init_transactions(CLIENT_TIMEOUT_S)
    for committed in (True, False):
        transactional.begin_transaction()
        for i in range(20):
            transactional.produce("payments", key=str(i).encode(), value=b"paid" if committed else b"void")
        assert transactional.flush(CLIENT_TIMEOUT_S) == 0, "transactional producer: messages left unsent"
        if committed:
            transactional.commit_transaction(CLIENT_TIMEOUT_S)
        else:
            transactional.abort_transaction(CLIENT_TIMEOUT_S)


def partition_replicas(cluster: KafkaCluster, topic: str) -> dict[int, tuple[list[int], list[int], int]]:
    """Partition -> (replicas, isr, leader) from a broker's Metadata answer."""
    metadata = _admin(cluster).list_topics(topic, timeout=CLIENT_TIMEOUT_S)
    return {p.id: (list(p.replicas), list(p.isrs), p.leader) for p in metadata.topics[topic].partitions.values()}


def reassign_and_elect(cluster: KafkaCluster) -> None:
    from confluent_kafka import ElectionType, TopicPartition
    from kafka import TopicPartition as KTopicPartition
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=60_000)
    try:
        errors = admin.alter_partition_reassignments({KTopicPartition("moving", 0): [3, 2]})
        assert not any(errors.values()), f"reassignment refused: {errors}"
        wait_until(lambda: partition_replicas(cluster, "moving")[0][0] == [3, 2], "moving-0 on [3, 2]",
                   cluster.live_nodes())
        # orders-0 gets a new replica order, so its preferred leader (the first) changes.
        replicas = partition_replicas(cluster, "orders")[0][0]
        rotated = replicas[1:] + replicas[:1]
        admin.alter_partition_reassignments({KTopicPartition("orders", 0): rotated})
        wait_until(lambda: partition_replicas(cluster, "orders")[0][0] == rotated, "orders-0 reordered",
                   cluster.live_nodes())
    finally:
        admin.close()
    elector = _admin(cluster)  # kept in a name: a collected client cancels its futures
    elector.elect_leaders(ElectionType.PREFERRED, [TopicPartition("orders", 0)]).result(CLIENT_TIMEOUT_S)
    wait_until(lambda: partition_replicas(cluster, "orders")[0][2] == rotated[0], "orders-0 preferred leader",
               cluster.live_nodes())


def _not_in_isr(cluster: KafkaCluster, node_id: int, topic: str) -> Callable[[], bool]:
    return lambda: all(node_id not in isr for _, isr, _ in partition_replicas(cluster, topic).values())


def _in_isr(cluster: KafkaCluster, node_id: int, topic: str) -> Callable[[], bool]:
    return lambda: all(node_id in isr for replicas, isr, _ in partition_replicas(cluster, topic).values()
                       if node_id in replicas)


def _follower(cluster: KafkaCluster, *, among: tuple[int, ...] = (1, 2, 3)) -> KafkaNode:
    """A node that is not the active controller (so a broker story stays a broker story)."""
    leader = cluster.wait_leader()
    return next(cluster.node(i) for i in among if i != leader)


def kill_broker(cluster: KafkaCluster) -> None:
    """SIGKILL: the broker is fenced, leaves the ISRs, and the 'elr' partitions fill their ELR."""
    victim = _follower(cluster, among=(2, 1))
    others = [n for n in cluster.brokers if n is not victim]
    victim.kill()
    wait_until(lambda: victim.node_id not in metadata_brokers(others[0].broker_address),
               f"broker {victim.node_id} fenced", others)
    wait_until(_not_in_isr(cluster, victim.node_id, "elr"), f"broker {victim.node_id} out of the ISRs", others)
    cluster.restart(victim)
    wait_until(_in_isr(cluster, victim.node_id, "elr"), f"broker {victim.node_id} back in the ISRs",
               cluster.live_nodes())


def controlled_shutdown(cluster: KafkaCluster) -> None:
    victim = _follower(cluster, among=(3, 1, 2))
    victim.stop()
    cluster.restart(victim)
    wait_until(_in_isr(cluster, victim.node_id, "orders"), f"broker {victim.node_id} back in the ISRs",
               cluster.live_nodes())


def kill_active_controller(cluster: KafkaCluster) -> None:
    old = cluster.wait_leader()
    cluster.node(old).kill()
    wait_until(lambda: cluster.leader_id() not in (-1, old), "a new active controller", cluster.live_nodes())
    cluster.restart(cluster.node(old))


def add_and_remove_controller(cluster: KafkaCluster) -> None:
    """KIP-853: a fourth controller joins as an observer, is added as a voter, then removed."""
    from engine.net.ports import pick_ports

    # Formatted with --no-initial-controllers: Kafka's formatter chooses its directory id.
    node = KafkaNode(cluster.dist, 4, ("controller",), cluster.root / "node-4", None, pick_ports(1)[0])
    node.config = cluster.node_config(node)
    node.write_config()
    cluster.dist.run("kafka-storage", "format", "-t", cluster.cluster_id, "-c", str(node.config_path),
                     "--no-initial-controllers")
    cluster.nodes.append(node)
    node.start()
    quorum = ("kafka-metadata-quorum", "--bootstrap-controller", cluster.bootstrap_controllers)

    def voters() -> set[int]:  # asked with our DescribeQuorum client: a JVM per poll would cost seconds
        from engine.admin.quorum_client import default_send, find_leader

        _, info = find_leader(cluster.controller_addresses, default_send(5000))
        return {int(v.replica_id) for v in info.voters}

    wait_until(lambda: cluster.dist.run(*quorum, "--command-config", str(node.config_path), "add-controller",
                                        check=False).returncode == 0, "add-controller accepted", cluster.live_nodes())
    wait_until(lambda: 4 in voters(), "controller 4 a voter", cluster.live_nodes())
    directory_id = _meta_directory_id(node)
    if version_key(cluster.dist.version) < CONTROLLER_UNREGISTRATION:
        # retried as the add is: on a loaded machine the leader may change between our DescribeQuorum
        # and the tool's request, and a new leader may not have the added voter committed yet
        wait_until(lambda: cluster.dist.run(*quorum, "remove-controller", "--controller-id", "4",
                                            "--controller-directory-id", directory_id, check=False).returncode == 0
                   or 4 not in voters(), "remove-controller accepted", cluster.live_nodes())
        wait_until(lambda: 4 not in voters(), "controller 4 removed", cluster.live_nodes())
        node.stop()
        return
    # From 4.4 (KIP-1312) the tool also unregisters it: an UnregisterControllerRecord in the log. It
    # is stopped first, as an operator would: a running controller registers itself again at once.
    node.stop()
    cluster.dist.run(*quorum, "remove-controller", "--controller-id", "4", "--controller-directory-id", directory_id,
                     "--unregister")
    wait_until(lambda: 4 not in voters(), "controller 4 removed", cluster.live_nodes())


def _meta_directory_id(node: KafkaNode) -> str:
    """The directory id kafka-storage format gave the node (meta.properties of its log dir)."""
    return uuid_to_kafka(read_meta_properties(node.log_dir).directory_id)


STEPS: tuple[tuple[str, Callable[[KafkaCluster], None]], ...] = (
    ("create topics (one of 2000 partitions) and delete one", create_topics),
    ("configs at topic and broker level", set_configs),
    ("a cluster-wide config, client quotas, SCRAM users, ACLs", add_quotas_users_acls),
    ("idempotent and transactional produce", produce),
    ("reassignment and preferred leader election", reassign_and_elect),
    ("SIGKILL a broker and bring it back", kill_broker),
    ("SIGTERM a broker (controlled shutdown) and restart it", controlled_shutdown),
    ("SIGKILL the active controller and restart it", kill_active_controller),
    ("add and remove a fourth controller", add_and_remove_controller),
)


# For a release served without its tools: every step that needs none of Kafka's command-line tools.
SERVER_ONLY_STEPS = tuple(step for step in STEPS if step[1] is not add_and_remove_controller)


def write_history(dist: KafkaDistribution, root: Path,
                  steps: tuple[tuple[str, Callable[[KafkaCluster], None]], ...] = STEPS) -> KafkaHistory:
    """Run the script on a new cluster under ``root``; every node stopped at the end."""
    started = time.monotonic()
    cluster = KafkaCluster(dist, root, voters=3, combined=True, quorum="dynamic", config=CONFIG)
    history = KafkaHistory(dist, root, cluster.cluster_id)
    try:
        cluster.start()
        for name, step in steps:
            began = time.monotonic()
            step(cluster)
            history.steps.append(f"{name} ({time.monotonic() - began:.1f} s)")
        cluster.stop()
    except BaseException:
        cluster.close()
        raise
    history.cluster_id = cluster.cluster_id
    history.nodes = tuple(NodeData(n.node_id, n.roles, n.log_dir) for n in cluster.nodes)
    history.seconds = time.monotonic() - started
    return history


if __name__ == "__main__":  # python -m kafka_peer.history VERSION DIR [--server-only] [--json FILE] (from tests/)
    import sys

    from .distribution import fetch

    args = sys.argv[1:]
    summary = Path(args.pop(args.index("--json") + 1)) if "--json" in args else None
    server_only = "--server-only" in args
    version, where = [a for a in args if not a.startswith("--")]
    made = write_history(fetch(version, tools=not server_only), Path(where),
                         SERVER_ONLY_STEPS if server_only else STEPS)
    if summary is not None:  # for the test session that asked (kafka_peer.fixtures)
        summary.write_text(made.to_json())
    print(f"Kafka {made.version}: {len(made.steps)} steps in {made.seconds:.0f} s under {made.root}")
    print("\n".join(made.steps))
    subprocess.run(["du", "-sh", str(made.root)], check=False)
