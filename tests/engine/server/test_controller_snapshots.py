"""Snapshots of a controller's image: Kafka's SnapshotGenerator rule on an injected clock, the
listener that replays the committed log into an image, the config keys, and a real node
(in process, real files and sockets) that snapshots, deletes what the snapshot covers and
comes back from the snapshot with its image."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from engine.common.errors import ConfigError
from engine.image.metadata_loader import load_snapshot
from engine.raft.raft_client import LeaderAndEpoch
from engine.raft.raft_log import LogBatch
from engine.records import metadata_records as m
from engine.records.kio_codec import i32
from engine.records.metadata_record_serde import ControlRecord
from engine.server.controller_node import ControllerNode, load_controller_settings
from engine.server.metadata_listener import MetadataListener
from engine.server.snapshot_policy import SnapshotLimits, SnapshotPolicy
from engine.storage.log_reader import list_log_dir, read_file

from tests.node_quorum import start_quorum, wait_until, write_config

HOUR_MS = 3_600_000


# -- the policy, on an injected clock ---------------------------------------------------------

def test_kafkas_defaults() -> None:
    assert SnapshotLimits() == SnapshotLimits(max_bytes=20 * 1024 * 1024, max_interval_ms=HOUR_MS)


def test_a_snapshot_is_due_once_the_bytes_since_the_last_reach_the_limit() -> None:
    policy = SnapshotPolicy(SnapshotLimits(max_bytes=1000, max_interval_ms=HOUR_MS), now_ms=0)
    assert policy.on_commit(600, now_ms=10) is None
    assert policy.on_commit(399, now_ms=20) is None  # 999 bytes
    assert policy.on_commit(1, now_ms=30) == "we have replayed at least 1000 bytes"
    assert policy.bytes_since_snapshot == 0 and policy.last_snapshot_ms == 30  # counting again
    assert policy.on_commit(999, now_ms=40) is None
    assert policy.on_commit(5000, now_ms=50) is not None  # one big commit is enough


def test_a_snapshot_is_due_when_the_interval_passed_and_something_new_was_committed() -> None:
    policy = SnapshotPolicy(SnapshotLimits(max_bytes=10**9, max_interval_ms=HOUR_MS), now_ms=1000)
    assert policy.on_commit(80, now_ms=1000 + HOUR_MS - 1) is None
    assert policy.on_commit(80, now_ms=1000 + HOUR_MS) == f"we have waited at least {HOUR_MS} ms"
    assert policy.on_commit(80, now_ms=1000 + 2 * HOUR_MS - 1) is None  # the interval restarted at the last one
    assert policy.on_commit(80, now_ms=1000 + 2 * HOUR_MS) is not None


def test_an_interval_of_zero_turns_time_based_snapshots_off() -> None:
    policy = SnapshotPolicy(SnapshotLimits(max_bytes=1000, max_interval_ms=0), now_ms=0)
    assert policy.on_commit(10, now_ms=100 * HOUR_MS) is None
    assert policy.on_commit(990, now_ms=100 * HOUR_MS) is not None


def test_a_loaded_snapshot_restarts_the_counters() -> None:
    policy = SnapshotPolicy(SnapshotLimits(max_bytes=1000, max_interval_ms=HOUR_MS), now_ms=0)
    assert policy.on_commit(900, now_ms=HOUR_MS - 1) is None
    policy.reset(now_ms=HOUR_MS - 1)
    assert policy.on_commit(900, now_ms=HOUR_MS) is None  # neither 1800 bytes nor an hour since the load


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError):
        SnapshotPolicy(SnapshotLimits(max_bytes=0), now_ms=0)
    with pytest.raises(ValueError):
        SnapshotPolicy(SnapshotLimits(max_interval_ms=-1), now_ms=0)


# -- the listener: the image of the committed log, and the snapshot point ----------------------

TOPIC_ID = uuid.UUID(int=7)


def topic_records(name: str = "orders", topic_id: uuid.UUID = TOPIC_ID, partitions: int = 2) -> list:
    replicas = (i32(1),)
    return [m.TopicRecordV0(name=name, topic_id=topic_id)] + [m.PartitionRecordV0(
        partition_id=i32(p), topic_id=topic_id, replicas=replicas, isr=replicas, removing_replicas=(),
        adding_replicas=(), leader=i32(1), leader_recovery_state=0, leader_epoch=i32(0), partition_epoch=i32(0))
        for p in range(partitions)]


def batch(base: int, records: list, *, epoch: int = 3, time_ms: int = 5000, size: int = 100,
          control: bool = False) -> LogBatch:
    return LogBatch(base, base + len(records) - 1, epoch, time_ms, control, tuple(records), size)


class Recorder:
    def __init__(self) -> None:
        self.emitted: list[tuple] = []
        self.now_ms = 0

    def listener(self, limits: SnapshotLimits) -> MetadataListener:
        import logging

        return MetadataListener(logging.getLogger("test"), "[test]", SnapshotPolicy(limits, 0), lambda: self.now_ms,
                                lambda *args: self.emitted.append(args))


def test_the_listener_replays_commits_into_the_image_and_emits_at_a_batch_boundary() -> None:
    rec = Recorder()
    listener = rec.listener(SnapshotLimits(max_bytes=250, max_interval_ms=HOUR_MS))
    listener.handle_leader_change(LeaderAndEpoch(1, 3))
    listener.handle_commit([batch(0, [m.NoOpRecordV0()]), batch(1, topic_records(), time_ms=6000)])
    assert listener.last_committed_offset == 3 and not rec.emitted
    assert listener.image.topics.by_name == {"orders": TOPIC_ID} and listener.image.partition_count == 2
    assert listener.image.provenance == (3, 3, 6000)
    listener.handle_commit([batch(4, [m.NoOpRecordV0()], time_ms=7000), batch(5, [m.NoOpRecordV0()], time_ms=8000)])
    (end_offset, image, timestamp_ms, reason), = rec.emitted  # 400 bytes >= 250: at the end of what was replayed
    assert (end_offset, timestamp_ms) == (6, 8000) and image is listener.image and "250 bytes" in reason
    assert image.topics.by_name == {"orders": TOPIC_ID}


def test_a_snapshot_not_started_is_due_again_at_the_next_commit() -> None:
    # the node declines while one is still being written (RaftDriver.request_snapshot -> False):
    # the counters go on from where they stood, as Kafka's SnapshotGenerator keeps counting
    import logging

    asked: list[int] = []
    started = [False]

    def emit(end_offset, image, timestamp_ms, reason):
        asked.append(end_offset)
        return started[0]

    listener = MetadataListener(logging.getLogger("test"), "[test]",
                                SnapshotPolicy(SnapshotLimits(max_bytes=250, max_interval_ms=HOUR_MS), 0),
                                lambda: 0, emit)
    listener.handle_commit([batch(0, [m.NoOpRecordV0()], size=300)])
    assert asked == [1] and listener.policy.bytes_since_snapshot == 300  # declined: still due
    started[0] = True
    listener.handle_commit([batch(1, [m.NoOpRecordV0()], size=10)])
    assert asked == [1, 2] and listener.policy.bytes_since_snapshot == 0  # taken: counting from zero
    listener.handle_commit([batch(2, [m.NoOpRecordV0()], size=10)])
    assert asked == [1, 2]


def test_a_loaded_snapshot_replaces_the_image_and_restarts_the_policy() -> None:
    from engine.image.image_writer import image_records
    from engine.image.metadata_image import MetadataImage
    from engine.image.metadata_delta import MetadataDelta
    from engine.records.kio_codec import SnapshotHeaderRecord, i16, i64
    from engine.records.metadata_record_serde import control_record
    from engine.storage.snapshot_writer import SnapshotId

    rec = Recorder()
    listener = rec.listener(SnapshotLimits(max_bytes=150, max_interval_ms=HOUR_MS))
    listener.handle_commit([batch(0, topic_records("old", uuid.UUID(int=1)))])  # 100 bytes, replaced below
    delta = MetadataDelta(MetadataImage())
    for record in topic_records("kept", uuid.UUID(int=2), partitions=3):
        delta.replay(record)
    header = control_record(SnapshotHeaderRecord(version=i16(0), last_contained_log_timestamp=i64(4242)))
    listener.handle_load_snapshot(SnapshotId(40, 2), [batch(0, [header], control=True),
                                                      batch(1, list(image_records(delta.apply())))])
    assert listener.image.topics.by_name == {"kept": uuid.UUID(int=2)} and listener.image.partition_count == 3
    assert listener.image.provenance == (39, 2, 4242) and listener.last_committed_offset == 39
    listener.handle_commit([batch(40, [m.NoOpRecordV0()])])  # 100 bytes since the load: not yet
    assert not rec.emitted


# -- the config keys (Kafka's names) -------------------------------------------------------------

def test_the_snapshot_and_segment_keys_are_read(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.properties", 1, 9093, tmp_path / "meta", "127.0.0.1:9093")
    settings = load_controller_settings(config)
    assert settings.snapshots == SnapshotLimits() and settings.segment_bytes == 1024 ** 3
    config = write_config(tmp_path / "c.properties", 1, 9093, tmp_path / "meta", "127.0.0.1:9093", **{
        "metadata.log.max.record.bytes.between.snapshots": 4096, "metadata.log.max.snapshot.interval.ms": 0,
        "metadata.log.segment.bytes": 16 * 1024 * 1024})
    settings = load_controller_settings(config)
    assert settings.snapshots == SnapshotLimits(4096, 0) and settings.segment_bytes == 16 * 1024 * 1024
    config.write_text(config.read_text() + "internal.metadata.log.segment.bytes=1000\n")
    assert load_controller_settings(config).segment_bytes == 1000  # Kafka's testing override, no lower bound


@pytest.mark.parametrize("key, value", [
    ("metadata.log.max.record.bytes.between.snapshots", "0"),
    ("metadata.log.max.record.bytes.between.snapshots", "lots"),
    ("metadata.log.max.snapshot.interval.ms", "-1"),
    ("metadata.log.segment.bytes", "1048576"),  # Kafka's lower bound is 8 MiB
    ("internal.metadata.log.segment.bytes", "0"),
])
def test_bad_snapshot_and_segment_values_are_one_line(tmp_path: Path, key: str, value: str) -> None:
    config = write_config(tmp_path / "c.properties", 1, 9093, tmp_path / "meta", "127.0.0.1:9093", **{key: value})
    with pytest.raises(ConfigError) as caught:
        load_controller_settings(config)
    assert key in str(caught.value) and repr(value) in str(caught.value) and "\n" not in str(caught.value)


# -- a real node --------------------------------------------------------------------------------

SMALL_SNAPSHOTS = {"metadata.log.max.record.bytes.between.snapshots": 1500, "metadata.max.idle.interval.ms": 20,
                   "internal.metadata.log.segment.bytes": 600}


def segment_bases(config: Path) -> list[int]:
    directory = load_controller_settings(config).metadata_log_dir / "__cluster_metadata-0"
    return [base for base, _ in list_log_dir(directory).segments]


def snapshot_files(config: Path) -> list[Path]:
    directory = load_controller_settings(config).metadata_log_dir / "__cluster_metadata-0"
    return [path for sid, path in list_log_dir(directory).snapshots if sid.end_offset > 0]


def test_a_node_snapshots_its_image_deletes_the_old_log_and_restarts_from_the_snapshot(tmp_path: Path) -> None:
    async def scenario() -> None:
        (config,), (node,) = await start_quorum(tmp_path, count=1, **SMALL_SNAPSHOTS)
        try:
            await wait_until(lambda: node.driver.is_leader, 10, "the solo leader")
            topic_offset = node.driver.schedule_append(topic_records())
            await wait_until(lambda: node.last_committed_offset >= topic_offset, 10, "the topic committed")
            # The idle NoOps (every 20 ms here) add up to 1500 bytes: a snapshot after the topic.
            await wait_until(lambda: node.raft_log.start_offset > topic_offset and 0 not in segment_bases(config),
                             30, "a snapshot past the topic, and the first segment deleted")
            assert node.snapshots_taken >= 1 and node.image.topics.by_name == {"orders": TOPIC_ID}
        finally:
            await node.stop()

        # Kafka's format: the newest snapshot holds the topic; the log before it is gone.
        (newest,) = snapshot_files(config)
        image, _ = load_snapshot(newest)
        assert image.topics.by_name == {"orders": TOPIC_ID} and image.partition_count == 2
        names = [entry.record.type_name for entry in read_file(newest, snapshot=True)]
        assert names[:3] == ["SNAPSHOT_HEADER", "KRAFT_VERSION", "KRAFT_VOTERS"] and names[-1] == "SNAPSHOT_FOOTER"
        assert min(segment_bases(config)) > topic_offset

        # Restarted, the node's image comes from the snapshot (the log no longer holds the topic),
        # and the next snapshot it writes still holds it.
        node = ControllerNode(load_controller_settings(config))
        await node.start()
        try:
            await wait_until(lambda: node.last_committed_offset >= 0, 10, "the snapshot loaded")
            assert node.image.topics.by_name == {"orders": TOPIC_ID} and node.image.partition_count == 2
            await wait_until(lambda: node.snapshots_taken >= 1, 30, "a snapshot after the restart")
        finally:
            await node.stop()
        (after,) = snapshot_files(config)
        assert after.name > newest.name and load_snapshot(after)[0].topics.by_name == {"orders": TOPIC_ID}

    asyncio.run(asyncio.wait_for(scenario(), 120))


def test_control_batches_reach_the_image_quorum() -> None:
    from engine.records.kio_codec import LeaderChangeMessage, LeaderChangeVoter, i16
    from engine.records.metadata_record_serde import control_record

    rec = Recorder()
    listener = rec.listener(SnapshotLimits())
    change = control_record(LeaderChangeMessage(version=i16(0), leader_id=2, voters=(LeaderChangeVoter(voter_id=2),),
                                                granting_voters=(LeaderChangeVoter(voter_id=2),)))
    assert isinstance(change, ControlRecord)
    listener.handle_commit([batch(10, [change], epoch=4, time_ms=900, control=True)])
    (leader_change,) = listener.image.quorum.leader_changes
    assert (leader_change.offset, leader_change.epoch, leader_change.leader_id) == (10, 4, 2)
