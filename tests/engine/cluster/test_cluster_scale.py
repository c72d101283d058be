"""Brokers sharing processes: ``kraftd cluster up --brokers-per-process`` and ``kraftd bench controller --sim-brokers``.

The real CLI in subprocesses on a real local cluster (1 controller, 12 brokers, 6 to a process),
shared by the module and taken down by its last test; every process it ever ran is SIGKILLed at
the end, failure or not (tests.engine.cluster.test_cluster_tool.Cluster). The bench runs once, tiny, with its
temporary directory under the test's, so whatever it leaves running is found and killed.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cluster.layout import default_brokers_per_process
from engine.cluster.processes import SOURCE_ROOT
from tests.engine.cluster.test_cluster_tool import Cluster, ours

# processes, sockets and timers of their own: out of the fast tier
pytestmark = pytest.mark.slow

BROKERS, PER_PROCESS = 12, 6
BENCH_TIMEOUT_S = 180.0  # a safety net


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Cluster:
    c = Cluster(tmp_path_factory.mktemp("scale") / "state")
    try:
        c.up_output = c.ok("up", "--controllers", "1", "--brokers", str(BROKERS), "--brokers-per-process",
                           str(PER_PROCESS), "--heartbeat-interval-ms", "500", "--session-timeout-ms", "5000")
        yield c
    finally:
        c.kill_all()


def groups(cluster: Cluster) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for node in cluster.registry()["nodes"]:
        if node["process"] is not None:
            found.setdefault(node["process"], []).append(node["name"])
    return found


def test_the_default_grouping():
    assert [default_brokers_per_process(n) for n in (1, 10, 11, 200, 201, 1000, 1001)] == \
        [1, 1, 11, 200, 101, 200, 167]


def test_brokers_run_six_to_a_process(cluster):
    assert groups(cluster) == {"brokers-1": [f"broker-{i}" for i in range(1, 7)],
                               "brokers-2": [f"broker-{i}" for i in range(7, 13)]}
    pids = cluster.pids()
    assert len({pids[f"broker-{i}"] for i in range(1, 7)}) == 1
    assert len({pids[f"broker-{i}"] for i in range(7, 13)}) == 1
    assert pids["broker-1"] != pids["broker-7"] != pids["controller-1"]
    logs = sorted(p.name for p in (cluster.root / "logs").glob("*.log"))
    assert logs == ["brokers-1.log", "brokers-2.log", "controller-1.log"]
    rows = cluster.status()
    assert all(rows[f"broker-{i}"]["STATE"] == "unfenced" and rows[f"broker-{i}"]["PID"] == str(pids[f"broker-{i}"])
               for i in range(1, BROKERS + 1))


def test_kill_of_one_broker_kills_its_group_and_start_brings_it_back(cluster):
    before = cluster.pids()
    out = cluster.ok("kill", "broker-3").strip()
    assert out == f"broker-3: killed, with its whole process brokers-1 (broker-1 .. broker-6) (pid {before['broker-3']})"
    assert not ours(before["broker-3"], cluster.root)
    rows = cluster.status()
    assert [rows[f"broker-{i}"]["PROCESS"] for i in range(1, 13)] == ["down"] * 6 + ["running"] * 6
    # at once, while the old registrations still look unfenced: `start` waits for the new ones
    out = cluster.ok("start", "broker-5").strip()
    after = cluster.pids()
    assert out == f"broker-5: started, with its whole process brokers-1 (broker-1 .. broker-6) (pid {after['broker-5']})"
    assert len({after[f"broker-{i}"] for i in range(1, 7)}) == 1 and after["broker-7"] == before["broker-7"]
    rows = cluster.status()
    assert all(rows[f"broker-{i}"]["STATE"] == "unfenced" for i in range(1, BROKERS + 1))


def test_pause_says_it_pauses_the_whole_process(cluster):
    pid = cluster.pids()["broker-8"]
    assert cluster.ok("pause", "broker-8").strip() == \
        f"broker-8: paused, with its whole process brokers-2 (broker-7 .. broker-12) (pid {pid})"
    assert {r["PROCESS"] for n, r in cluster.status().items() if n in {f"broker-{i}" for i in range(7, 13)}} == \
        {"paused"}
    assert cluster.ok("resume", "broker-12").strip().startswith("broker-12: resumed, with its whole process brokers-2")


def test_chaos_never_takes_down_a_group_bigger_than_its_budget(cluster):
    # a topic of replication factor 3: at most 2 brokers down at once, less than a group of 6,
    # so chaos may only fail disks and delay fetches, one broker at a time
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.up_output.splitlines()[-2].split("=", 1)[1].split(","))
    try:
        admin.create_topics([NewTopic("three", num_partitions=2, replication_factor=3)])
    finally:
        admin.close()
    out = cluster.ok("chaos", "--seconds", "3", "--interval-ms", "300", "--seed", "3").splitlines()
    actions = [line.split()[1] for line in out if re.match(r" *\d+\.\ds  ", line)]
    assert actions and not {"kill", "stop", "pause"} & set(actions)
    assert out[-1].startswith("controllers' images identical")


def test_down_stops_each_process_once(cluster):
    pids = cluster.pids()
    log_path = cluster.root / "logs" / "brokers-2.log"
    before = len(log_path.read_text())  # what earlier tests' restarts logged is not this down's
    out = cluster.ok("down").splitlines()
    assert out == ["brokers-1 (broker-1 .. broker-6): stopped", "brokers-2 (broker-7 .. broker-12): stopped",
                   "controller-1: stopped"]
    assert not [pid for pid in pids.values() if ours(pid, cluster.root)]
    log = log_path.read_text()[before:]
    assert log.count("starting a controlled shutdown") == PER_PROCESS  # one SIGTERM: no second one cut it short


def _kill_processes_under(root: Path) -> None:
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and ours(int(proc.name), root):
            try:
                os.kill(int(proc.name), signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_bench_with_simulated_broker_processes(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # its state directory, so its processes are found below
    try:
        result = subprocess.run(
            [sys.executable, "-m", "engine.tools.cli", "bench", "controller", "--sim-brokers", "4",
             "--brokers-per-process", "2", "--sim-controllers", "1", "--sim-seconds", "3",
             "--heartbeat-interval-ms", "500"],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, cwd=SOURCE_ROOT, timeout=BENCH_TIMEOUT_S,
            env=env)
    finally:
        _kill_processes_under(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "summary: 4 brokers in 2 processes, 1 controllers: STABLE for 3 s" in out
    assert re.search(r"heartbeats \(broker side, send to answer\): \d+ answered of ~\d+ due; "
                     r"p50 [\d.]+ / p99 [\d.]+ / max [\d.]+ ms", out), out
    assert re.search(r"controller-1 \(active\): CPU \d+ % of a core, RSS \d+ MB", out), out
    assert "command: kraftd bench controller --sim-brokers 4 --brokers-per-process 2" in out
    assert not list(tmp_path.glob("kraftd-bench-sim-brokers-*"))  # its state removed
