"""``kraftd bench quorum``: three real controller processes on loopback, under load.

Three controllers form a dynamic quorum (formatted with ``--initial-controllers``), each
started through the benchmark entry point ``python -m engine.bench.node`` (the node of
``kraftd start`` with a load generator attached): whichever leads appends NoOpRecords at the
offered rate and measures, for each append, the time until it is committed (a majority
fsynced it and the leader's listener was handed it). Two phases:

* latency: 1,000 records/s, one record per append;
* throughput: as fast as offered (``--throughput-rate``), ``--batch`` records per append.

Each phase runs ``--seconds`` after a leader is elected; the leader's report (p50, p99, max
latency, committed records/s) is printed. Nothing here asserts a figure: the numbers go into
docs/performance.md.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from engine.cluster.processes import ClusterError, ProcessCluster

WARM_UP_S = 1.0  # connections, first fetches


class BenchError(ClusterError):
    pass


def bench_node_command(rate: float, batch: int, report: Callable[[int], Path]):
    """How ProcessCluster starts a node under load: the benchmark entry point, not ``kraftd start``."""
    def command(node_id: int, config: Path) -> list[str]:
        return [sys.executable, "-m", "engine.bench.node", "--config", str(config), "--load-rate", str(rate),
                "--load-batch", str(batch), "--load-report", str(report(node_id))]
    return command


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _leader_report(reports: list[Path]) -> dict | None:
    found = [r for r in (_read(p) for p in reports) if r and r.get("leading_s", 0) > 0]
    return max(found, key=lambda r: r["leading_s"]) if found else None


def _phase(root: Path, linger_ms: int, rate: float, batch: int, seconds: float,
           out: Callable[[str], None]) -> dict:
    cluster = ProcessCluster(Path(tempfile.mkdtemp(dir=root)), {"controller.quorum.append.linger.ms": linger_ms})

    def report(node_id: int) -> Path:
        return cluster.root / f"load{node_id}-{int(rate)}-{batch}.json"

    reports = [report(i) for i in range(1, 4)]
    try:
        cluster.launch(bench_node_command(rate, batch, report))
        deadline = time.monotonic() + 30
        while _leader_report(reports) is None:
            if time.monotonic() > deadline:
                raise BenchError(f"no controller led within 30 s (logs in {cluster.root})")
            if len(cluster.running()) < 3:
                raise BenchError(f"a controller exited early (logs in {cluster.root})")
            time.sleep(0.1)
        time.sleep(WARM_UP_S)
        first = _leader_report(reports)
        time.sleep(seconds)
    finally:
        cluster.stop()
    last = _leader_report(reports)
    if last is None or first is None:
        raise BenchError("no report from the leader")
    return last


def bench_quorum(*, seconds: float = 10.0, latency_rate: float = 1000, throughput_rate: float = 50_000,
                 batch: int = 200, linger_ms: int = 1, out: Callable[[str], None] = print) -> list[dict]:
    root = Path(tempfile.mkdtemp(prefix="kraftd-bench-quorum-"))
    results = []
    for name, rate, per_append in (("latency", latency_rate, 1), ("throughput", throughput_rate, batch)):
        out(f"{name}: 3 controllers on 127.0.0.1, offered {rate:,.0f} records/s, {per_append} per append, "
            f"append.linger.ms={linger_ms}, {seconds:.0f} s ...")
        report = _phase(root, linger_ms, rate, per_append, seconds, out)
        report["phase"] = name
        results.append(report)
        out(f"  committed {report['count']:,} records while leading {report['leading_s']:.1f} s: "
            f"{report['committed_records_per_s']:,.0f} records/s; commit latency p50 {report['p50_ms']} ms, "
            f"p99 {report['p99_ms']} ms, max {report['max_ms']} ms")
    out(f"(work files in {root})")
    return results
