"""Kafka's own ``kafka-dump-log`` output, read back: which files it dumped, each batch as printed.

A batch is keyed by its base offset and printed without its position in the file: an archive and
a controller cut the same log into segments at different places, and the position is the one
thing that differs between their dumps of the same batch.
"""

from __future__ import annotations

import re
from pathlib import Path

from archive_compare import file_batches, metadata_dir, segment_files
from kafka_peer.distribution import KafkaDistribution

HEADER = "Dumping "
BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) .* position: \d+ (.*)$")


def dump_sections(text: str) -> dict[str, list[str]]:
    """kafka-dump-log's output, each file's lines by the path of its ``Dumping`` line."""
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith(HEADER):
            current = sections.setdefault(line[len(HEADER):], [])
        else:
            current.append(line)
    return sections


def dumped_batches(lines: list[str]) -> dict[int, list[str]]:
    """A file's batches as printed: by base offset, the batch line without its position in the
    file (segments of the archive and of a controller cut the log at different places) and its
    record lines."""
    batches: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        found = BATCH.match(line)
        if found:
            current = batches[int(found[1])] = [re.sub(r" position: \d+ ", " ", line)]
        elif line.startswith("| ") and current is not None:
            current.append(line)
    return batches


DUMP_MODES = ((), ("--cluster-metadata-decoder",))  # the batches only; and every record decoded


def read_by_kafka(path: Path, lines: list[str], *, decoded: bool) -> dict[int, list[str]]:
    """The segment's batches as kafka-dump-log printed them (a snapshot's are checked and left out),
    after checking that it read the file whole: every batch valid, none left out, no error."""
    assert lines, f"kafka-dump-log printed nothing for {path.name}"
    assert not [line for line in lines if "isvalid: false" in line or "Error" in line or "Exception" in line], \
        f"kafka-dump-log on the archive's {path.name}:\n" + "\n".join(lines[:20])
    batches = dumped_batches(lines)
    if path.suffix == ".checkpoint":
        end, epoch = (int(x) for x in path.stem.split("-"))
        assert lines[0] == f"Snapshot end offset: {end}, epoch: {epoch}", lines[0]
        if decoded:
            records = [line for line in lines if line.startswith("| ")]
            assert "SnapshotHeader" in records[0] and "SnapshotFooter" in records[-1], path.name
        return {}
    assert list(batches) == [base for base, _, _ in file_batches(path)], \
        f"kafka-dump-log left batches of {path.name} out"
    return batches


def kafka_reads_archive(dist: KafkaDistribution, archive: Path) -> dict[int, list[str]]:
    """kafka-dump-log --cluster-metadata-decoder over every segment and snapshot of an archive
    (one JVM), each file read whole (``read_by_kafka``); the segments' batches as printed."""
    files = segment_files(archive) + sorted(metadata_dir(archive).glob("*.checkpoint"))
    assert not any("," in str(f) for f in files), "--files splits at commas"
    done = dist.run("kafka-dump-log", "--cluster-metadata-decoder", "--files", ",".join(map(str, files)),
                    timeout_s=300)
    sections = dump_sections(done.stdout)
    assert sorted(sections) == sorted(map(str, files)), "kafka-dump-log did not dump every file given"
    assert_consecutive(done.stderr, [f for f in files if f.suffix == ".log"])
    batches: dict[int, list[str]] = {}
    for path in files:
        batches.update(read_by_kafka(path, sections[str(path)], decoded=True))
    return batches


def non_consecutive(stderr: str) -> dict[str, list[tuple[int, int]]]:
    """kafka-dump-log's "Non-consecutive offsets in FILE" reports (stderr): FILE -> its (offset,
    next offset) pairs. Kafka 4.4 reports every segment not at offset 0 as "-1 is followed by
    BASE" (its own too): only other pairs are offsets out of order inside a segment."""
    found: dict[str, list[tuple[int, int]]] = {}
    current: list[tuple[int, int]] | None = None
    for line in stderr.splitlines():
        if line.startswith("Non-consecutive offsets in "):
            current = found.setdefault(line[len("Non-consecutive offsets in "):], [])
        elif (pair := re.match(r"^\s+(-?\d+) is followed by (-?\d+)$", line)) and current is not None:
            current.append((int(pair[1]), int(pair[2])))
        else:
            current = None
    return found


def assert_consecutive(stderr: str, segments: list[Path]) -> None:
    """No segment of ``segments`` has offsets out of order for kafka-dump-log (its report of a
    segment's base offset after -1 is not one: see ``non_consecutive``)."""
    reported = non_consecutive(stderr)
    for path in segments:
        out_of_order = [pair for pair in reported.get(str(path), []) if pair != (-1, int(path.name[:20]))]
        assert not out_of_order, f"kafka-dump-log: non-consecutive offsets in {path.name}: {out_of_order}"
