"""The live attachment against Apache Kafka's own controllers (tests/kafka_peer).

One cluster per Kafka version, shared by the module: the pinned release (4.1) as a static quorum
of three combined nodes; the newest server (served before its tools, else the newest release) as
a dynamic quorum of three controller-only nodes and a broker, so both layouts are attached to.
Checked: the attachment fetches at Fetch v18 (the newest it speaks, which both offer); after a
topic is created through a Kafka broker, the image the drained batches rebuild equals the image
of the Kafka leader's own log directory replayed to the same offset (engine.image.metadata_loader);
the attachment shows up as no observer of Kafka's quorum. A Kafka broker's port given as the
bootstrap controller is named as a broker at once (its ApiVersions lists no Raft API, and it
refuses DescribeCluster for the controllers with MISMATCHED_ENDPOINT_TYPE). When the Kafka leader is killed, an
attachment made right then (before a successor is elected) catches up to the successor's high
watermark with the successor's files' image, and it and one attached before follow a topic
created after the failover. The live shell (metashell.source.LiveSource in a Session) on the
combined cluster follows a topic created through a Kafka admin client, then a SIGKILLed node's
broker fenced, its replica leaving the ISR and entering the ELR (KIP-966, on by default from 4.1).
Deadlines are safety nets, never claims.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any, Callable, Iterator

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from engine.image.metadata_delta import replay_entries
from engine.image.metadata_loader import load_log_dir
from engine.admin import quorum_client
from engine.common.api_keys import ApiKeys
from engine.net.kafka_client import KafkaClient, request_once
from kafka_peer.cluster import KafkaCluster
from kafka_peer.distribution import KafkaUnavailable, fetch
from kafka_peer.fixtures import NEWEST_SERVERS, VERSIONS, unavailable
from metashell.live.attach import AttachError, Attachment
from metashell.live.feed import FeedUpdate
from metashell.shell.session import Session
from metashell.source import LiveSource
from tests.engine.server.test_broker_node import create_topic_request
from tests.metashell.shell.test_live_shell import answer

pytestmark = pytest.mark.kafka
DEADLINE_S = 60
MISMATCHED_ENDPOINT_TYPE = 114  # Kafka's Errors: "The request was sent to an endpoint of the wrong type."


class Feed:
    def __init__(self, cluster: KafkaCluster):
        self.woken = threading.Event()
        # no cluster.id: Kafka takes a Fetch without one, and the id is learnt from DescribeCluster
        self.attachment = Attachment(cluster.bootstrap_controllers, on_update=self.woken.set)
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


# The pinned release and the newest server: the newest Fetch (v18) is only as new as the server.
ATTACH_VERSIONS = list(dict.fromkeys(VERSIONS[:1] + NEWEST_SERVERS))


@pytest.fixture(scope="module", params=ATTACH_VERSIONS, ids=lambda v: f"kafka-{v}")
def _cluster(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[KafkaCluster]:
    version, why = request.param, None
    try:
        dist = fetch(version, tools=version in VERSIONS)
    except KafkaUnavailable as exc:
        why = str(exc)
    if why is not None:
        unavailable(why)  # outside the except block: the report shows the sentence, not a chain
    oldest = version.startswith("4.1")
    made = KafkaCluster(dist, tmp_path_factory.mktemp(f"kafka-attach-{version}"), voters=3,
                        brokers=0 if oldest else 1, combined=oldest, quorum="static" if oldest else "dynamic").start()
    yield made
    made.close()


@pytest.fixture
def cluster(_cluster: KafkaCluster) -> KafkaCluster:
    for node in _cluster.nodes:
        if not node.alive:
            _cluster.restart(node)  # killed by a test before this one
    return _cluster


def _create_topic(cluster: KafkaCluster, name: str) -> None:
    broker = next(n for n in cluster.brokers if n.alive)
    response = request_once(broker.broker_address, create_topic_request(name, 2, 1), timeout_ms=30_000)
    assert response.topics[0].error_code == 0, response


def _equals_the_leaders_files(feed: Feed, leader_id: int, cluster: KafkaCluster) -> bool:
    expected, _ = load_log_dir(cluster.node(leader_id).metadata_dir, offset=feed.offset)
    return feed.image == expected


def test_the_attached_image_equals_the_kafka_leaders_files_at_the_same_offset(cluster: KafkaCluster) -> None:
    feed = Feed(cluster)
    try:
        feed.attachment.start()
        feed.apply(feed.attachment.wait_caught_up(DEADLINE_S))
        # Kafka 4.1 and newer offer Fetch v18 on the controller listener: the newest we speak.
        assert feed.attachment.fetch_version == 18
        name = f"attached-{time.monotonic_ns()}"
        _create_topic(cluster, name)
        status = feed.until(lambda s: feed.image is not None and name in feed.image.topics.by_name, "the topic")
        assert status.connected and status.error is None
        assert _equals_the_leaders_files(feed, status.leader_id, cluster)
        quorum = feed.until(lambda s: feed.attachment.quorum is not None, "DescribeQuorum") and feed.attachment.quorum
        assert quorum.leader_id == status.leader_id
        assert feed.until(lambda s: feed.attachment.cluster_id is not None, "DescribeCluster") \
            and feed.attachment.cluster_id == cluster.cluster_id
        assert all(o.replica_id >= 0 for o in quorum.observers)  # Kafka tracks no replica id -1
    finally:
        feed.attachment.close()


def test_a_kafka_brokers_port_is_named_as_a_broker_and_given_up_on_at_once(cluster: KafkaCluster) -> None:
    broker = next(n for n in cluster.brokers if n.alive)
    at = f"127.0.0.1:{broker.broker_port}"
    # What tells it apart: Kafka's broker listener lists no Raft API (Vote, FetchSnapshot: controller
    # listeners only), and its admin client's KIP-919 check, DescribeCluster for the controllers,
    # is refused there with MISMATCHED_ENDPOINT_TYPE.
    served = asyncio.run(_api_versions(broker.broker_address))
    assert ApiKeys.FETCH in served and ApiKeys.VOTE not in served and ApiKeys.FETCH_SNAPSHOT not in served
    answer = request_once(broker.broker_address, quorum_client.describe_cluster_request(), timeout_ms=30_000,
                          adapt=True)
    assert int(answer.error_code) == MISMATCHED_ENDPOINT_TYPE
    attachment = Attachment(at)
    try:
        attachment.start()
        with pytest.raises(AttachError) as caught:
            attachment.wait_caught_up(DEADLINE_S)
    finally:
        attachment.close()
    assert str(caught.value) == (f"no controller among the bootstrap addresses: {at} (a broker, not a controller: "
                                 "use the bootstrap.controllers addresses)")


async def _api_versions(address: tuple[str, int]) -> dict[int, tuple[int, int]]:
    async with KafkaClient(client_id="test", request_timeout_ms=30_000) as client:
        return await client.api_versions(address)


def test_after_a_killed_kafka_leader_both_attachments_follow_the_successor_and_a_new_topic(
        cluster: KafkaCluster) -> None:
    before, during = Feed(cluster), None
    try:
        before.attachment.start()
        first = before.until(lambda s: s.connected and s.applied_offset >= 0, "following")
        cluster.node(first.leader_id).kill()
        # Attached right away: the voters left still name the dead leader until their fetch
        # timeout, then elect; only the successor's answers carry a high watermark.
        during = Feed(cluster)
        during.attachment.start()
        caught = during.apply(during.attachment.wait_caught_up(DEADLINE_S))
        assert caught.leader_id not in (-1, first.leader_id) and caught.leader_epoch > first.leader_epoch
        assert caught.connected and caught.error is None and during.offset == caught.applied_offset
        assert _equals_the_leaders_files(during, caught.leader_id, cluster)
        name = f"after-failover-{time.monotonic_ns()}"
        _create_topic(cluster, name)
        for feed in (before, during):
            status = feed.until(lambda s, feed=feed: feed.image is not None and name in feed.image.topics.by_name,
                                "the topic created after the failover")
            assert status.leader_id == caught.leader_id and status.error is None
            assert _equals_the_leaders_files(feed, status.leader_id, cluster)
    finally:
        before.attachment.close()
        if during is not None:
            during.attachment.close()


# Only Kafka's combined layout has three brokers (the newest server's has one: no partition of
# three replicas there); the test asks for that param of the module's cluster, so it is shared
# (a run without a 4.1 version has no such cluster: pytest reports the empty parameter set).
COMBINED_VERSIONS = [v for v in ATTACH_VERSIONS if v.startswith("4.1")]


@pytest.mark.parametrize("_cluster", COMBINED_VERSIONS, ids=lambda v: f"kafka-{v}", indirect=True)
def test_the_live_shell_follows_a_topic_a_fenced_broker_and_its_replica_into_the_elr(
        cluster: KafkaCluster) -> None:
    lines: list[str] = []
    session = Session(LiveSource.connect(cluster.bootstrap_controllers), out=lines.append)
    session.lines = lines  # what tests.metashell.shell.test_live_shell.answer reads

    def until(predicate: Callable[[], Any], what: str) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while not predicate():
            assert time.monotonic() < deadline, (f"{what}: not in the live tree within {DEADLINE_S} s "
                                                 f"({session.source.status}, {lines[-3:]})")
            # woken by the next commit (the leader appends one every 500 ms); the session's next
            # command takes it (source.wait would drain it past the session, whose tree stays put)
            session.source.changed.wait(0.5)

    name = f"elr-{time.monotonic_ns()}"

    def partition() -> dict:
        return json.loads("\n".join(answer(session, f"cat --json /topics/{name}/0")))

    try:
        session.load()
        assert name not in answer(session, "ls /topics")
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers.split(","), request_timeout_ms=30_000)
        try:
            admin.create_topics([NewTopic(name, 1, 3, topic_configs={"min.insync.replicas": "3"})])
        finally:
            admin.close()
        until(lambda: name in answer(session, "ls /topics") and sorted(partition()["isr"]) == [1, 2, 3],
              "the topic, all three replicas in sync")
        assert partition()["eligibleLeaderReplicas"] == []
        # Not the quorum leader: the two voters left keep the leader, so only the broker's fencing is seen
        leader = cluster.wait_leader()
        victim = next(n for n in cluster.nodes if n.node_id != leader)
        others = sorted(n.node_id for n in cluster.nodes if n is not victim)
        victim.kill()
        until(lambda: answer(session, f"cat /brokers/{victim.node_id}/state")[0] == "fenced",
              f"broker {victim.node_id} fenced")
        # ISR of two below min.insync.replicas 3: the replica removed goes to the ELR
        until(lambda: sorted(partition()["isr"]) == others, f"ISR {others}")
        assert partition()["eligibleLeaderReplicas"] == [victim.node_id]
        assert all(answer(session, f"cat /brokers/{n}/state")[0] == "active" for n in others)
    finally:
        session.source.close()
    # the `cluster` fixture starts the killed node again before the next test
