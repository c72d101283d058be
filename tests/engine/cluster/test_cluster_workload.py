"""``kraftd cluster workload`` on a real local cluster: what it prints is what the cluster's
image then holds (topics, configs, leaders, reassignments), a cluster that stops answering is a
line and the workload goes on, Ctrl-C and SIGTERM end it with a summary; and ``up`` on a running
cluster names a --base-port it ignores.

One cluster (3 controllers, 4 brokers) for the module; every process SIGKILLed at the end."""

from __future__ import annotations

import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.cluster.layout import load_layout
from engine.cluster.processes import SOURCE_ROOT
from engine.cluster.view import observe
from engine.common.config_resource import topic_resource
from tests.engine.cluster.test_cluster_tool import KRAFTD_TIMEOUT_S, Cluster
from tests.engine.server.test_controller_processes import poll

pytestmark = pytest.mark.slow

STEP = re.compile(r"^\s*(\d+\.\d)s  (\w+)\s+(\S+)\s+(.*)$")
SAFETY_S = 120.0  # a safety net for waits on lines, never a performance claim


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Cluster:
    c = Cluster(tmp_path_factory.mktemp("workload") / "state")
    try:
        c.up_output = c.ok("up", "--brokers", "4", "--racks", "0", "--heartbeat-interval-ms", "500",
                           "--session-timeout-ms", "5000")
        yield c
    finally:
        c.kill_all()


def steps(output: str) -> list[tuple[str, str, str]]:
    return [m.group(2, 3, 4) for m in map(STEP.match, output.splitlines()) if m]


def image(cluster: Cluster):
    return observe(load_layout(cluster.root)).image


def expected_state(lines: list[tuple[str, str, str]]) -> dict:
    """What the cluster holds after these steps, by the lines alone: each topic's partition
    count and configs, each partition's replicas (when the last step on it said them)."""
    topics: dict[str, int] = {}
    configs: dict[str, dict[str, str]] = {}
    replicas: dict[tuple[str, int], tuple[int, ...] | None] = {}
    leaders: dict[tuple[str, int], int] = {}
    for kind, target, detail in lines:
        if "refused" in detail or "failed" in detail:
            continue
        if kind == "create":
            topics[target] = int(detail.split(" partition")[0])
            configs[target] = {}
        elif kind == "delete":
            topics.pop(target)
            replicas = {k: v for k, v in replicas.items() if k[0] != target}
            leaders = {k: v for k, v in leaders.items() if k[0] != target}
        elif kind == "partitions":
            topics[target] = int(detail.split(" -> ")[1].split()[0])
        elif kind == "config":
            key, _, value = detail.partition("=")
            configs[target][key] = value
        else:
            name, _, index = target.rpartition("-")
            key = (name, int(index))
            if kind == "reassign":
                replicas[key] = tuple(int(r) for r in re.search(r"-> \[([\d,]+)\]", detail).group(1).split(","))
                leaders.pop(key, None)
            else:  # leader: the order changed (the new leader first), the set did not
                leader = int(detail.split(" -> ")[1])
                leaders[key] = leader
                if key in replicas:
                    replicas[key] = (leader, *(r for r in replicas[key] if r != leader))
    return {"topics": topics, "configs": configs, "replicas": replicas, "leaders": leaders}


def image_holds(cluster: Cluster, want: dict) -> bool:
    """Whether the committed image holds what ``expected_state`` says: the workload's topics and
    no other, their partition counts and configs, the replicas of the partitions reassigned (a
    reassignment completes once the new replicas join the ISR: then replicas == target) and the
    leaders moved."""
    img = image(cluster)
    if img is None:
        return False
    if {n for n in img.topics.by_name if n.startswith("workload-")} != set(want["topics"]):
        return False
    for name, count in want["topics"].items():
        topic = img.topics.topic(name)
        if len(topic.partitions) != count:
            return False
        held = img.configs.config_map(topic_resource(name))
        if any(held.get(k) != v for k, v in want["configs"][name].items()):
            return False
    for (name, index), target in want["replicas"].items():
        if tuple(img.topics.topic(name).partitions[index].replicas) != target:
            return False
    for (name, index), leader in want["leaders"].items():
        partition = img.topics.topic(name).partitions[index]
        if partition.replicas[0] != leader or partition.leader != leader:
            return False
    return True


def test_what_the_workload_prints_is_what_the_cluster_holds(cluster):
    result = cluster.run("workload", "--steps", "40", "--seed", "11", "--interval-ms", "150")
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[0].startswith("workload on bootstrap.servers=127.0.0.1:") and "seed 11" in out[0]
    assert re.fullmatch(r"workload: stopped \(40 steps made\) after \d+\.\d s: 40 steps \(.*\)(; .*)?", out[-1])
    lines = steps(result.stdout)
    assert len(lines) == 40 and result.stderr == ""
    kinds = {kind for kind, _, detail in lines if "refused" not in detail and "failed" not in detail}
    assert {"create", "config", "leader", "reassign"} <= kinds, lines
    want = expected_state(lines)
    assert want["topics"] and want["replicas"] and want["leaders"]

    poll(lambda: image_holds(cluster, want), "the cluster's image holding what the workload printed",
         timeout_s=SAFETY_S)


def test_a_cluster_that_stops_answering_is_a_line_and_the_workload_goes_on(cluster):
    proc = subprocess.Popen([sys.executable, "-m", "engine.tools.cli", "cluster", "workload", "--dir",
                             str(cluster.root), "--seed", "5", "--interval-ms", "100", "--request-timeout-ms", "1000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            cwd=SOURCE_ROOT)
    brokers = [f"broker-{i}" for i in range(1, 5)]
    seen: list[str] = []
    try:
        read_until(proc, seen, lambda line: STEP.match(line) and "failed" not in line)
        for name in brokers:  # a hung cluster: every broker stopped (SIGSTOP)
            cluster.ok("pause", name)
        failed = read_until(proc, seen, lambda line: "failed: no broker answered" in line)
        assert "timed out after 1000 ms" in failed
        for name in brokers:
            cluster.ok("resume", name)
        read_until(proc, seen, lambda line: STEP.match(line) and "failed" not in line and "refused" not in line)
        proc.send_signal(signal.SIGTERM)
        rest, err = proc.communicate(timeout=KRAFTD_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
        for name in brokers:
            if cluster.status()[name]["PROCESS"] == "paused":
                cluster.run("resume", name)
    assert proc.returncode == 0 and err == ""
    summary = rest.splitlines()[-1]
    assert re.fullmatch(r"workload: stopped \(SIGTERM\) after \d+\.\d s: \d+ steps \(.*\); \d+ refused, [1-9]\d* failed",
                        summary), summary
    assert all("Traceback" not in line for line in seen + rest.splitlines())


def read_until(proc: subprocess.Popen, seen: list[str], wanted) -> str:
    """The workload's next line that ``wanted`` matches (the lines read kept in ``seen``)."""
    deadline = time.monotonic() + SAFETY_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if ready:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line.rstrip("\n"))
            if wanted(seen[-1]):
                return seen[-1]
    raise AssertionError(f"no such line; the workload printed {seen[-10:]}, exit {proc.poll()}")


@pytest.mark.parametrize("signum, why", [(signal.SIGINT, "Ctrl-C"), (signal.SIGTERM, "SIGTERM")])
def test_ctrl_c_and_sigterm_end_it_with_a_summary(cluster, signum, why):
    proc = subprocess.Popen([sys.executable, "-m", "engine.tools.cli", "cluster", "workload", "--dir",
                             str(cluster.root), "--interval-ms", "100"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            cwd=SOURCE_ROOT)
    seen: list[str] = []
    try:
        read_until(proc, seen, lambda line: bool(STEP.match(line)))
        proc.send_signal(signum)
        rest, err = proc.communicate(timeout=KRAFTD_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and err == ""
    assert re.fullmatch(rf"workload: stopped \({why}\) after \d+\.\d s: [1-9]\d* steps \(.*\)(; .*)?",
                        rest.splitlines()[-1])


def test_up_on_a_running_cluster_names_the_base_port_it_ignores(cluster):
    layout = load_layout(cluster.root)
    ports = [n.port for n in layout.nodes]
    other = max(ports) + 100
    out = cluster.ok("up", "--base-port", str(other)).splitlines()
    controllers = ",".join(str(n.port) for n in layout.of_role("controller"))
    assert out[0].startswith(f"note: {cluster.root} holds a cluster already: 3 controllers on ports ")
    assert f"--base-port {other} ignored, it keeps them" in out[0]
    assert controllers.split(",")[0] in out[0] or f"{ports[0]}-" in out[0]
    assert [n.port for n in load_layout(cluster.root).nodes] == ports
    assert out[-1] == f"bootstrap.controllers={layout.bootstrap('controller')}"
    # the ports it has: no note
    same = cluster.ok("up", "--base-port", str(ports[0]))
    assert "note:" not in same


def test_up_workload_runs_it_in_the_background_until_down(cluster):
    out = cluster.ok("up", "--workload", "--workload-seed", "3", "--workload-interval-ms", "100")
    started = next(line for line in out.splitlines() if line.startswith("workload: started (pid "))
    pid = int(re.search(r"pid (\d+)", started).group(1))
    log = cluster.root / "logs" / "workload.log"
    poll(lambda: log.exists() and steps(log.read_text()), "the background workload's first step", timeout_s=SAFETY_S)
    again = cluster.ok("up", "--workload")
    assert f"workload: already running (pid {pid}), log {log}" in again.splitlines()
    assert f"workload: running (pid {pid}), log {log}" in cluster.ok("status").splitlines()
    down = cluster.ok("down").splitlines()
    assert down[0] == "workload: stopped"
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]
    assert re.match(r"workload: stopped \(SIGTERM\) after", log.read_text().splitlines()[-1])
    assert "workload" not in cluster.ok("status")
    cluster.ok("up")  # leave it up for whichever test follows
