"""``metashell bench NAME``: the benchmarks' command lines, dispatched from metashell.cli (which
keeps only the names, metashell.cli.BENCH_COMMANDS, for its help and its mistyped-command check).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from engine.common.command_line import OneLineParser
from engine.common.errors import ConfigError


def run_bench(name: str, argv: Sequence[str]) -> int:
    """One benchmark by its name (dash, export, attach, log, spark) with the words after it."""
    if name == "dash":
        return _bench_dash(build_bench_parser().parse_args(argv))
    if name == "export":
        return _bench_export(build_bench_export_parser().parse_args(argv))
    if name == "attach":
        from metashell.bench.attach import build_bench_attach_parser, run_bench_attach
        return run_bench_attach(build_bench_attach_parser().parse_args(argv))
    if name == "log":
        from metashell.bench.log import build_bench_log_parser, run_bench_log
        return run_bench_log(build_bench_log_parser().parse_args(argv))
    if name == "spark":
        from metashell.bench.spark import build_bench_spark_parser, run_bench_spark
        return run_bench_spark(build_bench_spark_parser().parse_args(argv))
    raise ConfigError(f"unknown bench: {name}")  # metashell.cli refuses a mistyped name before this


def build_bench_parser() -> OneLineParser:
    parser = OneLineParser(prog="metashell bench dash",
                           description="Time one step of history in the dashboard (headless) over many partitions.")
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=50)
    given = parser.add_mutually_exclusive_group()
    given.add_argument("--snapshot", help="a snapshot file (e.g. Kafka 4.x's at 1,000,000 partitions, from "
                                          "kraftd bench peer): the history is it plus --steps batches")
    given.add_argument("--log-dir", help="a log directory with history, opened as it is")
    parser.add_argument("--runs", type=int, default=None,
                        help="fresh processes timed from start to the first full paint (default 5 with "
                             "--snapshot or --log-dir, else 0)")
    return parser


def build_bench_export_parser() -> OneLineParser:
    parser = OneLineParser(prog="metashell bench export",
                           description="Time each step of exporting /topics of many partitions to Parquet.")
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--spark-master", help="a Spark master URL (default: local[*])")
    parser.add_argument("--small", action="store_true",
                        help="time whole processes instead: export --demo /topics against the Spark session alone")
    parser.add_argument("--runs", type=int, default=5, help="with --small: the turns counted (default 5)")
    return parser


def _bench_dash(args) -> int:
    if args.partitions < 1 or args.steps < 1:
        raise ConfigError("--partitions and --steps must be positive")
    from metashell.bench.dash import bench_dash

    runs = args.runs if args.runs is not None else (5 if args.snapshot or args.log_dir else 0)
    if runs < 0:
        raise ConfigError("--runs must not be negative")
    for given in (args.snapshot, args.log_dir):
        if given and not Path(given).exists():
            raise ConfigError(f"{given}: no such file or directory")
    bench_dash(args.partitions, args.steps, snapshot=Path(args.snapshot) if args.snapshot else None,
               log_dir=Path(args.log_dir) if args.log_dir else None, runs=runs)
    return 0


def _bench_export(args) -> int:
    if args.partitions < 1:
        raise ConfigError("--partitions must be positive")
    if args.runs < 1:
        raise ConfigError("--runs must be positive")
    if args.small:
        from metashell.bench.export import bench_small_export

        bench_small_export(args.runs)
        return 0
    from metashell.bench.export import bench_export

    bench_export(args.partitions, spark_master=args.spark_master)
    return 0
