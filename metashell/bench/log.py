"""``metashell bench log``: how fast ``log`` answers over a big archive, through its history index.

    metashell bench log --records 10000000 [--dir DIR] [--keep] [--tail-records N]

Steps, each timed and printed:

1. write an archive of N records (metashell/bench/log_history.py; reused when DIR holds one of at
   least N records);
2. build its history index from scratch (metashell/history/history_index.py): one replay of the
   whole archive into change items, written to sqlite (what the first ``log`` pays on an archive
   without an index); the cost a record;
   (``--keep-index``: the index already there is reused, checked and brought up to date);
3. ``log`` cold: a fresh process (``python -m metashell.cli --log-dir DIR -c "log PATH"``), its
   start, the opening of the archive (from its snapshot) and the index's check included;
4. ``log`` warm: the same command again in one session;
5. the recorder's upkeep (metashell/bench/log_recorder.py): ``--tail-records`` more records
   (default 100,000) appended as a recorder appends them (a snapshot every 20,000), the index
   brought up to date after every 5,000 as the recorder does: the cost a record;
6. ``log`` cold again after that tail: what a question on an archive a recorder wrote costs.

The paths asked: ``/configs/TOPIC/X/retention.ms`` (changed about once every 200 records: a
hot key) and ``/topics/X/0`` (a partition changed about once every 25,000 records at the default
10,000 partitions), each whole and with ``-n 10``; and ``/topics/X/0 --since`` the last 1%.
Cold runs start a fresh process; the files may still be in the page cache (nothing here drops it).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from engine.common.command_line import OneLineParser
from metashell.bench.work_dir import bench_root

QUERIES = ("log /configs/TOPIC/X/retention.ms", "log /configs/TOPIC/X/retention.ms -n 10",
           "log /topics/X/0", "log /topics/X/0 -n 10")


def build_bench_log_parser() -> OneLineParser:
    parser = OneLineParser(prog="metashell bench log",
                           description="Time log over a big archive: writing it, building its history index, "
                                       "log cold (a fresh process) and warm, an incremental index update.")
    parser.add_argument("--records", type=int, default=1_000_000, help="records in the archive (default 1,000,000)")
    parser.add_argument("--dir", help="where the archive goes (reused when it holds at least --records records)")
    parser.add_argument("--keep", action="store_true", help="keep the archive written to a temporary directory")
    parser.add_argument("--tail-records", type=int, default=100_000,
                        help="records appended as a recorder appends them, the index kept up to date "
                             "(default 100,000; rounded up to 5,000)")
    parser.add_argument("--kafka-libs", action="append", default=[], metavar="DIR",
                        help="a Kafka version's libs directory (repeatable): time the same question asked with "
                             "its tools, kafka-dump-log --cluster-metadata-decoder | grep, beside a cold log, in turn")
    parser.add_argument("--rounds", type=int, default=3, help="with --kafka-libs: the turns timed (default 3)")
    parser.add_argument("--keep-index", action="store_true",
                        help="reuse the archive's history index when there is one (skip step 2)")
    return parser


def run_bench_log(args) -> int:
    if args.records < 20_000:
        from engine.common.errors import ConfigError

        raise ConfigError("--records must be at least 20000 (the cluster's own creation takes about 10,000)")
    with bench_root(args.dir, prefix="metashell-bench-log-", name="archive", keep=args.keep) as root:
        bench_log(root, args.records, keep_index=args.keep_index, tail=max(args.tail_records, 5_000))
        if args.kafka_libs:
            beside_kafka(root, [Path(libs) for libs in args.kafka_libs], max(args.rounds, 1))
    return 0


def _line(what: str, seconds: float, more: str = "") -> None:
    print(f"{what:<58} {seconds:8.2f} s{('  ' + more) if more else ''}", flush=True)


def _records_in(root: Path) -> int:
    manifest = root / "archive.json"
    if not manifest.is_file():
        return 0
    return json.loads(manifest.read_text()).get("last_offset", -1) + 1


def bench_log(root: Path, records: int, *, keep_index: bool = False, tail: int = 100_000) -> None:
    from metashell.bench.log_history import write_big_history
    from metashell.bench.log_recorder import record_tail
    from metashell.history.history_index import INDEX_DIR, IndexHistory

    print(f"metashell bench log: {records:,} records in {root}")
    if _records_in(root) >= records:
        print(f"{'archive':<58} reused ({_records_in(root):,} records)")
    else:
        shutil.rmtree(root, ignore_errors=True)
        started = time.perf_counter()
        write_big_history(root, records, progress=lambda line: print(f"  {line}", flush=True))
        _line("archive written (segments, a snapshot at the end)", time.perf_counter() - started,
              _size(root / "__cluster_metadata-0"))
    if keep_index and (root / INDEX_DIR).is_dir():
        started = time.perf_counter()
        IndexHistory(root).close()
        _line("history index reused (checked, brought up to date)", time.perf_counter() - started,
              _size(root / INDEX_DIR))
    else:
        shutil.rmtree(root / INDEX_DIR, ignore_errors=True)
        started, cpu = time.perf_counter(), time.process_time()
        IndexHistory(root).close()
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        held = _records_in(root)
        _line("history index built from scratch", seconds,
              f"{_size(root / INDEX_DIR)}, {seconds / held * 1e6:.1f} µs a record ({cpu / held * 1e6:.1f} µs CPU)")
    last = _records_in(root) - 1
    queries = [*QUERIES, f"log /topics/X/0 --since {last - last // 100}"]
    for query in queries:
        seconds, lines = _cold(root, query)
        _line(f"cold  {query}", seconds, f"{lines} lines")
    _warm(root, queries)
    tail = -(-tail // 5_000) * 5_000
    seconds, updates, keeper = record_tail(root, tail)
    _line(f"recorder's index upkeep ({tail:,} records, {updates} updates)", seconds,
          f"{seconds / tail * 1e6:.1f} µs a record, {seconds / updates:.2f} s an update")
    last = _records_in(root) - 1
    assert keeper.settled == last, (keeper.settled, last)
    query = "log /configs/TOPIC/X/retention.ms -n 10"
    seconds, lines = _cold(root, query)
    _line(f"cold  {query} (after the recorder)", seconds, f"{lines} lines")


def beside_kafka(root: Path, kafka_libs: list[Path], rounds: int) -> None:
    """The config history of topic X asked of each side in turn (ours cold, then each Kafka's dump and
    grep), ``rounds`` times: median and range of each, the lines each answered."""
    from metashell.bench.log_kafka import kafka_config_history

    query = QUERIES[0]
    sides: dict[str, list[float]] = {}
    answers: dict[str, int] = {}
    for _ in range(rounds):
        seconds, lines = _cold(root, query)
        sides.setdefault("metashell", []).append(seconds)
        answers["metashell"] = lines
        for libs in kafka_libs:
            kafka = kafka_config_history(libs, root, "X", "retention.ms")
            name = f"Kafka {kafka.version}"
            sides.setdefault(name, []).append(kafka.seconds)
            answers[name] = kafka.lines
    print(f"the config history of topic X, {rounds} turns each, in turn "
          f"(metashell: {query}; Kafka: kafka-dump-log --cluster-metadata-decoder | grep):")
    ours = statistics.median(sides["metashell"])
    for name, times in sides.items():
        median = statistics.median(times)
        ratio = "" if name == "metashell" else f", metashell/Kafka {ours / median:.3f}x"
        _line(f"  {name}", median, f"median ({min(times):.2f} to {max(times):.2f}), {answers[name]:,} lines{ratio}")


def _size(path: Path) -> str:
    total = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return f"{total / 1e6:,.0f} MB"


def _cold(root: Path, query: str) -> tuple[float, int]:
    """A fresh process: start, open the archive, check the index, answer."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "metashell.cli", "--log-dir", str(root), "-c", query],
                          capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{query}: exit {done.returncode}: {done.stderr.strip()[-300:]}")
    if "history index: rebuilding" in done.stderr:
        print(f"  {query}: the index was rebuilt: {done.stderr.strip()[-300:]}")
    return seconds, len(done.stdout.splitlines())


def _warm(root: Path, queries: list[str]) -> None:
    """One session: each query once to warm it, then timed."""
    from metashell.shell.session import Session
    from metashell.source import Source

    lines: list[str] = []
    session = Session(Source(log_dir=root), out=lines.append, err=lines.append)
    session.load()
    for query in queries:
        session.run_line(query)
        lines.clear()
        started = time.perf_counter()
        session.run_line(query)
        _line(f"warm  {query}", time.perf_counter() - started, f"{len(lines)} lines")
