"""Scripted metadata changes made through Kafka's own clients and tools, for the recorder tests.

Topics, topic configs, ACLs and SCRAM credentials through confluent-kafka's AdminClient (librdkafka,
to the broker, which forwards to the active controller); client quotas through Kafka's own
``kafka-configs`` (no Python client sends AlterClientQuotas); voter changes through Kafka's own
``kafka-metadata-quorum add-controller`` / ``remove-controller`` with a fifth node (KIP-853; from
4.4 also ``--unregister``, KIP-1312). Each step names what it changed, by unique names, so a
test can look for exactly that in the archive.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from engine.cluster.kafka_dist import version_key
from engine.common.kafka_uuid import uuid_to_kafka
from engine.net.ports import pick_ports
from engine.storage.meta_properties import read_meta_properties
from kafka_peer.cluster import KafkaCluster
from kafka_peer.nodes import KafkaNode, wait_until

CLIENT_TIMEOUT_S = 120.0
CONTROLLER_UNREGISTRATION = (4, 4, 0)  # remove-controller --unregister (KIP-1312)
ADDED_CONTROLLER_ID = 5  # 1-3 are the voters, 4 the broker


def unique(prefix: str) -> str:
    return f"{prefix}-{time.monotonic_ns() % 10**9}"


def _admin(cluster: KafkaCluster):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def _done(futures, admin) -> None:
    """Waits for every future; ``admin`` is held meanwhile (a collected client cancels its futures)."""
    for future in (futures.values() if isinstance(futures, dict) else [futures]):
        future.result(timeout=CLIENT_TIMEOUT_S)


def create_topic(cluster: KafkaCluster, name: str, partitions: int = 2, configs: dict | None = None) -> None:
    from confluent_kafka.admin import NewTopic

    admin = _admin(cluster)
    _done(admin.create_topics([NewTopic(name, partitions, 1, config=configs or {})],
                              operation_timeout=60, request_timeout=CLIENT_TIMEOUT_S), admin)


def delete_topic(cluster: KafkaCluster, name: str) -> None:
    admin = _admin(cluster)
    _done(admin.delete_topics([name], operation_timeout=60, request_timeout=CLIENT_TIMEOUT_S), admin)


def set_topic_config(cluster: KafkaCluster, topic: str, key: str, value: str) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    admin = _admin(cluster)
    _done(admin.incremental_alter_configs([ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])]), admin)


def allow_read(cluster: KafkaCluster, topic: str, principal: str) -> None:
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    admin = _admin(cluster)
    _done(admin.create_acls([AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, principal, "*",
                                        AclOperation.READ, AclPermissionType.ALLOW)]), admin)


def add_scram_user(cluster: KafkaCluster, user: str) -> None:
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    admin = _admin(cluster)
    _done(admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"recorded-secret", b"recorded-salt")]), admin)


def set_user_quota(cluster: KafkaCluster, user: str, key: str, value: int) -> None:
    """Kafka's kafka-configs (a JVM: the one client that sends AlterClientQuotas)."""
    cluster.dist.run("kafka-configs", "--bootstrap-server", cluster.bootstrap_servers, "--alter",
                     "--entity-type", "users", "--entity-name", user, "--add-config", f"{key}={value}")


@dataclass
class AddedController:
    node: KafkaNode
    directory_id: str


def voters(cluster: KafkaCluster) -> set[int]:
    from engine.admin.quorum_client import default_send, find_leader

    _, info = find_leader([n.controller_address for n in cluster.voters if n.alive], default_send(5000))
    return {int(v.replica_id) for v in info.voters}


def add_controller(cluster: KafkaCluster) -> AddedController:
    """A fifth node, formatted without initial controllers, joins as an observer and is added as a
    voter by ``kafka-metadata-quorum add-controller``. It is not one of ``cluster.nodes`` (the
    module's quorum stays three voters and a broker); the session kills it whatever happens."""
    node = KafkaNode(cluster.dist, ADDED_CONTROLLER_ID, ("controller",), cluster.root / f"node-{ADDED_CONTROLLER_ID}",
                     None, pick_ports(1)[0])
    node.config = cluster.node_config(node)
    node.write_config()
    cluster.dist.run("kafka-storage", "format", "-t", cluster.cluster_id, "-c", str(node.config_path),
                     "--no-initial-controllers")
    node.start()
    live = [*cluster.live_nodes(), node]
    # retried: the leader adds only an observer that has caught up, and may change meanwhile
    wait_until(lambda: cluster.dist.run(*_quorum_tool(cluster), "--command-config", str(node.config_path),
                                        "add-controller", check=False).returncode == 0, "add-controller accepted", live)
    wait_until(lambda: ADDED_CONTROLLER_ID in voters(cluster), f"controller {ADDED_CONTROLLER_ID} a voter", live)
    return AddedController(node, uuid_to_kafka(read_meta_properties(node.log_dir).directory_id))


def remove_controller(cluster: KafkaCluster, added: AddedController) -> None:
    """``remove-controller`` (with ``--unregister`` from 4.4: the node is stopped first, as an
    operator would, or it registers itself again at once)."""
    ident = ("remove-controller", "--controller-id", str(ADDED_CONTROLLER_ID),
             "--controller-directory-id", added.directory_id)
    if version_key(cluster.dist.version) >= CONTROLLER_UNREGISTRATION:
        added.node.stop()
        ident += ("--unregister",)
    wait_until(lambda: cluster.dist.run(*_quorum_tool(cluster), *ident, check=False).returncode == 0
               or ADDED_CONTROLLER_ID not in voters(cluster), "remove-controller accepted", cluster.live_nodes())
    wait_until(lambda: ADDED_CONTROLLER_ID not in voters(cluster), f"controller {ADDED_CONTROLLER_ID} removed",
               cluster.live_nodes())
    added.node.stop()


def _quorum_tool(cluster: KafkaCluster) -> tuple[str, ...]:
    return ("kafka-metadata-quorum", "--bootstrap-controller", cluster.bootstrap_controllers)
