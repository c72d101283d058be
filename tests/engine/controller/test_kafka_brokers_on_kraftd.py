"""Apache Kafka's own brokers, unmodified, on a quorum of three kraftd controllers.

One cluster per Kafka version (4.1.2 and the newest): three `kraftd start` controllers on a
dynamic quorum, formatted by `kraftd storage format` (at 4.1 for Kafka 4.1.2, whose brokers know
no newer metadata.version), and three Kafka broker processes formatted by Kafka's own tool.
Every check reads our controllers' own log (the image of the active controller's metadata
directory) and asks Kafka's brokers and tools, never a mock. Each test makes its own topics
and puts back any node it stops, so none depends on another having run. Where the expected
state is Kafka's controller's decision (a killed follower's ISR and ELR), the same script runs on
a cluster of Kafka's own controller too, and ours must leave the partition as Kafka's does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import load_log_dir
from engine.storage.log_reader import read_file
from kafka_peer.cluster import KafkaCluster
from kafka_peer.nodes import metadata_brokers, wait_until

pytestmark = pytest.mark.kafka

CLIENT_TIMEOUT_S = 60
SNAPSHOT_BYTES = 4_000  # small: our controllers snapshot often, for Kafka's shell to read (the test waits for one)
# and at least every 2 s while records come (NoOps every 500 ms): the test waits for a snapshot after
# its topic, which SNAPSHOT_BYTES of NoOps alone would take half a minute to bring
SNAPSHOT_INTERVAL_MS = 2_000
def _only_this_version(clusters: dict[str, KafkaCluster], version: str) -> None:
    """Close the clusters of other versions: pytest runs a version's tests together, and idle
    nodes would take CPU from the rest of the module."""
    for other in [v for v in clusters if v != version]:
        clusters.pop(other).close()


@pytest.fixture
def cluster(kafka_dist, module_clusters, tmp_path_factory) -> KafkaCluster:
    """Three kraftd controllers and three Kafka brokers, all running (restarted if a test left one down)."""
    _only_this_version(module_clusters, kafka_dist.version)
    made = module_clusters.get(kafka_dist.version)
    if made is not None and not all(n.alive for n in made.nodes):
        for node in made.nodes:
            if not node.alive:
                made.restart(node)
    if made is None:
        made = module_clusters[kafka_dist.version] = KafkaCluster(
            kafka_dist, tmp_path_factory.mktemp(f"kraftd-brokers-{kafka_dist.version}"), voters=3, brokers=3,
            controllers="kraftd", release_version=_release_version(kafka_dist),
            config={"metadata.log.max.record.bytes.between.snapshots": str(SNAPSHOT_BYTES),
                    "metadata.log.max.snapshot.interval.ms": str(SNAPSHOT_INTERVAL_MS)}).start()
    return made


def _release_version(kafka_dist) -> str | None:
    """Kafka 4.1.2's brokers know no newer metadata.version than 4.1; else the formatter's latest."""
    return "4.1" if kafka_dist.version.startswith("4.1.") else None


def our_image(cluster: KafkaCluster) -> MetadataImage:
    """The image of what the active controller (ours, or Kafka's in the comparison run) has in its log."""
    return load_log_dir(cluster.node(cluster.wait_leader()).metadata_dir)[0]


def _admin(cluster: KafkaCluster):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def _done(futures) -> None:
    for future in futures.values():
        future.result(timeout=CLIENT_TIMEOUT_S)


def create_topic(cluster: KafkaCluster, name: str, partitions: int, replication_factor: int, **configs: str) -> None:
    from confluent_kafka.admin import NewTopic

    admin = _admin(cluster)  # kept in a name until done: a collected client cancels its futures
    _done(admin.create_topics([NewTopic(name, partitions, replication_factor, config=configs)], operation_timeout=60))


def create_placed(cluster: KafkaCluster, name: str, assignment: dict[int, list[int]], **configs: str) -> None:
    """A topic on chosen brokers (kafka-python: confluent-kafka refuses explicit assignments)."""
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=60_000)
    try:
        admin.create_topics([NewTopic(name, -1, -1, replica_assignments=assignment, topic_configs=configs)])
    finally:
        admin.close()


def partition(cluster: KafkaCluster, topic: str, partition_id: int = 0):
    found = our_image(cluster).topics.topic(topic)
    return None if found is None else found.partitions.get(partition_id)


@dataclass(frozen=True)
class Seen:
    """A partition's state in the active controller's log, with broker ids named by their part
    in the script ("leader", "follower"), so that two clusters' states compare."""

    leader: str
    isr: tuple[str, ...]
    elr: tuple[str, ...]
    last_known_elr: tuple[str, ...]
    leader_recovery_state: int
    leader_epoch: int
    follower_fenced: bool


def seen_in(cluster: KafkaCluster, topic: str, roles: dict[int, str]) -> Seen:
    image = our_image(cluster)
    p = image.topics.topic(topic).partitions[0]
    named = lambda ids: tuple(roles.get(i, str(i)) for i in ids)  # noqa: E731
    follower = next(i for i, role in roles.items() if role == "follower")
    return Seen(roles.get(p.leader, str(p.leader)), named(p.isr), named(p.elr), named(p.last_known_elr),
                p.leader_recovery_state, p.leader_epoch, image.cluster.brokers[follower].fenced)


def kill_a_follower_and_bring_it_back(cluster: KafkaCluster, topic: str) -> tuple[Seen, Seen]:
    """The script: a two-replica partition on the first two brokers with min.insync.replicas=2;
    SIGKILL the follower, wait until the controller fenced it and shrank the ISR; restart it, wait
    until it is unfenced and back in the ISR. The partition's state at both points."""
    leader, follower = (b.node_id for b in cluster.brokers[:2])
    roles = {leader: "leader", follower: "follower", -1: "none"}
    create_placed(cluster, topic, {0: [leader, follower]}, **{"min.insync.replicas": "2"})
    wait_until(lambda: partition(cluster, topic) is not None, f"{topic} created", cluster.live_nodes())
    victim = cluster.node(follower)
    victim.kill()
    wait_until(lambda: our_image(cluster).cluster.brokers[follower].fenced, f"broker {follower} fenced",
               cluster.live_nodes())
    wait_until(lambda: partition(cluster, topic).isr == (leader,), "the ISR shrunk", cluster.live_nodes())
    shrunk = seen_in(cluster, topic, roles)
    cluster.restart(victim)
    wait_until(lambda: not our_image(cluster).cluster.brokers[follower].fenced, f"broker {follower} unfenced",
               cluster.live_nodes())
    wait_until(lambda: set(partition(cluster, topic).isr) == {leader, follower}, "the ISR expanded",
               cluster.live_nodes())
    return shrunk, seen_in(cluster, topic, roles)


@pytest.fixture(scope="module")
def _kafkas_own_runs() -> dict[str, tuple[Seen, Seen]]:
    return {}


@pytest.fixture
def on_kafkas_controllers(kafka_dist, _kafkas_own_runs, module_clusters, tmp_path_factory) -> tuple[Seen, Seen]:
    """The script run once per version on Kafka's own controller (one, controller-only) and two
    Kafka brokers of the same settings; the cluster is gone before the test compares."""
    if kafka_dist.version not in _kafkas_own_runs:
        _only_this_version(module_clusters, kafka_dist.version)
        kafkas = KafkaCluster(kafka_dist, tmp_path_factory.mktemp(f"kafka-controllers-{kafka_dist.version}"),
                              voters=1, brokers=2, release_version=_release_version(kafka_dist))
        try:
            _kafkas_own_runs[kafka_dist.version] = kill_a_follower_and_bring_it_back(kafkas.start(), "elr-kill")
        finally:
            kafkas.close()
    return _kafkas_own_runs[kafka_dist.version]


# The module's first test, and Kafka's run first in it: Kafka's cluster runs before ours of this
# version has started, on a machine that runs nothing else of this module (a fencing decided by
# heartbeats wants the CPU). The order is for speed and quiet only: any order passes.
def test_a_killed_broker_is_fenced_leaves_the_isr_for_the_elr_and_comes_back(
        on_kafkas_controllers: tuple[Seen, Seen], cluster: KafkaCluster) -> None:
    """SIGKILL a follower of a two-replica partition with min.insync.replicas=2, then restart it:
    our controllers fence it, shrink the ISR, fill the ELR, unfence it and take it back into the
    ISR as Kafka's own controller does with the same script (the same leader, ISR, ELR, last
    known ELR, recovery state and leader epoch at both points)."""
    ours = kill_a_follower_and_bring_it_back(cluster, "elr-kill")
    kafkas = on_kafkas_controllers
    # the script must have shown Kafka's controller with an ELR: else equal would prove little
    assert kafkas[0].follower_fenced and kafkas[0].elr, f"Kafka's run: {kafkas[0]}"
    assert ours[0] == kafkas[0], "fenced, the ISR shrunk: ours, then Kafka's"
    assert ours[1] == kafkas[1], "back, the ISR expanded: ours, then Kafka's"


def test_kafka_brokers_register_and_are_unfenced(cluster: KafkaCluster) -> None:
    image = our_image(cluster)
    assert sorted(image.cluster.brokers) == [b.node_id for b in cluster.brokers]
    assert not any(b.fenced for b in image.cluster.brokers.values())
    for broker in cluster.brokers:
        registration = image.cluster.brokers[broker.node_id]
        assert [(e.host, e.port) for e in registration.endpoints] == [broker.broker_address]
        assert registration.directories, "Kafka's broker registers its log directory"
        # every broker sees all three, registered and unfenced, through our log
        assert metadata_brokers(broker.broker_address) == {b.node_id for b in cluster.brokers}


def test_kafka_topics_creates_through_a_broker(cluster: KafkaCluster) -> None:
    """kafka-topics asks a broker, which forwards CreateTopics to us inside an Envelope."""
    cluster.dist.run("kafka-topics", "--bootstrap-server", cluster.bootstrap_servers, "--create",
                     "--topic", "made-by-kafka-topics", "--partitions", "3", "--replication-factor", "3",
                     "--config", "retention.ms=3600000")
    topic = our_image(cluster).topics.topic("made-by-kafka-topics")
    assert topic is not None and sorted(topic.partitions) == [0, 1, 2]
    brokers = {b.node_id for b in cluster.brokers}
    for p in topic.partitions.values():
        assert set(p.replicas) == brokers and set(p.isr) == brokers and p.leader in brokers
    assert our_image(cluster).configs[(2, "made-by-kafka-topics")]["retention.ms"] == "3600000"
    # any broker may answer the describe, and one may not have replayed the topic yet
    described = wait_until(lambda: (done := cluster.dist.run(
        "kafka-topics", "--bootstrap-server", cluster.bootstrap_servers, "--describe", "--topic",
        "made-by-kafka-topics", check=False)).returncode == 0 and done.stdout, "the topic described by a broker",
        cluster.live_nodes())
    assert described.count("Leader:") == 3


def test_ten_thousand_messages_with_acks_all_come_back(cluster: KafkaCluster) -> None:
    from confluent_kafka import Consumer, Producer

    create_topic(cluster, "acked", 3, 3, **{"min.insync.replicas": "2"})
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5,
                         "enable.idempotence": True})
    failures: list = []
    for i in range(10_000):
        producer.produce("acked", key=str(i).encode(), value=f"m{i}".encode(),
                         on_delivery=lambda err, msg: failures.append(err) if err else None)
        producer.poll(0)
    assert producer.flush(CLIENT_TIMEOUT_S) == 0 and not failures
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "acked-reader",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["acked"])
    seen: set[bytes] = set()
    try:
        wait_until(lambda: _consume(consumer, seen) >= 10_000, "10,000 messages read back", cluster.live_nodes())
    finally:
        consumer.close()
    assert seen == {f"m{i}".encode() for i in range(10_000)}
    # the idempotent producer got its id from us (AllocateProducerIds), in a block of 1000
    assert our_image(cluster).producer_ids.next_producer_id >= 1000


def _consume(consumer, seen: set[bytes]) -> int:
    for message in consumer.consume(1000, timeout=1):
        if message.error() is None:
            seen.add(message.value())
    return len(seen)


def test_a_terminated_broker_moves_its_leaders_before_it_is_fenced(cluster: KafkaCluster) -> None:
    """SIGTERM: Kafka's controlled shutdown. Our controller marks it in controlled shutdown, moves
    the leadership of what it leads, and only then lets it go (fenced)."""
    first, second, third = (b.node_id for b in cluster.brokers)
    create_placed(cluster, "led-by-first", {0: [first, second], 1: [first, third]})
    wait_until(lambda: partition(cluster, "led-by-first", 1) is not None, "led-by-first created",
               cluster.live_nodes())
    node = cluster.node(first)
    node.stop()
    # every record of the segments (our one segment at this size), not the newest snapshot's summary
    segments = sorted(cluster.node(cluster.wait_leader()).metadata_dir.glob("*.log"))
    entries = [e for segment in segments for e in read_file(segment)]
    topic_id = our_image(cluster).topics.by_name["led-by-first"]
    shutdown = fenced = None
    moved = []
    for e in entries:
        r = e.record
        name = getattr(r, "type_name", "")
        if name == "BROKER_REGISTRATION_CHANGE_RECORD" and r.broker_id == first:
            if getattr(r, "in_controlled_shutdown", 0) == 1 and shutdown is None:
                shutdown = e.offset
            if r.fenced == 1 and shutdown is not None and fenced is None:
                fenced = e.offset
        elif name == "PARTITION_CHANGE_RECORD" and r.topic_id == topic_id and r.leader not in (-2, first) \
                and shutdown is not None and fenced is None:
            moved.append(r.partition_id)
    assert shutdown is not None and fenced is not None and shutdown < fenced
    assert sorted(set(moved)) == [0, 1]
    image = our_image(cluster)
    assert image.topics.topic("led-by-first").partitions[0].leader == second
    assert image.topics.topic("led-by-first").partitions[1].leader == third
    cluster.restart(node)


def test_the_brokers_carry_on_when_the_active_controller_is_killed(cluster: KafkaCluster) -> None:
    from confluent_kafka import Producer

    old = cluster.wait_leader()
    cluster.node(old).kill()
    wait_until(lambda: cluster.leader_id() not in (-1, old), "a new active controller", cluster.live_nodes())
    # the new active controller starts every broker's session afresh: each must find it and
    # heartbeat before a topic on all three can be placed (a late JVM is fenced meanwhile)
    wait_until(lambda: not any(b.fenced for b in our_image(cluster).cluster.brokers.values()),
               "every broker unfenced by the new active controller", cluster.live_nodes())
    create_topic(cluster, "after-failover", 2, 3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(1000):
        producer.produce("after-failover", value=str(i).encode())
    assert producer.flush(CLIENT_TIMEOUT_S) == 0
    wait_until(lambda: not any(b.fenced for b in our_image(cluster).cluster.brokers.values()),
               "every broker unfenced after the produce", cluster.live_nodes())
    cluster.restart(cluster.node(old))


def test_admin_tools_changes_land_in_our_image(cluster: KafkaCluster) -> None:
    """Configs (topic and cluster default), client quotas, SCRAM users and ACLs, set with Kafka's
    tools and clients through the brokers, are in our controllers' image."""
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)

    admin = _admin(cluster)
    create_topic(cluster, "configured", 1, 3)
    configs = ("kafka-configs", "--bootstrap-server", cluster.bootstrap_servers, "--alter")
    cluster.dist.run(*configs, "--entity-type", "topics", "--entity-name", "configured",
                     "--add-config", "retention.ms=7200000")
    cluster.dist.run(*configs, "--entity-type", "brokers", "--entity-default",
                     "--add-config", "log.retention.ms=259200000")
    cluster.dist.run(*configs, "--entity-type", "users", "--entity-name", "alice",
                     "--add-config", "producer_byte_rate=1048576")
    _done(admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"alice-secret", b"salt-alice")]))
    _done(admin.create_acls([AclBinding(ResourceType.TOPIC, "configured", ResourcePatternType.LITERAL, "User:alice",
                                         "*", AclOperation.READ, AclPermissionType.ALLOW)]))
    image = our_image(cluster)
    assert image.configs[(2, "configured")]["retention.ms"] == "7200000"
    assert image.configs[(4, "")]["log.retention.ms"] == "259200000"
    assert image.client_quotas[(("user", "alice"),)]["producer_byte_rate"] == 1048576.0
    assert [user for _, user in image.scram] == ["alice"]
    assert [(a.resource_name, a.principal) for a in image.acls.values()] == [("configured", "User:alice")]


def test_kafkas_metadata_shell_reads_our_snapshots(cluster: KafkaCluster, tmp_path: Path) -> None:
    """Our controllers' newest snapshot, read by Kafka's own kafka-metadata-shell: the brokers,
    a topic and its partitions we wrote are there, with the same leaders."""
    from tests.kafka_shell_tree import kafka_tree

    create_topic(cluster, "in-a-snapshot", 4, 3)
    node = cluster.node(cluster.wait_leader())
    created = our_image(cluster).provenance.last_offset

    def newest_snapshot() -> Path | None:
        snapshots = sorted(node.metadata_dir.glob("*.checkpoint"))
        newest = snapshots[-1] if snapshots else None
        return newest if newest is not None and int(newest.name.split("-")[0]) > created else None

    # the NoOps every 500 ms are new records, so SNAPSHOT_INTERVAL_MS brings the snapshot
    snapshot = wait_until(newest_snapshot, "a snapshot after the topic", cluster.live_nodes())
    tree = kafka_tree(cluster.dist, snapshot, tmp_path)
    image, _ = load_log_dir(node.metadata_dir)
    topic = image.topics.topic("in-a-snapshot")
    for partition_id, p in topic.partitions.items():
        text = tree.leaves[f"/image/topics/byName/in-a-snapshot/{partition_id}"]
        assert f"leader={p.leader}" in text.replace(" ", "")
    for broker in cluster.brokers:
        assert f"/image/cluster/brokers/{broker.node_id}" in tree.paths


def test_kafkas_tools_talk_to_our_controllers_directly(cluster: KafkaCluster) -> None:
    """KIP-919: Kafka's admin tools with --bootstrap-controller find our active controller through
    DescribeCluster and send it IncrementalAlterConfigs and DescribeConfigs themselves; the
    features tool reads the finalized features from our ApiVersions."""
    controllers = ("--bootstrap-controller", cluster.bootstrap_controllers)
    cluster.dist.run("kafka-configs", *controllers, "--alter", "--entity-type", "brokers", "--entity-default",
                     "--add-config", "log.cleaner.backoff.ms=16000")
    assert our_image(cluster).configs[(4, "")]["log.cleaner.backoff.ms"] == "16000"
    described = cluster.dist.run("kafka-configs", *controllers, "--describe", "--entity-type", "brokers",
                                 "--entity-default").stdout
    assert "log.cleaner.backoff.ms=16000" in described
    # the same features whether kafka-features asks a broker or our controllers (dynamic quorum: kraft.version 1)
    asked = [cluster.dist.run("kafka-features", *where, "describe").stdout
             for where in (controllers, ("--bootstrap-server", cluster.bootstrap_servers))]
    finalized = [{line.split()[1]: line.split("FinalizedVersionLevel:")[1].split()[0]
                  for line in text.splitlines() if line.startswith("Feature:")} for text in asked]
    # (our controller supports features a 4.1 broker does not know, as streams.version: listed at 0)
    assert {k: v for k, v in finalized[0].items() if k in finalized[1]} == finalized[1]
    assert finalized[0]["kraft.version"] == "1" and finalized[0]["eligible.leader.replicas.version"] == "1"
