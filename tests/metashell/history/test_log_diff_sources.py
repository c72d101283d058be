"""``log`` and ``diff`` on a log directory with a gap, on an archive (through its index) and live:
the same answers wherever the items come from, and the gaps said, never crossed."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from engine.image.image_writer import image_records
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import load_log_dir, segment_batches
from engine.records import metadata_records as m
from engine.storage.log_reader import list_log_dir, read_batches
from engine.storage.metadata_log import MetadataLog
from engine.storage.snapshot_writer import SnapshotId
from metashell.history.history_index import INDEX_DIR, INDEX_FILE
from metashell.live.feed import AttachStatus, FeedUpdate
from metashell.shell.session import Session
from metashell.source import LiveSource
from tests.metashell.history.history_script import write_story
from tests.metashell.history.test_log_diff_tables import DIFF_TABLE, LOG_TABLE, run

SEGMENT = "00000000000000000000.log"


@pytest.fixture(scope="module")
def story(tmp_path_factory) -> Path:
    return write_story(tmp_path_factory.mktemp("story"))


def _archive(story: Path, where: Path) -> Path:
    """The story as an archive: its log directory and a manifest (what makes ``log`` keep an index)."""
    shutil.copytree(story, where)
    (where / "archive.json").write_text(json.dumps({"format": 1, "cluster_id": "c", "first_offset": 0,
                                                    "last_offset": 33, "ranges": [[0, 33]], "gaps": [],
                                                    "snapshots": []}))
    return where


# -- a gap ------------------------------------------------------------------------------------------

@pytest.fixture()
def gapped(story: Path, tmp_path: Path) -> tuple[Path, str]:
    """The story with a snapshot at offset 20 (end offset 21) and the batch of offsets 14-15 damaged:
    runs -1..13 and 20..33, offsets 14..20 in a gap. Returns (directory, the damage's line)."""
    directory = tmp_path / "gapped"
    shutil.copytree(story, directory)
    with MetadataLog(directory / "__cluster_metadata-0", fsync_policy="never") as log:
        log.write_snapshot(SnapshotId(21, 1), image_records(load_log_dir(story, offset=20)[0]),
                           last_contained_log_timestamp_ms=20_000, now_ms=9)
    segment = directory / "__cluster_metadata-0" / SEGMENT
    pos, batch = [(pos, batch) for pos, batch in read_batches(segment) if batch.base_offset == 14][0]
    data = bytearray(segment.read_bytes())
    data[pos + batch.size_bytes - 2] ^= 0xFF  # in its last record: the header still reads
    segment.write_bytes(bytes(data))
    return directory, f"{segment}, byte offset {pos}: batch CRC mismatch"


def test_log_names_the_gap_and_answers_both_sides(gapped) -> None:
    directory, damage = gapped
    status, out, err = run(directory, "log /configs/TOPIC/orders/retention.ms")
    assert status == 0 and len(err) == 1
    assert err[0].startswith(f"metashell: log: gap 14..20 (records 14..20 missing; the state at 20 is from snapshot 21): {damage.replace(str(directory), 'DIR')}")
    assert out == [  # the deletion at 18 is in the gap: not shown, not made up
        "7  1970-01-01T00:00:08.000Z  CONFIG_RECORD  /configs/TOPIC/orders/retention.ms  86400000 -> 3600000",
        "5  1970-01-01T00:00:05.000Z  CONFIG_RECORD  /configs/TOPIC/orders/retention.ms  created 86400000",
        "", "in a transaction still open (not applied yet):",
        "33  1970-01-01T00:00:33.000Z  CONFIG_RECORD  /configs/TOPIC/orders/retention.ms  created 1"]
    # after the gap, from the snapshot: the old values are the snapshot's
    assert run(directory, "log /topics/orders/0") [1][0] == (
        "30  1970-01-01T00:00:31.000Z  PARTITION_CHANGE_RECORD  /topics/orders/0  leader 1 -> 2, leaderEpoch 0 -> 1, "
        "partitionEpoch 0 -> 1, eligibleLeaderReplicas [] -> [1]")
    # a range that holds no gap names none
    assert run(directory, "log /quorum --since 21")[2] == []


@pytest.mark.parametrize("line, words", [
    ("log / --since 14", "--since offset 14 of DIR is in gap 14..20 (records 14..20 missing; the state at 20 is from snapshot 21): "),
    ("diff 3 17", "offset 17 of DIR is in gap 14..20 (records 14..20 missing; the state at 20 is from snapshot 21): "),
    ("diff 5 25", "5..25 crosses gap 14..20 (records 14..20 missing; the state at 20 is from snapshot 21): "),
])
def test_a_position_in_a_gap_or_a_diff_across_one_is_one_line(gapped, line: str, words: str) -> None:
    directory, _ = gapped
    status, out, err = run(directory, line)
    assert (status, out, len(err)) == (1, [], 1)
    assert err[0].startswith(f"metashell: {line.split()[0]}: {words}"), err[0]
    assert err[0].endswith("offsets -1..13 and 20..33 can be reached") or err[0].endswith("diff each side of it")


@pytest.mark.parametrize("line", ["diff 21 31 /topics/orders/0", "diff 21 latest /topics/orders/0",
                                  "diff 1970-01-01T00:00:22Z latest /topics/orders/0"])
def test_a_diff_on_one_side_of_the_gap(gapped, line: str) -> None:
    directory, _ = gapped
    assert run(directory, line) == (0, [
        "~ /topics/orders/0  leader 1 -> 2, leaderEpoch 0 -> 1, partitionEpoch 0 -> 1, eligibleLeaderReplicas [] -> [1]"],
        [])


def test_a_diff_between_times_across_the_gap_is_refused(gapped) -> None:
    directory, _ = gapped
    status, out, err = run(directory, "diff 1970-01-01T00:00:09Z latest")
    assert (status, out) == (1, []) and err[0].startswith(
        "metashell: diff: 1970-01-01T00:00:09Z..latest crosses gap 14..20 (records 14..20 missing; the state at 20 is from snapshot 21): ")


# -- an archive, through its index --------------------------------------------------------------------

@pytest.fixture(scope="module")
def archive(story: Path, tmp_path_factory) -> Path:
    return _archive(story, tmp_path_factory.mktemp("archive") / "a")


@pytest.mark.parametrize("line", [line for line, _ in LOG_TABLE + DIFF_TABLE] + ["log / --json", "diff -1 latest --json"])
def test_an_archive_answers_as_its_log_directory(story: Path, archive: Path, line: str) -> None:
    assert run(archive, line) == run(story, line)
    assert (archive / INDEX_DIR / INDEX_FILE).is_file()


def test_the_index_is_kept_brought_up_to_date_and_rebuilt(story: Path, tmp_path: Path) -> None:
    archive = _archive(story, tmp_path / "a")
    index = archive / INDEX_DIR / INDEX_FILE
    assert run(archive, "log /brokers -n 1")[2] == []  # built silently the first time
    built = index.stat().st_mtime_ns
    assert run(archive, "log /features")[0] == 0 and index.stat().st_mtime_ns == built  # fresh: not written

    # appended: the transaction left open commits; the index is updated, not rebuilt
    with MetadataLog(archive / "__cluster_metadata-0", fsync_policy="never") as log:
        log.append([m.EndTransactionRecordV0()], epoch=2, timestamp_ms=35_000)
    status, out, err = run(archive, "log /configs/TOPIC/orders/retention.ms -n 1")
    assert (status, err) == (0, [])
    assert out == ["34 (record 33)  1970-01-01T00:00:35.000Z  CONFIG_RECORD  /configs/TOPIC/orders/retention.ms  "
                   "created 1"]
    updated = run(archive, "log / --json")
    index.unlink()
    assert run(archive, "log / --json") == updated  # the same as a build from scratch

    # anything but an append (a segment rewritten shorter): rebuilt, and said so
    segment = archive / "__cluster_metadata-0" / SEGMENT
    last_pos = list(read_batches(segment))[-1][0]
    segment.write_bytes(segment.read_bytes()[:last_pos])
    status, out, err = run(archive, "log /configs/TOPIC/orders/retention.ms -n 1")
    assert err == [f"metashell: history index: rebuilding DIR/{INDEX_DIR} (the archive's segments are not those it "
                   "was built from)"]
    assert out[-1] == "33  1970-01-01T00:00:33.000Z  CONFIG_RECORD  /configs/TOPIC/orders/retention.ms  created 1"

    index.write_bytes(b"not a database" * 100)  # never trusted when it cannot be read
    status, out, err = run(archive, "log /features")
    assert status == 0 and len(err) == 1 and err[0].startswith(f"metashell: history index: rebuilding DIR/{INDEX_DIR} "
                                                               "(unreadable: ")
    assert out == ["1  1970-01-01T00:00:02.000Z  FEATURE_LEVEL_RECORD  /features/metadata.version  created 27"]


# -- live: what the session fetched --------------------------------------------------------------------

class _Feed:
    """An attachment that handed over ``batches`` as its first update, then ``later`` one drain each."""

    def __init__(self, batches: list, later: list | None = None) -> None:
        self.status = AttachStatus("c1:9093", connected=True, leader_id=1, leader_epoch=2, high_watermark=34)
        self.first = FeedUpdate(self.status, (MetadataImage(), -1), batches)
        self.later = list(later or [])
        self.quorum = None

    def drain(self) -> FeedUpdate:
        return FeedUpdate(self.status, None, [self.later.pop(0)] if self.later else [])

    def close(self) -> None:
        pass


@pytest.mark.parametrize("line", ["log /configs/TOPIC/orders/retention.ms", "log /brokers/1 -n 3",
                                  "diff 17 20 /topics", "diff 0 latest --stat", "log /quorum --json"])
def test_live_answers_from_what_was_fetched(story: Path, line: str) -> None:
    batches = list(segment_batches(list_log_dir(story / "__cluster_metadata-0"), 0, []))
    feed = _Feed(batches)
    out: list[str] = []
    err: list[str] = []
    session = Session(LiveSource(feed, initial=feed.first), out=out.append, err=err.append)
    session.load()
    err.clear()
    assert (session.run_line(line), out, err) == run(story, line)


def test_live_positions_outside_what_was_fetched_are_one_line(story: Path) -> None:
    batches = list(segment_batches(list_log_dir(story / "__cluster_metadata-0"), 0, []))
    feed = _Feed(batches)
    err: list[str] = []
    session = Session(LiveSource(feed, initial=feed.first), out=err.append, err=err.append)
    session.load()
    err.clear()
    assert session.run_line("log / --since 40") == 1
    assert err == ["metashell: log: --since offset 40 is past the end of what this session fetched since attach: "
                   "offsets -1..33 can be reached"]


def test_a_credential_reset_under_the_same_iterations_reads_the_same_from_the_index(tmp_path: Path) -> None:
    # salt and keys change, all redacted: no field differs as shown, yet it changed
    def scram(salt: bytes) -> m.UserScramCredentialRecordV0:
        return m.UserScramCredentialRecordV0(name="bob", mechanism=2, salt=salt, stored_key=salt, server_key=salt,
                                             iterations=4096)
    plain = write_story(tmp_path / "plain", [([scram(b"one")], False), ([scram(b"two")], False)])
    archive = _archive(plain, tmp_path / "archive")
    for line in ("log /scram", "log /scram --json", "diff 0 1", "diff 0 1 --json"):
        assert run(archive, line) == run(plain, line), line
    assert run(plain, "diff 0 1")[1] == ["~ /scram/SCRAM-SHA-512/bob  the credential changed (salt and keys redacted)"]
    assert run(plain, "log /scram -n 1")[1] == [
        "1  1970-01-01T00:00:02.000Z  USER_SCRAM_CREDENTIAL_RECORD  /scram/SCRAM-SHA-512/bob  the credential changed "
        "(salt and keys redacted)"]


def test_live_items_follow_the_commits_and_a_transaction_ending(story: Path) -> None:
    batches = list(segment_batches(list_log_dir(story / "__cluster_metadata-0"), 0, []))
    cut = next(n for n, batch in enumerate(batches) if batch[0].offset == 16)  # after 14-15: a transaction open
    feed = _Feed(batches[:cut])
    out: list[str] = []
    session = Session(LiveSource(feed, initial=feed.first), out=out.append, err=out.append)
    session.load()
    out.clear()
    session.run_line("log /configs/TOPIC/orders/max.message.bytes")
    assert out == ["", "in a transaction still open (not applied yet):",
                   "15  1970-01-01T00:00:15.000Z  CONFIG_RECORD  /configs/TOPIC/orders/max.message.bytes  created 2000"]
    feed.later.append(batches[cut])  # 16-17: the transaction commits
    out.clear()
    session.run_line("log /configs/TOPIC/orders/max.message.bytes")
    assert out == ["17 (record 15)  1970-01-01T00:00:17.000Z  CONFIG_RECORD  /configs/TOPIC/orders/max.message.bytes  "
                   "created 2000"]
    feed.later.extend(batches[cut + 1:])
    while feed.later:
        session.run_line("summary")
    for line in ("log / --json", "diff 0 latest", "log /configs/TOPIC/orders"):
        out.clear()
        session.run_line(line)
        assert (0, out, []) == run(story, line), line


# -- an archive with a hole, written by the recorder's own writer ---------------------------------------

HOLE_REASON = "the leader's log starts past the archive's end (test)"


@pytest.fixture()
def holed(tmp_path: Path) -> Path:
    """Offsets 0-5 (configs of t0 and t3), a hole 6-14 (the leader's snapshot at 15), then 15-17 (t15)."""
    from metashell.record.archive import Archive
    from tests.metashell.record.archive_fixtures import FakeLeaderLog

    leader = FakeLeaderLog()
    writer = Archive(tmp_path / "archive").open()
    writer.append(leader.append())
    writer.append(leader.append())
    writer.commit()
    for _ in range(3):
        leader.append()  # deleted by the controllers before the recorder fetched them
    snapshot_id, data = leader.snapshot()
    writer.reset(data, snapshot_id, HOLE_REASON, 1_700_000_000_000)
    writer.append(leader.append())
    writer.commit()
    writer.close()
    return tmp_path / "archive"


def test_log_over_an_archive_hole_says_where_it_is_and_why(holed: Path) -> None:
    status, out, err = run(holed, "log /configs")
    assert err == [f"metashell: log: gap 6..14 (records 6..14 missing; the state at 14 is from snapshot 15): archive gap: {HOLE_REASON}"]
    assert [line.split("  ")[3] for line in out] == [  # both sides, newest first; nothing of the hole
        "/configs/TOPIC/t15/k2", "/configs/TOPIC/t15/k1", "/configs/TOPIC/t15/k0", "/configs/TOPIC/t3/k2",
        "/configs/TOPIC/t3/k1", "/configs/TOPIC/t3/k0", "/configs/TOPIC/t0/k2", "/configs/TOPIC/t0/k1",
        "/configs/TOPIC/t0/k0"]
    assert status == 0 and (holed / INDEX_DIR / INDEX_FILE).is_file()
    assert run(holed, "log /configs --since 15")[2] == []  # no gap in that range
    assert run(holed, "diff 14 17 /configs/TOPIC/t15")[1] == [
        "+ /configs/TOPIC/t15/k0  15", "+ /configs/TOPIC/t15/k1  16", "+ /configs/TOPIC/t15/k2  17"]


@pytest.mark.parametrize("line, words", [
    ("log / --since 10", "--since offset 10 of DIR is in gap 6..14 (records 6..14 missing; the state at 14 is from snapshot 15): archive gap: "
                         f"{HOLE_REASON}; offsets -1..5 and 14..17 can be reached"),
    ("diff 3 16", f"3..16 crosses gap 6..14 (records 6..14 missing; the state at 14 is from snapshot 15): archive gap: {HOLE_REASON}; diff each side of it"),
])
def test_positions_in_or_across_an_archive_hole_are_one_line(holed: Path, line: str, words: str) -> None:
    assert run(holed, line) == (1, [], [f"metashell: {line.split()[0]}: {words}"])


def test_retention_deleting_the_oldest_files_updates_the_index_without_a_rebuild(tmp_path: Path) -> None:
    from tests.metashell.history.history_script import STORY

    plain = tmp_path / "plain"
    with MetadataLog.create(plain, segment_bytes=400, fsync_policy="never") as log:  # several segments
        for records, control in STORY:
            log.append(records, epoch=1, timestamp_ms=1_000 * (log.end_offset + 1), control=control)
    with MetadataLog(plain / "__cluster_metadata-0", segment_bytes=400, fsync_policy="never") as log:
        log.write_snapshot(SnapshotId(21, 1), image_records(load_log_dir(plain, offset=20)[0]),
                           last_contained_log_timestamp_ms=20_000, now_ms=9)
    archive = _archive(plain, tmp_path / "archive")
    index = archive / INDEX_DIR / INDEX_FILE
    assert run(archive, "log /quorum")[0] == 0 and index.is_file()
    with MetadataLog(archive / "__cluster_metadata-0", segment_bytes=400, fsync_policy="never") as log:
        assert log.delete_before_latest_snapshot()  # the recorder's retention, say
    lines = ("log /topics --json", "log /configs --json", "log /brokers --json", "log /scram --json")
    kept = [run(archive, line) for line in lines]
    assert all(err == [] for _, _, err in kept)  # updated, not rebuilt (a rebuild says so)
    assert min(json.loads(row)["offset"] for _, out, _ in kept for row in out) >= 21  # nothing before the earliest
    quorum = [json.loads(row)["offset"] for row in run(archive, "log /quorum --json")[1]]
    index.unlink()
    assert [run(archive, line) for line in lines] == kept  # as a build from scratch
    # (which knows less of the quorum: the leader before the snapshot was in the segments deleted)
    assert [json.loads(row)["offset"] for row in run(archive, "log /quorum --json")[1]] == quorum


def test_an_archive_whose_index_cannot_be_written_is_read_instead(story: Path, tmp_path: Path) -> None:
    archive = _archive(story, tmp_path / "a")
    (archive / INDEX_DIR).write_text("a file where the index directory goes")
    status, out, err = run(archive, "log /features")
    assert status == 0 and out == run(story, "log /features")[1]
    assert len(err) == 1 and err[0].startswith("metashell: history index: cannot be written (")
    assert err[0].endswith("): reading the archive instead")


@pytest.mark.slow
def test_log_waits_for_another_process_updating_the_index(story: Path, tmp_path: Path) -> None:
    """A recorder updating the index while a user asks `log` (the README's own flow): the question
    waits for that write, longer than sqlite's default 5 s, then answers from the index brought up
    to date; it never falls back to replaying the archive because the file was busy."""
    archive = _archive(story, tmp_path / "a")
    assert run(archive, "log /brokers -n 1")[2] == []
    with MetadataLog(archive / "__cluster_metadata-0", fsync_policy="never") as log:
        log.append([m.EndTransactionRecordV0()], epoch=2, timestamp_ms=35_000)  # log must write: appended
    writer = sqlite3.connect(archive / INDEX_DIR / INDEX_FILE, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # what an update in another process holds until it commits
    answer: list = []
    asking = threading.Thread(target=lambda: answer.append(run(archive, "log /configs/TOPIC/orders/retention.ms -n 1")))
    asking.start()
    time.sleep(6.0)  # the other writer's long update; the outcome asserted is the answer, not a time
    writer.execute("COMMIT")
    writer.close()
    asking.join(timeout=120)
    assert answer == [(0, ["34 (record 33)  1970-01-01T00:00:35.000Z  CONFIG_RECORD  "
                           "/configs/TOPIC/orders/retention.ms  created 1"], [])]


def test_damage_with_no_snapshot_after_it_ends_the_history(story: Path, tmp_path: Path) -> None:
    directory = tmp_path / "cut"
    shutil.copytree(story, directory)
    segment = directory / "__cluster_metadata-0" / SEGMENT
    pos, batch = [(pos, batch) for pos, batch in read_batches(segment) if batch.base_offset == 14][0]
    data = bytearray(segment.read_bytes())
    data[pos + batch.size_bytes - 2] ^= 0xFF
    segment.write_bytes(bytes(data))
    status, out, err = run(directory, "log /configs")
    assert status == 0
    assert err[0].startswith("metashell: log: gap 14.. (records from 14 on missing; no snapshot after them): "
                             "DIR/__cluster_metadata-0/")
    assert [line.split("  ")[0] for line in out] == ["7", "5", "", "in aborted transactions (no effect):",
                                                     "13 (record 12)"]
    assert run(directory, "log / --since 20")[2] == [
        "metashell: log: --since offset 20 of DIR is in " + err[0].split("metashell: log: ")[1]
        + "; offsets -1..13 can be reached"]
