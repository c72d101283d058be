"""An archive (``metashell record --archive DIR``) against the controllers' own metadata logs, byte for byte.

The contract says a recorder keeps the committed batches exactly as the leader served them, so
over the offsets both an archive and a controller hold, their segments hold the same batches: the
same base offsets, the same bytes. This module checks that with a reader of its own, the few
fields of Kafka's record batch header it needs (base offset, length, last offset delta), and no
code of the recorder's or of engine.storage: a bug there cannot hide itself here.

    batches = segment_batches(metadata_dir)      # {base offset: (last offset, bytes)}, segments only
    compared = assert_same_batches(archive_dir, controller_dir)   # how many batches both hold
    assert_contiguous(archive_dir)               # no overlap, no hole except where the manifest says

A segment's tail that ends inside a batch (a node killed while it wrote) is left out: that batch
is not in the log yet (Kafka's recovery truncates it).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

HEADER = struct.Struct(">qi")  # baseOffset, batchLength (what follows the length field)
LAST_OFFSET_DELTA_AT = 23  # baseOffset 8, batchLength 4, partitionLeaderEpoch 4, magic 1, crc 4, attributes 2
METADATA_DIR = "__cluster_metadata-0"
Batches = dict[int, tuple[int, bytes]]


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


def segment_batches(directory: Path) -> Batches:
    """Every whole batch of a directory's live segments: {base offset: (last offset, bytes)}.
    A base offset met twice is a failure here: segments must not overlap."""
    batches: Batches = {}
    for path in segment_files(directory):
        for base, last, raw in file_batches(path):
            assert base not in batches, f"offset {base} is in two segments of {directory} (the second: {path.name})"
            batches[base] = (last, raw)
    return batches


def assert_same_batches(archive: Path, controller: Path, *, up_to: int | None = None) -> int:
    """Every batch of ``archive`` whose offsets ``controller`` also holds (up to ``up_to``, its
    committed end) is the controller's batch at that base offset, byte for byte; the number of
    batches compared. The controller's offsets are those of its batches, contiguous from its
    first to its last (a controller's log has no holes)."""
    ours, theirs = segment_batches(archive), segment_batches(controller)
    if not theirs:
        return 0
    first, last = min(theirs), max(last for last, _ in theirs.values())
    if up_to is not None:
        last = min(last, up_to)
    compared = 0
    for base, (end, raw) in sorted(ours.items()):
        if base < first or end > last:
            continue
        assert base in theirs, (f"the archive's batch at {base}..{end} does not start a batch of {controller} "
                                f"(which holds {first}..{last})")
        their_end, their_raw = theirs[base]
        assert (end, raw) == (their_end, their_raw), (
            f"the archive's batch at {base} differs from {controller}'s: {_first_difference(raw, their_raw)}")
        compared += 1
    return compared


def _first_difference(a: bytes, b: bytes) -> str:
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"lengths {len(a)} and {len(b)}, first difference at byte {at}"


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
