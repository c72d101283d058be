"""An archive against a controller's own log, byte for byte (no tests here; the recorder's process
tests against kraftd and against Apache Kafka's controllers both end with it).

``compare_archive(archive, controller_dir)`` walks the whole batches of both (headers only, a
torn tail of a running node's active segment left out) and checks, over the offsets both hold:
every batch of the controller is in the archive with the same bytes and the same base offset,
and the reverse; offsets of the archive's gaps are the only ones the archive may lack. It returns
how many batches it compared, and raises AssertionError naming the first difference.
"""

from __future__ import annotations

import json
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
