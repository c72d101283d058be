"""The archive writer (metashell.record.archive) on batches as a leader serves them, no network.

Each test writes through the real files: segments byte for byte as served, the manifest, the
lock, recovery of a torn tail, a hole for a gap with the leader's snapshot at its far side, a
write that fails for real (a file size limit, EFBIG) and leaves the archive whole, retention.
"""

from __future__ import annotations

import json
import os
import resource
import signal
from pathlib import Path

import pytest

from engine.common.errors import StorageError
from engine.storage.log_reader import METADATA_PARTITION_DIR
from engine.storage.snapshot_writer import SnapshotId
from metashell.record.archive import Archive, ArchiveWriteError
from metashell.record.archive_lock import ArchiveLocked
from metashell.record.manifest import read_manifest
from tests.metashell.record.archive_fixtures import FakeLeaderLog, record_batches, record_gap


def _segments(root: Path) -> list[Path]:
    return sorted((root / METADATA_PARTITION_DIR).glob("*.log"))


def _held_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in _segments(root))


def test_committed_batches_are_the_served_bytes_and_the_manifest_holds_their_offsets(tmp_path: Path) -> None:
    leader = FakeLeaderLog()
    with_archive = Archive(tmp_path / "a", segment_bytes=1024).open()
    for _ in range(12):
        with_archive.append(leader.append(3))
    with_archive.commit()
    with_archive.close()
    assert _held_bytes(tmp_path / "a") == b"".join(leader.batches)
    assert len(_segments(tmp_path / "a")) > 1  # rolled at the size, Kafka's names
    assert all(p.stat().st_size <= 1024 for p in _segments(tmp_path / "a"))
    manifest = read_manifest(tmp_path / "a")
    assert (manifest.first_offset, manifest.last_offset, manifest.ranges, manifest.gaps) == (0, 35, ((0, 35),), ())


def test_a_second_writer_is_refused_naming_the_holder(tmp_path: Path) -> None:
    first = Archive(tmp_path / "a").open()
    try:
        # a second process is refused by the kernel's lock; in one process the lock file is shared, so
        # the refusal is shown by a child that tries
        pid = os.fork()
        if pid == 0:
            try:
                Archive(tmp_path / "a").open()
                os._exit(3)
            except ArchiveLocked as err:
                os._exit(0 if f"pid {os.getppid()}" in str(err) else 4)
            except BaseException:
                os._exit(5)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        first.close()
    Archive(tmp_path / "a").open().close()  # released: the next one opens it


def test_a_torn_tail_is_cut_back_to_the_last_whole_batch_and_said(tmp_path: Path) -> None:
    leader = FakeLeaderLog()
    archive = Archive(tmp_path / "a").open()
    record_batches(archive, leader, 3)
    archive.close()
    segment = _segments(tmp_path / "a")[-1]
    whole = segment.read_bytes()
    torn = leader.append()
    segment.write_bytes(whole + torn[:len(torn) // 2])  # a SIGKILL in the middle of a write
    reopened = Archive(tmp_path / "a").open()
    assert segment.read_bytes() == whole
    assert any("torn tail" in note and segment.name in note for note in reopened.notes)
    assert reopened.next_offset == 9
    reopened.append(torn)
    reopened.commit()
    reopened.close()
    assert _held_bytes(tmp_path / "a") == b"".join(leader.batches)


def test_batches_fsynced_before_the_manifest_was_written_are_kept_at_the_next_open(tmp_path: Path) -> None:
    leader = FakeLeaderLog()
    archive = Archive(tmp_path / "a").open()
    record_batches(archive, leader, 1)
    archive.close()
    with open(_segments(tmp_path / "a")[-1], "ab") as segment:  # killed after the fsync, before the manifest
        segment.write(leader.append())
    reopened = Archive(tmp_path / "a").open()
    assert reopened.manifest.last_offset == 5 and reopened.next_offset == 6
    reopened.close()
    assert read_manifest(tmp_path / "a").last_offset == 5


def test_another_clusters_id_is_refused(tmp_path: Path) -> None:
    archive = Archive(tmp_path / "a").open()
    archive.set_cluster_id("cluster-A")
    with pytest.raises(StorageError, match="of cluster cluster-A, the quorum is cluster cluster-B"):
        archive.set_cluster_id("cluster-B")
    archive.close()
    assert read_manifest(tmp_path / "a").cluster_id == "cluster-A"


def test_a_gap_writes_the_leaders_snapshot_at_its_end_and_a_new_segment_there(tmp_path: Path) -> None:
    leader = FakeLeaderLog()
    archive = Archive(tmp_path / "a").open()
    record_batches(archive, leader, 2)
    snapshot_id, data, after = record_gap(archive, leader, deleted=3,
                                          reason="the leader's log starts past the archive's end", recorded_ms=1234)
    archive.close()
    part = tmp_path / "a" / METADATA_PARTITION_DIR
    assert (part / snapshot_id.file_name).read_bytes() == data
    assert [p.name for p in _segments(tmp_path / "a")] == ["00000000000000000000.log", "00000000000000000015.log"]
    assert _segments(tmp_path / "a")[-1].read_bytes() == after
    manifest = read_manifest(tmp_path / "a")
    assert manifest.ranges == ((0, 5), (15, 17))
    assert [(g.first, g.resume, g.reason, g.recorded_ms) for g in manifest.gaps] == [
        (6, 15, "the leader's log starts past the archive's end", 1234)]
    assert manifest.snapshots == ((15, 1),)


def test_its_own_snapshot_never_replaces_the_leaders_at_a_gap(tmp_path: Path) -> None:
    """The recorder's snapshot falls due right at a gap (a reset committed with the batches that
    crossed N): the leader's snapshot already stands at that offset and stays, byte for byte."""
    leader = FakeLeaderLog()
    archive = Archive(tmp_path / "a").open()
    record_batches(archive, leader, 2)
    for _ in range(3):
        leader.append()  # deleted by the controllers before the recorder fetched them
    snapshot_id, data = leader.snapshot()
    archive.reset(data, snapshot_id, "the leader's log starts past the archive's end", 1)
    archive.commit()
    kept = archive.add_snapshot(SnapshotId(snapshot_id.end_offset, snapshot_id.epoch), b"our re-encoding")
    assert archive.records_since_snapshot == 0
    archive.close()
    assert kept.read_bytes() == data == (tmp_path / "a" / METADATA_PARTITION_DIR / snapshot_id.file_name).read_bytes()
    assert read_manifest(tmp_path / "a").snapshots == ((snapshot_id.end_offset, snapshot_id.epoch),)


def test_a_new_archive_starting_at_the_leaders_snapshot_records_no_gap(tmp_path: Path) -> None:
    leader = FakeLeaderLog()
    leader.append()
    snapshot_id, data = leader.snapshot()
    archive = Archive(tmp_path / "a").open()
    archive.reset(data, snapshot_id, "unused", 1)
    archive.append(leader.append())
    archive.commit()
    archive.close()
    manifest = read_manifest(tmp_path / "a")
    assert (manifest.first_offset, manifest.ranges, manifest.gaps) == (3, ((3, 5),), ())


def test_a_write_that_fails_for_real_leaves_the_archive_whole_and_is_retried(tmp_path: Path) -> None:
    leader = FakeLeaderLog()
    archive = Archive(tmp_path / "a").open()
    archive.append(leader.append())
    archive.commit()
    segment = _segments(tmp_path / "a")[-1]
    size, manifest = segment.stat().st_size, (tmp_path / "a" / "archive.json").read_bytes()
    for _ in range(3):
        archive.append(leader.append())
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    # files may not grow past the segment's size: the append fails with EFBIG (a disk as good as full)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 10, hard))
    try:
        with pytest.raises(ArchiveWriteError, match=f"{segment}: cannot write: File too large"):
            archive.commit()
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old)
    assert segment.stat().st_size == size  # the partial write was cut back
    assert (tmp_path / "a" / "archive.json").read_bytes() == manifest
    archive.commit()  # the disk has room again: the queue is written
    archive.close()
    assert _held_bytes(tmp_path / "a") == b"".join(leader.batches)
    assert read_manifest(tmp_path / "a").ranges == ((0, 11),)


def test_retention_drops_old_whole_segments_keeping_a_snapshot_to_replay_from(tmp_path: Path) -> None:
    leader = FakeLeaderLog()
    archive = Archive(tmp_path / "a", segment_bytes=400).open()
    for _ in range(6):
        archive.append(leader.append(time_ms=1_000))
    archive.commit()
    assert archive.drop_older_than(5_000, 9_000, 4_000) is None  # no snapshot yet: nothing may go
    snapshot_id, data = leader.snapshot()
    archive.add_snapshot(snapshot_id, data)
    archive.append(leader.append(time_ms=8_000))
    archive.commit()
    line = archive.drop_older_than(5_000, 9_000, 4_000)
    archive.close()
    assert line is not None and "retention: dropped offsets 0 to" in line
    manifest = read_manifest(tmp_path / "a")
    first_kept = int(_segments(tmp_path / "a")[0].name[:20])
    assert first_kept > 0 and manifest.first_offset == first_kept
    assert manifest.snapshots == ((snapshot_id.end_offset, snapshot_id.epoch),)
    assert [(d.first, d.last) for d in manifest.dropped] == [(0, first_kept - 1)]
    assert manifest.last_offset == leader.next_offset - 1


def test_a_directory_holding_a_log_but_no_manifest_is_not_taken_over(tmp_path: Path) -> None:
    part = tmp_path / "a" / METADATA_PARTITION_DIR
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(FakeLeaderLog().append())
    with pytest.raises(StorageError, match="holds a log but no archive.json"):
        Archive(tmp_path / "a").open()
    assert not (tmp_path / "a" / "archive.json").exists()


def test_the_manifest_is_json_in_the_shared_shape(tmp_path: Path) -> None:
    archive = Archive(tmp_path / "a").open()
    archive.set_cluster_id("c1")
    archive.append(FakeLeaderLog().append())
    archive.commit()
    archive.close()
    data = json.loads((tmp_path / "a" / "archive.json").read_text())
    assert {k: data[k] for k in ("format", "cluster_id", "first_offset", "last_offset", "ranges", "gaps",
                                 "snapshots")} == {"format": 1, "cluster_id": "c1", "first_offset": 0,
                                                   "last_offset": 2, "ranges": [[0, 2]], "gaps": [],
                                                   "snapshots": []}


def test_a_stop_between_a_gaps_snapshot_and_its_segment_is_finished_at_the_next_open(tmp_path: Path) -> None:
    leader = FakeLeaderLog()
    archive = Archive(tmp_path / "a").open()
    record_batches(archive, leader, 1)
    archive.close()
    for _ in range(3):
        leader.append()
    snapshot_id, data = leader.snapshot()
    # killed after the leader's snapshot was written (atomically), before the segment and the manifest
    (tmp_path / "a" / METADATA_PARTITION_DIR / snapshot_id.file_name).write_bytes(data)
    reopened = Archive(tmp_path / "a").open()
    assert reopened.next_offset == 12 and reopened.last_epoch == 1
    after = leader.append()
    reopened.append(after)
    reopened.commit()
    reopened.close()
    assert [p.name for p in _segments(tmp_path / "a")] == ["00000000000000000000.log", "00000000000000000012.log"]
    assert _segments(tmp_path / "a")[-1].read_bytes() == after
    manifest = read_manifest(tmp_path / "a")
    assert manifest.ranges == ((0, 2), (12, 14))
    assert [(g.first, g.resume) for g in manifest.gaps] == [(3, 12)]
    assert "the recorder stopped before recording why" in manifest.gaps[0].reason
