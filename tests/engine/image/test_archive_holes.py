"""Reading an archive with a gap (engine.image.log_holes, log_runs, metadata_loader): a hole between
segments is a gap no replay crosses, named as an archive gap with the manifest's reason.

The archive is written by the recorder's own writer (metashell.record.archive): offsets 0 to 5,
a gap 6 to 14 (the leader's snapshot at 15 on its far side), then 15 to 17.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.common.errors import OffsetOutOfRange
from engine.image.log_runs import scan_log
from engine.image.metadata_history import MetadataHistory
from engine.image.metadata_loader import load_log_dir
from engine.storage.log_reader import list_log_dir
from metashell.record.archive import Archive
from tests.metashell.record.archive_fixtures import FakeLeaderLog

REASON = "the leader's log starts past the archive's end (test)"


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    leader = FakeLeaderLog()
    writer = Archive(tmp_path / "archive").open()
    writer.append(leader.append())  # 0-2
    writer.append(leader.append())  # 3-5
    writer.commit()
    for _ in range(3):
        leader.append()  # 6-14: deleted by the controllers before the recorder fetched them
    snapshot_id, data = leader.snapshot()
    writer.reset(data, snapshot_id, REASON, 1_700_000_000_000)
    writer.append(leader.append())  # 15-17
    writer.commit()
    writer.close()
    return tmp_path / "archive"


def _config_topics(image) -> set[str]:
    return {resource.name for resource in image.configs}


def test_the_hole_is_a_gap_of_the_scan_naming_the_archive_and_its_reason(archive: Path) -> None:
    scan = scan_log(list_log_dir(archive))
    assert [(g.first, g.resume, g.hole) for g in scan.gaps] == [(6, 15, True)]
    assert scan.gaps[0].damage.endswith(f"archive gap: offsets 6 to 14 are in no segment: {REASON}")


def test_the_runs_stop_before_the_hole_and_start_again_at_the_snapshot(archive: Path) -> None:
    history = MetadataHistory.open_log_dir(archive)
    assert history.reachable() == ((-1, 5), (14, 17))
    assert history.gaps[0].hole


@pytest.mark.parametrize("offset", [6, 10, 13])
def test_a_point_in_the_hole_is_refused_in_one_line_naming_the_runs(archive: Path, offset: int) -> None:
    history = MetadataHistory.open_log_dir(archive)
    with pytest.raises(OffsetOutOfRange) as caught:
        history.image_at(offset=offset)
    line = caught.value.one_line()
    assert "\n" not in line
    assert f"offset {offset} is in a gap of the archive" in line and REASON in line
    assert "offsets -1 (before the first record) to 5 and 14 to 17 can be reached" in line
    assert caught.value.runs == ((-1, 5), (14, 17))


def test_points_on_both_sides_are_answered_and_never_replayed_across(archive: Path) -> None:
    history = MetadataHistory.open_log_dir(archive, earliest=True)
    before, _ = history.image_at(offset=5)
    assert _config_topics(before) == {"t0", "t3"}
    after, _ = history.image_at(offset=17)
    # the snapshot holds what the deleted records did; nothing of the far side leaks back
    assert _config_topics(after) == {"t0", "t3", "t6", "t9", "t12", "t15"}
    assert history.last_offset == 5  # the pass from the log's start stopped at the hole


def test_the_loader_stops_at_the_hole_and_says_it_is_an_archive_gap(archive: Path) -> None:
    image, info = load_log_dir(archive, offset=12)  # no snapshot at or before it: a replay from 0
    assert _config_topics(image) == {"t0", "t3"}
    assert info.end_offset == 6
    assert any(n.startswith("not read from here on, a gap in the archive") and REASON in n for n in info.notes)


def test_the_latest_image_comes_from_the_far_side(archive: Path) -> None:
    image, info = load_log_dir(archive)
    assert _config_topics(image) == {"t0", "t3", "t6", "t9", "t12", "t15"}
    assert info.end_offset == 18


def test_kraftd_dump_log_reads_both_sides_of_the_gap(archive: Path, capsys) -> None:
    from engine.tools.cli import run

    assert run(["dump-log", str(archive)], err=lambda line: None) == 0
    out = capsys.readouterr().out
    bases = [int(line.split()[1]) for line in out.splitlines() if line.startswith("baseOffset:")]
    # the leader's snapshot at 15 (its own offsets), then the segments: 0-5, and 15 on (nothing in between)
    assert bases[-3:] == [0, 3, 15]
    assert "Snapshot end offset: 15, epoch: 1" in out
