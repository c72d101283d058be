"""A file that is no snapshot is refused in one line, never an empty image: an empty file (a Kafka
snapshot always holds its SnapshotHeader and SnapshotFooter; kafka-metadata-shell 4.1.2 given one
waits forever), a snapshot-named file without a SnapshotHeader first, a file that does not exist.
Real snapshots and bootstrap.checkpoint files (which start with a SnapshotHeader) still open."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.common.errors import StorageError
from engine.image.metadata_loader import load_file
from engine.records import metadata_records as m
from engine.storage.snapshot_writer import write_bootstrap_checkpoint
from metashell.demo.shell_demo import write_demo_log_dir
from metashell.source import Source

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", ["00000000000000000100-0000000001.checkpoint", "e.checkpoint", "empty.bin",
                                  "bootstrap.checkpoint"])
def test_an_empty_file_is_not_a_snapshot(tmp_path: Path, name: str) -> None:
    empty = tmp_path / name
    empty.write_bytes(b"")
    with pytest.raises(StorageError) as refused:
        load_file(empty)
    assert str(refused.value) == f"{empty}: not a readable snapshot: the file is empty"


def test_a_snapshot_without_a_snapshot_header_is_refused(tmp_path: Path) -> None:
    segment = write_demo_log_dir(tmp_path / "demo") / "__cluster_metadata-0" / "00000000000000000000.log"
    for name in ("00000000000000000024-0000000002.checkpoint", "copy.checkpoint"):
        named = tmp_path / name
        shutil.copy(segment, named)
        with pytest.raises(StorageError) as refused:
            load_file(named)
        assert str(refused.value) == (f"{named}, byte offset 0: not a readable snapshot: no SnapshotHeader (its "
                                      "first record is a LEADER_CHANGE, where a snapshot's is its SnapshotHeader)")
    assert load_file(segment)[0].provenance.last_offset == 23  # a segment by its own name: replayed, as Kafka's shell


def test_a_missing_file_is_no_such_file(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match=f"^{tmp_path / 'nothing'}: no such file$"):
        load_file(tmp_path / "nothing")


def test_a_bootstrap_checkpoint_still_opens(tmp_path: Path) -> None:
    path = write_bootstrap_checkpoint(tmp_path, [m.FeatureLevelRecordV0(name="metadata.version", feature_level=21)],
                                      now_ms=9)
    image, _ = load_file(path)
    assert image.metadata_version == 21


def test_an_empty_newest_snapshot_in_a_log_dir_is_passed_over_with_a_note(tmp_path: Path) -> None:
    directory = write_demo_log_dir(tmp_path / "demo")
    expected, _ = Source(log_dir=directory).load()
    empty = directory / "__cluster_metadata-0" / "00000000000000000010-0000000001.checkpoint"
    empty.write_bytes(b"")
    image, info = Source(log_dir=directory).load()
    assert image == expected
    assert f"{empty}: not a readable snapshot: the file is empty; replayed from the log's start instead" in info.notes


@pytest.mark.slow
def test_the_command_line_refuses_an_empty_snapshot(tmp_path: Path) -> None:
    empty = tmp_path / "e.checkpoint"
    empty.write_bytes(b"")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for target, says in ((empty, "not a readable snapshot: the file is empty"), (tmp_path / "no", "no such file")):
        done = subprocess.run([sys.executable, "-m", "metashell.cli", "--snapshot", str(target), "-c", "summary"],
                              capture_output=True, text=True, timeout=120, cwd=ROOT, env=env, stdin=subprocess.DEVNULL)
        assert (done.returncode, done.stdout, done.stderr) == (1, "", f"metashell: {target}: {says}\n")
