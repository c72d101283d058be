"""Real Kafka admin clients administer our simulated cluster as they would Kafka.

One ``kraftd cluster`` (1 controller, 3 simulated brokers on 3 racks, the StandardAuthorizer
named) serves the whole module. kafka-python's KafkaAdminClient and confluent-kafka's
AdminClient (librdkafka) each make changes that the other client, a second describe, or the
controller's own metadata log (its image, replayed from disk) must then show. Every wait polls
to a deadline, a safety net against hangs, never a performance claim. Every process the cluster
ran is SIGKILLed at the end, failure or not (tests/engine/cluster/test_cluster_tool.py's Cluster).
"""

from __future__ import annotations

import asyncio
from typing import Any, Iterator

import pytest
from confluent_kafka import ElectionType, KafkaError, Producer, TopicCollection
from confluent_kafka import TopicPartition as CkPartition
from confluent_kafka.admin import (
    AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient, AlterConfigOpType, ConfigEntry,
    ConfigResource, NewPartitions as CkNewPartitions, NewTopic as CkNewTopic, ResourcePatternType,
    ResourceType as CkResourceType, ScramCredentialInfo, ScramMechanism as CkScram, UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import (
    ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, ConfigResource as KpConfigResource,
    ConfigResourceType, NewPartitions, NewTopic, ResourcePattern, ResourcePatternFilter, ResourceType, ScramMechanism,
    UserScramCredentialDeletion as KpScramDeletion, UserScramCredentialUpsertion as KpScramUpsertion,
)
from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest

from engine.broker.broker_apis import LOG_DIRS_API
from engine.broker.data_answers import LogDir, describe_log_dirs
from engine.common.directory_id import UNASSIGNED
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import load_log_dir
from engine.net.kafka_client import KafkaClient
from engine.net.kafka_protocol import encode_response
from engine.records.kio_codec import ErrorCode, protocol_module
from engine.storage.meta_properties import read_meta_properties
from tests.engine.cluster.test_cluster_tool import Cluster, ours
from tests.engine.server.test_controller_processes import poll

# processes, sockets and timers of their own: out of the fast tier
pytestmark = pytest.mark.slow

CLIENT_TIMEOUT_S = 30.0  # safety nets
TOPIC, BROKER = 2, 4  # the image's config resource types


class Sim:
    """The running cluster, its bootstrap servers and the controller's committed image."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        lines = cluster.up_output.splitlines()
        self.bootstrap = lines[-2].split("=", 1)[1]
        self.controllers = lines[-1].split("=", 1)[1]

    def image(self) -> MetadataImage:
        return load_log_dir(self.cluster.root / "controller-1" / "metadata" / "__cluster_metadata-0")[0]

    def synced(self) -> MetadataImage:
        """The controller's image, once every broker's image has reached its offset. A broker
        learns a write from the metadata log after the controller answered it, as Kafka's do, so
        a read through a client after a write waits for this first."""
        image = self.image()
        offset = image.provenance.last_offset
        poll(lambda: min(asyncio.run(broker_offsets(self.bootstrap))) >= offset, f"every broker at offset {offset}")
        return image

    def wait_image(self, check: Any, what: str) -> MetadataImage:
        found: list[MetadataImage] = []

        def done() -> bool:
            found[:] = [self.image()]
            return bool(check(found[0]))
        poll(done, what)
        return self.synced()


async def broker_offsets(bootstrap: str) -> list[int]:
    """Each broker's image offset: its ApiVersions' finalized features epoch (Kafka's too)."""
    client = KafkaClient(client_id="test-real-clients")
    request = protocol_module("api_versions", 3, "request").ApiVersionsRequest(
        client_software_name="metashell-tests", client_software_version="1")
    try:
        offsets = []
        for address in bootstrap.split(","):
            host, port = address.rsplit(":", 1)
            answer = await client.send((host, int(port)), request, timeout_ms=int(CLIENT_TIMEOUT_S * 1000))
            offsets.append(int(answer.finalized_features_epoch))
        return offsets
    finally:
        await client.close()


def running_sim(tmp_path_factory: Any, name: str) -> Iterator[Sim]:
    """A 1-controller, 3-broker ``kraftd cluster`` for a module fixture to yield from; every
    process it ran is SIGKILLed when the module is done, failure or not."""
    cluster = Cluster(tmp_path_factory.mktemp(name) / "state")
    try:
        cluster.up_output = cluster.ok("up", "--controllers", "1", "--brokers", "3", "--racks", "3",
                                       "--heartbeat-interval-ms", "500", "--session-timeout-ms", "5000")
        yield Sim(cluster)
    finally:
        cluster.kill_all()


@pytest.fixture(scope="module")
def sim(tmp_path_factory) -> Iterator[Sim]:
    yield from running_sim(tmp_path_factory, "real-clients")


@pytest.fixture(scope="module")
def ck(sim: Sim) -> AdminClient:
    return AdminClient({"bootstrap.servers": sim.bootstrap, "socket.timeout.ms": 10000})


@pytest.fixture(scope="module")
def kp(sim: Sim) -> KafkaAdminClient:
    admin = KafkaAdminClient(bootstrap_servers=sim.bootstrap, request_timeout_ms=int(CLIENT_TIMEOUT_S * 1000))
    yield admin
    admin.close()


def results(futures: dict) -> dict:
    return {key: future.result(timeout=CLIENT_TIMEOUT_S) for key, future in futures.items()}


def kp_partitions(kp: KafkaAdminClient, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    """partition -> (leader, replicas, ISR), as kafka-python's describe_topics reads them."""
    (described,) = kp.describe_topics([topic])
    assert described["error_code"] == 0, described
    return {p["partition_index"]: (p["leader_id"], p["replica_nodes"], p["isr_nodes"]) for p in described["partitions"]}


def ck_partitions(ck: AdminClient, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    """The same through confluent-kafka (DescribeTopicPartitions)."""
    described = ck.describe_topics(TopicCollection([topic]))[topic].result(timeout=CLIENT_TIMEOUT_S)
    return {p.id: (p.leader.id, [n.id for n in p.replicas], [n.id for n in p.isr]) for p in described.partitions}


def image_partitions(image: MetadataImage, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    found = image.topics.topic(topic)
    assert found is not None, f"{topic} not in the controller's log"
    return {pid: (p.leader, list(p.replicas), sorted(p.isr)) for pid, p in found.partitions.items()}


def same_sets(partitions: dict[int, tuple[int, list[int], list[int]]]) -> dict[int, tuple[int, list[int], list[int]]]:
    return {pid: (leader, replicas, sorted(isr)) for pid, (leader, replicas, isr) in partitions.items()}


# -- the cluster ----------------------------------------------------------------------------

def test_both_clients_describe_the_cluster(sim: Sim, ck: AdminClient, kp: KafkaAdminClient) -> None:
    image = sim.synced()
    registry_id = sim.cluster.registry().get("cluster_id")
    described = ck.describe_cluster(include_authorized_operations=True).result(timeout=CLIENT_TIMEOUT_S)
    assert sorted((n.id, n.rack) for n in described.nodes) == [(1, "rack-1"), (2, "rack-2"), (3, "rack-3")]
    assert described.controller.id in (1, 2, 3)  # a KRaft broker names a random alive broker
    assert AclOperation.ALTER in described.authorized_operations
    cluster = kp.describe_cluster()
    assert cluster["cluster_id"] == described.cluster_id
    if registry_id is not None:
        assert described.cluster_id == registry_id
    assert sorted(b["broker_id"] for b in cluster["brokers"] if not b["is_fenced"]) == sorted(image.cluster.brokers)
    ports = {b["broker_id"]: b["port"] for b in cluster["brokers"]}
    assert sim.bootstrap == ",".join(f"127.0.0.1:{ports[i]}" for i in (1, 2, 3))


# -- topics ---------------------------------------------------------------------------------

def test_confluent_creates_grows_and_deletes_topics(sim: Sim, ck: AdminClient, kp: KafkaAdminClient) -> None:
    created = results(ck.create_topics([
        CkNewTopic("ck-configured", 3, 3, config={"retention.ms": "3600000", "cleanup.policy": "compact"}),
        CkNewTopic("ck-placed", 2, replica_assignment=[[1, 2], [3, 1]])], operation_timeout=CLIENT_TIMEOUT_S))
    assert created == {"ck-configured": None, "ck-placed": None}
    image = sim.synced()
    assert image.configs[(TOPIC, "ck-configured")] == {"retention.ms": "3600000", "cleanup.policy": "compact"}
    assert image_partitions(image, "ck-placed") == {0: (1, [1, 2], [1, 2]), 1: (3, [3, 1], [1, 3])}
    configured = image_partitions(image, "ck-configured")
    assert sorted(r for _, replicas, _ in configured.values() for r in replicas) == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    # the other client sees what the controller wrote
    assert same_sets(kp_partitions(kp, "ck-placed")) == image_partitions(image, "ck-placed")
    assert same_sets(kp_partitions(kp, "ck-configured")) == configured
    with pytest.raises(Exception) as refused:  # a second create is Kafka's TOPIC_ALREADY_EXISTS
        results(ck.create_topics([CkNewTopic("ck-placed", 1, 1)]))
    assert refused.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS

    assert results(ck.create_partitions([CkNewPartitions("ck-configured", 5)])) == {"ck-configured": None}
    grown = sim.wait_image(lambda i: len(i.topics.topic("ck-configured").partitions) == 5, "5 partitions")
    assert same_sets(kp_partitions(kp, "ck-configured")) == image_partitions(grown, "ck-configured")

    assert results(ck.delete_topics(["ck-placed"], operation_timeout=CLIENT_TIMEOUT_S)) == {"ck-placed": None}
    assert sim.synced().topics.topic("ck-placed") is None
    poll(lambda: "ck-placed" not in kp.list_topics(), "kafka-python no longer listing ck-placed")


def test_kafka_python_creates_grows_and_deletes_topics(sim: Sim, ck: AdminClient, kp: KafkaAdminClient) -> None:
    kp.create_topics([NewTopic("kp-configured", 2, 2, topic_configs={"max.message.bytes": "2000000"}),
                      NewTopic("kp-placed", -1, -1, replica_assignments={0: [2, 3], 1: [3, 1], 2: [1, 2]})])
    image = sim.synced()
    assert image.configs[(TOPIC, "kp-configured")] == {"max.message.bytes": "2000000"}
    assert image_partitions(image, "kp-placed") == {0: (2, [2, 3], [2, 3]), 1: (3, [3, 1], [1, 3]),
                                                   2: (1, [1, 2], [1, 2])}
    assert same_sets(ck_partitions(ck, "kp-placed")) == image_partitions(image, "kp-placed")
    topic_id = ck.describe_topics(TopicCollection(["kp-placed"]))["kp-placed"].result(CLIENT_TIMEOUT_S).topic_id
    bits = (topic_id.get_most_significant_bits() % 2**64 << 64) | topic_id.get_least_significant_bits() % 2**64
    assert bits == image.topics.topic("kp-placed").id.int

    kp.create_partitions({"kp-placed": NewPartitions(4, [[2, 1]])})
    grown = sim.wait_image(lambda i: 3 in i.topics.topic("kp-placed").partitions, "partition 3 of kp-placed")
    assert image_partitions(grown, "kp-placed")[3] == (2, [2, 1], [1, 2])
    assert same_sets(ck_partitions(ck, "kp-placed")) == image_partitions(grown, "kp-placed")

    kp.delete_topics(["kp-placed"])
    assert sim.synced().topics.topic("kp-placed") is None
    poll(lambda: "kp-placed" not in ck.list_topics(timeout=CLIENT_TIMEOUT_S).topics,
         "confluent-kafka no longer listing kp-placed")


# -- configs --------------------------------------------------------------------------------

def ck_config(ck: AdminClient, resource: ConfigResource) -> dict[str, ConfigEntry]:
    return ck.describe_configs([resource])[resource].result(timeout=CLIENT_TIMEOUT_S)


def test_configs_altered_by_one_client_are_described_by_the_other(sim: Sim, ck: AdminClient,
                                                                   kp: KafkaAdminClient) -> None:
    results(ck.create_topics([CkNewTopic("configs", 1, 3)]))
    sim.synced()
    # confluent-kafka: incremental (a topic and a broker), then legacy (a whole topic's set)
    incremental = [
        ConfigResource("topic", "configs", incremental_configs=[
            ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND)]),
        ConfigResource("broker", "2", incremental_configs=[
            ConfigEntry("log.cleaner.threads", "2", incremental_operation=AlterConfigOpType.SET)])]
    assert set(results(ck.incremental_alter_configs(incremental)).values()) == {None}
    image = sim.synced()
    assert image.configs[(TOPIC, "configs")] == {"retention.ms": "7200000", "cleanup.policy": "delete,compact"}
    assert image.configs[(BROKER, "2")] == {"log.cleaner.threads": "2"}
    described = kp.describe_configs([KpConfigResource(ConfigResourceType.TOPIC, "configs"),
                                     KpConfigResource(ConfigResourceType.BROKER, "2")], include_synonyms=True)
    topic = described["topic"]["configs"]
    assert {k: (v["value"], v["config_source"]) for k, v in topic.items()} == {
        "retention.ms": ("7200000", "DYNAMIC_TOPIC_CONFIG"), "cleanup.policy": ("delete,compact", "DYNAMIC_TOPIC_CONFIG")}
    broker = described["broker"]["2"]
    assert broker["log.cleaner.threads"]["value"] == "2"
    assert broker["log.cleaner.threads"]["config_source"] == "DYNAMIC_BROKER_CONFIG"

    legacy = ConfigResource("topic", "configs", set_config={"segment.ms": "600000"})
    assert results(ck.alter_configs([legacy])) == {legacy: None}  # AlterConfigs replaces the whole set
    assert sim.synced().configs[(TOPIC, "configs")] == {"segment.ms": "600000"}

    # kafka-python: incremental on a topic and a broker (it checks the names against the broker's
    # describe, which must list every broker config), then legacy
    altered = kp.alter_configs([
        KpConfigResource(ConfigResourceType.TOPIC, "configs", configs={"retention.bytes": "1048576"}),
        KpConfigResource(ConfigResourceType.BROKER, "3", configs={"background.threads": "12"})], incremental=True)
    assert altered == {"topic": {"configs": "OK"}, "broker": {"3": "OK"}}, altered
    image = sim.synced()
    assert image.configs[(TOPIC, "configs")] == {"segment.ms": "600000", "retention.bytes": "1048576"}
    assert image.configs[(BROKER, "3")] == {"background.threads": "12"}
    broker3 = ck_config(ck, ConfigResource("broker", "3"))
    assert broker3["background.threads"].value == "12" and not broker3["background.threads"].is_default
    assert broker3["num.io.threads"].is_default and broker3["num.io.threads"].value == "8"
    assert kp.alter_configs([KpConfigResource(ConfigResourceType.TOPIC, "configs", configs={"flush.ms": "1000"})],
                            incremental=False) == {"topic": {"configs": "OK"}}
    # kafka-python's legacy alter sends the topic's other modified configs along (AlterConfigs replaces
    # all); a broker config that is a topic config's synonym (log.retention.ms) would go along too
    assert sim.synced().configs[(TOPIC, "configs")] == {"segment.ms": "600000", "retention.bytes": "1048576",
                                                       "flush.ms": "1000"}
    topic_entries = ck_config(ck, ConfigResource("topic", "configs"))
    assert topic_entries["flush.ms"].value == "1000" and not topic_entries["flush.ms"].is_default
    assert topic_entries["retention.ms"].is_default and topic_entries["retention.ms"].value == "604800000"


# -- leaders and reassignments --------------------------------------------------------------

def test_preferred_election_after_a_reordering_reassignment(sim: Sim, ck: AdminClient, kp: KafkaAdminClient) -> None:
    kp.create_topics([NewTopic("elect", -1, -1, replica_assignments={0: [1, 2, 3], 1: [2, 3, 1]})])
    # the same replicas in another order: done at once, the leader kept, now not the preferred one
    assert kp.alter_partition_reassignments({TopicPartition("elect", 0): [3, 1, 2]}) == \
        {TopicPartition("elect", 0): None}
    image = sim.wait_image(lambda i: i.topics.topic("elect").partitions[0].replicas == (3, 1, 2)
                           or list(i.topics.topic("elect").partitions[0].replicas) == [3, 1, 2], "the new order")
    assert image_partitions(image, "elect")[0][0] == 1
    assert ck_partitions(ck, "elect")[0][:2] == (1, [3, 1, 2])

    elected = ck.elect_leaders(ElectionType.PREFERRED, [CkPartition("elect", 0), CkPartition("elect", 1)])
    outcome = elected.result(timeout=CLIENT_TIMEOUT_S)
    assert {(tp.topic, tp.partition): (err.code() if err else None) for tp, err in outcome.items()} == \
        {("elect", 0): None, ("elect", 1): KafkaError.ELECTION_NOT_NEEDED}
    image = sim.synced()
    assert image_partitions(image, "elect")[0][0] == 3
    assert image.topics.topic("elect").partitions[0].leader_epoch >= 1
    assert kp_partitions(kp, "elect")[0][0] == 3
    again = kp.elect_leaders(0, {"elect": [0]}, raise_errors=False)
    assert [(r.topic, [(p.partition_id, p.error_code) for p in r.partition_result])
            for r in again.replica_election_results] == [("elect", [(0, 84)])]  # ELECTION_NOT_NEEDED


def test_a_reassignment_is_listed_while_it_waits_for_a_follower(sim: Sim, ck: AdminClient,
                                                               kp: KafkaAdminClient) -> None:
    kp.create_topics([NewTopic("moving", -1, -1, replica_assignments={0: [1, 2]})])
    sim.cluster.ok("lag", "broker-3", "600000")  # broker-3 fetches nothing until the lag is lifted
    try:
        kp.alter_partition_reassignments({TopicPartition("moving", 0): [3, 2]})
        listed = kp.list_partition_reassignments()
        assert listed == {TopicPartition("moving", 0): {"replicas": [3, 2, 1], "adding_replicas": [3],
                                                         "removing_replicas": [1]}}, listed
        pending = sim.image().topics.topic("moving").partitions[0]
        assert (list(pending.adding_replicas), list(pending.removing_replicas), pending.leader) == ([3], [1], 1)
    finally:
        sim.cluster.ok("lag", "broker-3", "0")
    image = sim.wait_image(lambda i: list(i.topics.topic("moving").partitions[0].replicas) == [3, 2],
                           "the reassignment completing once broker-3 fetches")
    assert image_partitions(image, "moving")[0][1:] == ([3, 2], [2, 3])
    assert kp.list_partition_reassignments() == {}
    assert same_sets(ck_partitions(ck, "moving")) == image_partitions(image, "moving")


# -- ACLs -----------------------------------------------------------------------------------

def test_acls_made_by_one_client_are_listed_and_deleted_by_the_other(sim: Sim, ck: AdminClient,
                                                                     kp: KafkaAdminClient) -> None:
    alice = AclBinding(CkResourceType.TOPIC, "orders", ResourcePatternType.PREFIXED, "User:alice", "*",
                       AclOperation.READ, AclPermissionType.ALLOW)
    assert results(ck.create_acls([alice])) == {alice: None}
    made = kp.create_acls([ACL("User:bob", "10.0.0.1", ACLOperation.WRITE, ACLPermissionType.DENY,
                               ResourcePattern(ResourceType.GROUP, "billing"))])
    assert not made["failed"] and len(made["succeeded"]) == 1
    image = sim.wait_image(lambda i: len(i.acls) == 2, "two ACLs in the log")
    assert sorted((a.principal, a.host, a.resource_name) for a in image.acls.values()) == \
        [("User:alice", "*", "orders"), ("User:bob", "10.0.0.1", "billing")]

    everything = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                           ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY))
    listed, error = kp.describe_acls(everything)
    assert error.errno == 0
    assert sorted((a.principal, a.resource_pattern.resource_type.name, a.resource_pattern.pattern_type.name,
                   a.operation.name) for a in listed) == \
        [("User:alice", "TOPIC", "PREFIXED", "READ"), ("User:bob", "GROUP", "LITERAL", "WRITE")]
    any_filter = AclBindingFilter(CkResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    described = ck.describe_acls(any_filter).result(timeout=CLIENT_TIMEOUT_S)
    assert sorted(b.principal for b in described) == ["User:alice", "User:bob"]

    bob_filter = AclBindingFilter(CkResourceType.GROUP, "billing", ResourcePatternType.LITERAL, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    deleted = results(ck.delete_acls([bob_filter]))[bob_filter]
    assert [(b.principal, b.host) for b in deleted] == [("User:bob", "10.0.0.1")]
    ((_, matched, error),) = kp.delete_acls([everything])
    assert error.errno == 0 and [a.principal for a in matched] == ["User:alice"]
    assert sim.wait_image(lambda i: not i.acls, "no ACL left").acls == {}
    assert ck.describe_acls(any_filter).result(timeout=CLIENT_TIMEOUT_S) == []


# -- client quotas and SCRAM ----------------------------------------------------------------

def test_client_quotas_altered_and_described(sim: Sim, kp: KafkaAdminClient) -> None:
    """Neither client has a quota API of its own: kafka-python's protocol classes through its
    connection manager (to any broker, which forwards the alter)."""
    def send(request: Any) -> Any:
        async def call() -> Any:
            return await kp._manager.send(request)
        return kp._manager.run(call)

    altered = send(AlterClientQuotasRequest(entries=[
        ([("user", "alice"), ("client-id", None)], [("producer_byte_rate", 1024.0, False),
                                                     ("consumer_byte_rate", 2048.0, False)]),
        ([("ip", "10.0.0.9")], [("connection_creation_rate", 5.0, False)])], validate_only=False))
    assert [e.error_code for e in altered.entries] == [0, 0]
    image = sim.wait_image(lambda i: len(i.client_quotas) == 2, "two quota entities")
    assert image.client_quotas[(("client-id", None), ("user", "alice"))] == \
        {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}

    described = send(DescribeClientQuotasRequest(components=[("user", 0, "alice")], strict=False))
    assert described.error_code == 0
    assert [(sorted((e.entity_type, e.entity_name) for e in entry.entity), sorted((v.key, v.value) for v in entry.values))
            for entry in described.entries] == [
        ([("client-id", None), ("user", "alice")], [("consumer_byte_rate", 2048.0), ("producer_byte_rate", 1024.0)])]
    removed = send(AlterClientQuotasRequest(entries=[
        ([("user", "alice"), ("client-id", None)], [("producer_byte_rate", 0.0, True)])], validate_only=False))
    assert [e.error_code for e in removed.entries] == [0]
    sim.wait_image(lambda i: i.client_quotas.get((("client-id", None), ("user", "alice"))) ==
                   {"consumer_byte_rate": 2048.0}, "producer_byte_rate removed")
    ips = send(DescribeClientQuotasRequest(components=[("ip", 2, None)], strict=True))
    assert [[(v.key, v.value) for v in e.values] for e in ips.entries] == [[("connection_creation_rate", 5.0)]]


def test_scram_users_upserted_described_and_deleted(sim: Sim, ck: AdminClient, kp: KafkaAdminClient) -> None:
    upsert = UserScramCredentialUpsertion("carol", ScramCredentialInfo(CkScram.SCRAM_SHA_256, 8192), b"secret")
    assert results(ck.alter_user_scram_credentials([upsert])) == {"carol": None}
    assert kp.alter_user_scram_credentials([KpScramUpsertion("dave", ScramMechanism.SCRAM_SHA_512, "pw",
                                                             iterations=4096)]) == {"dave": None}
    image = sim.wait_image(lambda i: len(i.scram) == 2, "two SCRAM credentials")
    assert sorted((user, record.iterations) for (_, user), record in image.scram.items()) == \
        [("carol", 8192), ("dave", 4096)]
    described = kp.describe_user_scram_credentials()
    assert {user: [(int(c["mechanism"]), c["iterations"]) for c in d["credential_infos"]]
            for user, d in described.items()} == {"carol": [(1, 8192)], "dave": [(2, 4096)]}
    by_ck = results(ck.describe_user_scram_credentials(["dave"]))
    assert [(c.mechanism, c.iterations) for c in by_ck["dave"].scram_credential_infos] == [(CkScram.SCRAM_SHA_512, 4096)]

    deletion = UserScramCredentialDeletion("dave", CkScram.SCRAM_SHA_512)
    assert results(ck.alter_user_scram_credentials([deletion])) == {"dave": None}
    assert kp.alter_user_scram_credentials([KpScramDeletion("carol", ScramMechanism.SCRAM_SHA_256)]) == {"carol": None}
    assert sim.wait_image(lambda i: not i.scram, "no credential left").scram == {}
    gone = kp.describe_user_scram_credentials(["carol"])
    assert gone["carol"]["error"] == "Attempt to describe a user credential that does not exist: carol"


# -- no data --------------------------------------------------------------------------------

def test_a_produce_fails_fast_and_the_broker_stays(sim: Sim, ck: AdminClient) -> None:
    results(ck.create_topics([CkNewTopic("no-data", 1, 3)]))
    sim.synced()
    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": sim.bootstrap, "message.timeout.ms": 5000, "retries": 0})
    producer.produce("no-data", b"value", on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(CLIENT_TIMEOUT_S) == 0
    assert [(e.code(), e.retriable()) for e in errors] == [(KafkaError.INVALID_REQUEST, False)]
    pids = sim.cluster.pids()
    assert all(ours(pids[f"broker-{i}"], sim.cluster.root) for i in (1, 2, 3))
    assert {n.id for n in ck.describe_cluster().result(timeout=CLIENT_TIMEOUT_S).nodes} == {1, 2, 3}


# -- log dirs -------------------------------------------------------------------------------

def test_describe_log_dirs_lists_the_replicas_by_directory(sim: Sim, kp: KafkaAdminClient) -> None:
    """DescribeLogDirs over broker-1's real log dirs and the controller's image, encoded by kio at
    every version Kafka 4.3 serves (the brokers answer it once broker_node passes its log dirs)."""
    kp.create_topics([NewTopic("dirs", -1, -1, replica_assignments={0: [1, 2], 1: [2, 3], 2: [3, 1]})])
    image = sim.wait_image(lambda i: all(p.directories and p.directories[p.replicas.index(1)] not in (None, UNASSIGNED)
                                         for p in i.topics.topic("dirs").partitions.values() if 1 in p.replicas),
                           "broker-1's replicas of dirs placed in a directory")
    paths = [sim.cluster.root / "broker-1" / f"data-{n}" for n in (1, 2)]
    log_dirs = [LogDir(str(p), read_meta_properties(p).directory_id, online) for p, online in zip(paths, (True, False))]
    placed = {pid: p.directories[p.replicas.index(1)] for pid, p in image.topics.topic("dirs").partitions.items()
              if 1 in p.replicas}
    for version in range(LOG_DIRS_API.min_version, LOG_DIRS_API.max_version + 1):
        request = protocol_module("describe_log_dirs", version, "request").DescribeLogDirsRequest(topics=None)
        answer = describe_log_dirs(image, 1, log_dirs, request, version)
        encode_response(answer, 1)
        first, second = answer.results
        assert (first.log_dir, first.error_code, second.log_dir, second.error_code) == \
            (str(paths[0]), ErrorCode.none, str(paths[1]), ErrorCode.kafka_storage_error)
        listed = {p.partition_index for t in first.topics if t.name == "dirs" for p in t.partitions}
        # the offline dir's replicas are not listed; the online one's all are, empty
        assert listed == {pid for pid, d in placed.items() if d == log_dirs[0].directory_id}
        assert all(p.partition_size == 0 and p.offset_lag == 0 for t in first.topics for p in t.partitions)
        assert second.topics == ()
