"""README.md's Quickstart, run as written: every ``sh`` block of the section, in order, each line
through ``sh`` in a fresh directory, so the test breaks when the README drifts.

What stands in for a fresh clone and its venv: ``.venv/bin/kraftd`` and ``.venv/bin/metashell``
are two-line scripts running this checkout's code with this interpreter (the line that makes the
venv is checked, not run: the suite runs in such an install already), and a ``sitecustomize``
refuses the packages only the test extras bring (Kafka's clients, pytest, Hypothesis, pyspark) in
every process the commands start, so "nothing else installed" holds. The ports the README names
(19091...) become a free run of eight; the cluster's state goes to a temporary XDG_CACHE_HOME.

The dashboard runs in a pseudo-terminal of 200x50, as a user's terminal would run it: the test
reads what it draws and waits until a topic the workload created after the first paint is on
screen, then presses q. Waits are on what the processes print, with deadlines as safety nets.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import random
import re
import select
import shlex
import signal
import socket
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from engine.cluster.processes import SOURCE_ROOT
from tests.engine.cluster.test_cluster_tool import KRAFTD_TIMEOUT_S, Cluster, ours

pytestmark = pytest.mark.slow

README = SOURCE_ROOT / "README.md"
VENV_LINE = "python3 -m venv .venv && .venv/bin/pip install -q -e ."
README_BASE_PORT = 19091
PORTS = 8  # 3 controllers and 5 brokers, from the base port on
SAFETY_S = 240.0  # a safety net for the dashboard's waits, never a performance claim
ESCAPES = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]")
NOT_INSTALLED = '''\
import importlib.abc, sys

TEST_ONLY = {"kafka", "confluent_kafka", "pytest", "hypothesis", "pyspark", "pyarrow"}


class NotInstalled(importlib.abc.MetaPathFinder):
    """A plain `pip install -e .`: the test extras are not there."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in TEST_ONLY:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
'''


def quickstart_blocks() -> list[list[str]]:
    """The command lines of each ``sh`` block of the Quickstart's walk through a live cluster:
    from the section's start to the block that takes the cluster down (comments left out; the
    demo and the test commands that follow have tests of their own)."""
    text = README.read_text()
    section = text.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    blocks = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
        blocks.append([line.strip() for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")])
        if any("kraftd cluster down" in line for line in blocks[-1]):
            return blocks
    raise AssertionError("the Quickstart never takes its cluster down")


def free_base_port() -> int:
    """A run of PORTS bindable ports on 127.0.0.1, below Linux's ephemeral range."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(20_000, 32_000 - PORTS)
        try:
            probes = []
            for port in range(base, base + PORTS):
                probe = socket.socket()
                probes.append(probe)
                probe.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for probe in probes:
                probe.close()
    raise AssertionError("no run of free ports")


class Quickstart:
    def __init__(self, tmp: Path):
        self.cwd = tmp / "clone"
        bin_dir = self.cwd / ".venv" / "bin"
        bin_dir.mkdir(parents=True)
        site = tmp / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(NOT_INSTALLED)
        for script, module in (("kraftd", "engine.tools.cli"), ("metashell", "metashell.cli")):
            path = bin_dir / script
            path.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m {module} \"$@\"\n")
            path.chmod(0o755)
        self.base = free_base_port()
        self.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CI", "XDG_CACHE_HOME")}
        self.env.update(PYTHONPATH=f"{site}{os.pathsep}{SOURCE_ROOT}", XDG_CACHE_HOME=str(tmp / "cache"),
                        METASHELL_HISTORY=str(tmp / "history"), PAGER="cat", TERM="xterm-256color")
        self.cluster = Cluster(tmp / "cache" / "kraftd" / "cluster")  # where `up` keeps it without --dir

    def ports(self, line: str) -> str:
        """The README's ports moved to the free run."""
        return re.sub(r"\b(19[01]\d\d)\b", lambda m: str(self.base + int(m.group(1)) - README_BASE_PORT), line)

    def sh(self, line: str, **kwargs) -> subprocess.CompletedProcess:
        result = subprocess.run(["sh", "-c", self.ports(line)], cwd=self.cwd, env=self.env, capture_output=True,
                                text=True, timeout=KRAFTD_TIMEOUT_S, stdin=subprocess.DEVNULL, **kwargs)
        self.cluster.seen_pids |= set(self.cluster.pids().values())
        return result

    def ok(self, line: str) -> str:
        result = self.sh(line)
        assert result.returncode == 0, f"{line}: {result.stderr}{self.cluster.logs()}"
        assert "Traceback" not in result.stderr, result.stderr
        return result.stdout

    def workload_creates(self) -> list[str]:
        log = self.cluster.root / "logs" / "workload.log"
        text = log.read_text() if log.exists() else ""
        return re.findall(r"^\s*\d+\.\ds  create\s+(workload-\d+)\s+\d+ partitions?", text, re.M)

    def kill_all(self) -> None:
        self.cluster.kill_all()
        try:
            pid = json.loads((self.cluster.root / "workload.json").read_text())["pid"]
        except (OSError, ValueError, KeyError):
            return
        if ours(pid, self.cluster.root):
            os.kill(pid, signal.SIGKILL)


class Screen:
    """What a process drew in a pseudo-terminal, control sequences left out."""

    def __init__(self, argv: list[str], q: Quickstart):
        self.main, child = pty.openpty()
        fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        self.proc = subprocess.Popen(argv, cwd=q.cwd, env=q.env, stdin=child, stdout=child, stderr=child,
                                     close_fds=True, start_new_session=True)
        os.close(child)
        self.raw = b""

    @property
    def text(self) -> str:
        return ESCAPES.sub(b"", self.raw).decode(errors="replace")

    def read(self, timeout_s: float) -> None:
        ready, _, _ = select.select([self.main], [], [], timeout_s)
        if ready:
            try:
                self.raw += os.read(self.main, 65536)
            except OSError:  # the process ended and closed its side
                pass

    def until(self, done, what: str) -> None:
        deadline = time.monotonic() + SAFETY_S
        while not done():
            assert self.proc.poll() is None, f"the dashboard ended ({self.proc.returncode}): {self.text[-800:]}"
            assert time.monotonic() < deadline, f"never saw {what}; the screen ends {self.text[-800:]}"
            self.read(0.2)

    def quit(self) -> int:
        os.write(self.main, b"q")
        deadline = time.monotonic() + SAFETY_S
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.read(0.2)  # keep reading: a full terminal would block the app's last writes
        return self.proc.wait(timeout=5)

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: sh and the dashboard under it
            self.proc.wait()
        os.close(self.main)


def test_the_readme_quickstart_as_written(tmp_path):
    blocks = quickstart_blocks()
    assert len(blocks) == 4, blocks
    (venv, up, dash), (kill, status, start), (shell_c, shell), (down,) = blocks
    assert venv == VENV_LINE  # what the suite's own install did; not run here
    assert up.startswith(".venv/bin/kraftd cluster up ") and "--workload" in up
    q = Quickstart(tmp_path)
    try:
        out = q.ok(up).splitlines()
        controllers = ",".join(f"127.0.0.1:{q.base + i}" for i in range(3))
        assert out[-1] == f"bootstrap.controllers={controllers}"
        assert any(line.startswith("workload: started (pid ") for line in out)
        assert q.ports(dash) == f".venv/bin/metashell dash --bootstrap-controller {controllers}"

        screen = Screen(["sh", "-c", q.ports(dash)], q)
        try:
            on_screen = lambda: set(re.findall(r"workload-\d+", screen.text))  # noqa: E731
            screen.until(lambda: on_screen(), "a topic of the workload")
            before = set(q.workload_creates())
            later: list[str] = []

            def created_later() -> bool:
                later[:] = [t for t in q.workload_creates() if t not in before]
                return bool(later)
            screen.until(created_later, "a topic created after the first paint (in workload.log)")
            screen.until(lambda: later[0] in on_screen(), f"{later[0]}, created while the dashboard ran, on screen")
            assert screen.quit() == 0
        finally:
            screen.close()

        assert q.ok(kill).strip().startswith("broker-2: killed")
        assert "broker-2" in q.ok(status)
        assert q.ok(start).strip().startswith("broker-2: started")
        shown = q.ok(shell_c)
        assert re.search(r"^workload-\d+$", shown, re.M), shown
        q.ok(shell)  # no terminal: it reads its commands from stdin, here none

        stopped = q.ok(down).splitlines()
        assert stopped[0] == "workload: stopped" and stopped[-1].startswith("controller-")
        assert not [pid for pid in q.cluster.seen_pids if ours(pid, q.cluster.root)]
        assert re.match(r"workload: stopped \(SIGTERM\) after",
                        (q.cluster.root / "logs" / "workload.log").read_text().splitlines()[-1])
    finally:
        q.kill_all()
