"""``kraftd bench peer`` runs every side and prints its table; no timing is asserted.

The Kafka runs use tiny files (300 partitions) and one counted round, so the whole module costs
a few JVM starts per Kafka version.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from engine.tools.cli import run

NUMBER = r"[0-9][0-9,]*(?:\.[0-9]+)?"
ROWS = ["first answer, wall", "first answer, CPU", "first answer, peak memory", "a partition's cat, wall",
        "whole-image answer, wall", "whole-image answer, CPU", "whole-image answer, peak memory",
        "dump-log, records/s (higher is better)", "dump-log, CPU", "dump-log, peak memory"]


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
@pytest.mark.slow
def test_runs_every_side_and_prints_the_table(peer_dist, tmp_path):
    kafka_dist = peer_dist
    code, lines, errors = _kraftd("bench", "peer", "--kafka-libs", str(kafka_dist.libs), "--partitions", "300",
                                  "--log-partitions", "300", "--rounds", "1", "--kafka-heap", "256M",
                                  "--dir", str(tmp_path))
    assert (code, errors) == (0, [])
    kafka = f"Kafka {kafka_dist.version}"
    assert lines[2].startswith(f"{kafka} ({kafka_dist.libs})")
    commands = [line for line in lines if line.startswith("$ ")]
    assert len(commands) == 4
    assert commands[0].endswith("-m metashell.cli --snapshot " + str(next(tmp_path.glob("kafka4-snapshot-300/*"
                                                                                        ".checkpoint"))))
    assert "org.apache.kafka.shell.MetadataShell --snapshot" in commands[1]
    assert "DumpLogSegments --cluster-metadata-decoder --files" in commands[3]
    assert all("-XX:+UseG1GC" in c for c in commands[1::2]) and "-Xmx256M" in commands[3]
    # Kafka's JVMs keep their temporary files (MetadataShell<N>) in the bench's own directory, gone after it
    tmpdirs = {re.search(r"-Djava\.io\.tmpdir=(\S+)", c).group(1) for c in commands[1::2]}
    assert len(tmpdirs) == 1 and not Path(tmpdirs.pop()).exists()
    # a warm-up and one counted run of each side, A then B; every answer right (or asked again)
    shell_runs = [line.split(":")[0].strip() for line in lines if re.match(r"  (warm-up|round 1) .*first answer", line)]
    assert shell_runs == ["warm-up metashell", f"warm-up {kafka}", "round 1 metashell", f"round 1 {kafka}"]
    assert "dump-log, 303 records" in "\n".join(lines)  # 300 partitions and 3 topics
    assert f"  metashell and {kafka} printed every record; their outputs are identical" in lines
    assert any(line.startswith("attach to a quorum of 300 partitions: not asked (--attach runs") for line in lines)
    head = lines.index(f"| figure (median (min - max)) | metashell | {kafka} | ratio |")
    rows = [re.fullmatch(rf"\| (.*) \| {NUMBER}( s| MiB)? \| {NUMBER}( s| MiB)? \| {NUMBER} \|", line)
            for line in lines[head + 2:]]
    assert [r and r.group(1) for r in rows] == ROWS


@pytest.mark.kafka
@pytest.mark.slow
def test_a_failing_kafka_side_is_one_line(peer_dist, tmp_path):
    kafka_dist = peer_dist
    code, _, errors = _kraftd("bench", "peer", "--kafka-libs", str(kafka_dist.libs), "--partitions", "100",
                              "--log-partitions", "100", "--rounds", "1", "--kafka-heap", "lots",
                              "--dir", str(tmp_path))
    assert code == 1
    assert len(errors) == 1 and errors[0].startswith(f"kraftd: Kafka {kafka_dist.version} exited before answering")


def test_libs_without_kafka_is_one_line(tmp_path):
    code, lines, errors = _kraftd("bench", "peer", "--kafka-libs", str(tmp_path), "--rounds", "1")
    assert (code, lines) == (1, [])
    assert errors == [f"kraftd: {tmp_path}: no Kafka jars here (need kafka-clients-*.jar and kafka-shell-*.jar)"]


@pytest.mark.kafka
def test_the_same_version_twice_is_one_line(peer_dist, tmp_path):
    libs = str(peer_dist.libs)
    code, lines, errors = _kraftd("bench", "peer", "--kafka-libs", libs, "--kafka-libs", libs, "--dir", str(tmp_path))
    assert (code, lines) == (1, [])
    assert errors == ["kraftd: --kafka-libs: the same Kafka version twice"]
