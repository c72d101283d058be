"""What an operator runs into on real directories: empty active segments, index files beside
segments, snapshots cut short, torn tails of a running node, and metashell's one-line errors."""

from __future__ import annotations

import pytest
import subprocess
import sys
from pathlib import Path

from engine.tools.cli import run
from engine.storage.log_reader import read_batches
from engine.storage.metadata_log import MetadataLog
from engine.records.metadata_records import NoOpRecordV0
from engine.storage.snapshot_writer import SnapshotId


def _metashell(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "metashell.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


def _log_with_empty_active_segment(tmp_path: Path) -> Path:
    with MetadataLog.create(tmp_path, fsync_policy="never") as log:
        log.append([NoOpRecordV0()] * 2, epoch=1, timestamp_ms=5)
        log.roll()  # the new active segment is empty, as Kafka's often is
    return tmp_path / "__cluster_metadata-0"


def test_dump_log_dir_with_an_empty_active_segment(tmp_path: Path, capsys) -> None:
    directory = _log_with_empty_active_segment(tmp_path)
    assert run(["dump-log", str(directory)]) == 0
    out = capsys.readouterr().out
    assert "Log starting offset: 2" in out and out.count("payload:") == 2
    lines: list[str] = []
    assert run(["dump-log", str(directory / "00000000000000000002.log")], err=lines.append) == 1
    assert lines == [f"kraftd: {directory / '00000000000000000002.log'}, byte offset 0: "
                     "empty file: no record batches"]


def test_dump_log_skips_files_that_hold_no_batches(tmp_path: Path, capsys) -> None:
    directory = _log_with_empty_active_segment(tmp_path)
    (directory / "00000000000000000000.index").write_bytes(bytes(16))
    (directory / "00000000000000000002.snapshot").write_bytes(b"\x00\x01")
    files = sorted(str(p) for p in directory.iterdir())  # as a shell glob would give them
    notes: list[str] = []
    assert run(["dump-log", *files], err=notes.append) == 0
    captured = capsys.readouterr()
    assert captured.out.count("payload:") == 2
    assert "offset index, not record batches" in captured.err
    assert "producer-state snapshot" in captured.err and "quorum state" not in captured.err
    assert run(["dump-log", str(directory / "partition.metadata")], err=notes.append) == 1
    assert notes[-1] == "kraftd: no segment or snapshot among the files given"


def test_a_snapshot_cut_short_is_an_error_after_its_records(tmp_path: Path, capsys) -> None:
    with MetadataLog.create(tmp_path, fsync_policy="never") as log:
        log.append([NoOpRecordV0()], epoch=1, timestamp_ms=5)
        path = log.write_snapshot(SnapshotId(1, 1), [NoOpRecordV0()] * 3, last_contained_log_timestamp_ms=5,
                                  now_ms=6)
    data = path.read_bytes()
    footer_at = [pos for pos, _ in read_batches(path)][-1]
    cut = path.with_name(SnapshotId(1, 2).file_name)
    cut.write_bytes(data[:footer_at])  # the footer batch is gone
    lines: list[str] = []
    assert run(["dump-log", str(cut)], err=lines.append) == 1
    assert lines == [f"kraftd: {cut}, byte offset {footer_at}: snapshot ends without a SnapshotFooter: "
                     "cut short or not a snapshot"]
    proc = _metashell("--snapshot", cut, "-c", "ls")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "SnapshotFooter" in proc.stderr


@pytest.mark.slow
def test_metashell_one_line_errors() -> None:
    cases = [
        (("-c", "ls"), "give a source"),
        (("--snapshot", "/nonexistent/x.checkpoint"), "/nonexistent/x.checkpoint"),
        (("--log-dir", "/nonexistent"), "no such directory"),
        (("--snapshot", "/"), "is a directory"),
        (("--bogus",), "unrecognized arguments"),
    ]
    for args, fragment in cases:
        proc = _metashell(*args)
        assert proc.returncode == 1, (args, proc.stderr)
        assert proc.stderr.startswith("metashell: ") and proc.stderr.count("\n") == 1, (args, proc.stderr)
        assert fragment in proc.stderr and "Traceback" not in proc.stderr, (args, proc.stderr)


def test_metashell_notes_a_torn_tail_and_reads_the_rest(tmp_path: Path) -> None:
    with MetadataLog.create(tmp_path, fsync_policy="never") as log:
        log.append([NoOpRecordV0()] * 2, epoch=1, timestamp_ms=5)
        log.append([NoOpRecordV0()] * 2, epoch=1, timestamp_ms=6)
        segment = log._active.path
    segment.write_bytes(segment.read_bytes()[:-7])  # a write in progress
    proc = _metashell("--log-dir", tmp_path, "-c", "records; cat /local/end-offset")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("NO_OP_RECORD") == 2 and proc.stdout.splitlines()[-1] == "2"
    assert proc.stderr.startswith("metashell: note: not read") and str(segment) in proc.stderr
