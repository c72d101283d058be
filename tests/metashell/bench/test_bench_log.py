"""``metashell bench log`` at a tiny size: the generated archive reads back as what was written (the
index's items for X's retention.ms are the ConfigRecords the log holds for it), and the bench
prints every figure. Never a timing asserted (the figures are in docs/performance.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine.storage.log_reader import read_log_dir
from metashell.bench.log_history import write_big_history
from metashell.history.history_index import IndexHistory
from metashell.history.query import path_query

ROOT = Path(__file__).resolve().parents[3]


def test_the_generated_archive_indexes_every_change_of_x(tmp_path: Path) -> None:
    archive = write_big_history(tmp_path / "archive", 3_000, topics=20, partitions=2, seed=7)
    written = [(e.offset, e.record.value) for e in read_log_dir(archive, use_snapshot=False)
               if e.record.type_name == "CONFIG_RECORD" and e.record.resource_name == "X"]
    history = IndexHistory(archive)
    items = list(history.items(path_query("/configs/TOPIC/X/retention.ms")))
    assert [(i.offset, i.new) for i in items] == written and len(written) > 1
    assert history.runs == ((-1, 2_999),) and history.gaps == ()
    changes = list(history.items(path_query("/topics/X/0")))
    assert changes[0].event == "created" and all(i.event == "changed" for i in changes[1:])
    assert {f for i in changes[1:] for f in i.fields} <= {"isr", "leader", "leaderEpoch", "partitionEpoch"}


@pytest.mark.slow  # processes: the cold runs start the shell each
def test_the_bench_prints_every_step(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "metashell.cli", "bench", "log", "--records", "20000", "--dir",
                           str(tmp_path / "a"), "--tail-records", "5000"], capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    steps = [re.sub(r"\s+[\d.]+ s.*", "", line).strip() for line in done.stdout.splitlines()[1:]]
    assert steps == ["archive written (segments, a snapshot at the end)", "history index built from scratch",
                     "cold  log /configs/TOPIC/X/retention.ms", "cold  log /configs/TOPIC/X/retention.ms -n 10",
                     "cold  log /topics/X/0", "cold  log /topics/X/0 -n 10", "cold  log /topics/X/0 --since 19800",
                     "warm  log /configs/TOPIC/X/retention.ms", "warm  log /configs/TOPIC/X/retention.ms -n 10",
                     "warm  log /topics/X/0", "warm  log /topics/X/0 -n 10", "warm  log /topics/X/0 --since 19800",
                     "recorder's index upkeep (5,000 records, 1 updates)",
                     "cold  log /configs/TOPIC/X/retention.ms -n 10 (after the recorder)"]
    assert "rebuilt" not in done.stdout  # the recorder's upkeep left the index current for log


@pytest.mark.kafka
def test_kafkas_yardstick_finds_the_same_config_records(kafka_dist, tmp_path: Path) -> None:
    """The bench's Kafka side (kafka-dump-log | grep over the archive's segments) counts exactly the
    ConfigRecords of X's retention.ms the archive holds: the question asked of both sides is the same."""
    from metashell.bench.log_kafka import kafka_config_history

    archive = write_big_history(tmp_path / "archive", 3_000, topics=20, partitions=2, seed=7)
    written = [e.offset for e in read_log_dir(archive, use_snapshot=False)
               if e.record.type_name == "CONFIG_RECORD" and e.record.resource_name == "X"
               and e.record.name == "retention.ms"]
    answer = kafka_config_history(kafka_dist.libs, archive, "X", "retention.ms")
    assert answer.version == kafka_dist.version and answer.lines == len(written) > 1
