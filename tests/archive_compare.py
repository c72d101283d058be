"""An archive against a controller's own log, byte for byte (no tests here; the recorder's process
tests against kraftd and against Apache Kafka's controllers both end with it).

``compare_archive(archive, controller_dir)`` walks the whole batches of both (headers only, a
torn tail of a running node's active segment left out) and checks, over the offsets both hold:
every batch of the controller is in the archive with the same bytes and the same base offset,
and the reverse; offsets of the archive's gaps are the only ones the archive may lack. It returns
how many batches it compared, and raises AssertionError naming the first difference.

Within one archive, ``assert_contiguous(archive)`` reads its segments with a reader of its own
(Kafka's batch header: base offset, length, last offset delta; nothing of engine.storage, which
the recorder writes with) and checks that no offset is held twice and none is missing except at
the gaps the manifest lists, and that the manifest's ranges are the segments' runs.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from engine.common.errors import MetadataError
from engine.records.record_batch import decode_batch
from engine.storage.log_reader import list_log_dir


def whole_batches(directory: Path) -> dict[int, bytes]:
    """base offset -> the batch's bytes, for every whole batch of a log directory's segments."""
    batches: dict[int, bytes] = {}
    for _, segment in list_log_dir(directory).segments:
        try:
            buf = segment.read_bytes()
        except FileNotFoundError:  # deleted by the node's retention meanwhile
            continue
        pos = 0
        while pos < len(buf):
            try:
                header, end = decode_batch(buf, pos, decode_records=False)
            except MetadataError:
                break  # a write in progress (or a torn tail): the batches before it stand
            batches[header.base_offset] = buf[pos:end]
            pos = end
    return batches


def _last_offset(data: bytes) -> int:
    header, _ = decode_batch(data, 0, decode_records=False)
    return header.last_offset


def archive_gaps(archive: Path) -> list[tuple[int, int]]:
    """(first, resume) of each gap the archive's manifest records."""
    manifest = json.loads((Path(archive) / "archive.json").read_text())
    return [(g["first"], g["resume"]) for g in manifest["gaps"]]


def compare_archive(archive: Path, controller_dir: Path) -> int:
    """Batches compared over the offsets both hold; AssertionError at the first difference."""
    ours, theirs = whole_batches(Path(archive)), whole_batches(Path(controller_dir))
    assert ours, f"{archive} holds no batch"
    assert theirs, f"{controller_dir} holds no batch"
    our_first, our_last = min(ours), max(_last_offset(b) for b in ours.values())
    their_first, their_last = min(theirs), max(_last_offset(b) for b in theirs.values())
    gaps = archive_gaps(archive)
    compared = 0
    for base, data in sorted(theirs.items()):
        if base < our_first or _last_offset(data) > our_last:
            continue  # outside what the archive holds (before its start, or not committed yet)
        if any(first <= base < resume for first, resume in gaps):
            continue
        assert base in ours, f"the archive lacks the batch at offset {base} that {controller_dir} holds"
        assert ours[base] == data, f"the batch at offset {base} differs from {controller_dir}'s"
        compared += 1
    for base, data in sorted(ours.items()):
        if their_first <= base and _last_offset(data) <= their_last:
            assert base in theirs, f"the archive's batch at offset {base} is not a batch of {controller_dir}"
    return compared


# ------------------------------------------------------------------ within one archive
HEADER = struct.Struct(">qi")  # baseOffset, batchLength (what follows the length field)
LAST_OFFSET_DELTA_AT = 23  # baseOffset 8, batchLength 4, partitionLeaderEpoch 4, magic 1, crc 4, attributes 2
METADATA_DIR = "__cluster_metadata-0"


def metadata_dir(path: Path) -> Path:
    """An archive or a node's log directory, or its __cluster_metadata-0 itself."""
    return path / METADATA_DIR if (path / METADATA_DIR).is_dir() else path


def file_batches(path: Path) -> list[tuple[int, int, bytes]]:
    """(base offset, last offset, bytes) of each whole batch of one segment file, in file order."""
    data = path.read_bytes()
    found, at = [], 0
    while at + HEADER.size <= len(data):
        base, length = HEADER.unpack_from(data, at)
        end = at + HEADER.size + length
        if length < LAST_OFFSET_DELTA_AT + 4 - HEADER.size or end > len(data):
            break  # a torn tail (or the zeros a killed writer left): not a batch of the log
        (delta,) = struct.unpack_from(">i", data, at + LAST_OFFSET_DELTA_AT)
        found.append((base, base + delta, data[at:end]))
        at = end
    return found


def segment_files(directory: Path) -> list[Path]:
    """The live segments (``NNN.log``; not ``.log.deleted``), by base offset."""
    return sorted(p for p in metadata_dir(directory).glob("*.log") if p.name[:20].isdigit())


def segment_batches(directory: Path) -> dict[int, tuple[int, bytes]]:
    """Every whole batch of a directory's live segments: {base offset: (last offset, bytes)}.
    A base offset met twice is a failure here: segments must not overlap."""
    batches: dict[int, tuple[int, bytes]] = {}
    for path in segment_files(directory):
        for base, last, raw in file_batches(path):
            assert base not in batches, f"offset {base} is in two segments of {directory} (the second: {path.name})"
            batches[base] = (last, raw)
    return batches


def manifest(archive: Path) -> dict:
    return json.loads((archive / "archive.json").read_text())


def assert_contiguous(archive: Path) -> list[tuple[int, int]]:
    """The archive's segments, batch after batch, leave no offset out and repeat none, except at
    the gaps its manifest lists (each a hole from ``first`` to ``resume - 1``, the segment after
    it starting at ``resume``, where the downloaded snapshot ``resume-epoch.checkpoint`` is); the
    runs of contiguous offsets, which must be the manifest's ``ranges``."""
    made = manifest(archive)
    gaps = {gap["first"]: gap["resume"] for gap in made.get("gaps", [])}
    batches = segment_batches(archive)
    runs: list[list[int]] = []
    for base, (last, _) in sorted(batches.items()):
        if runs and base == runs[-1][1] + 1:
            runs[-1][1] = last
            continue
        if runs:
            expected = runs[-1][1] + 1
            assert base > expected, f"offsets {base}..{last} again in the archive (it had reached {runs[-1][1]})"
            assert gaps.get(expected) == base, (f"a hole in the archive from {expected} to {base - 1} that the "
                                                f"manifest does not list (its gaps: {made.get('gaps')})")
            snapshots = {offset for offset, _ in made.get("snapshots", [])}
            assert base in snapshots, f"the archive resumes at {base} after a gap without a snapshot there"
        runs.append([base, last])
    ranges = [tuple(r) for r in runs]
    assert [tuple(r) for r in made["ranges"]] == ranges, f"manifest ranges {made['ranges']}, segments {ranges}"
    return ranges
