"""``kraftd bench ...``: throughput figures, measured, never asserted in tests."""

from __future__ import annotations

import random
from collections import deque
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from engine.records import metadata_records as m
from engine.records.kio_codec import i32
from engine.storage.log_reader import read_log_dir
from engine.storage.metadata_log import MetadataLog
from engine.records.metadata_record_serde import MetadataRecord


@dataclass(frozen=True, slots=True)
class DecodeFigures:
    records: int
    bytes_read: int
    seconds: float

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds if self.seconds else float("inf")


def partition_heavy_records(partitions: int, brokers: int = 6, seed: int = 7,
                            directories: bool = False) -> list[MetadataRecord]:
    """TopicRecords each followed by their PartitionRecords (v2), 100 per topic; empty ELR lists are
    left out (null), as Kafka writes them (see the corpus snapshots).

    ``directories`` gives every replica a log directory id, as Kafka 3.7+ assigns them (JBOD);
    otherwise they are all MIGRATING (the all-zero id, as a cluster that has not placed its replicas
    in directories writes them), which kio decodes as None without building UUID objects.
    """
    rng = random.Random(seed)
    dir_ids = [uuid.UUID(int=rng.getrandbits(128)) for _ in range(brokers + 1)]
    records = []
    for start in range(0, partitions, 100):
        topic_id = uuid.UUID(int=rng.getrandbits(128))
        records.append(m.TopicRecordV0(name=f"topic-{start // 100:05d}", topic_id=topic_id))
        for partition in range(min(100, partitions - start)):
            replicas = tuple(i32(b) for b in rng.sample(range(1, brokers + 1), 3))
            records.append(m.PartitionRecordV2(
                partition_id=i32(partition), topic_id=topic_id, replicas=replicas, isr=replicas,
                removing_replicas=(), adding_replicas=(), leader=replicas[0], leader_epoch=i32(rng.randrange(9)),
                partition_epoch=i32(rng.randrange(9)),
                directories=tuple(dir_ids[b] for b in replicas) if directories else (None, None, None),
                eligible_leader_replicas=None, last_known_elr=None))
    return records


def write_bench_log(directory: Path, partitions: int, records_per_batch: int = 100,
                    directories: bool = False) -> int:
    records = partition_heavy_records(partitions, directories=directories)
    with MetadataLog.create(directory, fsync_policy="never") as log:
        for start in range(0, len(records), records_per_batch):
            log.append(records[start:start + records_per_batch], epoch=1, timestamp_ms=1_700_000_000_000)
    return len(records)


def bench_decode(partitions: int = 200_000, rounds: int = 3, out: Callable[[str], None] = print,
                 directories: bool = False) -> DecodeFigures:
    """Decode a generated PartitionRecord-heavy log dir end to end (files, CRC, batches, records)."""
    with tempfile.TemporaryDirectory(prefix="kraftd-bench-") as tmp:
        expected = write_bench_log(Path(tmp), partitions, directories=directories)
        size = sum(p.stat().st_size for p in Path(tmp).rglob("*.log"))
        out(f"generated {expected} records ({size / 1e6:.1f} MB) in {tmp}")
        best = None
        for round_number in range(1, rounds + 1):
            started = time.perf_counter()
            # consume in C (deque), so the figure is the reader's, not a Python loop's
            last = deque(enumerate(read_log_dir(Path(tmp)), 1), maxlen=1)
            elapsed = time.perf_counter() - started
            count = last[0][0] if last else 0
            if count != expected:
                raise RuntimeError(f"decoded {count} records, expected {expected}")
            figures = DecodeFigures(count, size, elapsed)
            out(f"round {round_number}: {count} records in {elapsed:.3f} s = "
                f"{figures.records_per_second:,.0f} records/s")
            if best is None or figures.seconds < best.seconds:
                best = figures
    out(f"decode: {best.records_per_second:,.0f} records/s "
        f"({best.bytes_read / best.seconds / 1e6:.1f} MB/s), best of {rounds}")
    return best


def bench_replay(topics: int = 10_000, partitions_per_topic: int = 100, out: Callable[[str], None] = print) -> None:
    """Load a generated snapshot of topics x partitions: replay rate, peak memory, and the time
    a fresh ``metashell --snapshot`` process takes to answer its first command."""
    import subprocess
    import sys

    from engine.records.kio_codec import i16
    from engine.storage.snapshot_writer import SnapshotId, write_snapshot

    partitions = topics * partitions_per_topic
    with tempfile.TemporaryDirectory(prefix="kraftd-bench-") as tmp:
        started = time.perf_counter()
        records = [m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27))]
        records += partition_heavy_records(partitions)
        path = write_snapshot(Path(tmp), SnapshotId(len(records), 1), records, last_contained_log_timestamp_ms=0,
                              now_ms=0, fsync=False)
        count = len(records)
        del records
        out(f"generated a snapshot of {topics} topics x {partitions_per_topic} partitions: {count} records, "
            f"{path.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - started:.1f} s")
        probe = ("import resource, sys, time; from engine.image.metadata_loader import load_snapshot; "
                 # partition_count reads every topic: the lazily decoded partitions are in the time
                 "t = time.perf_counter(); image, info = load_snapshot(sys.argv[1]); n = image.partition_count; "
                 "print(time.perf_counter() - t, n, "
                 "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
        result = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=True)
        seconds, loaded, rss_kb = result.stdout.split()
        out(f"replay: {loaded} partitions in {float(seconds):.2f} s = {count / float(seconds):,.0f} records/s, "
            f"peak memory {int(rss_kb) / 1e6:.2f} GB")
        started = time.perf_counter()
        shell = subprocess.Popen([sys.executable, "-m", "metashell.cli", "--snapshot", str(path), "-c", "pwd"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first_line = shell.stdout.readline()  # the first answer: the shell is ready
        answered = time.perf_counter() - started
        shell.wait()
        if first_line.strip() == "/":
            out(f"first prompt (metashell --snapshot: start to first answer): {answered:.2f} s")
        else:
            out(f"first prompt: metashell did not answer ({shell.stderr.read().strip()[:100]})")

