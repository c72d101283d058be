"""Damage does not lock a whole log away: a log directory opens up to the damage, with a note
naming the file and byte offset (as a torn tail gets), a point before the damage answers, a point
past it is an OffsetOutOfRange naming the damage and the reachable offsets; the damaged file is
never changed. A garbage snapshot says it is not a readable snapshot, then why in words.

The demo log (metashell.demo.shell_demo) is one segment of offsets 0 to 23; its fifth batch holds
offsets 10 to 13, the batches before it 0 to 9.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from engine.common.errors import OffsetOutOfRange, StorageError
from engine.records import metadata_records as m
from engine.image.metadata_history import MetadataHistory
from engine.image.metadata_loader import load_file, load_log_dir, load_snapshot
from engine.storage.log_reader import read_batches
from engine.storage.metadata_log import MetadataLog
from metashell.demo.shell_demo import write_demo_log_dir
from metashell.source import Source
from tests.shell_session import metashell_on_log_dir

SEGMENT = "00000000000000000000.log"
DAMAGED_BATCH = 4  # offsets 10 to 13


def _damaged(tmp_path: Path, how: str, intact: Path | None = None) -> tuple[Path, Path, int]:
    """A copy of the demo log (or of ``intact``) with its fifth batch damaged ``how``; (log dir,
    segment, batch position)."""
    intact = intact or write_demo_log_dir(tmp_path / "intact")
    directory = tmp_path / how
    shutil.copytree(intact, directory)
    segment = directory / "__cluster_metadata-0" / SEGMENT
    pos, batch = list(read_batches(segment))[DAMAGED_BATCH]
    data = bytearray(segment.read_bytes())
    if how == "crc":
        data[pos + batch.size_bytes // 2] ^= 0xFF  # one byte in the middle of the batch's records
    else:
        data[pos + 8:pos + 12] = struct.pack(">i", -1460230223)  # the batch header's length
    segment.write_bytes(bytes(data))
    return directory, segment, pos


@pytest.mark.parametrize("how, reason", [("crc", "batch CRC mismatch"), ("header", "batch length -1460230223")])
def test_a_damaged_log_opens_up_to_the_damage(tmp_path: Path, how: str, reason: str) -> None:
    directory, segment, pos = _damaged(tmp_path, how)
    before = segment.read_bytes()
    intact = tmp_path / "intact"
    source = Source(log_dir=directory)
    image, info = source.load()
    note = f"not read from here on, damaged: {segment}, byte offset {pos}: "
    assert [n for n in info.notes if n.startswith(note)] and reason in info.notes[-1], info.notes
    assert image == load_log_dir(intact, offset=9)[0] and image.provenance.last_offset == 9
    assert source.load(offset=5)[0] == load_log_dir(intact, offset=5)[0]  # before the damage
    with pytest.raises(OffsetOutOfRange) as refused:
        source.load(offset=20)
    assert (refused.value.first, refused.value.last) == (-1, 9)
    assert str(refused.value).startswith(f"offset 20 is past the damage the log stops at ({segment}, byte offset "
                                         f"{pos}: ")
    assert str(refused.value).endswith("offsets -1 (before the first record) to 9 can be reached")
    with pytest.raises(OffsetOutOfRange, match="the log stops at damage"):
        source.load(time_ms=2_000_000_000_000)  # after the last record read: may be past the damage
    assert load_log_dir(directory)[0] == image  # the loader too
    assert segment.read_bytes() == before  # read only: nothing cut


def test_damage_in_an_older_segment_keeps_the_newer_ones_unread(tmp_path: Path) -> None:
    """A batch is missing: what follows cannot be replayed onto what came before (Kafka's recovery
    would cut the log there too)."""
    intact = write_demo_log_dir(tmp_path / "two-segments")
    with MetadataLog(intact / "__cluster_metadata-0", fsync_policy="never") as log:
        log.roll()
        log.append([m.NoOpRecordV0()], epoch=2, timestamp_ms=1_767_225_700_000)  # offset 24, a segment of its own
    directory, segment, pos = _damaged(tmp_path, "crc", intact)
    history = MetadataHistory.open_log_dir(directory)
    assert history.last_offset == 9 and history.damage.startswith(f"{segment}, byte offset {pos}: batch CRC")
    assert [p.name for p in history.files_read] == [SEGMENT]  # the newer segment was never opened
    with pytest.raises(OffsetOutOfRange, match="offset 24 is past the damage"):
        history.image_at(offset=24)


def test_a_damaged_segment_opened_as_a_file_reads_to_the_damage(tmp_path: Path) -> None:
    """``--snapshot SEGMENT``, as kafka-metadata-shell reads any file."""
    _, segment, pos = _damaged(tmp_path, "crc")
    image, info = load_file(segment)
    assert image == load_log_dir(tmp_path / "intact", offset=9)[0]
    assert info.notes[0].startswith(f"not read from here on, damaged: {segment}, byte offset {pos}: batch CRC")


def test_a_garbage_snapshot_says_so_in_words(tmp_path: Path) -> None:
    garbage = tmp_path / "00000000000000000100-0000000001.checkpoint"
    garbage.write_bytes(b"\xa8\xf6\x42\x31" * 500)
    with pytest.raises(StorageError) as refused:
        load_snapshot(garbage)
    assert str(refused.value) == (f"{garbage}, byte offset 0: not a readable snapshot: the record batch there claims "
                                  f"a length of {struct.unpack('>i', garbage.read_bytes()[8:12])[0]} bytes, which "
                                  "no batch has: the file is not Kafka record batches, or is damaged")
    unnamed = tmp_path / "copy.bin"  # --snapshot FILE of no snapshot's name: a snapshot or a segment
    shutil.copy(garbage, unnamed)
    with pytest.raises(StorageError, match="not a readable snapshot or segment: the record batch there claims"):
        load_file(unnamed)
    directory = write_demo_log_dir(tmp_path / "demo")
    intact, _ = Source(log_dir=directory).load()
    shutil.copy(garbage, directory / "__cluster_metadata-0" / "00000000000000000010-0000000001.checkpoint")
    image, info = Source(log_dir=directory).load()  # the segments hold what it would: they are replayed
    assert image == intact
    assert [n for n in info.notes if "byte offset 0: not a readable snapshot: the record batch" in n
            and n.endswith("; replayed from the log's start instead")], info.notes


@pytest.mark.slow
def test_the_command_line_on_a_damaged_log(tmp_path: Path) -> None:
    directory, segment, pos = _damaged(tmp_path, "crc")
    def metashell(*args: str) -> subprocess.CompletedProcess:
        return metashell_on_log_dir(directory, *args)

    done = metashell("--offset", "5", "-c", "summary")
    assert done.returncode == 0 and done.stdout.startswith("offset:       5 of 9\n")
    assert done.stderr.startswith(f"metashell: note: not read from here on, damaged: {segment}, byte offset {pos}: ")
    assert done.stderr.count("\n") == 1
    done = metashell("--offset", "20", "-c", "summary")
    assert (done.returncode, done.stdout, done.stderr.count("\n")) == (1, "", 1)
    assert done.stderr.startswith(f"metashell: offset 20 is past the damage the log stops at ({segment}, byte "
                                  f"offset {pos}: batch CRC mismatch")


@pytest.mark.corpus
def test_a_damaged_newest_snapshot_falls_back_to_an_older_one_the_segments_continue(tmp_path: Path) -> None:
    """A real Kafka directory (segments from offset 0, snapshots at 15232 and 22428): a garbage
    newest snapshot, then both garbage, each open to the same latest image, with a note naming
    the file and what was replayed instead; neither snapshot is changed."""
    from tests.conftest import corpus_file

    original = corpus_file("djsoler__Big_Data_Proye_Docker")
    expected, _ = Source(log_dir=original).load()
    directory = tmp_path / "dj"
    shutil.copytree(original, directory)
    metadata = directory / "__cluster_metadata-0"
    newest, older = (metadata / "00000000000000022428-0000000005.checkpoint",
                     metadata / "00000000000000015232-0000000005.checkpoint")
    for garbled, instead in ((newest, f"the snapshot {older.name}"), (older, "the log's start")):
        garbled.chmod(0o644)
        garbled.write_bytes(b"\x9f" * 12 + garbled.read_bytes()[12:])
        image, info = Source(log_dir=directory).load()
        assert image == expected
        assert [n for n in info.notes if n.startswith(f"{garbled}, byte offset 0: not a readable snapshot")
                and n.endswith(f"; replayed from {instead} instead")], info.notes


def test_a_damaged_snapshot_the_segments_do_not_reach_back_past_stays_an_error(tmp_path: Path) -> None:
    """Without segments that cover what the snapshot held, there is nothing to fall back to."""
    directory = tmp_path / "only-snapshot" / "__cluster_metadata-0"
    directory.mkdir(parents=True)
    (directory / "00000000000000000100-0000000001.checkpoint").write_bytes(os.urandom(64))
    with pytest.raises(StorageError, match="not a readable snapshot"):
        Source(log_dir=directory).load()
