"""The recorder keeps the history index of ``log`` up to date, against a running kraftd cluster
(one controller, one broker), as processes: after recording, ``log`` answers from the index the
recorder left, without rebuilding it (what the index reports, not a time), and that index is
the one a build from scratch over the same archive gives. A restart on an archive without an
index says so in one line and builds it."""

from __future__ import annotations

import shutil
import signal
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from metashell.history.history_index import INDEX_DIR, index_state
from metashell.record.manifest import read_manifest
from tests.live_cluster import CLIENT_TIMEOUT_S, bootstrap, running_cluster
from tests.metashell.record.index_reading import index_everything
from tests.metashell.record.recorder_process import (SAFETY_NET_S, RecorderProcess, log_end_offset, no_traceback,
                                                     run_metashell)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("recindex") / "cluster", "--controllers", "1", "--brokers", "1")


def _changes(cluster, value: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(cluster, servers=True).split(","),
                             request_timeout_ms=int(CLIENT_TIMEOUT_S * 1000))
    try:
        if "orders" not in admin.list_topics():
            admin.create_topics([NewTopic("orders", 2, 1)])
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "orders", configs={"retention.ms": value})])
    finally:
        admin.close()


def _record_changes(cluster, archive: Path, *values: str) -> RecorderProcess:
    recorder = RecorderProcess(bootstrap(cluster), archive, "--index-interval-ms", "200",
                               "--snapshot-every-records", "50")
    recorder.wait_line(r"following leader")
    for value in values:
        _changes(cluster, value)
    leader_dir = cluster.root / "controller-1" / "metadata" / "__cluster_metadata-0"
    recorder.wait_held(log_end_offset(leader_dir) - 1)
    return recorder


def _wait_index_reaches(archive: Path, offset: int) -> None:
    """Until the recorder's index holds every item through ``offset`` (its own updates, while it runs)."""
    deadline = time.monotonic() + SAFETY_NET_S
    while (index_state(archive).settled or -1) < offset:
        assert time.monotonic() < deadline, f"the index never reached {offset}: {index_state(archive)}"
        time.sleep(0.1)


def test_log_answers_from_the_index_the_recorder_keeps(cluster, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    recorder = _record_changes(cluster, archive, "3600000", "7200000")
    try:
        _wait_index_reaches(archive, read_manifest(archive).last_offset - 1)  # while it records
        assert recorder.stop(signal.SIGTERM) == 0
    finally:
        recorder.kill()
    no_traceback(recorder.lines)
    state = index_state(archive)
    assert (state.state, state.settled) == ("current", read_manifest(archive).last_offset)  # the close's update
    done = run_metashell("--log-dir", str(archive), "-c", "log /configs/TOPIC/orders/retention.ms")
    assert done.returncode == 0 and "rebuilding" not in done.stderr, done.stderr
    assert "3600000" in done.stdout and "7200000" in done.stdout
    assert index_state(archive) == state  # log read it as it was: neither rebuilt nor updated
    scratch = tmp_path / "scratch"
    shutil.copytree(archive, scratch, ignore=shutil.ignore_patterns(INDEX_DIR))
    assert index_everything(archive) == index_everything(scratch)


def test_a_recorder_restarted_without_an_index_builds_it(cluster, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    recorder = _record_changes(cluster, archive, "1000")
    recorder.stop(signal.SIGTERM)
    shutil.rmtree(archive / INDEX_DIR)
    recorder = _record_changes(cluster, archive, "2000")
    try:
        recorder.wait_line(r"^metashell record: history index: none yet; building it in the background$")
        assert recorder.stop(signal.SIGTERM) == 0
    finally:
        recorder.kill()
    no_traceback(recorder.lines)
    assert index_state(archive).state == "current"
    status = run_metashell("record", "--status", str(archive))
    assert f"history index: up to date (items through offset {read_manifest(archive).last_offset:,})" \
           in status.stdout.splitlines()
