"""``kraftd bench peer`` runs both sides and prints its figures; no timing is asserted.

The Kafka runs use tiny files (300 partitions) and one counted round, so the whole module costs
a few JVM starts per Kafka version.
"""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from engine.bench.peer import bench_files
from engine.tools.cli import run

NUMBER = r"[0-9][0-9,]*(?:\.[0-9]+)?"


def _kraftd(*argv: str) -> tuple[int, list[str], list[str]]:
    out = io.StringIO()
    errors: list[str] = []
    with contextlib.redirect_stdout(out):
        code = run(list(argv), err=errors.append)
    return code, out.getvalue().splitlines(), errors


@pytest.fixture
def peer_dist(kafka_dist):
    """A release whose jars hold its own kafka-shell (``bench peer`` runs Kafka's jars as they are):
    this one, or, while its shell is not on Maven Central yet, the release whose shell it runs."""
    if kafka_dist.shell_release is None:
        return kafka_dist
    from kafka_peer.distribution import fetch

    return fetch(kafka_dist.shell_release)


@pytest.mark.kafka
def test_runs_both_sides_and_prints_ratios(peer_dist, tmp_path):
    kafka_dist = peer_dist
    code, lines, errors = _kraftd("bench", "peer", "--kafka-libs", str(kafka_dist.libs), "--partitions", "300",
                                  "--log-partitions", "300", "--rounds", "1", "--kafka-heap", "256M",
                                  "--dir", str(tmp_path))
    assert (code, errors) == (0, [])
    kafka = f"Kafka {kafka_dist.version}"
    assert lines[2].startswith(f"{kafka} ({kafka_dist.libs})")
    commands = [line for line in lines if line.startswith("$ ")]
    assert len(commands) == 4
    assert "org.apache.kafka.shell.MetadataShell --snapshot" in commands[1]
    assert "DumpLogSegments --cluster-metadata-decoder --files" in commands[3]
    assert all("-XX:+UseG1GC" in c for c in commands[1::2]) and "-Xmx256M" in commands[3]
    # one counted run of each side in each pair, A then B
    rounds = [line.split(":")[0].strip() for line in lines if line.lstrip().startswith("round ")]
    assert rounds == ["round 1 metashell", f"round 1 {kafka}"] * 2
    assert "dump-log, 303 records" in "\n".join(lines)  # 300 partitions and 3 topics
    assert "  both printed every record; their outputs are identical" in lines
    ratios = [re.fullmatch(rf"ratio (.*) metashell/Kafka: {NUMBER} \(pair by pair {NUMBER} - {NUMBER}; .*\)", line)
              for line in lines[-5:]]
    assert [r and r.group(1) for r in ratios] == ["first answer seconds", "first answer cpu seconds",
                                                   "first answer peak memory", "dump-log records/s",
                                                   "dump-log cpu seconds"]
    assert any(re.fullmatch(rf"  {kafka} median \(-Xmx256M\): {NUMBER} records/s, cpu .*", ln) for ln in lines)


@pytest.mark.kafka
def test_a_failing_kafka_side_is_one_line(peer_dist, tmp_path):
    kafka_dist = peer_dist
    code, _, errors = _kraftd("bench", "peer", "--kafka-libs", str(kafka_dist.libs), "--partitions", "100",
                              "--log-partitions", "100", "--rounds", "1", "--kafka-heap", "lots",
                              "--dir", str(tmp_path))
    assert code == 1
    assert len(errors) == 1 and errors[0].startswith("kraftd: ") and "exited 1" in errors[0]


def test_libs_without_kafka_is_one_line(tmp_path):
    code, lines, errors = _kraftd("bench", "peer", "--kafka-libs", str(tmp_path), "--rounds", "1")
    assert (code, lines) == (1, [])
    assert errors == [f"kraftd: {tmp_path}: no Kafka jars here (need kafka-clients-*.jar and kafka-shell-*.jar)"]


def test_generated_files_are_kept_and_reused(tmp_path):
    said: list[str] = []
    snapshot, segments, records = bench_files(tmp_path, 250, 120, said.append)
    assert len(said) == 2 and records == 120 + 2
    stamps = [p.stat().st_mtime_ns for p in (snapshot, *segments)]
    again: list[str] = []
    assert bench_files(tmp_path, 250, 120, again.append) == (snapshot, segments, records)
    assert again == [] and [p.stat().st_mtime_ns for p in (snapshot, *segments)] == stamps
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log-120", "snapshot-250"]  # no partial directories left
