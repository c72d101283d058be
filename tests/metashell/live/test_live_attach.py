"""The live attachment (metashell.live.attach) on real sockets against kraftd controllers.

In-process controller nodes on 127.0.0.1 (tests/node_quorum.py) run in the test's event loop;
the Attachment runs its own thread and loop, as under the shell. Checked: topic creations a
client commits reach the drained batches, and the image they rebuild equals the leader's log
directory replayed to the same offset; a stopped leader is followed by the next without a
restart; attached while one voter of three is left (no leader can be elected) it says so without
an error, and once a leader is elected it and an attachment made before follow a topic created
after the election; with every controller down the status says "disconnected, retrying (at
offset N)" and the feed recovers when the quorum is back; a controller of another cluster stops the feed
with one line; bad command configs are refused with one line. Deadlines are safety nets.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from pathlib import Path
from typing import Any, Callable

import pytest

from engine.common.errors import ConfigError
from engine.image.metadata_delta import replay_entries
from engine.image.metadata_loader import load_log_dir
from engine.net.kafka_client import KafkaClient
from engine.server.controller_node import ControllerNode, load_controller_settings
from metashell.live.attach import AttachError, Attachment
from metashell.live.feed import FeedUpdate
from tests.node_quorum import CLUSTER_ID, start_quorum, wait_until
from tests.engine.broker.test_broker_apis import BROKER_ID, broker_heartbeats, broker_registration_request
from tests.engine.server.test_broker_node import create_topic_request

DEADLINE_S = 30


def in_loop(test: Callable) -> Callable:
    @functools.wraps(test)
    def run(tmp_path: Path) -> None:
        asyncio.run(asyncio.wait_for(test(tmp_path), 120))
    return run


class Feed:
    """What the tools do: drain on every wake-up, replay into an image."""

    def __init__(self, bootstrap: str, *, with_cluster_id: bool = True, **config: str):
        self.woken = threading.Event()
        self.attachment = Attachment(bootstrap, command_config={**({"cluster.id": CLUSTER_ID} if with_cluster_id
                                                                   else {}), **config},
                                     on_update=self.woken.set)
        self.image, self.offset, self.resets = None, -1, 0

    def apply(self, update: FeedUpdate) -> None:
        if update.reset is not None:
            self.image, self.offset = update.reset
            self.resets += 1
        for batch in update.batches:
            assert batch[0].offset == self.offset + 1, "handed over in order, each once"
            self.image = replay_entries(batch, self.image)
            self.offset = batch[-1].offset

    def pump(self) -> Any:
        self.apply(self.attachment.drain())
        return self.attachment.status

    async def until(self, predicate: Callable[[Any], Any], what: str) -> Any:
        """The status once ``predicate(status)`` holds (drained and replayed meanwhile)."""
        def check() -> Any:
            status = self.pump()
            return status if predicate(status) else None
        return await wait_until(check, DEADLINE_S, what)


def _active(nodes: list[ControllerNode]) -> ControllerNode | None:
    return next((n for n in nodes if n.driver is not None and n.controller is not None
                 and n.controller.core.is_active), None)


def _bootstrap(nodes: list[ControllerNode]) -> str:
    return ",".join(f"{h}:{p}" for h, p in (n.driver.address for n in nodes))


async def _register_a_broker(client: KafkaClient, active: ControllerNode) -> asyncio.Task:
    """BROKER_ID registered at ``active`` and heartbeating until unfenced (topics need a broker)."""
    # The request offers the features of the controller's image: a controller just elected may not
    # have replayed metadata.version yet, and a registration without it is refused (as Kafka does).
    await wait_until(lambda: active.image.metadata_version, DEADLINE_S, "metadata.version at the active controller")
    registered = await client.send(active.driver.address, broker_registration_request(BROKER_ID, 9092, active.image))
    assert registered.error_code == 0, registered
    beats = asyncio.create_task(broker_heartbeats(client, active.driver.address, active, int(registered.broker_epoch)))
    # the registration is answered at its commit; the active controller's image has it a moment later
    await wait_until(lambda: (b := active.image.cluster.brokers.get(BROKER_ID)) is not None and not b.fenced,
                     DEADLINE_S, "broker unfenced")
    return beats


@in_loop
async def test_topic_creations_reach_the_feed_and_the_image_equals_the_leaders_log_dir(tmp_path: Path) -> None:
    _, nodes = await start_quorum(tmp_path, 3)
    feed = Feed(_bootstrap(nodes), with_cluster_id=False)  # learnt from DescribeCluster instead
    client = KafkaClient(client_id="test-admin", request_timeout_ms=10_000)
    beats = None
    try:
        feed.attachment.start()
        active = await wait_until(lambda: _active(nodes), DEADLINE_S, "an active controller")
        await wait_until(lambda: active.image.metadata_version, DEADLINE_S, "metadata.version")
        # catch up without blocking the controllers' loop (wait_caught_up is for command lines)
        caught = await asyncio.to_thread(feed.attachment.wait_caught_up, DEADLINE_S)
        feed.apply(caught)
        assert feed.resets == 1 and caught.reset[1] == -1  # the log starts at 0: the empty image
        assert feed.attachment.fetch_version == 18  # kraftd serves Fetch v17 and v18 (KIP-1166): v18 it is
        beats = await _register_a_broker(client, active)
        for name in ("orders", "payments"):
            response = await client.send(active.driver.address, create_topic_request(name, 3, 1))
            assert response.topics[0].error_code == 0, response
        status = await feed.until(lambda s: feed.image is not None and {"orders", "payments"} <= set(
            feed.image.topics.by_name), "both topics in the feed")
        assert status.connected and status.leader_id == active.settings.node_id
        assert status.note == f"following leader {status.leader_id} (epoch {status.leader_epoch})"
        assert status.applied_offset == feed.offset and status.error is None
        expected, _ = load_log_dir(active.settings.metadata_log_dir, offset=feed.offset)
        assert feed.image == expected
        quorum = await wait_until(lambda: feed.attachment.quorum, DEADLINE_S, "DescribeQuorum polled")
        assert quorum.leader_id == status.leader_id and len(quorum.voters) == 3
        assert quorum.observers == ()  # the attachment is nobody's observer
        assert await wait_until(lambda: feed.attachment.cluster_id, DEADLINE_S, "DescribeCluster") == CLUSTER_ID
    finally:
        if beats is not None:
            beats.cancel()
        await asyncio.to_thread(feed.attachment.close)
        await client.close()
        for node in nodes:
            await node.stop()


@in_loop
async def test_a_stopped_leader_is_followed_by_the_next_one(tmp_path: Path) -> None:
    _, nodes = await start_quorum(tmp_path, 3)
    feed = Feed(_bootstrap(nodes))
    try:
        feed.attachment.start()
        first = await feed.until(lambda s: s.connected and s.applied_offset >= 0, "following a leader")
        old = next(n for n in nodes if n.settings.node_id == first.leader_id)
        await old.stop()
        # The new leader's idle NoOps (metadata.max.idle.interval.ms) commit in its epoch.
        status = await feed.until(lambda s: s.connected and s.leader_id != first.leader_id
                                  and s.leader_epoch > first.leader_epoch and s.applied_offset > first.applied_offset
                                  and feed.image.provenance.last_epoch >= s.leader_epoch, "the next leader followed")
        assert status.error is None and feed.resets == 1
    finally:
        await asyncio.to_thread(feed.attachment.close)
        for node in nodes:
            await node.stop()


@in_loop
@pytest.mark.slow
async def test_attached_while_no_leader_can_be_elected_it_looks_without_error_then_follows_a_new_topic(
        tmp_path: Path) -> None:
    configs, nodes = await start_quorum(tmp_path, 3)
    bootstrap = _bootstrap(nodes)
    before, during = Feed(bootstrap), Feed(bootstrap)
    client = KafkaClient(client_id="test-admin", request_timeout_ms=10_000)
    beats = None
    try:
        before.attachment.start()
        first = await before.until(lambda s: s.connected and s.applied_offset >= 0, "following a leader")
        leader = next(n for n in nodes if n.settings.node_id == first.leader_id)
        gone = [leader, next(n for n in nodes if n is not leader)]
        left = next(n for n in nodes if n not in gone)
        await asyncio.gather(*(n.stop() for n in gone))
        # The one voter left may have won an election with a resigning leader's vote; leading
        # nobody, it resigns at its check-quorum timeout. From then on nobody can be elected.
        await wait_until(lambda: left.driver.client.role in ("prospective", "candidate"), DEADLINE_S,
                         "the voter left looking for a leader")
        down = await before.until(lambda s: not s.connected, "disconnected")
        # (followed by the last connection failure when a request failed, rather than the leader
        # going silent past the fetch timeout), on one line
        assert down.error is None and down.note.startswith(
            f"disconnected, retrying (at offset {down.applied_offset + 1})")
        assert "\n" not in down.note
        during.attachment.start()
        # A Fetch went out only once ApiVersions was answered: by the one voter still up, which leads nobody.
        await wait_until(lambda: during.attachment.fetch_version is not None, DEADLINE_S, "a fetch to the voter left")
        looking = during.pump()
        assert not looking.connected and looking.error is None and looking.note.startswith("connecting")
        assert during.image is None and looking.applied_offset == -1
        back = ControllerNode(load_controller_settings(configs[nodes.index(gone[0])]))
        nodes.append(back)
        await back.start()  # two of three: a leader is elected
        active = await wait_until(lambda: _active(nodes), DEADLINE_S, "a leader elected")
        during.apply(await asyncio.to_thread(during.attachment.wait_caught_up, DEADLINE_S))
        assert during.resets == 1 and during.attachment.status.error is None
        beats = await _register_a_broker(client, active)
        response = await client.send(active.driver.address, create_topic_request("after-election", 1, 1))
        assert response.topics[0].error_code == 0, response
        for feed in (before, during):
            status = await feed.until(lambda s, feed=feed: feed.image is not None
                                      and "after-election" in feed.image.topics.by_name, "the topic in the feed")
            assert status.connected and status.leader_id == active.settings.node_id
            assert status.leader_epoch > first.leader_epoch and feed.resets == 1
            expected, _ = load_log_dir(active.settings.metadata_log_dir, offset=feed.offset)
            assert feed.image == expected
    finally:
        if beats is not None:
            beats.cancel()
        await asyncio.to_thread(before.attachment.close)
        await asyncio.to_thread(during.attachment.close)
        await client.close()
        for node in nodes:
            await node.stop()


@in_loop
async def test_with_every_controller_down_it_retries_and_recovers_by_itself(tmp_path: Path) -> None:
    configs, (node,) = await start_quorum(tmp_path, 1)
    feed = Feed(_bootstrap([node]), **{"retry.backoff.ms": "50", "controller.quorum.fetch.timeout.ms": "500"})
    try:
        feed.attachment.start()
        before = await feed.until(lambda s: s.connected and s.applied_offset >= 0, "following")
        await node.stop()
        down = await feed.until(lambda s: not s.connected, "disconnected")
        assert down.note.startswith(f"disconnected, retrying (at offset {down.applied_offset + 1})")
        assert down.applied_offset >= before.applied_offset and down.error is None
        node = ControllerNode(load_controller_settings(configs[0]))
        await node.start()
        back = await feed.until(lambda s: s.connected and s.applied_offset > down.applied_offset, "recovered")
        assert back.note.startswith("following leader 1") and feed.resets == 1
    finally:
        await asyncio.to_thread(feed.attachment.close)
        await node.stop()


@in_loop
async def test_a_controller_of_another_cluster_stops_the_feed_with_one_line(tmp_path: Path) -> None:
    _, (node,) = await start_quorum(tmp_path, 1)
    attachment = Attachment(_bootstrap([node]), command_config={"cluster.id": "AnotherClusterIdAAAAAA"})
    try:
        attachment.start()
        status = await wait_until(lambda: attachment.status.error and attachment.status, DEADLINE_S, "the error")
        assert "INCONSISTENT_CLUSTER_ID" in status.error and "\n" not in status.error
        assert status.note.startswith("stopped: ") and not status.connected
        with pytest.raises(AttachError, match="INCONSISTENT_CLUSTER_ID"):
            await asyncio.to_thread(attachment.wait_caught_up, 1)
    finally:
        await asyncio.to_thread(attachment.close)
        await node.stop()


@pytest.mark.parametrize("config, message", [
    ({"security.protocol": "SASL_SSL"}, "sasl.mechanism is GSSAPI (Kafka's default), which is not supported"),
    ({"security.protocol": "SSL", "ssl.truststore.location": "/nope"}, "ssl.truststore.location: cannot read /nope"),
    ({"security.protocol": "TLS"}, "security.protocol must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
    ({"request.timeout.ms": "soon"}, "request.timeout.ms must be an integer"),
])
def test_a_bad_command_config_is_refused_with_one_line(config: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
        Attachment("127.0.0.1:9093", command_config=config)
    assert "\n" not in str(err.value)


def test_a_bad_bootstrap_is_refused_and_close_is_idempotent_without_a_start() -> None:
    with pytest.raises(ConfigError, match="Invalid url in --bootstrap-controller: nohost"):
        Attachment("nohost")
    attachment = Attachment("127.0.0.1:1")
    attachment.close()
    attachment.close()


def test_close_leaves_no_thread_and_is_idempotent() -> None:
    before = {t.name for t in threading.enumerate()}
    attachment = Attachment("127.0.0.1:1", command_config={"retry.backoff.ms": "10"})
    attachment.start()
    attachment.start()  # a second start changes nothing
    attachment.close()
    attachment.close()
    assert {t.name for t in threading.enumerate()} <= before
    assert not attachment.status.connected
