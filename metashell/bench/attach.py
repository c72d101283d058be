"""``metashell bench attach``: how fast the live attachment catches up, and how far the tree trails a commit.

For each side (our ``kraftd`` controllers, then Apache Kafka's, same shape, same run):

1. a quorum of ``voters`` controller processes on 127.0.0.1, each starting from a snapshot of
   ``partitions`` partitions (metashell.bench.attach_cluster), is launched; the bench waits
   until DescribeQuorum names a leader and the controllers are idle (loading done);
2. *attach*: the attached tool, a process of its own (metashell.bench.attach_tool), runs
   ``Attachment.start()`` to caught up, answers ``ls /image/topics/byName`` (the first answer,
   checked against the image's topics), then decodes every partition (the whole image); then,
   apart, the FetchSnapshot download alone, the index alone and the decoding alone, and the
   tool's memory growth;
3. *commit to tree*: a load process (metashell.bench.attach_load) commits ``records_per_s``
   config records per second for ``seconds``, ``records_per_request`` per IncrementalAlterConfigs;
   the commit time of a record is when the controller's answer arrived (it answers once the
   records are committed), the appearance time when the attached tool's tree first showed it
   (drained, replayed into its MetadataHistory, looked up). Both are ``time.monotonic()``, one clock
   for all processes. Reported: p50/p99/max of appearance minus commit, and of appearance minus
   the request's send, and the records per second committed.

Prints as it goes and a table of both sides at the end; asserts nothing (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO

from engine.common.command_line import OneLineParser
from engine.common.errors import MetadataError
from engine.bench.controller import SETTINGS
from engine.bench.controller_load import ControllerLoad, LoadError, percentile
from engine.cluster.kafka_dist import KafkaUnavailable, find_distribution
from engine.cluster.processes import SOURCE_ROOT, ClusterError, ProcessCluster
from metashell.bench.attach_cluster import SeededKafka, SeededKraftd, SnapshotSeed
from metashell.bench.attach_tool import FIRST_QUESTION

Out = Callable[[str], None]
READY_TIMEOUT_S = 300.0  # a safety net: three JVMs loading a million partitions on two cores
IDLE_CPU_SHARE = 0.3  # controllers together running or waiting to run below this share of one core ...
IDLE_WINDOW_S = 0.5  # ... over this long: they have loaded
TOOL_TIMEOUT_S = 600.0


class BenchError(MetadataError):
    """A side could not be measured (the message says which and why)."""


@dataclass
class SideFigures:
    name: str
    partitions: int = 0
    ready_s: float = float("nan")  # launch to a leader named and the controllers idle
    attached: dict = field(default_factory=dict)  # the tool's "attached" figures
    split: dict | None = None  # FetchSnapshot alone, replay alone
    commit_to_tree_ms: list[float] = field(default_factory=list)
    send_to_tree_ms: list[float] = field(default_factory=list)
    tool_work_ms: list[float] = field(default_factory=list)  # per update: drain, replay, tree lookup
    commit_ms: list[float] = field(default_factory=list)  # send to answer: the controller's commit latency
    requests: int = 0
    failed_requests: int = 0
    unseen: int = 0  # answered without an error, never shown by the tree
    committed_records_per_s: float = float("nan")
    # per record's request, ms: the stages of commit to tree (STAGES), from the traced tool
    stages: dict[str, list[float]] = field(default_factory=dict)
    tail: dict[str, float] = field(default_factory=dict)  # the stages' means over the slowest 1 % (commit to tree)
    machine: dict = field(default_factory=dict)  # during the load: run queue, CPU pressure, CPU waits
    error: str | None = None


# the stages of a record's way from the load's send to the tree (ms), from the timestamps of
# metashell.bench.attach_tool's trace: sent and answered (the load), appended (the leader's batch
# timestamp), arrived (the Fetch answer that committed it reached the attachment), published
# (handed to the tool's side), drained (the tool's thread took it), shown (the tree answered)
STAGES = (("send to leader append", "sent", "appended"),
          ("leader append to commit answered", "appended", "answered"),
          ("leader append to Fetch answer at the tool", "appended", "arrived"),
          ("commit answered to Fetch answer at the tool", "answered", "arrived"),
          ("Fetch answer to published", "arrived", "published"),
          ("published to drained (the tool's thread woke)", "published", "drained"),
          ("drained to shown (replay, tree lookup)", "drained", "shown"))
TAIL_SHARE = 0.01


class MachineWatch:
    """While the load runs: the run queue (/proc/loadavg's runnable entities, every 100 ms), and
    for the given processes the seconds their threads ran and waited for a CPU (schedstat)."""

    def __init__(self, pids: dict[str, int]):
        self.pids = pids
        self.runnable: list[int] = []
        self._stop = threading.Event()
        self._before = {name: _run_wait(pid) for name, pid in pids.items()}
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.1):
            try:
                self.runnable.append(int(Path("/proc/loadavg").read_text().split()[3].split("/")[0]))
            except (OSError, ValueError, IndexError):
                pass

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        span = time.monotonic() - self._started
        out: dict = {"span_s": span, "runnable_p50": percentile(self.runnable, 0.5),
                     "runnable_max": max(self.runnable, default=0), "cpu_pressure": _cpu_pressure()}
        for name, pid in self.pids.items():
            (ran0, waited0), (ran, waited) = self._before[name], _run_wait(pid)
            out[name] = {"ran_s": ran - ran0, "waited_s": waited - waited0}
        return out


def _run_wait(pid: int) -> tuple[float, float]:
    """Seconds a process's threads ran on a CPU and waited in the run queue (schedstat)."""
    ran = waited = 0
    for task in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            fields = task.read_text().split()
            ran, waited = ran + int(fields[0]), waited + int(fields[1])
        except (OSError, ValueError, IndexError):
            pass  # a thread that just ended
    return ran / 1e9, waited / 1e9


def _cpu_pressure() -> str:
    try:
        return Path("/proc/pressure/cpu").read_text().splitlines()[0]
    except (OSError, IndexError):
        return "n/a"


def _controllers_arg(cluster: ProcessCluster) -> str:
    return ",".join(f"{i}@{cluster.address(i)[0]}:{cluster.address(i)[1]}" for i in sorted(cluster.ports))


def _busy_s(pids: list[int]) -> float:
    """Seconds the processes' threads ran or waited to run (/proc/PID/task/*/schedstat): on a
    loaded machine a starved process still loading is busy by this count, not idle."""
    total = 0
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").glob("*/schedstat"):
            try:
                running_ns, waiting_ns = task.read_text().split()[:2]
                total += int(running_ns) + int(waiting_ns)
            except (OSError, ValueError):
                pass  # a thread that just ended
    return total / 1e9


def wait_ready(cluster: ProcessCluster, timeout_s: float = READY_TIMEOUT_S) -> float:
    """Until DescribeQuorum names a leader and the controllers run (or wait to run) less than
    IDLE_CPU_SHARE of a core over IDLE_WINDOW_S (they have loaded the snapshot): seconds waited."""
    started = time.monotonic()

    async def leader() -> None:
        load = ControllerLoad({i: cluster.address(i) for i in cluster.ports}, cluster.cluster_id, connections=1)
        try:
            await load.find_active(timeout_s)
        finally:
            await load.close()

    asyncio.run(leader())
    pids = [p.pid for p in cluster.procs.values()]
    while True:
        before = _busy_s(pids)
        time.sleep(IDLE_WINDOW_S)
        if _busy_s(pids) - before < IDLE_CPU_SHARE * IDLE_WINDOW_S:
            return time.monotonic() - started
        if time.monotonic() - started > timeout_s:
            raise BenchError(f"the controllers still busy {timeout_s:.0f} s after the launch")


class _Lines:
    """A child's standard output, one JSON object a line, read on a thread (waits have deadlines)."""

    def __init__(self, stream: TextIO):
        self._queue: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: TextIO) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def next(self, key: str, timeout_s: float, who: str) -> dict:
        """The next object holding ``key`` (or ``failed``: BenchError); others are passed over."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise BenchError(f"{who}: no {key!r} within {timeout_s:.0f} s") from None
            if line is None:
                raise BenchError(f"{who} ended before {key!r}")
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if "failed" in obj:
                raise BenchError(f"{who}: {obj['failed']}")
            if key in obj:
                return obj

    def rest(self) -> list[dict]:
        out = []
        while True:
            line = self._queue.get()
            if line is None:
                return out
            try:
                out.append(json.loads(line))
            except ValueError:
                pass


def _child(module: str, *args: str, stdin: bool = False) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", module, *args], stdout=subprocess.PIPE, text=True,
                            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, cwd=SOURCE_ROOT)


def _end(process: subprocess.Popen | None) -> None:
    if process is not None and process.poll() is None:
        process.kill()
    if process is not None:
        process.wait()


def measure_side(cluster: ProcessCluster, figures: SideFigures, *, records_per_s: float, records_per_request: int,
                 seconds: float, out: Out, expected_partitions: int | None = None) -> None:
    launched = time.monotonic()
    cluster.launch()
    wait_ready(cluster)
    figures.ready_s = time.monotonic() - launched
    out(f"{figures.name}: {cluster.voters} controllers up, a leader named and idle after {figures.ready_s:.1f} s")
    controllers = _controllers_arg(cluster)
    tool = load = None
    try:
        tool = _child("metashell.bench.attach_tool", "--bootstrap", cluster.bootstrap, "--controllers",
                      controllers, stdin=True)
        lines = _Lines(tool.stdout)
        figures.attached = lines.next("attached", TOOL_TIMEOUT_S, f"{figures.name}: the attached tool")["attached"]
        a = figures.attached
        figures.partitions = a["partitions"]
        right = a["topics_listed"] == a["topics"] and (expected_partitions is None or a["partitions"] == expected_partitions)
        out(f"{figures.name}: attached to {a['partitions']:,} partitions (snapshot at offset {a['snapshot_offset']:,}): "
            f"caught up {a['caught_up_s']:.2f} s, first answer (ls {FIRST_QUESTION}: {a['topics_listed']:,} topics"
            f"{'' if right else ', WRONG'}) {a['first_answer_s']:.2f} s, whole image {a['whole_image_s']:.2f} s; "
            f"the tool's RSS grew {a['rss_first_answer_mb']:,.0f} MB by the first answer, {a['rss_growth_mb']:,.0f} MB in all")
        steps = a.get("milestones", {})
        out(f"{figures.name}: the attach's steps from start(): " + ", ".join(
            f"{name} {at:.2f} s" for name, at in sorted(steps.items(), key=lambda item: item[1])))
        if not right:
            raise BenchError(f"{figures.name}: the attached tool listed {a['topics_listed']:,} of {a['topics']:,} topics "
                             f"and decoded {a['partitions']:,} partitions (expected {expected_partitions})")

        leader = cluster.procs.get(a["leader_id"])
        watch = MachineWatch({"leader": leader.pid} if leader is not None else {})
        load = _child("metashell.bench.attach_load", "--controllers", controllers, "--cluster-id",
                      cluster.cluster_id, "--records-per-s", str(records_per_s), "--records-per-request",
                      str(records_per_request), "--seconds", str(seconds))
        load_lines = _Lines(load.stdout)
        load_lines.next("ready", 120, f"{figures.name}: the load")
        out(f"{figures.name}: committing {records_per_s:,.0f} records/s ({records_per_request} per request) "
            f"for {seconds:.0f} s")
        rest = load_lines.rest()
        load.wait()
        answers = [r for r in rest if "n" in r]
        done = next((r for r in rest if "done" in r), None)
        failed = next((r for r in rest if "failed" in r), None)
        if done is None:
            raise BenchError(f"{figures.name}: the load failed: {failed['failed'] if failed else 'no summary'}")
        ok = [r for r in answers if r["error"] is None]
        tool.stdin.write(f"stop {max((r['n'] for r in ok), default=-1)}\n")
        tool.stdin.flush()
        figures.machine = watch.stop()
        followed = lines.next("followed", TOOL_TIMEOUT_S, f"{figures.name}: the attached tool")["followed"]
        figures.machine["tool"] = {"ran_s": followed["ran_s"], "waited_s": followed["waited_s"]}
        figures.split = lines.next("split", TOOL_TIMEOUT_S, f"{figures.name}: the attached tool")["split"]
        tool.wait()
        _latencies(figures, answers, ok, followed["seen"], done, records_per_request)
        _stages(figures, ok, followed["trace"])
        figures.tool_work_ms = followed["work_ms"]
        errors = Counter(r["error"] for r in answers if r["error"] is not None)
        if errors:
            out(f"{figures.name}: failed requests: " + "; ".join(f"{n} x {e}" for e, n in errors.most_common(3)))
        out(f"{figures.name}: {len(ok):,} of {len(answers):,} requests committed "
            f"({figures.committed_records_per_s:,.0f} records/s), {figures.unseen} never shown; commit to tree "
            f"p50 {percentile(figures.commit_to_tree_ms, 0.5):.1f} / p99 {percentile(figures.commit_to_tree_ms, 0.99):.1f}"
            f" / max {max(figures.commit_to_tree_ms, default=float('nan')):.1f} ms")
        if figures.split:
            s = figures.split
            out(f"{figures.name}: apart: FetchSnapshot of {s['bytes'] / 1e6:,.1f} MB {s['fetch_s']:.2f} s, "
                f"index {s['index_s']:.2f} s, every topic decoded {s['decode_s']:.2f} s")
    finally:
        _end(load)
        _end(tool)


def _latencies(figures: SideFigures, answers: list[dict], ok: list[dict], seen: dict[str, float], done: dict,
               records_per_request: int) -> None:
    figures.requests, figures.failed_requests = len(answers), len(answers) - len(ok)
    for r in ok:
        at = seen.get(str(r["n"]))
        figures.commit_ms.append((r["answered"] - r["sent"]) * 1000)
        if at is None:
            figures.unseen += 1
            continue
        figures.commit_to_tree_ms.append((at - r["answered"]) * 1000)
        figures.send_to_tree_ms.append((at - r["sent"]) * 1000)
    if ok:
        span = max(r["answered"] for r in ok) - done["started"]
        figures.committed_records_per_s = len(ok) * records_per_request / span if span > 0 else float("nan")


def _stages(figures: SideFigures, ok: list[dict], trace: dict[str, list[float]]) -> None:
    """Each request's stages (STAGES), and their means over the slowest TAIL_SHARE by commit to tree."""
    rows = []
    for r in ok:
        t = trace.get(str(r["n"]))
        if t is not None:
            rows.append(dict(zip(("appended", "arrived", "published", "drained", "shown"), t),
                             sent=r["sent"], answered=r["answered"]))
    figures.stages = {label: [(row[b] - row[a]) * 1000 for row in rows] for label, a, b in STAGES}
    rows.sort(key=lambda row: row["shown"] - row["answered"])
    tail = rows[-max(1, round(len(rows) * TAIL_SHARE)):] if rows else []
    figures.tail = {label: sum((row[b] - row[a]) * 1000 for row in tail) / len(tail) for label, a, b in STAGES} \
        if tail else {}


def _row(label: str, values: list[str], width: int = 26) -> str:
    return f"  {label:<50}" + "".join(f"{v:>{width}}" for v in values)


def _ms(value: float) -> str:
    return f"{value:.1f}" if abs(value) < 100 else f"{value:,.0f}"


def _ms3(values: list[float]) -> str:
    if not values:
        return "n/a"
    return f"{_ms(percentile(values, 0.5))} / {_ms(percentile(values, 0.99))} / {_ms(max(values))}"


def summary(sides: list[SideFigures], *, records_per_s: float, seconds: float, out: Out) -> None:
    out("summary:")
    out(_row("", [s.name for s in sides]))
    for s in sides:
        if s.error:
            out(f"  {s.name}: not measured: {s.error}")

    def col(fmt: Callable[[SideFigures], str]) -> list[str]:
        return [fmt(s) if not s.error or s.attached else "-" for s in sides]

    out(_row("partitions", col(lambda s: f"{s.partitions:,}")))
    out(_row("launch to leader and idle controllers (s)", col(lambda s: f"{s.ready_s:.1f}")))
    def attached(key: str) -> Callable[[SideFigures], str]:
        return lambda s: f"{s.attached.get(key, float('nan')):.2f}"

    def apart(key: str) -> Callable[[SideFigures], str]:
        return lambda s: f"{s.split[key]:.2f}" if s.split else "n/a"

    out(_row("attach: start() to caught up (s)", col(attached("caught_up_s"))))
    out(_row(f"attach: first answer, ls {FIRST_QUESTION} (s)", col(attached("first_answer_s"))))
    out(_row("attach: start() to the whole image decoded (s)", col(attached("whole_image_s"))))
    out(_row("then: heap settled, gc.collect + freeze (s)", col(attached("settle_s"))))
    out(_row("apart: FetchSnapshot alone (s)", col(apart("fetch_s"))))
    out(_row("apart: index of the snapshot alone (s)", col(apart("index_s"))))
    out(_row("apart: every topic decoded alone (s)", col(apart("decode_s"))))
    out(_row("snapshot size (MB)", col(lambda s: f"{s.split['bytes'] / 1e6:,.1f}" if s.split else "n/a")))
    out(_row("the tool's RSS growth: first answer / whole image (MB)",
             col(lambda s: f"{s.attached.get('rss_first_answer_mb', float('nan')):,.0f} / "
                           f"{s.attached.get('rss_growth_mb', float('nan')):,.0f}")))
    out(_row(f"records/s committed (asked {records_per_s:,.0f}, {seconds:.0f} s)",
             col(lambda s: f"{s.committed_records_per_s:,.0f}")))
    out(_row("requests failed / committed but never shown", col(lambda s: f"{s.failed_requests} / {s.unseen}")))
    out(_row("commit to tree p50 / p99 / max (ms)", col(lambda s: _ms3(s.commit_to_tree_ms))))
    out(_row("  the tool's work per update p50 / p99 / max (ms)", col(lambda s: _ms3(s.tool_work_ms))))
    out(_row("send to tree p50 / p99 / max (ms)", col(lambda s: _ms3(s.send_to_tree_ms))))
    out(_row("send to commit answered p50 / p99 / max (ms)", col(lambda s: _ms3(s.commit_ms))))
    out("  where commit to tree goes, per record (p50 / p99 / max, ms; the tail: mean over the slowest 1 %):")
    for label, _, _ in STAGES:
        out(_row(f"  {label}", col(lambda s, k=label: f"{_ms3(s.stages.get(k, []))} [{_ms(s.tail.get(k, float('nan')))}]"),
                 width=30))
    out(_row("during the load: runnable tasks p50 / max (2 cpus)",
             col(lambda s: f"{s.machine.get('runnable_p50', float('nan')):.0f} / {s.machine.get('runnable_max', 0)}")))
    for who in ("leader", "tool"):
        out(_row(f"  the {who}'s threads: ran / waited for a CPU (s)",
                 col(lambda s, w=who: (f"{s.machine[w]['ran_s']:.1f} / {s.machine[w]['waited_s']:.1f}"
                                       if w in s.machine else "n/a"))))
    out(_row("  CPU pressure at the end", col(lambda s: s.machine.get("cpu_pressure", "n/a").replace("some ", ""))))


def _load_average() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def bench_attach(*, partitions: int = 1_000_000, records_per_s: float = 1000.0, seconds: float = 30.0,
                 records_per_request: int = 10, voters: int = 3, kafka: str | None = "4.3.1",
                 kafka_home: Path | None = None, kafka_heap: str = "4G", kraftd: bool = True,
                 out: Out = print) -> list[SideFigures]:
    """Measure each side; the figures (printed as they come, and a summary table)."""
    out(f"metashell bench attach: {partitions:,} partitions, {voters} controllers a side, then "
        f"{records_per_s:,.0f} records/s for {seconds:.0f} s")
    out(f"machine: {os.cpu_count()} cpus, load average {_load_average()}")
    sides: list[tuple[SideFigures, Callable[[Path, SnapshotSeed | None], ProcessCluster]]] = []
    if kraftd:
        sides.append((SideFigures("kraftd"), lambda root, seed: SeededKraftd(root, SETTINGS, seed, voters)))
    if kafka:
        try:
            dist = find_distribution(kafka, kafka_home)
            sides.append((SideFigures(f"Kafka {dist.version}"),
                          lambda root, seed: SeededKafka(root, dist.libs, kafka_heap, SETTINGS, seed, voters)))
            out(f"Kafka {dist.version}: {dist.libs}, controllers with -Xmx{kafka_heap}")
        except KafkaUnavailable as err:
            side = SideFigures(f"Kafka {kafka}", error=f"no Kafka quorum: {err}")
            sides.append((side, lambda root, seed: None))  # type: ignore[arg-type,return-value]
            out(f"Kafka {kafka}: not run: {err}")
    started = time.perf_counter()
    seed = SnapshotSeed(partitions) if partitions > 0 else None
    for figures, make in sides:
        if figures.error:
            continue
        root = Path(tempfile.mkdtemp(prefix="metashell-bench-attach-"))
        cluster = make(root, seed)
        try:
            measure_side(cluster, figures, records_per_s=records_per_s, records_per_request=records_per_request,
                         seconds=seconds, out=out, expected_partitions=partitions)
        except (BenchError, ClusterError, LoadError) as err:
            figures.error = f"{err.one_line() if hasattr(err, 'one_line') else err} (logs in {root})"
            out(f"{figures.name}: {figures.error}")
        finally:
            cluster.kill()
        if figures.error is None:
            shutil.rmtree(root, ignore_errors=True)
    if seed is not None:
        out(f"(the snapshot's records were encoded in {seed.encode_s:.1f} s, not counted; "
            f"the whole bench took {time.perf_counter() - started:.0f} s)")
    out(f"load average after: {_load_average()}")
    summary([f for f, _ in sides], records_per_s=records_per_s, seconds=seconds, out=out)
    return [f for f, _ in sides]


def build_bench_attach_parser() -> OneLineParser:
    parser = OneLineParser(prog="metashell bench attach",
                           description="Attach time to a quorum of many partitions and commit-to-tree latency, "
                                       "kraftd's controllers and Apache Kafka's side by side (docs/performance.md).")
    parser.add_argument("--partitions", type=int, default=1_000_000, help="the controllers start from a snapshot "
                        "of this many partitions (0: an empty cluster)")
    parser.add_argument("--records-per-s", type=float, default=1000.0, help="the committed records' rate")
    parser.add_argument("--seconds", type=float, default=30.0, help="how long the load commits")
    parser.add_argument("--records-per-request", type=int, default=10,
                        help="config records per IncrementalAlterConfigs (one committed batch)")
    parser.add_argument("--voters", type=int, default=3, help="controllers a side")
    parser.add_argument("--kafka", default="4.3.1", metavar="VERSION",
                        help="Apache Kafka's version for the second side ('none': ours alone)")
    parser.add_argument("--kafka-home", type=Path, metavar="DIR",
                        help="an unpacked Kafka release (default: the test suite's jar cache)")
    parser.add_argument("--kafka-heap", default="4G", help="-Xmx and -Xms of each Kafka controller")
    parser.add_argument("--kafka-only", action="store_true", help="Kafka's side alone")
    return parser


def run_bench_attach(args) -> int:
    """``metashell bench attach ARGS`` (parsed by build_bench_attach_parser): 0 once measured, 1 if a side failed."""
    if args.partitions < 0 or args.records_per_s <= 0 or args.seconds <= 0 or args.records_per_request < 1 \
            or args.voters < 1:
        print("metashell bench attach: --partitions must be at least 0, --records-per-s and --seconds positive, "
              "--records-per-request and --voters at least 1", file=sys.stderr)
        return 2
    kafka = None if args.kafka.lower() == "none" else args.kafka
    sides = bench_attach(partitions=args.partitions, records_per_s=args.records_per_s, seconds=args.seconds,
                         records_per_request=args.records_per_request, voters=args.voters, kafka=kafka,
                         kafka_home=args.kafka_home, kafka_heap=args.kafka_heap, kraftd=not args.kafka_only)
    return 1 if any(s.error for s in sides) else 0


if __name__ == "__main__":
    sys.exit(run_bench_attach(build_bench_attach_parser().parse_args()))
