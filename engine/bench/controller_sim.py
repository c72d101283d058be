"""``kraftd bench controller --sim-brokers N``: our controller quorum under N simulated broker processes.

Where the default bench drives the controllers with one load client playing brokers, this mode
runs the brokers themselves: a ``kraftd cluster`` layout (engine.cluster.layout: the same
configs, formatting and registry as ``kraftd cluster up --brokers N --brokers-per-process K``) of
``controllers`` controllers (``kraftd start``) and N brokers, K to a process. Each broker process
is engine.bench.brokers: the nodes of ``kraftd start --config ... --config ...`` with their
heartbeats timed at the broker's controller channel. Each broker registers, follows the metadata
log (one Raft observer per process), heartbeats every ``interval_ms`` and serves its listener.

1. *start*: controllers, then the broker processes; the time until every broker is registered
   and unfenced in the controllers' committed metadata (as ``kraftd cluster status`` reads it).
2. *steady*: for ``seconds``, every SAMPLE_S: every broker still unfenced, every process alive.
3. *figures*, over the steady window: the brokers' heartbeat latency (send to answer) p50 / p99 /
   max, heartbeats answered against those due, answers other than NONE; CPU of each controller
   and of all broker processes (utime + stime from /proc, as % of one core); RSS and its peak.

*Stable* means: every broker unfenced at every sample, no process exited, every heartbeat in the
window answered with NONE. Prints as it goes, returns the figures, asserts nothing.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from engine.net.ports import pick_ports
from engine.bench.brokers import FLUSH_INTERVAL_S
from engine.bench.controller_load import percentile
from engine.cluster.layout import (
    Layout, Settings, default_brokers_per_process, format_nodes, is_alive, plan_layout, stop_nodes, write_configs,
)
from engine.cluster.view import UNFENCED, observe

Out = Callable[[str], None]
SAMPLE_S = 5.0
HEARTBEATS_FILE = "heartbeats.txt"  # in the first broker's directory of each group
START_TIMEOUT_S = 900.0  # a safety net: a thousand brokers on two cores start in minutes
STOP_TIMEOUT_S = 60.0


@dataclass
class SimResult:
    brokers: int
    processes: int
    controllers: int
    interval_ms: int
    ready_s: float = float("nan")
    seconds: float = 0.0
    min_unfenced: int = 0
    problems: list[str] = field(default_factory=list)
    heartbeat_ms: list[float] = field(default_factory=list)
    outcomes: Counter = field(default_factory=Counter)
    leader: str = "?"
    cpu_percent: dict[str, float] = field(default_factory=dict)  # controller name / "brokers" -> % of a core
    rss_mb: dict[str, tuple[float, float]] = field(default_factory=dict)  # name -> (VmRSS, VmHWM)

    @property
    def due(self) -> int:
        return int(self.brokers * self.seconds * 1000 / self.interval_ms)

    @property
    def stable(self) -> bool:
        answered = sum(self.outcomes.values())
        return not self.problems and answered > 0 and self.outcomes.get("none", 0) == answered


def group_command(configs: Sequence[Path]) -> list[str]:
    """A group's process: bench_brokers over its configs, timing into the first broker's directory."""
    latency_file = Path(configs[0]).parent / HEARTBEATS_FILE
    return [sys.executable, "-m", "engine.bench.brokers", *(a for c in configs for a in ("-c", str(c))),
            "--latency-file", str(latency_file)]


def _cpu_ticks(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    fields = text[text.rfind(")") + 2:].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (stat fields 14, 15)


def _memory_mb(pid: int) -> tuple[float, float]:
    found = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    found[line[:5]] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return found.get("VmRSS", float("nan")), found.get("VmHWM", float("nan"))


def _processes(layout: Layout) -> dict[str, int]:
    """Process name -> pid, controllers and broker groups."""
    return {layout.process_name(n): n.pid for n in layout.nodes if n.pid is not None}


def _heartbeats(layout: Layout, since: float, until: float, result: SimResult) -> None:
    firsts = {layout.process_name(n): n for n in reversed(layout.of_role("broker"))}
    for node in firsts.values():
        path = layout.node_dir(node) / HEARTBEATS_FILE
        try:
            lines = path.read_text().splitlines()
        except OSError:
            result.problems.append(f"no heartbeat times from {layout.process_name(node)} ({path})")
            continue
        for line in lines:
            parts = line.split()
            if len(parts) == 4 and since <= float(parts[0]) < until:
                result.heartbeat_ms.append(float(parts[2]))
                result.outcomes[parts[3]] += 1


def _plan(root: Path, *, controllers: int, brokers: int, per_process: int, settings: Settings) -> Layout:
    layout = plan_layout(root, controllers=controllers, brokers=brokers, racks=3,
                         ports=pick_ports(controllers + brokers), settings=settings, brokers_per_process=per_process)
    for node in layout.of_role("broker"):
        node.process = node.process or f"brokers-{node.node_id}"  # a group of one: still timed
    write_configs(layout)
    format_nodes(layout)
    layout.save()
    return layout


def _steady(layout: Layout, result: SimResult, seconds: float, out: Out) -> None:
    brokers = layout.of_role("broker")
    result.min_unfenced = len(brokers)
    pids = _processes(layout)
    ticks0, began = {name: _cpu_ticks(pid) for name, pid in pids.items()}, time.time()
    end = began + seconds
    while time.time() < end:
        time.sleep(min(SAMPLE_S, max(0.0, end - time.time())))
        view = observe(layout)
        unfenced = sum(1 for n in brokers if view.state(n) == UNFENCED)
        result.min_unfenced = min(result.min_unfenced, unfenced)
        dead = sorted({layout.process_name(n) for n in layout.nodes if n.pid is not None and not is_alive(n)})
        at = time.time() - began
        if dead:
            result.problems.append(f"{at:.0f} s: process exited: {', '.join(dead)}")
        if unfenced < len(brokers):
            names = [n.name for n in brokers if view.state(n) != UNFENCED]
            result.problems.append(f"{at:.0f} s: {len(names)} brokers not unfenced ({', '.join(names[:5])}"
                                   f"{' ...' if len(names) > 5 else ''})")
        if view.quorum is not None:
            result.leader = next((n.name for n in layout.nodes if n.node_id == view.quorum.leader_id), "?")
        out(f"  {at:.0f} s: {unfenced}/{len(brokers)} unfenced, leader {result.leader}"
            + (f", exited: {', '.join(dead)}" if dead else ""))
    result.seconds = time.time() - began
    clock_ticks = os.sysconf("SC_CLK_TCK")
    broker_ticks = 0
    for name, pid in pids.items():
        used = _cpu_ticks(pid) - ticks0[name]
        if name.startswith("controller-"):
            result.cpu_percent[name] = 100 * used / clock_ticks / result.seconds
            result.rss_mb[name] = _memory_mb(pid)
        else:
            broker_ticks += used
    result.cpu_percent["brokers"] = 100 * broker_ticks / clock_ticks / result.seconds
    broker_rss = [_memory_mb(pid) for name, pid in pids.items() if not name.startswith("controller-")]
    result.rss_mb["broker process (max)"] = (max(r for r, _ in broker_rss), max(h for _, h in broker_rss))
    time.sleep(2 * FLUSH_INTERVAL_S)  # the brokers write their times once a second
    _heartbeats(layout, began, began + result.seconds, result)


def report(result: SimResult, out: Out) -> None:
    hb = result.heartbeat_ms
    others = {k: v for k, v in result.outcomes.items() if k != "none"}
    out(f"summary: {result.brokers} brokers in {result.processes} processes, {result.controllers} controllers: "
        f"{'STABLE' if result.stable else 'NOT STABLE'} for {result.seconds:.0f} s (all unfenced after "
        f"{result.ready_s:.1f} s; fewest unfenced at a sample {result.min_unfenced})")
    out(f"  heartbeats (broker side, send to answer): {len(hb):,} answered of ~{result.due:,} due; p50 "
        f"{percentile(hb, 0.5):.1f} / p99 {percentile(hb, 0.99):.1f} / max {max(hb, default=float('nan')):.1f} ms"
        + (f"; not NONE: {dict(others)}" if others else ""))
    for name, cpu in result.cpu_percent.items():
        rss, hwm = result.rss_mb.get(name, (float("nan"), float("nan")))
        role = " (active)" if name == result.leader else ""
        out(f"  {name}{role}: CPU {cpu:.0f} % of a core" + ("" if name == "brokers" else f", RSS {rss:.0f} MB "
                                                             f"(peak {hwm:.0f} MB)"))
    rss, hwm = result.rss_mb.get("broker process (max)", (float("nan"), float("nan")))
    out(f"  largest broker process: RSS {rss:.0f} MB (peak {hwm:.0f} MB)")
    for problem in result.problems[:10]:
        out(f"  problem: {problem}")


def bench_sim_brokers(*, brokers: int, brokers_per_process: int | None = None, controllers: int = 3,
                      seconds: float = 180.0, interval_ms: int = 2000, session_timeout_ms: int = 9000,
                      keep: bool = False, out: Out = print) -> SimResult:
    """Start the cluster, hold it ``seconds``, print and return the figures; every process is
    stopped at the end (the state directory removed unless ``keep``)."""
    per = brokers_per_process or default_brokers_per_process(brokers)
    settings = Settings(heartbeat_interval_ms=interval_ms, session_timeout_ms=session_timeout_ms)
    root = Path(tempfile.mkdtemp(prefix="kraftd-bench-sim-brokers-"))
    out("command: kraftd bench controller " + shlex.join(
        ["--sim-brokers", str(brokers), "--brokers-per-process", str(per), "--sim-controllers", str(controllers),
         "--sim-seconds", f"{seconds:g}", "--heartbeat-interval-ms", str(interval_ms)]))
    out(f"machine: {os.cpu_count()} cpus, load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    layout = _plan(root, controllers=controllers, brokers=brokers, per_process=per, settings=settings)
    result = SimResult(brokers, len({layout.process_name(n) for n in layout.of_role("broker")}), controllers,
                       interval_ms)
    from engine.cluster.commands import start_nodes  # late: it imports the CLI's parser module
    done = False
    try:
        out(f"starting {controllers} controllers and {brokers} brokers in {result.processes} processes "
            f"({per} a process) in {root}")
        began = time.monotonic()
        start_nodes(layout, list(layout.nodes), START_TIMEOUT_S, group_command=group_command)
        result.ready_s = time.monotonic() - began
        out(f"every broker registered and unfenced after {result.ready_s:.1f} s; holding for {seconds:g} s")
        _steady(layout, result, seconds, out)
        done = True
    finally:
        stop_nodes(layout, layout.of_role("broker"), timeout_s=STOP_TIMEOUT_S, sleep=time.sleep, clock=time.monotonic)
        stop_nodes(layout, layout.of_role("controller"), timeout_s=STOP_TIMEOUT_S, sleep=time.sleep,
                   clock=time.monotonic)
        if done and not keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            out(f"state and logs kept in {root}")
    out(f"load average after: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    report(result, out)
    return result


__all__ = ["SimResult", "bench_sim_brokers", "group_command", "report"]
