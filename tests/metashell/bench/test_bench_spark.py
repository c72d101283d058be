"""``metashell bench spark`` at a tiny size: the fleet it generates is what it says (each cluster
its own id, every record there, each snapshot the state at its offset, reused when asked again),
and the bench's runs read the same rows the data source's way and the driver's way. Never a
timing asserted (the figures go in docs/performance.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.image.image_writer import image_records
from engine.image.metadata_delta import replay_entries
from engine.image.metadata_loader import load_snapshot
from engine.storage.log_reader import read_log_dir
from engine.storage.meta_properties import read_meta_properties
from metashell.bench.spark_logs import FleetSpec, make_fleet

ROOT = Path(__file__).resolve().parents[3]
TINY = FleetSpec(clusters=2, records=3_000, snapshot_every=1_000, segment_bytes=32 << 10, topics=10)


def test_the_fleet_is_two_clusters_with_snapshots_at_their_offsets(tmp_path: Path) -> None:
    nodes = make_fleet(tmp_path / "fleet", TINY)
    assert [read_meta_properties(n).cluster_id for n in nodes] == ["bench-cluster-000", "bench-cluster-001"]
    log = nodes[1] / "__cluster_metadata-0"
    assert [e.offset for e in read_log_dir(nodes[1], use_snapshot=False)] == list(range(3_000))
    assert len(list(log.glob("*.log"))) > 2  # several segments: several records tasks
    snapshots = sorted(log.glob("*.checkpoint"))
    assert [int(s.name.split("-")[0]) for s in snapshots] == [1_000, 2_000, 3_000]
    entries = list(read_log_dir(nodes[1], use_snapshot=False))
    for snapshot in snapshots:
        end = int(snapshot.name.split("-")[0])
        replayed = replay_entries(entries[:end])  # the log alone, never a snapshot
        # the same records, whatever order each image keeps its topics in
        assert sorted(map(repr, image_records(load_snapshot(snapshot)[0]))) == sorted(map(repr, image_records(replayed)))


def test_the_fleet_is_reused_only_when_made_the_same_way(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    segment = make_fleet(root, TINY)[0] / "__cluster_metadata-0" / "00000000000000000000.log"
    made = segment.stat().st_mtime_ns
    said: list[str] = []
    make_fleet(root, TINY, progress=said.append)
    assert segment.stat().st_mtime_ns == made and said == [f"reused 2 clusters of 3,000 records in {root}"]
    nodes = make_fleet(root, FleetSpec(3, 2_000, 500, 32 << 10, topics=10))
    assert len(nodes) == 3 and [e.offset for e in read_log_dir(nodes[2], use_snapshot=False)][-1] == 1_999


@pytest.mark.slow  # a Spark application (a JVM) a run
def test_the_bench_reads_the_same_rows_both_ways(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "metashell.cli", "bench", "spark", "--clusters", "2", "--records",
                           "3000", "--snapshot-every", "1000", "--topics", "10", "--segment-mb", "1", "--dir",
                           str(tmp_path / "fleet"), "--no-standalone", "--local-masters", "local[2]",
                           "--driver-clusters", "2"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    table = done.stdout[done.stdout.index("run "):].splitlines()[1:]
    # run (30 characters), table, clusters, rows, seconds, records/s, x local[1]
    rows = {(line[:30].strip(), line[30:].split()[0]): int(line[30:].split()[2].replace(",", "")) for line in table}
    assert rows[("source local[2]", "records")] == rows[("driver export local[2]", "records")] == 6_000
    assert rows[("source local[2]", "partition_changes")] == rows[("driver export local[2]", "partition_changes")] > 0
