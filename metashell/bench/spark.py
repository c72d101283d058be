"""``metashell bench spark``: how fast the kraft data source reads a fleet's logs, and how it scales.

    metashell bench spark --clusters 20 --records 2000000 [--snapshot-every 250000] [--dir DIR]

1. the fleet (metashell/bench/spark_logs.py): N clusters' node directories of R records each,
   a snapshot every K records, each with its own cluster id; reused when DIR holds the same;
2. for the ``records`` table (per-file tasks) and ``partition_changes`` (per-interval tasks,
   each replaying from its snapshot), one job that builds every row and column, timed
   (metashell/bench/spark_job.py), in these Spark applications, each a process of its own:
   - the data source on ``local[1]`` and ``local[2]`` (1 and 2 executor cores);
   - the driver-side export (the pure-Python replay in the driver, then Arrow to Spark: what
     ``metashell export`` did before the data source) on ``local[2]``, over ``--driver-clusters``
     clusters only (it is one Python thread: the whole fleet would take long to say the same);
   - the data source on a standalone cluster of two workers of 1 core each (started here from
     pyspark's spark-class, metashell/bench/spark_cluster.py), with ``spark.cores.max`` 1 and 2.
3. a table: rows, seconds, the log's records a second, and the speed-up over local[1].

Records/s counts the records of the log read (R a cluster), for both tables: the work is
decoding them; ``partition_changes`` also replays them. Seconds exclude the session's start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from engine.common.command_line import OneLineParser
from engine.common.errors import ConfigError, MetadataError
from metashell.bench.spark_logs import FleetSpec, creation_records, make_fleet
from metashell.bench.work_dir import bench_root

TABLES = ("records", "partition_changes")


class BenchFailed(MetadataError):
    """A bench application that did not finish: its command and its last line."""


@dataclass(frozen=True)
class Run:
    label: str
    master: str
    way: str  # "source" or "driver"
    clusters: int  # how many of the fleet's clusters it reads
    conf: tuple[tuple[str, str], ...] = ()
    executors: int = 0  # standalone: wait for this many executors before timing


@dataclass(frozen=True)
class Measured:
    run: Run
    table: str
    rows: int
    seconds: float
    records: int  # the log records read

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else float("inf")


def build_bench_spark_parser() -> OneLineParser:
    parser = OneLineParser(prog="metashell bench spark",
                           description="Time the kraft Spark data source over many clusters' logs: local[1] "
                                       "against local[2], the driver-side export against the data source, "
                                       "and a standalone cluster of 1 and 2 executor cores.")
    parser.add_argument("--clusters", type=int, default=20, help="clusters in the fleet (default 20)")
    parser.add_argument("--records", type=int, default=2_000_000, help="records a cluster (default 2,000,000)")
    parser.add_argument("--snapshot-every", type=int, default=250_000,
                        help="a snapshot every this many records (default 250,000)")
    parser.add_argument("--segment-mb", type=int, default=8, help="segment size in MiB (default 8)")
    parser.add_argument("--topics", type=int, default=1_000, help="topics of 10 partitions a cluster (default 1,000)")
    parser.add_argument("--dir", help="where the fleet goes (reused when it holds the same fleet)")
    parser.add_argument("--keep", action="store_true", help="keep a fleet written to a temporary directory")
    parser.add_argument("--tables", default=",".join(TABLES), help=f"tables to time (default {','.join(TABLES)})")
    parser.add_argument("--driver-clusters", type=int, default=2,
                        help="clusters the driver-side export reads (default 2; 0 skips it)")
    parser.add_argument("--local-masters", default="local[1],local[2]",
                        help="the local masters the data source runs on (default local[1],local[2]; '' skips)")
    parser.add_argument("--no-standalone", action="store_true", help="skip the standalone cluster")
    parser.add_argument("--rounds", type=int, default=1, help="times each job runs in its application (default 1)")
    return parser


def run_bench_spark(args) -> int:
    if min(args.clusters, args.snapshot_every, args.segment_mb, args.rounds, args.topics) < 1:
        raise ConfigError("--clusters, --snapshot-every, --segment-mb, --topics and --rounds must be positive")
    if args.records <= creation_records(args.topics):
        raise ConfigError(f"--records must be more than {creation_records(args.topics):,} "
                          f"(the creation of {args.topics:,} topics and their partitions)")
    tables = [t for t in args.tables.split(",") if t]
    from metashell.spark.table_schema import SOURCE_TABLES

    for table in tables:
        if table not in SOURCE_TABLES:
            raise ConfigError(f"unknown table {table!r} (known: {', '.join(SOURCE_TABLES)})")
    spec = FleetSpec(args.clusters, args.records, args.snapshot_every, args.segment_mb << 20, topics=args.topics)
    with bench_root(args.dir, prefix="metashell-bench-spark-", name="fleet", keep=args.keep) as root:
        bench_spark(root, spec, tables, runs=plan_runs(args), rounds=args.rounds)
    return 0


def plan_runs(args) -> list[Run]:
    runs = []
    for master in (m for m in args.local_masters.split(",") if m):
        runs.append(Run(f"source {master}", master, "source", args.clusters))
    if args.driver_clusters > 0:
        runs.append(Run("driver export local[2]", "local[2]", "driver", min(args.driver_clusters, args.clusters)))
    if not args.no_standalone:
        for cores in (1, 2):
            runs.append(Run(f"source standalone {cores}x1 core", "standalone", "source", args.clusters,
                            (("spark.cores.max", str(cores)), ("spark.executor.cores", "1"),
                             ("spark.executor.memory", "1g")), executors=cores))
    return runs


def bench_spark(root: Path, spec: FleetSpec, tables: list[str], *, runs: list[Run], rounds: int = 1,
                say: Callable[[str], None] = lambda line: print(line, flush=True)) -> list[Measured]:
    """Make (or reuse) the fleet, time each run's tables, print the table; returns the measurements."""
    say(f"metashell bench spark: {spec.clusters} clusters x {spec.records:,} records, a snapshot every "
        f"{spec.snapshot_every:,}, segments of {spec.segment_bytes >> 20} MiB; {os.cpu_count()} CPUs, "
        f"load average {_load()}")
    started = time.perf_counter()
    dirs = make_fleet(root, spec, progress=lambda line: say(f"  {line}"))
    say(f"  fleet ready in {time.perf_counter() - started:.1f} s")
    cluster = None
    measured: list[Measured] = []
    try:
        for run in runs:
            master = run.master
            if master == "standalone":
                if cluster is None:
                    cluster = _start_cluster(root.parent / f"{root.name}-spark-cluster", say)
                master = cluster.url
            measured += _measure(run, master, tables, [str(d) for d in dirs[:run.clusters]], spec, rounds, say)
    finally:
        if cluster is not None:
            cluster.stop()
    say(format_table(measured))
    return measured


def _start_cluster(work: Path, say: Callable[[str], None]):
    from metashell.bench.spark_cluster import StandaloneCluster

    started = time.perf_counter()
    cluster = StandaloneCluster.start(work, workers=2, cores=1, memory="2g")
    say(f"  standalone cluster {cluster.url} (2 workers, 1 core each) up in {time.perf_counter() - started:.1f} s")
    return cluster


def _measure(run: Run, master: str, tables: list[str], node_dirs: list[str], spec: FleetSpec, rounds: int,
             say: Callable[[str], None]) -> list[Measured]:
    from metashell.bench.spark_cluster import driver_env

    job = {"master": master, "conf": dict(run.conf), "way": run.way, "tables": tables, "node_dirs": node_dirs,
           "rounds": rounds, "wait_executors": run.executors}
    done = subprocess.run([sys.executable, "-m", "metashell.bench.spark_job", json.dumps(job)], capture_output=True,
                          text=True, env=driver_env(), stdin=subprocess.DEVNULL, check=False)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0:
        last = next((l for l in reversed(done.stderr.strip().splitlines()) if l.strip()), "no output")
        raise BenchFailed(f"{run.label}: exit {done.returncode}: {last.strip()}")
    out = []
    for line in lines:
        if "session_s" in line:
            say(f"  {run.label}: session started in {line['session_s']:.1f} s")
            continue
        m = Measured(run, line["table"], line["rows"], line["seconds"], spec.records * len(node_dirs))
        say(f"  {run.label}: {m.table} {m.rows:,} rows in {m.seconds:.2f} s ({m.records_per_s:,.0f} records/s)")
        out.append(m)
    return out


def format_table(measured: list[Measured]) -> str:
    """One line a run and table: the best round's seconds, rows, records/s and the speed-up over
    the data source on local[1]."""
    best: dict[tuple[str, str], Measured] = {}
    for m in measured:
        key = (m.run.label, m.table)
        if key not in best or m.seconds < best[key].seconds:
            best[key] = m
    base = {table: m.records_per_s for (label, table), m in best.items() if label == "source local[1]"}
    lines = [f"{'run':<30} {'table':<18} {'clusters':>8} {'rows':>12} {'seconds':>9} {'records/s':>12} {'x local[1]':>10}"]
    for (label, table), m in best.items():
        ratio = f"{m.records_per_s / base[table]:.2f}" if table in base else "-"
        lines.append(f"{label:<30} {table:<18} {m.run.clusters:>8} {m.rows:>12,} {m.seconds:>9.2f} "
                     f"{m.records_per_s:>12,.0f} {ratio:>10}")
    return "\n".join(lines)


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"
