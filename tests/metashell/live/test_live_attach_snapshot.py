"""The live attachment starting from a snapshot it downloads (FetchSnapshot), on real sockets.

Three in-process kraftd controllers on 127.0.0.1 start from a snapshot of 600 partitions (six
topics of 100, written into each one's metadata log before it starts, as ``metashell bench
attach`` seeds its quorums); the attachment downloads it and indexes its bytes (the lazy image of
engine.image.snapshot_index), and the records committed after the snapshot replay on top.
Checked: the attached image equals, field for field, the one an eager replay of the leader's own
files gives at the same offset (the snapshot decoded whole, then the log); a topic the records
after the snapshot did not touch is still undecoded until read; and a snapshot whose bytes are
damaged stops the attachment with one line naming the snapshot, the controller and the byte
offset. Deadlines are safety nets, never performance claims.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import replace
from datetime import timedelta
from types import MappingProxyType
from pathlib import Path
from typing import Any, Callable

import pytest

from engine.image.lazy_topics import LazyPartitions, undecoded_topics
from engine.image.metadata_delta import replay_entries
from engine.image.metadata_loader import image_of_snapshot
from engine.net.kafka_client import KafkaClient
from engine.records.kio_codec import ErrorCode, i32, protocol_module
from engine.server.controller_node import ControllerNode
from engine.storage.log_reader import read_file
from engine.storage.snapshot_writer import SnapshotId, parse_snapshot_name
from engine.common.directory_id import migrating_array
from metashell.bench.attach_cluster import METADATA_PARTITION_DIR, SnapshotSeed
from metashell.bench.export import bench_image
from metashell.live.attach import AttachError, Attachment
from tests.node_quorum import CLUSTER_ID, start_quorum, wait_until
from tests.engine.broker.test_broker_apis import BROKER_ID, broker_heartbeats, broker_registration_request
from tests.engine.server.test_broker_node import create_topic_request

pytestmark = pytest.mark.slow
DEADLINE_S = 60


def _seed_image() -> Any:
    """bench_image's six topics of 100 partitions (replicas on brokers 1-6, never registered
    here), but topic-00001 on broker BROKER_ID alone: the one this test registers, so that the
    controller can grow that topic (and moves its leaders as the broker is fenced and unfenced)."""
    image = bench_image(600)
    grown_id = image.topics.by_name["topic-00001"]
    grown = image.topics.by_id[grown_id]
    only = migrating_array(1)
    grown = replace(grown, partitions=MappingProxyType({
        number: p._replace(replicas=(BROKER_ID,), isr=(BROKER_ID,), leader=BROKER_ID, directories=only)
        for number, p in grown.partitions.items()}))
    by_id = MappingProxyType({**image.topics.by_id, grown_id: grown})
    return replace(image, topics=replace(image.topics, by_id=by_id))


SEED = SnapshotSeed(600, _seed_image())  # topic-00000 .. topic-00005


def in_loop(test: Callable) -> Callable:
    @functools.wraps(test)
    def run(tmp_path: Path) -> None:
        asyncio.run(asyncio.wait_for(test(tmp_path), 180))
    return run


def _seed(node: ControllerNode) -> None:
    """The seed's snapshot in the node's metadata log, with the voters its format chose (as
    metashell.bench.attach_cluster.seed_node, which reads them from the format's arguments)."""
    partition_dir = Path(node.settings.metadata_log_dir) / METADATA_PARTITION_DIR
    bootstrap = partition_dir / SnapshotId(0, 0).file_name
    entries = list(read_file(bootstrap, snapshot=True))
    control = [e.record for e in entries if e.control and e.record.type_name in ("KRAFT_VERSION", "KRAFT_VOTERS")]
    features = {e.record.message.name: int(e.record.message.feature_level) for e in entries
                if e.record.type_name == "FEATURE_LEVEL_RECORD"}
    data, snapshot_id = SEED.snapshot(features, control, 1_700_000_000_000)
    bootstrap.unlink()  # the log starts at the seed's end, as after a snapshot download
    (partition_dir / snapshot_id.file_name).write_bytes(data)


def _bootstrap(nodes: list[ControllerNode]) -> str:
    return ",".join(f"{h}:{p}" for h, p in (n.driver.address for n in nodes))


def _active(nodes: list[ControllerNode]) -> ControllerNode | None:
    return next((n for n in nodes if n.driver is not None and n.controller is not None
                 and n.controller.core.is_active), None)


def _eager_image(log_dir: Path, offset: int) -> Any:
    """The leader's snapshot decoded record by record (no index), then its log replayed to ``offset``."""
    partition_dir = log_dir / METADATA_PARTITION_DIR
    snapshot = next(partition_dir.glob("*.checkpoint"))
    image, _ = image_of_snapshot(list(read_file(snapshot, snapshot=True)), parse_snapshot_name(snapshot.name))
    assert not any(isinstance(t.partitions, LazyPartitions) for t in image.topics.by_id.values())
    after = [e for segment in sorted(partition_dir.glob("*.log"))
             for e in read_file(segment, snapshot=False) if e.offset <= offset]
    return replay_entries(after, image)


def _create_partitions_request(topic: str, count: int) -> Any:
    module = protocol_module("create_partitions", 3, "request")
    return module.CreatePartitionsRequest(topics=(module.CreatePartitionsTopic(
        name=topic, count=i32(count), assignments=None),), timeout=timedelta(seconds=10), validate_only=False)


@in_loop
async def test_a_downloaded_snapshot_is_indexed_and_the_records_after_it_equal_an_eager_replay(tmp_path: Path) -> None:
    _, nodes = await start_quorum(tmp_path, 3, prepare=_seed)
    client = KafkaClient(client_id="test-admin", request_timeout_ms=10_000)
    attachment = Attachment(_bootstrap(nodes), command_config={"cluster.id": CLUSTER_ID})
    beats = None
    try:
        active = await wait_until(lambda: _active(nodes), DEADLINE_S, "an active controller")
        await wait_until(lambda: active.image.metadata_version, DEADLINE_S, "metadata.version")
        # records after the snapshot: a broker registered and unfenced, a topic of the snapshot
        # deleted, one grown by a partition, a new one created; the other four untouched
        registered = await client.send(active.driver.address,
                                       broker_registration_request(BROKER_ID, 9092, active.image))
        assert registered.error_code == 0, registered
        beats = asyncio.create_task(broker_heartbeats(client, active.driver.address, active,
                                                      int(registered.broker_epoch)))
        await wait_until(lambda: (b := active.image.cluster.brokers.get(BROKER_ID)) is not None and not b.fenced,
                         DEADLINE_S, "broker unfenced")
        deleted = await client.send(active.driver.address, _delete_topics_request("topic-00002"))
        assert [r.error_code for r in deleted.responses] == [ErrorCode.none], deleted
        grown = await client.send(active.driver.address, _create_partitions_request("topic-00001", 101))
        assert [r.error_code for r in grown.results] == [ErrorCode.none], grown
        created = await client.send(active.driver.address, create_topic_request("orders", 3, 1))
        assert created.topics[0].error_code == 0, created
        attachment.start()
        caught = await asyncio.to_thread(attachment.wait_caught_up, DEADLINE_S)
        image, offset = caught.reset
        snapshot_end = SEED.snapshot({}, [], 0)[1].end_offset
        assert offset == snapshot_end - 1  # the attachment started from the downloaded snapshot
        assert undecoded_topics(image.topics) == 6  # indexed, nothing decoded yet
        for batch in caught.batches:
            image = replay_entries(batch, image)
            offset = batch[-1].offset
        assert sorted(image.topics.by_name) == ["orders", "topic-00000", "topic-00001", "topic-00003",
                                                "topic-00004", "topic-00005"]
        assert len(image.topics.topic("topic-00001").partitions) == 101
        # the records after the snapshot decoded only the topic they touched (the deleted one is gone)
        assert undecoded_topics(image.topics) == 4
        assert not image.topics.topic("topic-00000").partitions.decoded
        expected = _eager_image(Path(active.settings.metadata_log_dir), offset)
        assert image == expected  # field for field, every lazy topic decoded on the way
        assert undecoded_topics(image.topics) == 0
    finally:
        if beats is not None:
            beats.cancel()
        await asyncio.to_thread(attachment.close)
        await client.close()
        for node in nodes:
            await node.stop()


def _delete_topics_request(name: str) -> Any:
    module = protocol_module("delete_topics", 6, "request")
    return module.DeleteTopicsRequest(topics=(module.DeleteTopicState(name=name, topic_id=None),),
                                      timeout=timedelta(seconds=10))


@in_loop
async def test_a_damaged_snapshot_stops_the_attachment_with_one_line_naming_it(tmp_path: Path) -> None:
    _, nodes = await start_quorum(tmp_path, 3, prepare=_seed)
    attachment = Attachment(_bootstrap(nodes), command_config={"cluster.id": CLUSTER_ID})
    try:
        active = await wait_until(lambda: _active(nodes), DEADLINE_S, "an active controller")
        await wait_until(lambda: active.image.metadata_version, DEADLINE_S, "metadata.version")
        # the controllers loaded their snapshot; its bytes on disk are damaged since, as a
        # FetchSnapshot then sends them: one byte in the middle of a batch of partitions
        for node in nodes:
            snapshot = next((Path(node.settings.metadata_log_dir) / METADATA_PARTITION_DIR).glob("*.checkpoint"))
            data = bytearray(snapshot.read_bytes())
            data[len(data) // 2] ^= 0xFF
            snapshot.write_bytes(bytes(data))
        attachment.start()
        with pytest.raises(AttachError) as raised:
            await asyncio.to_thread(attachment.wait_caught_up, DEADLINE_S)
        line = str(raised.value)
        host, port = active.driver.address
        assert "\n" not in line and "Traceback" not in line
        assert f"snapshot {snapshot.name} from controller {host}:{port}" in line
        assert "byte offset" in line and "CRC" in line.upper(), line
    finally:
        await asyncio.to_thread(attachment.close)
        for node in nodes:
            await node.stop()
