"""A gap, for real: while the recorder is stopped, the controller snapshots and deletes the segments
the archive has not got yet. At its restart the recorder fetches the leader's snapshot, records
the gap with the right offsets and its reason, and loses nothing else.

A kraftd cluster of its own (one controller, one broker): the controller is restarted with tiny
segments and a snapshot after every batch (internal.metadata.log.segment.bytes,
metadata.log.max.record.bytes.between.snapshots), and no idle NoOpRecords, so that its newest
snapshot stays put once the changes stop.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from engine.image.metadata_history import MetadataHistory
from engine.image.metadata_loader import load_log_dir
from engine.storage.log_reader import list_log_dir
from tests.archive_compare import compare_archive
from tests.live_cluster import CLIENT_TIMEOUT_S, bootstrap, running_cluster
from tests.metashell.record.recorder_process import RecorderProcess, log_end_offset, no_traceback, run_metashell

pytestmark = pytest.mark.slow

SMALL_LOG = ("internal.metadata.log.segment.bytes=1024", "metadata.log.max.record.bytes.between.snapshots=1",
             "metadata.max.idle.interval.ms=3600000")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("record-gap") / "cluster", "--controllers", "1",
                               "--brokers", "1")


def _metadata_dir(cluster) -> Path:
    return cluster.root / "controller-1" / "metadata" / "__cluster_metadata-0"


def _topics(cluster, *names: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(cluster, servers=True).split(","),
                             request_timeout_ms=int(CLIENT_TIMEOUT_S * 1000))
    try:
        for name in names:
            admin.create_topics([NewTopic(name, 1, 1)])
    finally:
        admin.close()


def test_segments_deleted_while_the_recorder_was_stopped_are_a_recorded_gap(cluster, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    recorder = RecorderProcess(bootstrap(cluster), archive)
    try:
        recorder.wait_line(r"following leader")
        _topics(cluster, "before")
        held = recorder.wait_held(log_end_offset(_metadata_dir(cluster)) - 1).last_offset
        assert recorder.stop() == 0
    finally:
        recorder.kill()
    config = cluster.root / "controller-1" / "server.properties"
    cluster.ok("stop", "controller-1")
    config.write_text(config.read_text() + "\n".join(SMALL_LOG) + "\n")
    cluster.ok("start", "controller-1")
    _topics(cluster, "lost-0", "lost-1", "lost-2")
    index = 3
    while list_log_dir(_metadata_dir(cluster)).segments[0][0] <= held + 1:  # until the log starts past the archive
        _topics(cluster, f"lost-{index}")
        index += 1
        assert index < 200, "the controller never deleted its old segments"
    snapshot = list_log_dir(_metadata_dir(cluster)).snapshots[-1]
    log_start = list_log_dir(_metadata_dir(cluster)).segments[0][0]
    assert snapshot[0].end_offset >= log_start > held + 1

    again = RecorderProcess(bootstrap(cluster), archive)
    try:
        gap_line = again.wait_line(r"GAP: ")
        _topics(cluster, "after")
        again.wait_held(log_end_offset(_metadata_dir(cluster)) - 1)
        assert again.stop() == 0
    finally:
        again.kill()
    no_traceback(again.lines)
    manifest = json.loads((archive / "archive.json").read_text())
    resume = manifest["gaps"][0]["resume"]
    assert [(g["first"], g["resume"]) for g in manifest["gaps"]] == [(held + 1, resume)]
    assert resume >= snapshot[0].end_offset  # the leader's newest snapshot when the recorder asked
    assert f"GAP: offsets {held + 1} to {resume - 1} are lost to the archive" in gap_line
    assert manifest["gaps"][0]["reason"] == (f"the controllers deleted these records (their log starts at snapshot "
                                             f"{resume}-{checkpoint_epoch(archive, resume)}) before the recorder "
                                             "fetched them")
    part = archive / "__cluster_metadata-0"
    checkpoint = next(p for p in part.glob("*.checkpoint") if int(p.name[:20]) == resume)
    theirs = _metadata_dir(cluster) / checkpoint.name
    if theirs.exists():  # the controller may have snapshotted again since: then its copy is gone
        assert checkpoint.read_bytes() == theirs.read_bytes()
    assert [int(p.name[:20]) for _, p in list_log_dir(part).segments] == [0, resume]

    # nothing else is lost: both sides of the gap are whole, the far side byte for byte
    assert compare_archive(archive, _metadata_dir(cluster)) > 0
    ours, _ = load_log_dir(archive)
    theirs_image, _ = load_log_dir(_metadata_dir(cluster))
    assert set(ours.topics.by_name) == set(theirs_image.topics.by_name) >= {"before", "after", "lost-0"}
    history = MetadataHistory.open_log_dir(archive)
    assert history.reachable()[0] == (-1, held)
    assert history.reachable()[1][0] == resume - 1
    before_gap, _ = history.image_at(offset=held)
    assert "before" in before_gap.topics.by_name and "lost-0" not in before_gap.topics.by_name

    status = run_metashell("record", "--status", str(archive))
    assert status.returncode == 0
    assert f"offsets {held + 1} to {resume - 1} missing" in status.stdout
    shell = run_metashell("--log-dir", str(archive), "-c", f"seek {held + 2}")
    assert shell.returncode == 1
    note, error = shell.stderr.strip().splitlines()  # the gap noted as the archive opens, then the refusal
    assert note.startswith("metashell: note: no replay crosses a gap of the archive: archive gap: offsets "
                           f"{held + 1} to {resume - 1} are in no segment: the controllers deleted these records")
    assert error.startswith(f"metashell: seek: offset {held + 2} is in a gap of the archive, which no replay reaches "
                            f"(archive gap: offsets {held + 1} to {resume - 1} are in no segment: the controllers")
    assert error.endswith(f"offsets -1 (before the first record) to {held} and {resume - 1} to "
                          f"{manifest['last_offset']} can be reached")


def checkpoint_epoch(archive: Path, end_offset: int) -> int:
    return next(int(p.name[21:31]) for p in (archive / "__cluster_metadata-0").glob("*.checkpoint")
                if int(p.name[:20]) == end_offset)
