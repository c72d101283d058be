"""``kraftd cluster``: the real CLI in subprocesses, on a real local cluster in a tmp directory.

One cluster (3 controllers, 2 brokers) is shared by the whole module, so the tests run in the
file's order and each leaves it as it found it (every node up, brokers unfenced), except the
last, which takes it down. Waits poll up to a deadline, a safety net against hangs, never a
performance claim. Every process the cluster ever ran is SIGKILLed at the end, failure or not,
after checking the pid is still one of ours (its command line names the tmp directory).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cluster.layout import load_layout
from engine.cluster.view import observe
from engine.cluster.processes import SOURCE_ROOT, kraftd
from tests.engine.server.test_controller_processes import poll

# processes, sockets and timers of their own: out of the fast tier
pytestmark = pytest.mark.slow

KRAFTD_TIMEOUT_S = 180.0  # safety nets


BROKERS = 2
SESSION_TIMEOUT_MS = 5000  # a killed broker is fenced after this (Kafka's 9 s would slow the suite; 2 s fenced live ones under load)


def ours(pid: int, root: Path) -> bool:
    """The pid runs a node of the cluster in ``root`` (not a process that got the pid since)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return str(root) in cmdline and state != "Z"


class Cluster:
    def __init__(self, root: Path):
        self.root = root
        self.seen_pids: set[int] = set()
        self.up_output = ""

    def run(self, *args: str) -> subprocess.CompletedProcess:
        result = kraftd("cluster", *args, "--dir", str(self.root), timeout_s=KRAFTD_TIMEOUT_S)
        self.seen_pids |= set(self.pids().values())
        return result

    def ok(self, *args: str) -> str:
        result = self.run(*args)
        assert result.returncode == 0, f"kraftd cluster {' '.join(args)}: {result.stderr}{self.logs()}"
        return result.stdout

    def registry(self) -> dict:
        return json.loads((self.root / "cluster.json").read_text())

    def pids(self) -> dict[str, int]:
        path = self.root / "cluster.json"
        if not path.exists():
            return {}
        return {n["name"]: n["pid"] for n in self.registry()["nodes"] if n["pid"] is not None}

    def status(self) -> dict[str, dict[str, str]]:
        """NAME -> the row of ``status`` by column."""
        lines = self.ok("status").splitlines()
        headers = [h.strip() for h in lines[0].split("\t")]
        rows = [dict(zip(headers, (c.strip() for c in line.split("\t")))) for line in lines[1:] if "\t" in line]
        return {row["NAME"]: row for row in rows}

    def state(self, name: str) -> str:
        return self.status()[name]["STATE"]

    def logs(self) -> str:
        return "".join(f"\n--- {p.name} ---\n{p.read_text(errors='replace')[-3000:]}"
                       for p in sorted((self.root / "logs").glob("*.log")))

    def kill_all(self) -> None:
        for pid in self.seen_pids | set(self.pids().values()):
            if ours(pid, self.root):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Cluster:
    c = Cluster(tmp_path_factory.mktemp("cluster") / "state")
    try:
        c.up_output = c.ok("up", "--controllers", "3", "--brokers", str(BROKERS), "--racks", "2",
                           "--heartbeat-interval-ms", "500", "--session-timeout-ms", str(SESSION_TIMEOUT_MS))
        yield c
    finally:
        c.kill_all()


def test_up_ends_with_the_bootstrap_lines(cluster):
    lines = cluster.up_output.splitlines()
    nodes = {n["name"]: n for n in cluster.registry()["nodes"]}
    brokers = ",".join(f"127.0.0.1:{nodes[f'broker-{i}']['port']}" for i in range(1, BROKERS + 1))
    controllers = ",".join(f"127.0.0.1:{nodes[f'controller-{i}']['port']}" for i in range(1, 4))
    assert lines[-2:] == [f"bootstrap.servers={brokers}", f"bootstrap.controllers={controllers}"]
    assert re.fullmatch(r"bootstrap\.controllers=127\.0\.0\.1:\d+(,127\.0\.0\.1:\d+){2}", lines[-1])
    props = (cluster.root / "broker-2" / "server.properties").read_text()
    assert "process.roles=broker" in props and "broker.rack=rack-2" in props
    assert f"log.dirs={cluster.root / 'broker-2' / 'data-1'},{cluster.root / 'broker-2' / 'data-2'}" in props


def test_status_shows_every_node(cluster):
    rows = cluster.status()
    brokers = [f"broker-{i}" for i in range(1, BROKERS + 1)]
    assert list(rows) == ["controller-1", "controller-2", "controller-3", *brokers]
    pids = cluster.pids()
    for name, row in rows.items():
        role, index = name.split("-")
        assert row["ROLE"] == role and row["ID"] == str(3000 + int(index) if role == "controller" else int(index))
        assert row["PID"] == str(pids[name]) and row["PROCESS"] == "running"
        assert row["LAG"].isdigit()
    assert sorted(rows[f"controller-{i}"]["STATE"] for i in range(1, 4)) == ["leader", "voter", "voter"]
    assert all(rows[f"broker-{i}"]["STATE"] == "unfenced" for i in range(1, BROKERS + 1))


def test_bad_input_is_one_line(cluster, tmp_path):
    cases = [(("stop", "broker-9"), "no node 'broker-9'"), (("lag", "controller-1", "5"), "controller"),
             (("start", "controller-1"), "already running"), (("resume", "controller-1"), "not paused"),
             (("disk-fail", "broker-1", "nowhere"), "none of broker-1's log dirs")]
    for args, words in cases:
        result = cluster.run(*args)
        assert result.returncode == 1 and words in result.stderr, (args, result.stderr)
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    result = kraftd("cluster", "status", "--dir", str(tmp_path / "none"))
    assert result.returncode == 1 and "no cluster in" in result.stderr and result.stderr.count("\n") == 1
    result = kraftd("cluster", "lag", "controller-1", "soon", "--dir", str(cluster.root))
    assert result.returncode == 1 and result.stderr.count("\n") == 1


def test_a_controller_stops_and_starts_with_the_quorum_up(cluster):
    cluster.ok("stop", "controller-2")
    rows = cluster.status()
    assert rows["controller-2"]["PROCESS"] == "down" and rows["controller-2"]["PID"] == "-"
    poll(lambda: "leader" in {r["STATE"] for r in cluster.status().values()}, "a leader among the other two")
    dead = cluster.run("kill", "controller-2")
    assert dead.returncode == 1 and "not running" in dead.stderr
    cluster.ok("start", "controller-2")
    poll(lambda: cluster.state("controller-2") in ("voter", "leader"), "controller-2 back in the quorum")


def test_a_killed_broker_is_fenced_and_unfenced_after_start(cluster):
    pid = cluster.pids()["broker-1"]
    cluster.ok("kill", "broker-1")
    assert not ours(pid, cluster.root)
    poll(lambda: cluster.state("broker-1") == "fenced", "broker-1 fenced after its session expired")
    cluster.ok("start", "broker-1")  # returns once it is unfenced
    assert cluster.state("broker-1") == "unfenced"


def test_start_right_after_kill_waits_for_the_new_registration(cluster):
    # the killed broker's old registration stays unfenced until its session expires: `start`
    # must not take that for the new process being ready
    before = observe(load_layout(cluster.root)).image.cluster.brokers[2].epoch
    cluster.ok("kill", "broker-2")
    cluster.ok("start", "broker-2")
    after = observe(load_layout(cluster.root)).image.cluster.brokers[2]
    assert after.epoch > before and not after.fenced


def test_pause_and_resume(cluster):
    name = "broker-2"
    cluster.ok("pause", name)
    assert cluster.status()[name]["PROCESS"] == "paused"
    # a stopped process sends no heartbeat: fenced once its session expires, as a hung JVM
    poll(lambda: cluster.state(name) == "fenced", f"{name} fenced while paused")
    assert cluster.run("pause", name).returncode == 1
    cluster.ok("resume", name)
    assert cluster.status()[name]["PROCESS"] == "running"
    poll(lambda: cluster.state(name) in ("unfenced", "leader", "voter"), f"{name} back after resuming")


def test_lag_and_disk_fail_reach_the_broker(cluster):
    faults = cluster.root / "broker-2" / "faults.properties"
    log = cluster.root / "logs" / "broker-2.log"
    assert cluster.ok("lag", "broker-2", "250", "--failure-rate", "0.5").strip() == \
        "broker-2: replica.fetch.delay.ms=250 replica.fetch.failure.rate=0.5"
    assert faults.read_text() == "replica.fetch.delay.ms=250\nreplica.fetch.failure.rate=0.5\n"
    poll(lambda: "replica fetch delay 250 ms, fetch failure rate 0.5" in log.read_text(),
         "the broker taking the fetch delay and failure rate")
    refused = cluster.run("lag", "broker-2", "5", "--failure-rate", "1.5")
    assert refused.returncode == 1 and "a probability from 0 to 1" in refused.stderr
    cluster.ok("lag", "broker-2", "0")
    assert faults.read_text() == ""
    assert cluster.ok("disk-fail", "broker-2").strip() == \
        f"broker-2: failed.log.dirs={cluster.root / 'broker-2' / 'data-2'}"
    poll(lambda: "data-2 failed" in log.read_text(), "the broker failing its second log dir")
    assert cluster.status()["broker-2"]["PROCESS"] == "running"


def test_chaos_stays_in_its_budget_and_heals(cluster):
    out = cluster.ok("chaos", "--seconds", "4", "--interval-ms", "400", "--seed", "7").splitlines()
    actions = [line for line in out if re.match(r" *\d+\.\ds  ", line)]
    assert actions and out[-2].startswith("healed: every node running, every broker unfenced; metadata high watermark")
    assert re.fullmatch(r"controllers' images identical at offset \d+ \(3 controllers, \d+ records\)", out[-1])
    for line in actions:
        # (a leader elected a moment ago knows no high watermark until it commits in its epoch)
        assert re.search(r"metadata( high watermark (\d+|unknown), leader controller-\d epoch \d+|: no leader answered)",
                         line)
        for down, total, budget in re.findall(r"(\d+)/(\d+) \w+s impaired \(budget (\d+)\)", line):
            assert int(down) <= int(budget) < int(total), line
    rows = cluster.status()
    assert {r["PROCESS"] for r in rows.values()} == {"running"}
    assert all(r["STATE"] == "unfenced" for n, r in rows.items() if n.startswith("broker"))
    assert all(not (cluster.root / f"broker-{i}" / "faults.properties").read_text() for i in range(1, BROKERS + 1))


def test_a_second_up_restarts_only_what_is_down(cluster):
    before = cluster.pids()
    meta = (cluster.root / "controller-1" / "metadata" / "meta.properties").read_text()
    restarted = {"controller-1", "broker-1"}
    cluster.ok("kill", "controller-1")
    cluster.ok("stop", "broker-1")
    out = cluster.ok("up", "--brokers", "4")
    assert "--brokers 4 ignored" in out
    after = cluster.pids()
    assert after.keys() == before.keys()
    assert {n for n in after if after[n] != before[n]} == restarted
    assert (cluster.root / "controller-1" / "metadata" / "meta.properties").read_text() == meta
    assert all(r["STATE"] == "unfenced" for n, r in cluster.status().items() if n.startswith("broker"))


def test_down_leaves_no_process_even_when_its_reader_leaves_after_one_line(cluster):
    """``kraftd cluster down | head -1``: the pipe closes after the first line; the controllers
    must be stopped all the same (a broken pipe once ended ``down`` halfway, quietly)."""
    pids = cluster.pids()
    down = subprocess.Popen([sys.executable, "-m", "engine.tools.cli", "cluster", "down", "--dir", str(cluster.root)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            cwd=SOURCE_ROOT, text=True)
    first = down.stdout.readline()
    down.stdout.close()  # as head -1 does
    assert down.wait(timeout=KRAFTD_TIMEOUT_S) == 0
    assert (first, down.stderr.read()) == ("broker-1: stopped\n", "")
    assert not [pid for pid in pids.values() if ours(pid, cluster.root)]
    assert cluster.pids() == {}
    rows = cluster.status()
    assert {r["PROCESS"] for r in rows.values()} == {"down"} and {r["PID"] for r in rows.values()} == {"-"}
    assert cluster.ok("down").strip() == "no node was running"
