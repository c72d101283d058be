"""The kraft stream beside other processes of a kraftd cluster's life:

- a query SIGKILLed with its Spark (the driver's process group: its JVM and Python workers, a lost
  machine) while the cluster changes, and restarted from its checkpoint in another process;
- a query on the archive a ``metashell record`` process is writing as it reads.

Each time the Parquet rows are the leader's log, record for record, every offset once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.live_cluster import bootstrap, running_cluster
from tests.metashell.record.recorder_process import RecorderProcess, log_end_offset
from tests.metashell.spark.stream_cluster import change, compare, leader_dir, topics_of
from tests.metashell.spark.stream_fixtures import register, start_query, wait_stream

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("stream-kill") / "cluster", "--controllers", "3",
                               "--brokers", "1")


def _job(options: dict, out: Path, checkpoint: Path, stop_at: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "tests.metashell.spark.stream_job", json.dumps(options),
                             str(out), str(checkpoint), str(stop_at)], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)


def _read_until(proc: subprocess.Popen, done) -> list[str]:
    lines = []
    for line in proc.stdout:
        lines.append(line.rstrip())
        if done(line):
            return lines
    raise AssertionError("the job ended first:\n" + "\n".join(lines[-40:]))


def test_a_sigkilled_query_restarted_from_its_checkpoint_gives_every_record_once(spark, cluster, tmp_path):
    options = {"bootstrap.controllers": bootstrap(cluster), "kafka.request.timeout.ms": "5000"}
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    first = _job(options, out, checkpoint, -1)
    try:
        _read_until(first, lambda line: line.startswith("end ") and int(line.split()[1]) > 0)
        change(cluster, "before-kill")
        target = log_end_offset(leader_dir(cluster))
        _read_until(first, lambda line: line.startswith("end ") and int(line.split()[1]) >= target)
        change(cluster, "at-kill")  # the kill lands while this is being streamed
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the query's driver, its JVM and workers: a lost machine
        first.wait(60)
    change(cluster, "after-kill")
    second = _job(options, out, checkpoint, log_end_offset(leader_dir(cluster)))
    try:
        lines = _read_until(second, lambda line: line.startswith("stopped"))
        assert second.wait(120) == 0, "\n".join(lines)
    finally:
        if second.poll() is None:
            os.killpg(second.pid, signal.SIGKILL)
            second.wait(60)
    rows = compare(spark, cluster, out)
    assert {"before-kill", "at-kill", "after-kill"} <= topics_of(rows)


def test_the_archive_a_recorder_is_writing_streams_every_record_once(spark, cluster, tmp_path):
    archive, out = tmp_path / "archive", tmp_path / "out"
    recorder = RecorderProcess(bootstrap(cluster), archive)
    try:
        recorder.wait_held(0)  # the archive exists, with its cluster id
        fmt = register(spark)
        query = start_query(spark, spark.readStream.format(fmt).load(str(archive)), out, tmp_path / "checkpoint",
                            "recorded")
        try:
            for topic in ("recorded-1", "recorded-2"):
                change(cluster, topic)
                held = recorder.wait_held(log_end_offset(leader_dir(cluster)) - 1).last_offset
                wait_stream(query, held + 1)
        finally:
            query.stop()
    finally:
        recorder.stop()
    rows = compare(spark, cluster, out)
    assert {"recorded-1", "recorded-2"} <= topics_of(rows)
