"""The Kafka peer harness itself: which versions it picks, what happens without Java or Maven (a
skip in one sentence; a failure under CI=true), the node shapes it starts, and that a failing test
shows its nodes' logs and leaves no Kafka process behind."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kafka_peer import distribution
from engine.cluster.kafka_dist import version_key
from kafka_peer.distribution import PINNED_VERSION, SERVER, SHELL, TOOLS, Choice, choose, served_versions

# processes, sockets and timers of their own: out of the fast tier
pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parent
# the repository first: tests/engine and tests/metashell mirror the packages' names, and must not
# answer `import engine` in a pytest started from elsewhere
PYTHONPATH = os.pathsep.join((str(TESTS.parent), str(TESTS)))


def _pytest(test_file: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run pytest on one file with the harness's plugin, as the suite loads it."""
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "kafka_peer.fixtures",
                           "-p", "no:cacheprovider", str(test_file)],
                          cwd=test_file.parent, env={**env, "PYTHONPATH": PYTHONPATH},
                          capture_output=True, text=True, timeout=600)


def _probe_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "test_probe.py"
    path.write_text(textwrap.dedent(body))
    return path


PROBE = """
    import pytest

    pytestmark = pytest.mark.kafka

    def test_needs_kafka(kafka_dist):
        assert kafka_dist.libs.is_dir()
"""


@pytest.mark.parametrize("ci", ["", "true"])
def test_without_java_or_maven_the_kafka_tests_skip_in_one_sentence_or_fail_under_ci(tmp_path, ci):
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    env = {"PATH": str(empty_bin), "HOME": str(tmp_path), "CI": ci,
           "METASHELL_KAFKA_VERSIONS": PINNED_VERSION, "METASHELL_KAFKA_CACHE": str(tmp_path / "cache")}
    done = _pytest(_probe_file(tmp_path, PROBE), env)
    out = done.stdout + done.stderr
    sentence = "Apache Kafka tests cannot run: java and mvn not found on PATH"
    assert sentence in out, out[-2000:]
    if ci:
        assert done.returncode == 1 and "1 error" in out and "CI=true requires them" in out, out[-2000:]
    else:
        assert done.returncode == 0 and "1 skipped" in out, out[-2000:]


def test_the_newest_kafka_is_chosen_part_by_part():
    """Server and tools of the newest release serving both; the shell of the newest release serving
    one, no newer than that; a newer server alone is the server-only newest."""
    served = {SERVER: {"4.1.2", "4.3.1", "4.4.0"}, TOOLS: {"4.1.2", "4.3.1", "4.4.0"}, SHELL: {"4.1.2", "4.3.1"}}
    assert choose(served) == Choice("4.4.0", "4.3.1", None)  # Maven Central on 2026-11-27
    assert choose({**served, SHELL: served[SHELL] | {"4.4.0"}}) == Choice("4.4.0", "4.4.0", None)
    assert choose({**served, SERVER: served[SERVER] | {"4.5.0"}}) == Choice("4.4.0", "4.3.1", "4.5.0")
    assert choose({**served, TOOLS: {"4.1.2", "4.3.1"}}) == Choice("4.3.1", "4.3.1", "4.4.0")  # 2026-11-23
    assert choose({**served, SHELL: {"4.1.2", "4.5.0"}}) == Choice("4.4.0", "4.1.2", None)  # never a newer shell
    assert choose({**served, SHELL: set()}) == Choice("4.4.0", None, None)


@pytest.mark.kafka
def test_the_tested_versions_follow_maven_central(monkeypatch):
    monkeypatch.delenv("METASHELL_KAFKA_VERSIONS", raising=False)  # the choice itself, not a pinned list
    versions = distribution.tested_versions()
    assert versions[0] == PINNED_VERSION
    newest = versions[-1]
    assert version_key(newest) >= (4, 4, 0)
    full = served_versions(SERVER) & served_versions(TOOLS)
    assert newest == max(full, key=version_key)
    shell = distribution.shell_version(newest)
    assert shell in served_versions(SHELL) and version_key(shell) <= version_key(newest)
    assert (shell == newest) == (newest in served_versions(SHELL))  # its own, as soon as it is served


@pytest.mark.kafka
def test_the_newest_kafkas_metadata_shell_loads_its_newest_metadata_version(kafka_newest_server, tmp_path):
    """kafka-metadata-shell, of the newest release serving one, on the newest server's classes: it
    reads a directory at that release's newest metadata.version (4.4-IV2 for 4.4.0, which 4.3.1's
    own classes cannot), and says it is that release."""
    from engine.image.metadata_version import parse_release_version

    release = parse_release_version(".".join(kafka_newest_server.version.split(".")[:2])).name
    config = tmp_path / "server.properties"
    config.write_text("node.id=1\nprocess.roles=controller\ncontroller.quorum.voters=1@localhost:9093\n"
                      f"controller.listener.names=CONTROLLER\nlisteners=CONTROLLER://localhost:9093\nlog.dirs={tmp_path / 'd'}\n")
    subprocess.run([sys.executable, "-m", "engine.tools.cli", "storage", "format", "-t", "AAAAAAAAAAAAAAAAAAAAAA",
                    "-c", str(config), "--release-version", release], check=True, cwd=TESTS.parent,
                   env={**os.environ, "PYTHONPATH": PYTHONPATH}, capture_output=True, timeout=120)
    # Kafka's shell answers once its loader applied an offset above 0, and on a file this small now
    # and then never does (4.3.1's own shell on its own jars too: 2 starts in 6): a start is retried.
    for attempt in range(3):
        try:
            done = kafka_newest_server.run("kafka-metadata-shell", "--snapshot", str(tmp_path / "d" / "bootstrap.checkpoint"),
                                           input_text="cat /local/version\ncat /image/features/metadataVersion\nexit\n",
                                           timeout_s=60)
            break
        except subprocess.TimeoutExpired:
            if attempt == 2:
                raise
    assert f">> {kafka_newest_server.version}\n>> Optional[{release}]" in done.stdout, (
        f"kafka-metadata-shell {kafka_newest_server.shell_version}: {done.stdout[-500:]}")


@pytest.mark.kafka
def test_controller_only_and_broker_only_nodes_on_a_dynamic_quorum(kafka_quorum):
    """The shared quorum: three controller-only voters and one broker-only observer."""
    from engine.admin.quorum_client import default_send, find_leader

    _, info = find_leader(kafka_quorum.controller_addresses, default_send(5000))
    assert sorted(v.replica_id for v in info.voters) == [1, 2, 3]
    assert [o.replica_id for o in info.observers] == [4]
    assert [n.roles for n in kafka_quorum.nodes] == [("controller",)] * 3 + [("broker",)]


@pytest.mark.kafka
def test_a_failing_kafka_test_shows_its_node_logs_and_leaves_no_process(tmp_path, kafka_dist):
    probe = _probe_file(tmp_path, """
        import pytest
        from kafka_peer.cluster import KafkaCluster

        pytestmark = pytest.mark.kafka

        def test_fails_with_a_node_running(kafka_dist, tmp_path):
            KafkaCluster(kafka_dist, tmp_path / "c", voters=1, combined=True, quorum="static").start()
            assert False, "on purpose"
    """)
    env = {**os.environ, "METASHELL_KAFKA_VERSIONS": kafka_dist.version,
           "METASHELL_KAFKA_CACHE": str(kafka_dist.libs.parent.parent)}
    done = _pytest(probe, env)
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "on purpose" in out, out[-2000:]
    assert f"Kafka {kafka_dist.version} node 1 log" in out and "node 1| " in out, out[-3000:]
    assert pids_under(tmp_path) == [], "Kafka processes left running"


@pytest.mark.kafka
def test_a_test_run_killed_mid_test_takes_its_kafka_nodes_with_it(tmp_path, kafka_dist):
    """A CI timeout kills pytest where no cleanup of ours runs: the kernel kills the nodes."""
    import signal
    import time

    probe = _probe_file(tmp_path, """
        import time
        import pytest
        from kafka_peer.cluster import KafkaCluster

        pytestmark = pytest.mark.kafka

        def test_hangs_with_a_node_running(kafka_dist, tmp_path):
            KafkaCluster(kafka_dist, tmp_path / "c", voters=1, combined=True, quorum="static").start()
            print("NODE-READY", flush=True)
            time.sleep(3600)
    """)
    env = {**os.environ, "METASHELL_KAFKA_VERSIONS": kafka_dist.version, "PYTHONPATH": PYTHONPATH,
           "METASHELL_KAFKA_CACHE": str(kafka_dist.libs.parent.parent)}
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-s", "-p", "kafka_peer.fixtures",
                            "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "base"), str(probe)],
                           cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in run.stdout:  # a bound against a hang: the node's start fails the probe on its own
            if "NODE-READY" in line:
                break
        assert pids_under(tmp_path / "base"), "the probe's node never ran"
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=60)
        deadline = time.monotonic() + 30
        while pids_under(tmp_path / "base") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pids_under(tmp_path / "base") == []
    finally:
        run.kill()


def pids_under(path: Path) -> list[str]:
    return subprocess.run(["pgrep", "-f", str(path)], capture_output=True, text=True).stdout.split()
