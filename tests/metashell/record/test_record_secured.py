"""``metashell record --command-config`` reaches a secured quorum as the live shell does: a kraftd
cluster on SASL_PLAINTEXT (SCRAM-SHA-512, the controllers' StandardAuthorizer), the
client.properties ``kraftd cluster up`` wrote. A wrong password is refused in one line, at once."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from engine.storage.log_reader import list_log_dir
from tests.archive_compare import compare_archive
from tests.live_cluster import bootstrap, running_cluster
from tests.metashell.record.recorder_process import RecorderProcess, log_end_offset, no_traceback, run_metashell

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("record-sasl") / "cluster", "--controllers", "1",
                               "--brokers", "1", "--security", "sasl_plaintext")


def test_a_recorder_records_a_sasl_quorum_with_the_command_config(cluster, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    metadata = cluster.root / "controller-1" / "metadata" / "__cluster_metadata-0"
    recorder = RecorderProcess(bootstrap(cluster), archive, "--command-config", str(cluster.root / "client.properties"))
    try:
        recorder.wait_line(r"following leader")
        recorder.wait_held(log_end_offset(metadata) - 1)
        assert recorder.stop(signal.SIGTERM) == 0
    finally:
        recorder.kill()
    no_traceback(recorder.lines)
    assert compare_archive(archive, metadata) > 0
    assert list_log_dir(archive / "__cluster_metadata-0").segments


def test_a_wrong_password_is_refused_in_one_line(cluster, tmp_path: Path) -> None:
    config = (cluster.root / "client.properties").read_text()
    wrong = re.sub(r'password="[^"]*"', 'password="not-the-password"', config)
    assert wrong != config
    (tmp_path / "wrong.properties").write_text(wrong)
    done = run_metashell("record", "--bootstrap-controller", bootstrap(cluster), "--archive", str(tmp_path / "a"),
                         "--command-config", str(tmp_path / "wrong.properties"))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr
    assert "not-the-password" not in done.stderr
    assert re.search(r"authentication|SASL|password", lines[0], re.IGNORECASE), lines[0]
