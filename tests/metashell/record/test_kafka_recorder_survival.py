"""`metashell record` against real Apache Kafka controllers (the newest server) when things go wrong.

One quorum for the module (kafka_recorder_quorum: three controllers on a dynamic quorum and a
broker, no NoOps, snapshots every few kilobytes, every snapshot but the newest deleted at each of
Kafka's metadata log cleanings, every 60 s); each test records into an archive of its own.

- The active controller SIGKILLed, then started again: the recorder follows the successor.
- A controller restarted (SIGTERM, start) and the active one too: it goes on.
- The whole quorum stopped (SIGTERM) and started again: it reconnects.
  In these three, the archive holds batches of the leader epoch before and of the one after.
- The recorder itself SIGKILLed while it writes, three times, each kill aimed at the moment its
  segments hold batches its manifest does not count yet, and restarted: the archive has no
  duplicate and no hole, its manifest's ranges are its segments', every segment ends with a
  whole batch.
- The recorder stopped while the controllers snapshot and delete their segments: restarted, it
  records one gap, from the offset after its last batch to the snapshot it had to fetch, which
  is the leader's own log start (its snapshot, on disk, byte for byte), and nothing else is lost:
  its image is the leader's (with the leader changes Kafka deleted), ``record --status`` names the
  gap, kafka-dump-log reads both sides. A new archive made then starts at that snapshot.
Each test ends with the archive against the controllers' own logs, byte for byte, over the
offsets both hold (tests/archive_compare.py). The waits are on events (a manifest's offset, a
DescribeQuorum answer, files on disk); their deadlines are safety nets.
"""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Iterator

import pytest

from archive_compare import assert_contiguous, file_batches, manifest, metadata_dir, segment_files
from engine.image.metadata_loader import load_log_dir
from kafka_peer.cluster import KafkaCluster
from kafka_peer.nodes import wait_until
from tests.metashell.record.kafka_dump_reading import kafka_reads_archive
from tests.metashell.record.kafka_recorder_quorum import (
    Recorder, assert_like_the_controllers, forgetful_quorum, leader_epoch, live_voters, metashell, revived,
    snapshot_ids_on_disk)
from tests.metashell.record.kafka_recorder_steps import create_topic, unique

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
CLEANING_DEADLINE_S = 200.0  # Kafka cleans its metadata log every 60 s from its raft client's start
KILLS = 3  # SIGKILLs of the recorder in the middle of a burst of writes


@pytest.fixture(scope="module")
def _quorum(kafka_newest_server, tmp_path_factory) -> Iterator[KafkaCluster]:
    yield from forgetful_quorum(kafka_newest_server, tmp_path_factory.mktemp("recorder-survival"))


@pytest.fixture
def quorum(_quorum: KafkaCluster) -> KafkaCluster:
    return revived(_quorum)


@pytest.fixture
def recorder(quorum: KafkaCluster, tmp_path: Path) -> Iterator[Recorder]:
    # small segments: a killed recorder leaves several, and its last is quick to read (written_ahead_of_manifest)
    made = Recorder(quorum, tmp_path / "archive", "--segment-bytes", "16384")
    yield made
    made.kill()


def topics_in(archive: Path) -> list[str]:
    done = metashell("--log-dir", str(archive), "-c", "ls /topics")
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def followed_before(recorder: Recorder) -> tuple[int, int]:
    """The recorder started and caught up, with a batch of the current leader epoch in its archive
    (a topic created): (the offset it holds, that epoch)."""
    recorder.start()
    recorder.wait_caught_up()
    create_topic(recorder.cluster, unique("before"))
    return recorder.wait_caught_up("a topic before"), leader_epoch(recorder.cluster)


def epochs_in(archive: Path) -> set[int]:
    """The leader epochs of the archive's batches (each batch's partitionLeaderEpoch, bytes 12-16)."""
    return {int.from_bytes(raw[12:16], "big", signed=True)
            for path in segment_files(archive) for _, _, raw in file_batches(path)}


def assert_followed_throughout(recorder: Recorder, began: int, epoch_before: int | None = None) -> None:
    """No gap after the recorder's first catch-up, every segment ending with a whole batch; with
    ``epoch_before``, batches of that leader epoch and of the current one, a later one."""
    if epoch_before is not None:
        epoch = leader_epoch(recorder.cluster)
        assert epoch > epoch_before and {epoch_before, epoch} <= epochs_in(recorder.archive), \
            (epoch_before, epoch, sorted(epochs_in(recorder.archive)))
    made = manifest(recorder.archive)
    assert all(gap["resume"] <= began + 1 for gap in made["gaps"]), f"a gap while following: {made['gaps']}"
    for path in segment_files(recorder.archive):
        whole = sum(len(raw) for _, _, raw in file_batches(path))
        assert whole == path.stat().st_size, f"{path.name}: {path.stat().st_size - whole} bytes after its last batch"


def test_the_recorder_follows_the_successor_of_a_killed_active_controller(quorum, recorder) -> None:
    began, epoch = followed_before(recorder)
    old = quorum.node(quorum.wait_leader())
    old.kill()
    wait_until(lambda: quorum.leader_id() not in (-1, old.node_id), "a new active controller", quorum.live_nodes())
    during = unique("after-failover")
    create_topic(quorum, during)
    recorder.wait_caught_up("the topic created under the successor")
    quorum.restart(old)
    back = unique("old-leader-back")
    create_topic(quorum, back)
    last = recorder.wait_caught_up("the topic created with the old leader back")
    assert recorder.stop() == 0, recorder.log()
    assert {during, back} <= set(topics_in(recorder.archive))
    assert_followed_throughout(recorder, began, epoch)
    assert_like_the_controllers(quorum, recorder.archive, last)


def test_the_recorder_goes_on_through_controller_restarts(quorum, recorder) -> None:
    began, epoch = followed_before(recorder)
    names = []
    leader = quorum.wait_leader()
    follower = next(n for n in live_voters(quorum) if n.node_id != leader)
    for node in (follower, quorum.node(leader)):  # a follower, then the active controller (it resigns)
        node.stop()
        names.append(unique(f"without-{node.node_id}"))
        create_topic(quorum, names[-1])
        recorder.wait_caught_up(f"a topic while controller {node.node_id} is down")
        quorum.restart(node)
    names.append(unique("all-back"))
    create_topic(quorum, names[-1])
    last = recorder.wait_caught_up("the topic with every controller back")
    assert recorder.stop() == 0, recorder.log()
    assert set(names) <= set(topics_in(recorder.archive))
    assert_followed_throughout(recorder, began, epoch)
    assert_like_the_controllers(quorum, recorder.archive, last)


def test_the_recorder_reconnects_after_the_whole_quorum_stopped_and_started(quorum, recorder) -> None:
    began, epoch = followed_before(recorder)
    voters = live_voters(quorum)
    for node in voters:
        node.signal(signal.SIGTERM)
    for node in voters:
        node.stop()
    for node in voters:
        node.start()
    quorum.wait_ready()
    name = unique("after-the-quorum-restarted")
    create_topic(quorum, name)
    last = recorder.wait_caught_up("the topic after the quorum came back")
    assert recorder.stop() == 0, recorder.log()
    assert name in topics_in(recorder.archive)
    assert_followed_throughout(recorder, began, epoch)
    assert_like_the_controllers(quorum, recorder.archive, last)


def written_ahead_of_manifest(recorder: Recorder, within_s: float = 5.0) -> bool:
    """Whether the recorder's segments were seen holding batches its manifest does not count yet
    (polled for ``within_s``): the moment between its segment writes and its manifest's, where a
    kill tests the recovery most. Not always caught (a loaded machine), so only aimed at."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        held = recorder.last_offset()
        segments = segment_files(recorder.archive)
        batches = file_batches(segments[-1]) if segments else []
        if batches and batches[-1][1] > held >= 0:
            return True
        time.sleep(0.001)
    return False


def test_a_recorder_killed_while_it_writes_resumes_without_duplicates_or_holes(quorum, recorder) -> None:
    recorder.start()
    began = recorder.wait_caught_up()
    names: list[str] = []
    failures: list[BaseException] = []
    done = threading.Event()

    def burst() -> None:  # a batch of 30 partitions after another, until the kills are over
        try:
            while not done.is_set():
                names.append(unique(f"burst-{len(names)}"))
                create_topic(quorum, names[-1], 30)
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
            failures.append(exc)

    writer = threading.Thread(target=burst)
    writer.start()
    try:
        for _ in range(KILLS):
            seen = recorder.last_offset()
            recorder.wait_until(lambda: recorder.last_offset() > seen or failures, "the recorder writing")
            written_ahead_of_manifest(recorder)
            recorder.kill()
            recorder.start()
    finally:
        done.set()
        writer.join(timeout=300)
    assert not failures, failures
    last = recorder.wait_caught_up("the burst")
    assert recorder.stop() == 0, recorder.log()
    assert set(names) <= set(topics_in(recorder.archive))
    assert_followed_throughout(recorder, began)
    assert_like_the_controllers(quorum, recorder.archive, last)


def test_a_gap_while_the_recorder_was_stopped_is_recorded_where_kafka_deleted_its_past(quorum, tmp_path) -> None:
    # snapshots of its own too: after the gap they start from the image of the snapshot it fetched
    recorder = Recorder(quorum, tmp_path / "archive", "--segment-bytes", "16384", "--snapshot-every-records", "40")
    fresh = Recorder(quorum, tmp_path / "fresh", "--progress-interval-ms", "100")
    try:
        gap_recorded_where_kafka_deleted_its_past(quorum, recorder, fresh)
    finally:
        recorder.kill()
        fresh.kill()


def gap_recorded_where_kafka_deleted_its_past(quorum: KafkaCluster, recorder: Recorder, fresh: Recorder) -> None:
    stopped_at, _ = followed_before(recorder)  # a batch held: the gap begins after a record, not a snapshot
    assert recorder.stop() == 0, recorder.log()
    assert manifest(recorder.archive)["last_offset"] == stopped_at
    # More than a few snapshots' worth of records: every controller snapshots past the recorder
    lost = [unique(f"while-stopped-{i}") for i in range(10)]
    for name in lost:
        create_topic(quorum, name, 30)  # ~2.3 kB of records each
    leader = quorum.node(quorum.wait_leader())
    # Kafka's cleanings delete every snapshot but the newest and move the log start up to it (one
    # cleaning may come in the middle of the snapshots: then the next one)

    def one_snapshot_past_the_recorder() -> bool:
        ids = snapshot_ids_on_disk(leader.metadata_dir)
        return len(ids) == 1 and ids[0][0] > stopped_at + 1

    wait_until(one_snapshot_past_the_recorder,
               f"controller {leader.node_id} deleting its log up to a snapshot past {stopped_at}",
               quorum.live_nodes(), timeout_s=CLEANING_DEADLINE_S)
    assert quorum.wait_leader() == leader.node_id
    [log_start] = snapshot_ids_on_disk(leader.metadata_dir)
    name = f"{log_start[0]:020d}-{log_start[1]:010d}.checkpoint"
    kafkas = (leader.metadata_dir / name).read_bytes()
    # A new archive of this quorum starts at its log start, with the leader's snapshot: no gap,
    # since nothing before it was ever recorded (and no record yet, when the snapshot ends at the
    # high watermark: Recorder.held_through)
    fresh.start()
    fresh.wait_caught_up("a new recorder")
    # caught up, it says so: no lag (not the whole log's, when it holds the snapshot and no record)
    seen = len(fresh.log().splitlines())
    line = fresh.wait_until(lambda: next((l for l in fresh.log().splitlines()[seen:] if "progress:" in l), None),
                            "a progress line")
    assert ", lag 0 records behind" in line, line
    assert fresh.stop() == 0, fresh.log()
    started = manifest(fresh.archive)
    assert (started["first_offset"], started["gaps"], started["snapshots"]) == (log_start[0], [], [list(log_start)])
    assert (metadata_dir(fresh.archive) / name).read_bytes() == kafkas, "the snapshot is not the leader's"
    recorder.start()
    after = unique("after-the-gap")
    create_topic(quorum, after)
    last = recorder.wait_caught_up("the recorder after the gap")
    assert recorder.stop() == 0, recorder.log()

    made = manifest(recorder.archive)
    gaps = [g for g in made["gaps"] if g["first"] > stopped_at]
    assert [(g["first"], g["resume"]) for g in gaps] == [(stopped_at + 1, log_start[0])], made["gaps"]
    assert gaps[0]["reason"] and "\n" not in gaps[0]["reason"]
    assert list(log_start) in made["snapshots"]
    assert (metadata_dir(recorder.archive) / name).read_bytes() == kafkas, "the snapshot is not the leader's"
    ranges = assert_contiguous(recorder.archive)
    assert [r for r in ranges if r[0] >= log_start[0]][0][0] == log_start[0]
    assert any(r[1] == stopped_at for r in ranges), f"the archive lost its end before the gap: {ranges}"
    assert set(lost) | {after} <= set(topics_in(recorder.archive))  # in the snapshot, and after it
    # the archive keeps what the controllers no longer serve: their log starts at the snapshot (a
    # segment that began before it may stay on their disk, but nothing below the log start is fetched)
    assert made["first_offset"] <= stopped_at < log_start[0]
    status = metashell("record", "--status", str(recorder.archive))
    assert status.returncode == 0, status.stderr
    assert f"  offsets {stopped_at + 1} to {log_start[0] - 1} missing" in status.stdout, status.stdout
    # the image after the gap is the leader's, with more of the past: the leader changes the
    # controllers deleted are in the archive's segments before the gap
    ours, kafkas = (load_log_dir(d, offset=last)[0] for d in (metadata_dir(recorder.archive), leader.metadata_dir))
    changes, held = list(kafkas.quorum.leader_changes), list(ours.quorum.leader_changes)
    assert len(held) >= len(changes) and held[len(held) - len(changes):] == changes
    assert replace(ours, quorum=replace(ours.quorum, leader_changes=kafkas.quorum.leader_changes)) == kafkas
    # Kafka's own tool reads the archive whole, on both sides of the gap
    dumped = kafka_reads_archive(quorum.dist, recorder.archive)
    ends = {int(lines[0].split()[3]) for lines in dumped.values()}  # "baseOffset: B lastOffset: L ..."
    assert stopped_at in ends and log_start[0] in dumped, "Kafka's dump lacks a side of the gap"
    assert_like_the_controllers(quorum, recorder.archive, last)
