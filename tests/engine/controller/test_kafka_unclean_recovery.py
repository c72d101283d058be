"""KIP-966's unclean recovery with Apache Kafka's own brokers on three kraftd controllers.

One partition, replicas [lagging, last leader, middle] (three Kafka brokers), min ISR 2:

1. 10 messages acks=all (A) reach all three; the lagging broker is killed;
2. 20 messages acks=all (B) reach the last leader and the middle one; the middle one is killed;
3. 5 messages acks=1 (C) reach the last leader alone (below min ISR: never committed); the
   last leader is killed, and never comes back.

The lagging and the middle brokers restart after their unclean shutdowns: ISR [], ELR [last
leader] (fenced, so unusable), last-known leader gone. Kafka's rules elect nobody; with
``unclean.leader.election.enable`` true, Kafka's unclean election takes the first live replica
of the assignment, the lagging one, and the 20 acknowledged B messages are gone. Our
controllers run with ``unclean.recovery.manager.enabled``; the topic's strategy is derived from
its ``unclean.leader.election.enable`` (KIP-966's conversion): false is Balanced, which waits for
the last-known leader (nothing happens while it is gone); switched to true it is Proactive: the
controller asks both live replicas their log end (ListOffsets as a debugging replica), elects
the middle one (most data), and every acknowledged message (A and B) is read back. The C
messages, acknowledged by one replica below min ISR, go with the broker that alone held them.
"""

from __future__ import annotations

import asyncio

import pytest

from engine.controller.unclean_recovery import PROACTIVE_WINDOW_MS, SCAN_INTERVAL_MS, LogQuery
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_version import version_name
from engine.image.partition_registration import PartitionRegistration
from engine.net.kafka_client import KafkaClient
from engine.server.unclean_recovery_queries import ask_broker
from engine.storage.log_reader import LogEntry, read_file
from kafka_peer.cluster import KafkaCluster
from kafka_peer.harness import KafkaClasses
from kafka_peer.nodes import wait_until
from kafka_peer.partition_changes import PartitionChangeCase, kafka_builds
from tests.engine.controller.test_kafka_brokers_on_kraftd import CLIENT_TIMEOUT_S, _admin, create_placed, our_image, partition

pytestmark = pytest.mark.kafka

TOPIC = "recovered"
RECOVERING = 1
CONTROLLER_SETTINGS = {"unclean.recovery.manager.enabled": "true", "unclean.recovery.timeout.ms": "20000"}


@pytest.fixture
def kafka_builder(kafka_dist):
    """Kafka's own classes, of the version the brokers run."""
    classes = KafkaClasses(kafka_dist)
    yield classes
    classes.close()


@pytest.fixture
def cluster(kafka_dist, tmp_path_factory):
    made = KafkaCluster(kafka_dist, tmp_path_factory.mktemp(f"unclean-recovery-{kafka_dist.version}"), voters=3,
                        brokers=3, controllers="kraftd",
                        release_version="4.1" if kafka_dist.version.startswith("4.1.") else None,
                        config=CONTROLLER_SETTINGS).start()
    yield made
    made.close()


def produce(cluster: KafkaCluster, tag: str, count: int, acks: str) -> list[bytes]:
    """``count`` messages, each acknowledged (else the test fails): what a client was told is stored."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": acks, "linger.ms": 0,
                         "message.timeout.ms": 60_000, "retries": 100})
    acked: list[bytes] = []
    failed: list = []
    for i in range(count):
        producer.produce(TOPIC, value=f"{tag}{i}".encode(),
                         on_delivery=lambda err, msg: failed.append(err) if err else acked.append(msg.value()))
    producer.flush(CLIENT_TIMEOUT_S)
    assert not failed and len(acked) == count
    return acked


def read_all(cluster: KafkaCluster, expected: int) -> set[bytes]:
    """Every message of the partition: at least ``expected``, read up to its high watermark (so
    nothing more is there to arrive)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "unclean-recovery-reader",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    seen: set[bytes] = set()
    next_offset = 0

    def to_the_end() -> bool:
        nonlocal next_offset
        for message in consumer.consume(100, timeout=1):
            if message.error() is None:
                seen.add(message.value())
                next_offset = max(next_offset, message.offset() + 1)
        _, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=CLIENT_TIMEOUT_S, cached=False)
        return len(seen) >= expected and next_offset >= high

    try:
        wait_until(to_the_end, f"{expected} messages read back, to the high watermark", cluster.live_nodes())
    finally:
        consumer.close()
    return seen


def kill_and_wait_fenced(cluster: KafkaCluster, broker_id: int) -> None:
    cluster.node(broker_id).kill()
    wait_until(lambda: our_image(cluster).cluster.brokers[broker_id].fenced, f"broker {broker_id} fenced",
               cluster.live_nodes())
    wait_until(lambda: broker_id not in partition(cluster, TOPIC).isr, f"broker {broker_id} out of the ISR",
               cluster.live_nodes())


def ask(cluster: KafkaCluster, broker_id: int, leader_epoch: int):
    image = our_image(cluster)
    query = LogQuery(image.topics.by_name[TOPIC], TOPIC, 0, broker_id, image.cluster.brokers[broker_id].epoch,
                     leader_epoch)

    async def once():
        async with KafkaClient(client_id="unclean-recovery-test") as client:
            return await ask_broker(client, cluster.node(broker_id).broker_address, [query])

    return asyncio.run(once())


def controller_log(cluster: KafkaCluster) -> list[LogEntry]:
    """The active controller's log, entry by entry (offset, timestamp, record)."""
    return [e for segment in sorted(cluster.node(cluster.wait_leader()).metadata_dir.glob("*.log"))
            for e in read_file(segment)]


def changes(record, topic_id) -> bool:
    return getattr(record, "type_name", "") == "PARTITION_CHANGE_RECORD" and record.topic_id == topic_id


def unclean_election(image: MetadataImage, p: PartitionRegistration) -> PartitionChangeCase:
    """An UNCLEAN election of ``p`` as Kafka's controller would ask its builder: fenced brokers
    and those in controlled shutdown may not lead."""
    brokers = image.cluster.brokers
    return PartitionChangeCase(
        replicas=p.replicas, isr=p.isr, leader=p.leader, elr=p.elr, last_known_elr=p.last_known_elr,
        recovery=p.leader_recovery_state, directories=p.directories, leader_epoch=p.leader_epoch,
        partition_epoch=p.partition_epoch, metadata_version=version_name(image.features.metadata_version),
        elr_enabled=True, min_isr=2, election="UNCLEAN",
        fenced=frozenset(b for b in p.replicas if b not in brokers or brokers[b].fenced),
        shutting_down=frozenset(b for b in p.replicas if b in brokers and brokers[b].in_controlled_shutdown))


def set_unclean_election(cluster: KafkaCluster, enabled: bool) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    admin = _admin(cluster)
    resource = ConfigResource("TOPIC", TOPIC, incremental_configs=[ConfigEntry(
        "unclean.leader.election.enable", str(enabled).lower(), incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=CLIENT_TIMEOUT_S)


def test_the_replica_with_the_most_data_is_elected_and_no_acknowledged_message_is_lost(cluster, kafka_builder) -> None:
    lagging, middle, last_leader = (b.node_id for b in cluster.brokers)
    create_placed(cluster, TOPIC, {0: [lagging, last_leader, middle]}, **{"min.insync.replicas": "2"})
    wait_until(lambda: getattr(partition(cluster, TOPIC), "leader", None) == lagging,
               "the topic led by its first replica", cluster.live_nodes())
    acked = produce(cluster, "A", 10, "all")
    kill_and_wait_fenced(cluster, lagging)
    assert partition(cluster, TOPIC).leader == last_leader
    acked += produce(cluster, "B", 20, "all")
    kill_and_wait_fenced(cluster, middle)
    produce(cluster, "C", 5, "1")  # on the last leader alone: below min ISR, never committed
    kill_and_wait_fenced(cluster, last_leader)

    # the two others come back (unclean shutdowns); the last leader stays gone
    for broker_id in (lagging, middle):
        cluster.node(broker_id).start()
    cluster.wait_ready([cluster.node(lagging), cluster.node(middle)])
    wait_until(lambda: partition(cluster, TOPIC).elr == (last_leader,), "the middle broker out of the ELR",
               cluster.live_nodes())
    # Balanced (unclean.leader.election.enable false) waits for the last leader: nobody is elected.
    # The moment is the controller's last record now (both restarts and the ELR change are in);
    # its later records, stamped by its own clock past a recovery scan and Proactive's window,
    # show it went on with the partition in view, and wrote no election for it meanwhile.
    moment = controller_log(cluster)[-1]
    horizon_ms = moment.timestamp_ms + PROACTIVE_WINDOW_MS + 2 * SCAN_INTERVAL_MS
    wait_until(lambda: controller_log(cluster)[-1].timestamp_ms >= horizon_ms,
               "the controller's records past a recovery round", cluster.live_nodes())
    topic_id = our_image(cluster).topics.by_name[TOPIC]
    assert [e.record for e in controller_log(cluster) if e.offset > moment.offset and changes(e.record, topic_id)] == []
    p = partition(cluster, TOPIC)
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (-1, (), (last_leader,), (last_leader,))

    # what Kafka's unclean election would take (its own PartitionChangeBuilder, of the brokers'
    # version, on this state): the first live replica, the one with the least data
    assert kafka_builds(kafka_builder, unclean_election(our_image(cluster), p))["leader"] == lagging

    # what the replicas answer (as the controller asks): log ends 10 and 30, last epochs as written
    lagging_info, middle_info = ask(cluster, lagging, p.leader_epoch), ask(cluster, middle, p.leader_epoch)
    assert [(a.log_end_offset, a.leader_epoch) for a in lagging_info + middle_info] == [
        (10, p.leader_epoch), (30, p.leader_epoch)]
    assert lagging_info[0].last_epoch < middle_info[0].last_epoch
    assert lagging_info[0].log_end_offset < len(acked)  # Kafka's choice would lose acknowledged messages
    assert ask(cluster, middle, p.leader_epoch - 1) == []  # a stale question is refused (fenced epoch)

    set_unclean_election(cluster, True)  # the topic's strategy becomes Proactive: the recovery runs
    wait_until(lambda: partition(cluster, TOPIC).leader == middle, "the middle broker elected", cluster.live_nodes())
    elected = partition(cluster, TOPIC)
    assert elected.leader_epoch > p.leader_epoch and elected.elr == () and elected.last_known_elr == ()
    election = [e.record for e in controller_log(cluster) if changes(e.record, topic_id) and e.record.leader == middle]
    assert len(election) == 1
    assert tuple(election[0].isr) == (middle,) and election[0].leader_recovery_state == RECOVERING

    # every acknowledged message is there; the uncommitted C messages went with the last leader
    seen = read_all(cluster, len(acked))
    assert set(acked) <= seen
    assert not any(v.startswith(b"C") for v in seen)
    # the lagging replica follows the new leader and catches up: back in the ISR, recovery done
    wait_until(lambda: set(partition(cluster, TOPIC).isr) == {lagging, middle}, "the lagging replica in sync",
               cluster.live_nodes())
    assert partition(cluster, TOPIC).leader_recovery_state == 0
