"""Damage cuts a gap, not the rest of the log: a replay that starts from a snapshot after a
damaged batch never needs it (the batches before its start are walked by their headers only), so
the offsets that can be reached are runs, and every way of asking (the history, the Source the
shell's seek and --offset use, the command line) answers exactly the point asked or refuses it in
one line naming the damage and the runs.

The demo log (metashell.demo.shell_demo) is one segment of offsets 0 to 23; its fifth batch holds
offsets 10 to 13. A snapshot at end offset 15 (offset 14) is added before the damage is made, so
the runs are -1..9 (from the log's start) and 14..23 (from the snapshot).
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from engine.common.errors import OffsetOutOfRange
from engine.image.image_writer import image_records
from engine.image.metadata_history import MetadataHistory
from engine.image.metadata_loader import load_log_dir
from engine.storage.log_reader import read_batches
from engine.storage.metadata_log import MetadataLog
from engine.storage.snapshot_writer import SnapshotId
from metashell.demo.shell_demo import write_demo_log_dir
from metashell.source import Source
from tests.shell_session import metashell_on_log_dir

SEGMENT = "00000000000000000000.log"
RUNS_WORDS = "offsets -1 (before the first record) to 9 and 14 to 23 can be reached"
SNAPSHOT_TS = 1_767_225_605_000  # offset 14's time


def _log_with_snapshot(tmp_path: Path) -> Path:
    intact = write_demo_log_dir(tmp_path / "intact")
    with MetadataLog(intact / "__cluster_metadata-0", fsync_policy="never") as log:
        log.write_snapshot(SnapshotId(15, 1), image_records(load_log_dir(intact, offset=14)[0]),
                           last_contained_log_timestamp_ms=SNAPSHOT_TS, now_ms=9)
    return intact


def _damaged(tmp_path: Path, how: str = "crc") -> tuple[Path, Path, Path, int]:
    """(intact, damaged copy, its segment, the damaged batch's byte position)."""
    intact = _log_with_snapshot(tmp_path)
    directory = tmp_path / how
    shutil.copytree(intact, directory)
    segment = directory / "__cluster_metadata-0" / SEGMENT
    pos, batch = list(read_batches(segment))[4]
    data = bytearray(segment.read_bytes())
    if how == "crc":
        data[pos + batch.size_bytes // 2] ^= 0xFF  # in the records: the header's length still holds
    else:
        data[pos + 8:pos + 12] = struct.pack(">i", -1460230223)  # the header's length: the walk stops
    segment.write_bytes(bytes(data))
    return intact, directory, segment, pos


@pytest.mark.parametrize("opened_at", [None, 5, 20])
def test_the_runs_are_the_same_wherever_the_history_opened(tmp_path: Path, opened_at: int | None) -> None:
    intact, directory, segment, pos = _damaged(tmp_path)
    history = MetadataHistory.open_log_dir(directory, offset=opened_at)
    assert history.reachable() == ((-1, 9), (14, 23))
    for offset in (-1, 5, 9, 14, 15, 20, 23, 9, 14):  # back and forth across the gap
        image, info = history.image_at(offset=offset)
        assert image == load_log_dir(intact, offset=offset)[0], offset
        assert image.provenance.last_offset == offset and info.end_offset == offset + 1
    for offset in (10, 12, 13):
        with pytest.raises(OffsetOutOfRange) as refused:
            history.image_at(offset=offset)
        assert str(refused.value) == (f"offset {offset} is in a damaged part of the log, which no replay reaches "
                                      f"({segment}, byte offset {pos}: batch CRC mismatch: "
                                      f"{refused.value.damage.split('batch CRC mismatch: ')[1]}): {RUNS_WORDS}")
        assert refused.value.runs == ((-1, 9), (14, 23))
    with pytest.raises(OffsetOutOfRange, match=re.escape(f"offset 24 is past the log's end: {RUNS_WORDS}") + "$"):
        history.image_at(offset=24)
    with pytest.raises(OffsetOutOfRange, match=re.escape(f"offset -5 is before the log's earliest point: {RUNS_WORDS}") + "$"):
        history.image_at(offset=-5)


def test_a_replay_from_a_snapshot_past_the_damage_walks_past_it_by_headers(tmp_path: Path) -> None:
    intact, directory, segment, pos = _damaged(tmp_path)
    before = segment.read_bytes()
    image, info = Source(log_dir=directory).load()  # the default open: the newest point
    assert image == load_log_dir(intact)[0] and image.provenance.last_offset == 23
    assert info.snapshot == SnapshotId(15, 1)
    assert [n for n in info.notes if n.startswith(f"part of the log is damaged and cannot be replayed: {segment}, "
                                                  f"byte offset {pos}: batch CRC mismatch")
            and n.endswith(f"; {RUNS_WORDS}")], info.notes
    assert load_log_dir(directory)[0] == image  # the loader too
    assert segment.read_bytes() == before


def test_a_seek_answers_the_point_asked_whatever_came_before(tmp_path: Path) -> None:
    """Opened before the damage (the span from the log's start stops at 9), a seek past the gap
    reads the span from the snapshot, not the last point before the damage."""
    intact, directory, _, _ = _damaged(tmp_path)
    source = Source(log_dir=directory)
    image, info = source.load(offset=9)
    assert image.provenance.last_offset == 9
    assert not [n for n in info.notes if "past the log's end" in n], info.notes  # the newer snapshot is a run
    assert source.load(offset=14)[0] == load_log_dir(intact, offset=14)[0]
    assert source.load(offset=20)[0] == load_log_dir(intact, offset=20)[0]
    assert source.load(offset=3)[0] == load_log_dir(intact, offset=3)[0]


def test_times_across_the_gap(tmp_path: Path) -> None:
    intact, directory, _, _ = _damaged(tmp_path)
    source = Source(log_dir=directory)
    assert source.load(time_ms=1_767_225_602_500)[0] == load_log_dir(intact, time_ms=1_767_225_602_500)[0]
    with pytest.raises(OffsetOutOfRange, match="the log stops at damage .*: its records may be past it: " + re.escape(RUNS_WORDS)):
        source.load(time_ms=1_767_225_604_500)  # after 9, before the snapshot: the gap's records may be at it
    later = source.load(time_ms=1_767_225_605_500)[0]
    assert later == load_log_dir(intact, time_ms=1_767_225_605_500)[0] and later.provenance.last_offset == 14
    assert source.load(time_ms=2_000_000_000_000)[0].provenance.last_offset == 23  # "as of" a later time


def test_image_at_never_answers_another_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even with the range check out of the way, the span that stops before the point refuses it."""
    _, directory, _, _ = _damaged(tmp_path)
    history = MetadataHistory.open_log_dir(directory, offset=5)
    monkeypatch.setattr(MetadataHistory, "check_point", lambda self, **point: None)
    with pytest.raises(OffsetOutOfRange, match="offset 12 cannot be replayed: the log's span from offset -1 stops at 9"):
        history.image_at(offset=12)


def test_a_header_that_cannot_be_trusted_stops_the_walk_and_says_so(tmp_path: Path) -> None:
    """An absurd length: nothing after it in the segment can be found, not even from the snapshot,
    whose own image stays reachable."""
    intact, directory, segment, pos = _damaged(tmp_path, "header")
    history = MetadataHistory.open_log_dir(directory)
    assert history.reachable() == ((-1, 9), (14, 14))
    image, info = history.image_at()
    assert image == load_log_dir(intact, offset=14)[0]
    assert [n for n in info.notes if n.startswith(f"not read from here on, damaged: {segment}, byte offset {pos}: "
                                                  "absurd batch length -1460230223")], info.notes
    with pytest.raises(OffsetOutOfRange, match=r"offset 20 is past the damage the log stops at .*: offsets -1 "
                                               r"\(before the first record\) to 9 and 14 can be reached$"):
        history.image_at(offset=20)


@pytest.mark.slow
def test_the_command_line_and_the_shell_agree_on_the_runs(tmp_path: Path) -> None:
    _, directory, segment, pos = _damaged(tmp_path)
    def metashell(*args: str) -> subprocess.CompletedProcess:
        return metashell_on_log_dir(directory, *args)

    done = metashell("--offset", "12", "-c", "summary")
    assert (done.returncode, done.stdout, done.stderr.count("\n")) == (1, "", 1), done
    assert done.stderr.startswith("metashell: offset 12 is in a damaged part of the log") and RUNS_WORDS in done.stderr
    done = metashell("--offset", "20", "-c", "summary")
    assert done.returncode == 0 and done.stdout.startswith("offset:       20 of 23\n"), done
    done = metashell("-c", "seek 9; seek 14; seek 12; seek 20")
    assert done.stdout.splitlines() == ["at offset 9", "at offset 14", "at offset 20"], done
    assert "seek: offset 12 is in a damaged part of the log" in done.stderr


@pytest.mark.corpus
def test_the_reviewers_damaged_corpus_log(tmp_path: Path) -> None:
    """A real Kafka directory (segments from 0 to 26389, snapshots at 15232 and 22428) with one byte
    flipped in the records of the batch at offset 13178: two runs, whatever the first point asked."""
    from tests.conftest import corpus_file

    original = corpus_file("djsoler__Big_Data_Proye_Docker")
    directory = tmp_path / "dj"
    shutil.copytree(original, directory)
    segment = directory / "__cluster_metadata-0" / SEGMENT
    segment.chmod(0o644)
    pos, batch = next((p, b) for p, b in read_batches(segment) if b.base_offset == 13178)
    data = bytearray(segment.read_bytes())
    data[pos + 66] ^= 0xFF  # inside its records
    segment.write_bytes(bytes(data))
    words = "offsets -1 (before the first record) to 13177 and 15231 to 26389 can be reached"
    for first in (None, 100, 13177, 15231, 20000):
        source = Source(log_dir=directory)
        if first is not None:
            assert source.load(offset=first)[0].provenance.last_offset == first
        for offset in (15231, 13177, 20000, 26389, 100):
            assert source.load(offset=offset)[0] == Source(log_dir=original).load(offset=offset)[0], (first, offset)
        for offset in (13178, 15000, 15230, 26390):
            with pytest.raises(OffsetOutOfRange) as refused:
                source.load(offset=offset)
            assert str(refused.value).endswith(words)
    image, info = Source(log_dir=directory).load()
    assert image.provenance.last_offset == 26389 and any(n.endswith(words) for n in info.notes)


def test_the_export_takes_the_runs_too(tmp_path: Path) -> None:
    from metashell.export.history_tables import images_at

    _, directory, _, _ = _damaged(tmp_path)
    assert {row[0] for row in images_at(directory, [5, 20]).rows} == {20}  # no partitions before offset 11
    with pytest.raises(OffsetOutOfRange, match="offset 12 is in a damaged part of the log"):
        images_at(directory, [5, 12])
