"""The background workload of ``kraftd cluster up --workload``: one ``kraftd cluster workload``
process per cluster directory, detached as the nodes are, its lines in ``DIR/logs/workload.log``.

Its pid and start time are kept in ``DIR/workload.json`` (the start time, as for the nodes, so a
pid the system gave to another process since is not taken for it). ``down`` stops it before the
brokers (SIGTERM: it prints its summary line to its log and exits), ``status`` names it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from engine.cluster.layout import Layout, process_start_time, process_state
from engine.cluster.processes import SOURCE_ROOT

STATE_FILE = "workload.json"
LOG_NAME = "workload.log"


@dataclass
class WorkloadProcess:
    pid: int | None
    started: str | None  # /proc start time: what process_state compares


def log_path(layout: Layout) -> Path:
    return layout.root / "logs" / LOG_NAME


def _load(layout: Layout) -> WorkloadProcess | None:
    try:
        data = json.loads((layout.root / STATE_FILE).read_text())
        return WorkloadProcess(int(data["pid"]), data.get("started"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def running(layout: Layout) -> WorkloadProcess | None:
    """The workload process of this cluster, if one runs."""
    process = _load(layout)
    if process is None or process_state(process) == "down":  # duck-typed: pid and started are all it reads
        return None
    return process


def start(layout: Layout, options: list[str]) -> WorkloadProcess:
    """``kraftd cluster workload --dir DIR OPTIONS`` detached (own session, stdin closed)."""
    path = log_path(layout)
    path.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "engine.tools.cli", "cluster", "workload", "--dir", str(layout.root), *options]
    with open(path, "ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, cwd=SOURCE_ROOT,
                                start_new_session=True)
    process = WorkloadProcess(proc.pid, process_start_time(proc.pid))
    (layout.root / STATE_FILE).write_text(json.dumps({"pid": process.pid, "started": process.started}) + "\n")
    return process


def stop(layout: Layout, *, timeout_s: float, sleep: Callable[[float], None] = time.sleep,
         clock: Callable[[], float] = time.monotonic) -> bool:
    """SIGTERM the running workload and wait for it (SIGKILL at the deadline); whether one ran."""
    process = running(layout)
    if process is None:
        return False
    os.kill(process.pid, signal.SIGTERM)
    deadline = clock() + timeout_s
    while process_state(process) != "down" and clock() < deadline:
        sleep(0.05)
    if process_state(process) != "down":
        os.kill(process.pid, signal.SIGKILL)
    (layout.root / STATE_FILE).unlink(missing_ok=True)
    return True


__all__ = ["LOG_NAME", "STATE_FILE", "WorkloadProcess", "log_path", "running", "start", "stop"]
