"""``kraftd bench quorum``: three real controller processes on loopback, under load.

Three ``kraftd start`` processes form a dynamic quorum (formatted with
``--initial-controllers``). Each is started with the hidden ``--load-rate``: whichever leads
appends NoOpRecords at that rate and measures, for each append, the time until it is committed
(a majority fsynced it and the leader's listener was handed it). Two phases:

* latency: 1,000 records/s, one record per append;
* throughput: as fast as offered (``--throughput-rate``), ``--batch`` records per append.

Each phase runs ``--seconds`` after a leader is elected; the leader's report (p50, p99, max
latency, committed records/s) is printed. Nothing here asserts a figure: the numbers go into
docs/performance.md.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from engine.common.errors import MetadataError
from engine.common.kafka_uuid import random_kafka_uuid, uuid_to_kafka
from engine.net.ports import free_ports


class BenchError(MetadataError):
    pass


def _kraftd(*args: str) -> list[str]:
    return [sys.executable, "-m", "engine.tools.cli", *args]


class ProcessCluster:
    """Three ``kraftd start`` processes on 127.0.0.1 formatted as one dynamic quorum."""

    def __init__(self, root: Path, settings: dict[str, object]):
        self.root = root
        self.ports = free_ports(3)
        self.cluster_id = uuid_to_kafka(random_kafka_uuid())
        bootstrap = ",".join(f"127.0.0.1:{p}" for p in self.ports)
        self.configs = []
        for i, port in enumerate(self.ports, 1):
            path = root / f"controller{i}.properties"
            path.write_text("\n".join([
                "process.roles=controller", f"node.id={i}", f"listeners=CONTROLLER://127.0.0.1:{port}",
                "controller.listener.names=CONTROLLER", f"controller.quorum.bootstrap.servers={bootstrap}",
                f"metadata.log.dir={root / f'meta{i}'}", *(f"{k}={v}" for k, v in settings.items()),
            ]) + "\n")
            self.configs.append(path)
        self.procs: dict[int, subprocess.Popen] = {}

    def address(self, node_id: int) -> tuple[str, int]:
        return "127.0.0.1", self.ports[node_id - 1]

    def format(self) -> None:
        directory_ids = [uuid_to_kafka(random_kafka_uuid()) for _ in self.ports]
        initial = ",".join(f"{i}@127.0.0.1:{p}:{d}" for i, (p, d) in enumerate(zip(self.ports, directory_ids), 1))
        for path in self.configs:
            done = subprocess.run(_kraftd("storage", "format", "--config", str(path), "--cluster-id", self.cluster_id,
                                          "--initial-controllers", initial),
                                  capture_output=True, text=True, stdin=subprocess.DEVNULL)
            if done.returncode != 0:
                raise BenchError(f"formatting {path.name} failed: {done.stderr.strip() or done.stdout.strip()}")

    def start_node(self, node_id: int, *extra: str) -> None:
        log = open(self.root / f"controller{node_id}.log", "ab")
        self.procs[node_id] = subprocess.Popen(_kraftd("start", "--config", str(self.configs[node_id - 1]), *extra),
                                               stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()

    def start(self, rate: float, batch: int) -> list[Path]:
        reports = []
        for i in range(1, 4):
            report = self.root / f"load{i}-{int(rate)}-{batch}.json"
            reports.append(report)
            self.start_node(i, "--load-rate", str(rate), "--load-batch", str(batch), "--load-report", str(report))
        return reports

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs = {}


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
    cluster.format()
    reports = cluster.start(rate, batch)
    try:
        deadline = time.monotonic() + 30
        while _leader_report(reports) is None:
            if time.monotonic() > deadline:
                raise BenchError("no controller led within 30 s (see the controller*.log files)")
            if any(p.poll() is not None for p in cluster.procs.values()):
                raise BenchError(f"a controller exited early (logs in {cluster.root})")
            time.sleep(0.1)
        time.sleep(1.0)  # warm-up: connections, first fetches
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
