"""The live attachment against Apache Kafka's own controllers (tests/kafka_peer).

One cluster per Kafka version, shared by the module: the oldest tested release as a static
quorum of three combined nodes, the newer ones as a dynamic quorum of three controller-only
nodes and a broker, so both layouts are attached to. Checked: after a topic is created through
a Kafka broker, the image the drained batches rebuild equals the image of the Kafka leader's
own log directory replayed to the same offset (engine.image.metadata_loader), the attachment
shows up as no observer of Kafka's quorum, and when the Kafka leader is killed the attachment
follows its successor without a restart. Deadlines are safety nets, never claims.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterator

import pytest

from engine.image.metadata_delta import replay_entries
from engine.image.metadata_loader import load_log_dir
from engine.net.kafka_client import request_once
from metashell.live.attach import Attachment
from metashell.live.feed import FeedUpdate
from tests.kafka_peer.cluster import KafkaCluster
from tests.test_broker_node import create_topic_request

pytestmark = pytest.mark.kafka
DEADLINE_S = 60


class Feed:
    def __init__(self, cluster: KafkaCluster):
        self.woken = threading.Event()
        self.attachment = Attachment(cluster.bootstrap_controllers, command_config={"cluster.id": cluster.cluster_id},
                                     on_update=self.woken.set)
        self.image, self.offset = None, -1

    def apply(self, update: FeedUpdate) -> Any:
        if update.reset is not None:
            self.image, self.offset = update.reset
        for batch in update.batches:
            assert batch[0].offset == self.offset + 1
            self.image = replay_entries(batch, self.image)
            self.offset = batch[-1].offset
        return update.status

    def until(self, predicate: Callable[[Any], Any], what: str) -> Any:
        deadline = time.monotonic() + DEADLINE_S
        while True:
            status = self.apply(self.attachment.drain())
            if predicate(status):
                return status
            if status.error or time.monotonic() > deadline:
                raise AssertionError(f"{what}: not within {DEADLINE_S} s ({status})")
            self.woken.wait(0.2)
            self.woken.clear()


@pytest.fixture(scope="module")
def _clusters() -> Iterator[dict]:
    made: dict[str, KafkaCluster] = {}
    yield made
    for cluster in made.values():
        cluster.close()


@pytest.fixture
def cluster(kafka_dist, _clusters, tmp_path_factory) -> KafkaCluster:
    made = _clusters.get(kafka_dist.version)
    if made is None:
        for other in _clusters.values():
            other.close()  # an idle cluster of the version before would only take CPU
        oldest = kafka_dist.version.startswith("4.1")
        root = tmp_path_factory.mktemp(f"kafka-attach-{kafka_dist.version}")
        made = _clusters[kafka_dist.version] = KafkaCluster(
            kafka_dist, root, voters=3, brokers=0 if oldest else 1, combined=oldest,
            quorum="static" if oldest else "dynamic").start()
    return made


def _create_topic(cluster: KafkaCluster, name: str) -> None:
    broker = next(n for n in cluster.brokers if n.alive)
    response = request_once(broker.broker_address, create_topic_request(name, 2, 1), timeout_ms=30_000)
    assert response.topics[0].error_code == 0, response


def test_the_attached_image_equals_the_kafka_leaders_files_at_the_same_offset(cluster: KafkaCluster) -> None:
    feed = Feed(cluster)
    try:
        feed.attachment.start()
        feed.apply(feed.attachment.wait_caught_up(DEADLINE_S))
        name = f"attached-{len(cluster.nodes)}-{time.monotonic_ns()}"
        _create_topic(cluster, name)
        status = feed.until(lambda s: feed.image is not None and name in feed.image.topics.by_name, "the topic")
        assert status.connected and status.error is None
        leader = cluster.node(status.leader_id)
        expected, _ = load_log_dir(leader.metadata_dir, offset=feed.offset)
        assert feed.image == expected
        quorum = feed.until(lambda s: feed.attachment.quorum is not None, "DescribeQuorum") and feed.attachment.quorum
        assert quorum.leader_id == status.leader_id
        assert all(o.replica_id >= 0 for o in quorum.observers)  # Kafka tracks no replica id -1
    finally:
        feed.attachment.close()


def test_a_killed_kafka_leader_is_followed_by_its_successor(cluster: KafkaCluster) -> None:
    feed = Feed(cluster)
    try:
        feed.attachment.start()
        first = feed.until(lambda s: s.connected and s.applied_offset >= 0, "following")
        cluster.node(first.leader_id).kill()
        status = feed.until(lambda s: s.connected and s.leader_id not in (-1, first.leader_id)
                            and s.applied_offset > first.applied_offset, "the next Kafka leader followed")
        assert status.leader_epoch > first.leader_epoch and status.error is None
    finally:
        feed.attachment.close()
