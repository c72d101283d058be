"""``kraftd bench controller``: the quorum controller at scale, ours and (optionally) Kafka's.

Each side is three controller processes on 127.0.0.1 (``kraftd start``, or Kafka's own server
with ``process.roles=controller`` run from its jars), formatted alike by ``kraftd storage
format`` as one dynamic quorum, and driven by the very same load client
(engine/bench/controller_load.py) over real sockets:

1. *create*: ``brokers`` simulated brokers register and heartbeat every ``interval`` (so they
   stay unfenced), then ``topics`` x ``partitions`` partitions (replication factors 1, 2, 3 in
   turn) are created by CreateTopics requests of at most 10,000 partitions, ``in_flight`` at a
   time, to the active controller: the total time.
2. *heartbeats*: ``heartbeat_brokers`` brokers in all (the rest registered now), each
   heartbeating every ``interval`` for ``heartbeat_seconds``: latency p50/p99/max, at the
   partition count just made.
3. *memory*: each controller's peak resident memory (VmHWM of /proc/PID/status).
4. *failover*: SIGKILL the active controller; the time until a CreateTopics (one new topic) is
   answered by its successor. Repeated ``failovers`` times; between two, the killed node is restarted
   and the next kill waits until DescribeQuorum shows it caught up (its restart time is printed).

With ``rounds`` > 1 the sides run alternately (ours, Kafka's, ours, Kafka's, ...), each round
on fresh controllers, and the summary gives each side's creation time as median and range and
the ratio of the medians; ``create_only`` stops each run after the creation (and its peak RSS).

Prints figures as it goes and returns them; asserts nothing (they go into docs/performance.md).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from engine.common.errors import ConfigError
from engine.common.server_gc import tune_gc_for_server
from engine.bench.peer import KAFKA_TOOL_JVM_OPTS, LOG4J2_TOOLS
from engine.bench.node_memory import NodeMemoryWatch
from engine.bench.controller_load import ControllerLoad, LoadError, create_all, percentile, topic_specs
from engine.cluster.processes import ClusterError, Command, ProcessCluster

Out = Callable[[str], None]
# Kafka's defaults, set explicitly so that both sides run with the same
SETTINGS = {"controller.quorum.election.timeout.ms": 1000, "controller.quorum.fetch.timeout.ms": 2000,
            "broker.session.timeout.ms": 9000}
# Kafka's config/log4j2.yaml logs INFO to the console (the tools' config logs WARN to stderr);
# bin/kafka-run-class.sh gives servers the same JVM flags as tools (KAFKA_TOOL_JVM_OPTS), with
# kafka-server-start's heap (-Xmx1G -Xms1G by default)
LOG4J2_SERVER = LOG4J2_TOOLS.replace("WARN", "INFO").replace("SYSTEM_ERR", "SYSTEM_OUT")


@dataclass
class SideResult:
    name: str
    partitions: int = 0
    create_s: float = float("nan")
    heartbeat_ms: list[float] = field(default_factory=list)
    peak_rss_mb: dict[int, float] = field(default_factory=dict)
    create_cpu_s: dict[int, float] = field(default_factory=dict)  # CPU seconds per controller by the creation's end
    failover_ms: list[float] = field(default_factory=list)
    heartbeat_error: str | None = None  # the heartbeat phase could not start (its brokers not unfenced)
    error: str | None = None  # the run did not complete (one of several rounds)


class KafkaControllers(ProcessCluster):
    """Three of Kafka's controllers (its server, controller role only), started from ``libs``."""

    def __init__(self, root: Path, libs: Path, heap: str, settings: dict[str, object]):
        super().__init__(root, settings)
        self.libs, self.heap = libs, heap
        java_home = os.environ.get("JAVA_HOME")  # as kafka-run-class.sh picks its java
        self.java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
        if not self.java or not any(libs.glob("kafka_2.13-*.jar")):
            raise ConfigError(f"{libs}: need java and Kafka's server jars (kafka_2.13-*.jar)")
        self.log4j = root / "log4j2.properties"
        clients = next(libs.glob("kafka-clients-*.jar")).stem.removeprefix("kafka-clients-")
        self.release_version = ".".join(clients.split(".")[:2])  # Kafka 4.1.2 knows no metadata.version past 4.1

    def _format(self, node_id: int, **how: object) -> None:
        super()._format(node_id, release_version=self.release_version, **how)

    def command(self, node_id: int, config: Path) -> list[str]:
        return [self.java, f"-Xmx{self.heap}", f"-Xms{self.heap}", *KAFKA_TOOL_JVM_OPTS,
                f"-Dlog4j2.configurationFile={self.log4j}", "-cp", str(self.libs / "*"), "kafka.Kafka", str(config)]

    def _configure(self, node_id: int, port: int) -> None:
        super()._configure(node_id, port)
        with open(self.configs[node_id], "a") as config:  # Kafka formats and checks log.dirs too
            config.write(f"log.dirs={self.root / f'meta{node_id}'}\n")

    def launch(self, command: Command | None = None) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.log4j.write_text(LOG4J2_SERVER)
        super().launch(command or self.command)

    def wait_listening(self, node_id: int, timeout_s: float = 120.0) -> None:
        """Until the node accepts connections on its port (Kafka logs no kraftd line)."""
        deadline = time.monotonic() + timeout_s
        while True:
            code = self.procs[node_id].poll()
            if code is not None:
                raise ClusterError(f"Kafka controller {node_id} exited with code {code}: "
                                   f"{self._latest_log(node_id).strip()[-800:]}")
            try:
                socket.create_connection(self.address(node_id), timeout=1).close()
                return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise ClusterError(f"Kafka controller {node_id} not listening within {timeout_s:.0f} s")
            time.sleep(0.1)


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (user + system, all its threads, and the children it has
    reaped: our snapshot writers), in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime, stime, cutime, cstime


def peak_rss_mb(pid: int) -> float:
    """The process's resident-memory high-water mark (VmHWM), in MB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def _run_side(cluster: ProcessCluster, result: SideResult, *, topics: int, partitions: int, brokers: int,
                    heartbeat_brokers: int, heartbeat_seconds: float, interval_ms: int, in_flight: int,
                    failovers: int, create_only: bool, out: Out) -> None:
    addresses = {i: cluster.address(i) for i in cluster.ports}
    load = ControllerLoad(addresses, cluster.cluster_id)
    admin = ControllerLoad(addresses, cluster.cluster_id, connections=1, request_timeout_ms=1000)
    stop = asyncio.Event()
    keeper: asyncio.Task | None = None
    memory: NodeMemoryWatch | None = None
    try:
        await load.find_active()
        await load.start_brokers(list(range(1000, 1000 + brokers)))
        keeper = asyncio.create_task(load.keep_alive(interval_ms, stop=stop))
        specs = topic_specs(topics, partitions)
        total = topics * partitions
        marks = iter(sorted({max(1, total * k // 10) for k in range(1, 11)}))
        mark = [next(marks)]

        def progress(made: int, seconds: float) -> None:
            if made >= mark[0]:
                out(f"  {made:,} partitions after {seconds:.1f} s")
                mark[0] = next(marks, total + 1)

        out(f"{result.name}: creating {total:,} partitions ({topics:,} topics x {partitions}, RF 1-3) on "
            f"{brokers} brokers, {in_flight} requests in flight")
        started_cpu = {i: cpu_seconds(p.pid) for i, p in cluster.procs.items() if p.poll() is None}
        memory = NodeMemoryWatch({i: p.pid for i, p in cluster.procs.items() if p.poll() is None}).start()
        result.create_s = await create_all(load, specs, in_flight=in_flight, progress=progress)
        result.partitions = total
        # the CPU each controller spent creating: on a shared 2-core machine, steadier than the wall time
        result.create_cpu_s = {i: cpu_seconds(p.pid) - started_cpu.get(i, 0.0) for i, p in cluster.procs.items()
                               if p.poll() is None}
        out(f"{result.name}: {total:,} partitions created in {result.create_s:.1f} s "
            f"({total / result.create_s:,.0f} partitions/s); CPU per controller meanwhile: " +
            ", ".join(f"{i}: {s:.1f} s" for i, s in sorted(result.create_cpu_s.items())) +
            f" (sum {sum(result.create_cpu_s.values()):.1f} s)")
        if create_only:
            result.peak_rss_mb = _node_peaks(memory, cluster, result.name, out)
            return

        stop.set()
        await keeper
        extra = list(range(1000 + brokers, 1000 + heartbeat_brokers))
        try:
            await load.start_brokers(extra)
        except LoadError as err:  # a side that cannot take the brokers still has memory and failover to show
            result.heartbeat_error = str(err)
            out(f"{result.name}: {heartbeat_brokers} brokers not all registered and unfenced: {err}")
        else:
            stop = asyncio.Event()
            latencies: list[float] = []
            keeper = asyncio.create_task(load.keep_alive(interval_ms, latencies, stop))
            await asyncio.sleep(heartbeat_seconds)
            result.heartbeat_ms = latencies[:]
            out(f"{result.name}: {len(load.brokers)} brokers heartbeating every {interval_ms} ms for "
                f"{heartbeat_seconds:.0f} s: {len(latencies):,} heartbeats, latency p50 "
                f"{percentile(latencies, 0.5):.1f} / p99 {percentile(latencies, 0.99):.1f} / max "
                f"{max(latencies, default=float('nan')):.1f} ms")

        result.peak_rss_mb = _node_peaks(memory, cluster, result.name, out)

        for number in range(1, failovers + 1):
            killed = await load.find_active()
            cluster.procs[killed].kill()
            killed_at = time.monotonic()
            cluster.procs[killed].wait()
            admin.dead = load.dead = {killed}
            admin.active = load.active = None
            await admin.create_topics([(f"after-failover-{number}", 1, 3)], timeout_ms=60_000)
            elapsed_ms = (time.monotonic() - killed_at) * 1000
            result.failover_ms.append(elapsed_ms)
            out(f"{result.name}: failover {number}: killed active controller {killed}; CreateTopics answered by "
                f"controller {admin.active} {elapsed_ms:.0f} ms after the kill")
            admin.dead = load.dead = set()
            if number < failovers:
                restarted_at = time.monotonic()
                cluster.restart(killed)
                await load.wait_caught_up(killed)  # a full quorum again before the next kill
                out(f"{result.name}: controller {killed} restarted and caught up in "
                    f"{time.monotonic() - restarted_at:.1f} s")
    finally:
        stop.set()
        if memory is not None:
            memory.stop()  # a failed side's sampler ends too (again, harmlessly, after a peak was taken)
        if keeper is not None:
            await asyncio.gather(keeper, return_exceptions=True)
        await load.close()
        await admin.close()


def _node_peaks(memory: NodeMemoryWatch, cluster: Any, name: str, out: Out) -> dict[int, float]:
    """Each live controller's peak memory: its VmHWM, or, when larger, its resident memory plus
    its snapshot writer's own pages, sampled (engine.bench.node_memory)."""
    peaks = memory.stop()
    live = {i for i, p in cluster.procs.items() if p.poll() is None}
    hwm = {i: peak_rss_mb(cluster.procs[i].pid) for i in live}
    out(f"{name}: peak memory per controller, with any snapshot writer's own pages (its VmHWM alone): " +
        ", ".join(f"{i}: {peaks[i]:,.0f} MB ({hwm[i]:,.0f})" for i in sorted(live) if i in peaks))
    return {i: peaks[i] for i in live if i in peaks}


def _summary(results: list[SideResult], out: Out) -> None:
    out("summary:")
    for r in results:
        hb = r.heartbeat_ms
        fo = r.failover_ms
        rss = list(r.peak_rss_mb.values())
        beats = (f"heartbeat p50 {percentile(hb, 0.5):.1f} / p99 {percentile(hb, 0.99):.1f} ms" if r.heartbeat_error is None
                 else "heartbeats not reached")
        out(f"  {r.name}: create {r.partitions:,} partitions {r.create_s:.1f} s; {beats}; failover to first CreateTopics "
            + (f"min {min(fo):.0f} / median {statistics.median(fo):.0f} / max {max(fo):.0f} ms" if fo else "n/a")
            + (f"; peak RSS {min(rss):,.0f} - {max(rss):,.0f} MB" if rss else ""))


def _create_summary(results: list[SideResult], out: Out) -> None:
    """Over the rounds: each side's creation time, median and range, and the ratio of the medians."""
    names = list(dict.fromkeys(r.name for r in results))
    medians = {}
    for name in names:
        runs = [r for r in results if r.name == name]
        times = [r.create_s for r in runs if r.error is None]
        failed = len(runs) - len(times)
        note = f"; {failed} of {len(runs)} rounds not completed" if failed else ""
        if not times:
            out(f"  {name}: no round completed{note}")
            continue
        medians[name] = statistics.median(times)
        cpu = [sum(r.create_cpu_s.values()) for r in runs if r.error is None and r.create_cpu_s]
        cpu_note = (f"; CPU of its controllers (sum) median {statistics.median(cpu):.1f} s "
                    f"({', '.join(f'{c:.1f}' for c in cpu)})") if cpu else ""
        out(f"  {name}: create {max(r.partitions for r in runs):,} partitions: median {medians[name]:.1f} s, range "
            f"{min(times):.1f} - {max(times):.1f} s over {len(times)} rounds ({', '.join(f'{t:.1f}' for t in times)})"
            f"{cpu_note}{note}")
    if len(medians) == 2:
        ours, theirs = names
        out(f"  ratio of the medians, {ours} / {theirs}: {medians[ours] / medians[theirs]:.2f}")


def bench_controller(*, topics: int = 10_000, partitions: int = 100, brokers: int = 12, heartbeat_brokers: int = 1000,
                     heartbeat_seconds: float = 20.0, interval_ms: int = 2000, in_flight: int = 4, failovers: int = 3,
                     kafka_libs: Path | None = None, kafka_heap: str = "1G", skip_ours: bool = False,
                     settings: dict[str, object] | None = None, rounds: int = 1, create_only: bool = False,
                     out: Out = print) -> list[SideResult]:
    """Run our side (unless ``skip_ours``) and, with ``kafka_libs``, Kafka's, ``rounds`` times
    alternating (ours, Kafka's, ours, ...), each on fresh controllers; the figures of every run.
    ``settings`` (Kafka's names) go into every controller's config, both sides. ``create_only``:
    only the creation (and the peak RSS after it), no heartbeat phase and no failover."""
    settings = {**SETTINGS, **(settings or {})}
    if heartbeat_brokers < brokers:
        raise ConfigError(f"--heartbeat-brokers ({heartbeat_brokers}) must be at least --brokers ({brokers})")
    tune_gc_for_server()  # the load client too holds many requests' objects at once
    out("settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()))
    out(f"machine: {os.cpu_count()} cpus, load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    sides: list[tuple[str, Callable[[Path], ProcessCluster]]] = []
    if not skip_ours:
        sides.append(("kraftd", lambda root: ProcessCluster(root, settings)))
    if kafka_libs is not None:
        version = next(kafka_libs.glob("kafka-clients-*.jar"), Path("kafka-clients-?.jar")).stem
        name = "Kafka " + version.removeprefix("kafka-clients-")
        sides.append((name, lambda root: KafkaControllers(root, kafka_libs, kafka_heap, settings)))
    results = []
    for number in range(1, rounds + 1):
        for name, make in sides:
            if rounds > 1:
                out(f"round {number} of {rounds}: {name}")
            root = Path(tempfile.mkdtemp(prefix="kraftd-bench-controller-"))
            cluster = make(root)
            result = SideResult(name)
            try:
                cluster.launch()
                asyncio.run(_run_side(cluster, result, topics=topics, partitions=partitions, brokers=brokers,
                                      heartbeat_brokers=heartbeat_brokers, heartbeat_seconds=heartbeat_seconds,
                                      interval_ms=interval_ms, in_flight=in_flight, failovers=failovers,
                                      create_only=create_only, out=out))
            except LoadError as err:
                if rounds == 1:
                    raise LoadError(f"{name}: {err} (logs in {root})") from None
                # one failed run of several: said, its logs kept, and the other runs go on
                result.error = str(err)
                out(f"{name}: round {number} not completed: {err} (logs in {root})")
            finally:
                cluster.kill()
            if result.error is None:
                shutil.rmtree(root, ignore_errors=True)  # a million partitions' logs: not kept
            results.append(result)
    out(f"load average after: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if create_only or rounds > 1:
        out("summary:")
        _create_summary(results, out)
    if not create_only:
        _summary(results, out)
    return results


__all__ = ["KafkaControllers", "SideResult", "bench_controller", "peak_rss_mb"]
