"""``kraftd cluster up | status | down | start | stop | kill | pause | resume | lag | disk-fail | chaos | workload``.

A local KRaft cluster of ``kraftd start`` processes: controllers (one dynamic quorum) and
simulated brokers, kept in a state directory (engine.cluster.layout) that every
subcommand takes as ``--dir``. A node is named as ``status`` prints it: ``controller-K``
(node 3000+K, Kafka's test-kit numbering) or ``broker-K`` (node K).

This module only builds the parser, so ``kraftd``'s start stays quick; the work is in
engine.cluster.commands (and engine.cluster.chaos), imported when a subcommand runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from typing import Callable

READY_TIMEOUT_S = 120.0  # safety nets: Python processes on a loaded 2-core machine start slowly
STOP_TIMEOUT_S = 30.0


def default_dir() -> Path:
    """$XDG_CACHE_HOME/kraftd/cluster, else ~/.cache/kraftd/cluster."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "kraftd" / "cluster"


def run_cluster(args: argparse.Namespace, out: Callable[[str], None]) -> int:
    """Run the subcommand ``args`` names (``module:function`` in ``args.cluster_run``)."""
    module, _, function = args.cluster_run.partition(":")
    return getattr(importlib.import_module(f"engine.cluster.{module}"), function)(args, ReaderMayLeave(out))


class ReaderMayLeave:
    """The output of a command that acts: a reader that goes away (``kraftd cluster down | head -1``)
    ends the output, not the action. Half a ``down`` would leave the controllers running, so a
    broken pipe stops the writing and the command carries on to its end, silently."""

    def __init__(self, out: Callable[[str], None]):
        self._out = out
        self.reader_gone = False

    def __call__(self, line: str) -> None:
        if self.reader_gone:
            return
        try:
            self._out(line)
            sys.stdout.flush()  # a line as it happens, and a gone reader noticed here, not at exit
        except BrokenPipeError:
            self.reader_gone = True
            # the interpreter flushes stdout once more at exit: let that go nowhere, quietly
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)


def _non_negative(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return int(text)


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a probability from 0 to 1, got {text!r}")
    return value


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return int(text)


def _port(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"expected a TCP port from 1 to 65535, got {text!r}")
    return int(text)


def add_parser(sub, run: Callable[[argparse.Namespace], int]) -> None:
    """``kraftd cluster ...`` under ``sub``; every subcommand sets ``run`` (which is to call
    ``run_cluster(args, out)``)."""
    from engine.common.command_line import OneLineParser

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dir", default=str(default_dir()),
                        help=f"the cluster's state directory (default {default_dir()})")
    cluster = sub.add_parser("cluster", help="a local cluster of our controllers and simulated brokers (or Kafka's own: --kafka-brokers)")
    cs = cluster.add_subparsers(dest="cluster_command", required=True, parser_class=OneLineParser)

    def command(name: str, handler: str, help_text: str, timeout_s: float | None = None) -> argparse.ArgumentParser:
        p = cs.add_parser(name, parents=[common], help=help_text)
        if timeout_s is not None:
            p.add_argument("--timeout-s", type=float, default=timeout_s,
                           help=f"how long to wait (default {timeout_s:g})")
        p.set_defaults(run=run, cluster_run=handler)
        return p

    up = command("up", "commands:cmd_up",
                 "format (first time) and start the cluster; wait until every broker is unfenced", READY_TIMEOUT_S)
    up.add_argument("--controllers", type=_positive, help="controllers in the quorum (default 3)")
    up.add_argument("--brokers", type=_non_negative, help="simulated brokers (default 5)")
    up.add_argument("--brokers-per-process", type=_positive, metavar="K",
                    help="brokers sharing one `kraftd start` process (default: 1 up to 10 brokers, else as few "
                         "processes as keep each at most 200); start/stop/kill/pause/resume of such a broker act on "
                         "its whole process and say so")
    up.add_argument("--kafka-brokers", metavar="VERSION",
                    help="the brokers are Apache Kafka VERSION's own (java on PATH and its jars; controllers formatted "
                         "at its release unless --release-version is given)")
    up.add_argument("--kafka-home", metavar="DIR",
                    help="an unpacked Kafka release (its libs/) for --kafka-brokers (default: the test suite's cache, "
                         "$METASHELL_KAFKA_CACHE/VERSION/libs)")
    up.add_argument("--security", type=str.upper, choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
                    help="every listener's security protocol (default PLAINTEXT): SSL is mutual TLS, the SASL ones "
                         "SCRAM-SHA-512; a CA, certificates and passwords are made in --dir, with the controllers' "
                         "StandardAuthorizer, and --dir/client.properties is the --command-config to attach with")
    up.add_argument("--racks", type=_non_negative, help="broker.rack values dealt round-robin (default 3; 0: none)")
    up.add_argument("--base-port", type=_port,
                    help="controllers on BASE.., then brokers (default: free ports); a cluster already in --dir "
                         "keeps its ports, and a note says this one is ignored")
    up.add_argument("--release-version", "-r", help="metadata.version to format with (default: latest production)")
    up.add_argument("--heartbeat-interval-ms", type=_positive, default=2000, help="broker.heartbeat.interval.ms")
    up.add_argument("--session-timeout-ms", type=_positive, default=9000, help="broker.session.timeout.ms")
    up.add_argument("--workload", action="store_true",
                    help="also start `kraftd cluster workload` in the background (its lines in DIR/logs/workload.log; "
                         "`down` stops it): topics to watch on the dashboard without any Kafka client")
    up.add_argument("--workload-interval-ms", type=_positive, default=1000, metavar="MS",
                    help="the background workload's --interval-ms (default 1000)")
    up.add_argument("--workload-seed", type=int, metavar="N", help="the background workload's --seed")
    command("status", "commands:cmd_status", "every node: pid, state as the controllers see it, metadata lag")
    command("down", "commands:cmd_down",
            "stop every node: brokers, then controllers (SIGTERM, SIGKILL after --timeout-s)", STOP_TIMEOUT_S)
    for name, help_text, timeout_s in (
            ("start", "start a stopped node again on its ports", READY_TIMEOUT_S),
            ("stop", "stop a node gracefully (SIGTERM, SIGKILL after --timeout-s)", STOP_TIMEOUT_S),
            ("kill", "SIGKILL a node", None), ("pause", "SIGSTOP a node", None), ("resume", "SIGCONT a node", None)):
        command(name, "commands:cmd_node", help_text, timeout_s).add_argument(
            "node", help="e.g. broker-2 or controller-1 (a broker sharing a process: the whole process)")
    lag = command("lag", "commands:cmd_lag",
                  "slow a broker's replication: its followers fetch MS later (replica.fetch.delay.ms in its faults file)")
    lag.add_argument("node")
    lag.add_argument("ms", type=_non_negative, help="milliseconds (0: no delay)")
    lag.add_argument("--failure-rate", type=_probability, default=0.0, metavar="P",
                     help="also lose this share of its fetches, 0 to 1 (replica.fetch.failure.rate; default 0)")
    disk = command("disk-fail", "commands:cmd_disk_fail",
                   "fail one of a broker's log dirs (failed.log.dirs in its faults file)")
    disk.add_argument("node")
    disk.add_argument("log_dir", nargs="?", help="the directory (path or name, e.g. data-2; default the second)")
    chaos = command("chaos", "chaos:cmd_chaos", "random faults within a safety budget, then heal everything",
                    READY_TIMEOUT_S)
    chaos.add_argument("--seconds", type=float, default=60.0, help="how long to make faults (default 60)")
    chaos.add_argument("--seed", type=int, default=0, help="the random choices' seed (default 0)")
    chaos.add_argument("--interval-ms", type=_positive, default=1000, help="time between actions (default 1000)")

    workload = command("workload", "workload:cmd_workload",
                       "create topics, change configs, move leaders and reassign partitions through the brokers' "
                       "admin path (as Kafka's admin client), one line per step, until stopped (Ctrl-C, SIGTERM)")
    workload.add_argument("--seconds", type=_positive_seconds, metavar="S",
                          help="stop after S seconds (default: run until stopped)")
    workload.add_argument("--steps", type=_positive, metavar="N", help="stop after N steps (default: no limit)")
    workload.add_argument("--seed", type=int, help="the random choices' seed (default: a random one, printed)")
    workload.add_argument("--interval-ms", type=_positive, default=1000, help="time between steps (default 1000)")
    workload.add_argument("--max-topics", type=_positive, default=6,
                          help="workload-* topics at most: beyond, the oldest is deleted (default 6)")
    workload.add_argument("--request-timeout-ms", type=_positive, default=15000,
                          help="how long one broker has to answer before the next is asked (default 15000)")


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return value


__all__ = ["READY_TIMEOUT_S", "STOP_TIMEOUT_S", "add_parser", "default_dir", "run_cluster"]
