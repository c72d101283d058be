"""``metashell``: browse the metadata of a KRaft cluster like a filesystem.

    metashell --log-dir DIR                 interactive shell (a terminal), or commands from stdin
    metashell --snapshot FILE -- ls -l /topics
    metashell --log-dir DIR --offset 1200 -c "cd /brokers; ls"
    metashell --demo -c summary             a generated cluster history
    metashell --bootstrap-controller HOST:PORT[,HOST:PORT...] [--command-config FILE]
                                            a running quorum, live: the shell follows its commits
    metashell dash --log-dir DIR [--offset N | --time T]    the dashboard (a terminal)
    metashell dash --bootstrap-controller HOST:PORT         the dashboard, live
    metashell demo [--dir DIR]              the dashboard on a generated history of a bad day
    metashell export --log-dir DIR /topics --out OUT [--format parquet|json|csv|orc]    a Spark table
    metashell record --bootstrap-controller HOST:PORT --archive DIR    keep the metadata log's history

Exit code 0 when every command succeeded, 1 otherwise; errors are one line. Without a terminal
(stdin or stdout not a TTY, or CI set) ``dash`` and ``demo`` do not start the dashboard: they
say so in one line on stderr and print the summary of the frame they would have opened at (and,
for ``demo``, its story) with exit code 0; ``--print`` prints that without the note.

Live (``--bootstrap-controller``), one-shot commands (``-c``, after ``--``, or from stdin that is
not a terminal), ``dash`` without a terminal and ``export`` answer from the state at attach
time: the attachment catches up with the high watermark it first saw, then nothing more is
taken, so a script gets one consistent answer. The interactive shell and the dashboard follow.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from engine.common.command_line import OneLineParser, run_guarded, stderr_line
from engine.common.errors import ConfigError

if TYPE_CHECKING:
    from metashell.shell.session import Session
    from metashell.source import LiveSource, Source


DASHBOARD_COMMANDS = ("dash", "demo")
BENCH_COMMANDS = ("dash", "export", "attach", "log", "spark")  # metashell bench NAME

# metashell --help: the shell's options below, and first every command this entry point takes
# (run() dispatches them by their first words; tests/metashell/shell/test_cli_help.py keeps them in step)
TOP_DESCRIPTION = """\
Browse the metadata of Apache Kafka KRaft clusters: a shell over a log directory, a snapshot,
a running quorum (live) or a generated history, a dashboard, and Spark tables.

commands:
  metashell SOURCE [-c "CMD; CMD" | -- CMD ARGS]
        the shell (the options below): interactive in a terminal; else runs -c, the command
        after --, or the commands on stdin. SOURCE: --log-dir DIR | --snapshot FILE | --demo |
        --bootstrap-controller HOST:PORT[,HOST:PORT...] [--command-config FILE]
  metashell dash (--log-dir DIR | --snapshot FILE | --bootstrap-controller HOST:PORT[,...])
                 [--command-config FILE] [--offset N | --time T] [--print]
        the dashboard, over files or live over a running quorum
  metashell demo [--dir DIR] [--offset N | --time T] [--print]
        the dashboard on a generated history of a bad day
  metashell export SOURCE [PATH | --history TABLE] --out DIR [--format parquet|json|csv|orc]
                   [--table NAME] [--spark-master URL | --remote sc://HOST:PORT]
        a subtree of the image, or the log's history, as a Spark table (docs/export.md)
  metashell record --bootstrap-controller HOST:PORT[,...] [--command-config FILE] --archive DIR
                   [--retention-ms MS] [--snapshot-every-records N] | record --status DIR
        a flight recorder: keeps every committed batch of the metadata log (docs/recorder.md)
  metashell bench dash | bench export | bench attach | bench log | bench spark
        measurements (docs/performance.md)
Each command takes --help; inside the shell, help lists its commands and man COMMAND tells more."""

TOP_EPILOG = """\
examples:
  metashell --demo -c summary
  metashell --log-dir /var/lib/kafka/meta --offset 1200 -c "cd /brokers; ls"
  metashell --bootstrap-controller 127.0.0.1:9091,127.0.0.1:9092
  metashell dash --bootstrap-controller 127.0.0.1:9091
  metashell export --log-dir DIR /topics --out /tmp/meta

Exit code 0 when every command succeeded, 1 otherwise; every error is one line."""


def _add_source_and_point(parser: OneLineParser, source) -> None:
    """Where the image comes from (a snapshot, a log directory, the demo) and as of when."""
    source.add_argument("--snapshot", help="a .checkpoint snapshot file, or a .log segment replayed from its "
                                            "first batch (as kafka-metadata-shell --snapshot reads either)")
    source.add_argument("--log-dir", help="a node's log directory or its __cluster_metadata-0 directory")
    source.add_argument("--demo", action="store_true", help="a small generated cluster history")
    _add_live_source(parser, source)
    point = parser.add_mutually_exclusive_group()
    point.add_argument("--offset", type=int, help="the image as of this offset (log directories)")
    point.add_argument("--time", help="the image as of this time: ISO 8601 or epoch milliseconds")


def _add_live_source(parser: OneLineParser, source) -> None:
    """A running quorum, as Kafka's tools name it (kafka-metadata-quorum --bootstrap-controller)."""
    source.add_argument("--bootstrap-controller", metavar="HOST:PORT[,HOST:PORT...]",
                        help="a running quorum's controllers: attach live, as an observer that never writes")
    parser.add_argument("--command-config", metavar="FILE",
                        help="client settings for --bootstrap-controller: a .properties file of Kafka's names "
                             "(security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.location, "
                             "ssl.keystore.location, request.timeout.ms, cluster.id; docs/shell.md)")


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog="metashell", description=TOP_DESCRIPTION, epilog=TOP_EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group()
    _add_source_and_point(parser, source)
    parser.add_argument("--show-secrets", action="store_true", help="print SCRAM keys and secret configs")
    parser.add_argument("-c", dest="commands", help='commands to run, separated by ";"')
    parser.add_argument("command", nargs="*", help="a shell command to run, after -- (e.g. -- ls -l /topics)")
    return parser


def build_dashboard_parser(command: str) -> OneLineParser:
    if command == "dash":
        parser = OneLineParser(prog="metashell dash",
                               description="The dashboard over a log directory, a snapshot or a running quorum.")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--snapshot", help="a .checkpoint snapshot file")
        source.add_argument("--log-dir", help="a node's log directory or its __cluster_metadata-0 directory")
        _add_live_source(parser, source)
    else:
        parser = OneLineParser(prog="metashell demo",
                               description="The dashboard on a generated cluster history (written to a "
                                           "temporary directory, or to DIR and kept).")
        parser.add_argument("--dir", help="write the history here (a directory without a metadata log yet) and keep it")
    point = parser.add_mutually_exclusive_group()
    point.add_argument("--offset", type=int, help="open at this offset (default: the last record)")
    point.add_argument("--time", help="open at this time: ISO 8601 or epoch milliseconds")
    parser.add_argument("--print", action="store_true",
                        help="print the summary at that point instead of opening the dashboard")
    return parser


def build_export_parser() -> OneLineParser:
    from metashell.export import FORMATS as EXPORT_FORMATS
    from metashell.export.schemas import HISTORY_TABLES

    parser = OneLineParser(prog="metashell export",
                           description="Write a subtree of the image (or the log's history) as a Spark table "
                                       "(docs/export.md).")
    source = parser.add_mutually_exclusive_group(required=True)
    _add_source_and_point(parser, source)
    parser.add_argument("path", nargs="?", help="the subtree to export, e.g. /topics (not with --history)")
    parser.add_argument("--out", required=True, help="the output directory; the table is written to OUT/TABLE")
    parser.add_argument("--format", default="parquet", choices=EXPORT_FORMATS)
    parser.add_argument("--table", help="the table's name (default: its kind, e.g. partitions)")
    spark = parser.add_mutually_exclusive_group()
    spark.add_argument("--spark-master", help="a Spark master URL (default: local[*], or the active session)")
    spark.add_argument("--remote", help="a Spark Connect server, sc://HOST:PORT")
    parser.add_argument("--show-secrets", action="store_true", help="export SCRAM keys and secret configs")
    parser.add_argument("--history", choices=HISTORY_TABLES,
                        help="export this table of the whole log instead of a subtree (log directories; "
                             "live: what the session fetched)")
    return parser


def _export_command(args, err: Callable[[str], None]) -> int:
    """``metashell export``: the shell's ``export`` command, once, over the given source.

    What is missing for Spark is said first, before any work; then Spark starts in a thread
    while the image loads (metashell.export.spark_start), and the export waits for it."""
    from metashell.export.spark_session import preflight
    from metashell.export.spark_start import SparkStart, is_small

    time_ms = _time_ms(args.time)
    if args.history and args.path:
        raise ConfigError("give either PATH or --history, not both")
    if not args.history and not args.path:
        raise ConfigError("give a PATH to export (e.g. /topics) or --history TABLE")
    if args.history and (args.offset is not None or time_ms is not None):
        raise ConfigError("--offset and --time choose an image; --history exports the whole log")
    if args.snapshot and (args.offset is not None or time_ms is not None):
        raise ConfigError("--offset and --time need a log directory (--log-dir): a snapshot holds one point in time")
    preflight(remote=args.remote)
    _command_config_needs_bootstrap(args)
    if args.log_dir and not Path(args.log_dir).is_dir():
        raise ConfigError(f"{args.log_dir}: no such directory")

    words = ["--out", args.out, "--format", args.format]
    words += ["--table", args.table] if args.table else []
    words += ["--history", args.history] if args.history else [args.path]
    files = args.log_dir or args.snapshot
    small = bool(args.demo) or (files is not None and is_small(Path(files)))  # live: not known yet
    with SparkStart(args.spark_master, args.remote, warn=lambda line: err(f"metashell: warning: {line}"),
                    small=small), tempfile.TemporaryDirectory(prefix="metashell-demo-") as tmp:
        # the shell's modules load while Spark starts: a third of a second of a small export
        from metashell.shell.commands import COMMANDS
        from metashell.shell.registry import ShellError
        from metashell.shell.session import Session

        source = _source(args, Path(tmp), frozen=True)
        try:
            session = Session(source, out=print, err=err, show_secrets=args.show_secrets)
            if not args.history or source.live:
                session.load(offset=args.offset, time_ms=time_ms)
                _attached(session, err)
            try:
                return COMMANDS["export"].run(session, words)  # its get_spark() waits for the start
            except ShellError as exc:
                raise ConfigError(str(exc)) from None
        finally:
            source.close()


def run(argv: Sequence[str] | None = None, err: Callable[[str], None] | None = None) -> int:
    err = err or stderr_line
    argv = list(sys.argv[1:] if argv is None else argv)

    def work() -> int:
        if argv and argv[0] in DASHBOARD_COMMANDS:
            return _dashboard_command(argv[0], build_dashboard_parser(argv[0]).parse_args(argv[1:]), err)
        if argv[:1] == ["bench"] and argv[1:2] and argv[1] in BENCH_COMMANDS:
            from metashell.bench.commands import run_bench
            return run_bench(argv[1], argv[2:])
        if argv and argv[0] == "export":
            return _export_command(build_export_parser().parse_args(argv[1:]), err)
        if argv and argv[0] == "record":
            from metashell.record.command import run_record
            return run_record(argv[1:], err)
        _refuse_mistyped_subcommand(argv)
        from metashell.shell.session import Session
        from metashell.source import LiveSource

        args = build_parser().parse_args(argv)
        one_shot = args.commands is not None or bool(args.command) or not sys.stdin.isatty()
        # interactive: the terminal echoes nothing from here on, or a command typed while the source
        # loads (a live catch-up takes seconds) shows twice, echoed and then in the prompt (repl.py)
        with tempfile.TemporaryDirectory(prefix="metashell-demo-") as tmp, _quiet_terminal(one_shot):
            source = _source(args, Path(tmp), frozen=one_shot)
            if isinstance(source, LiveSource) and sys.stderr.isatty():
                # a slow controller at a terminal: one line after a moment, not a blank wait (stderr
                # that is no terminal stays as scripts read it: the error alone, if any)
                source.on_slow = lambda line: err(f"metashell: {line}")
            try:
                session = Session(source, out=print, err=err, show_secrets=args.show_secrets)
                _load(session, args)
                for note in session.info.notes if session.info else ():
                    err(f"metashell: note: {note}")
                _attached(session, err)
                return _drive(session, args)
            finally:
                source.close()

    return run_guarded("metashell", work, err)


SUBCOMMANDS = (*DASHBOARD_COMMANDS, "export", "record", "bench")


def _refuse_mistyped_subcommand(argv: list[str]) -> None:
    """``metashell dahs --log-dir D`` would otherwise be read as the shell running the command
    "dahs", and answer about the source instead of the typo; a shell command (``ls``) is left alone."""
    from metashell.shell.commands import COMMANDS
    from metashell.shell.suggest import close_names, did_you_mean

    if argv and argv[0] == "bench":
        if argv[1:2] and argv[1] not in BENCH_COMMANDS:
            raise ConfigError(f"unknown bench: {argv[1]}{did_you_mean(close_names(argv[1], BENCH_COMMANDS))}"
                              f"; give one of: {', '.join(BENCH_COMMANDS)}")
        raise ConfigError(f"bench needs one of: {', '.join(BENCH_COMMANDS)} (metashell bench dash --help)")
    if not argv or argv[0].startswith("-") or argv[0] in COMMANDS:
        return
    close = close_names(argv[0], SUBCOMMANDS)
    if close:
        raise ConfigError(f"unknown command: {argv[0]}{did_you_mean(close)}")


def _quiet_terminal(one_shot: bool):
    if one_shot:
        return contextlib.nullcontext()
    from metashell.shell.repl import terminal_echo_off

    return terminal_echo_off()


def _source(args, tmp: Path, frozen: bool = False) -> Source | LiveSource:
    """The source the options name; a live one is ``frozen`` at attach time for one-shot commands."""
    from metashell.source import Source

    _command_config_needs_bootstrap(args)
    if args.bootstrap_controller:
        source = live_source(args.bootstrap_controller, args.command_config)
        source.frozen = frozen
        return source
    if args.snapshot:
        return Source(snapshot=Path(args.snapshot))
    if args.log_dir:
        return Source(log_dir=Path(args.log_dir))
    if getattr(args, "demo", False):
        from metashell.demo.shell_demo import write_demo_log_dir

        return Source(log_dir=write_demo_log_dir(tmp))
    raise ConfigError("give a source: --log-dir DIR, --snapshot FILE, --demo or --bootstrap-controller HOST:PORT")


def _command_config_needs_bootstrap(args) -> None:
    if args.command_config and not args.bootstrap_controller:
        raise ConfigError("--command-config goes with --bootstrap-controller")


def live_source(bootstrap: str, command_config: str | None = None) -> LiveSource:
    """``--bootstrap-controller`` checked as Kafka's tools check it (the Attachment does),
    ``--command-config`` read; nothing connects until the first load."""
    from engine.common.java_properties import load_properties
    from metashell.source import LiveSource

    return LiveSource.connect(bootstrap, load_properties(command_config) if command_config else None)


def _attached(session: Session, err: Callable[[str], None]) -> None:
    """Live: say on stderr which state the answers are of (scripts read stdout)."""
    if session.source.live:
        status = session.source.status
        err(f"metashell: note: attached to {status.bootstrap} at offset {session.image.provenance.last_offset}"
            f"{'' if status.leader_id < 0 else f' (leader {status.leader_id}, epoch {status.leader_epoch})'}")


def _load(session: Session, args) -> None:
    session.load(offset=args.offset, time_ms=_time_ms(args.time))


def _time_ms(text: str | None) -> int | None:
    if not text:
        return None
    from metashell.shell.commands import parse_time_ms
    from metashell.shell.registry import ShellError

    try:
        return parse_time_ms(text)
    except ShellError as exc:
        raise ConfigError(str(exc)) from None


# -- the dashboard -------------------------------------------------------------------------


def has_terminal() -> bool:
    """Whether a full-screen app can run here: stdin and stdout are TTYs and this is not CI."""
    ci = os.environ.get("CI", "").strip().lower()
    return sys.stdin.isatty() and sys.stdout.isatty() and ci in ("", "0", "false", "no")


def _dashboard_command(command: str, args, err: Callable[[str], None]) -> int:
    from metashell.source import Source

    if command == "dash" and (args.bootstrap_controller or args.command_config):
        return _live_dashboard(args, err)
    if command == "dash":
        source = Source(snapshot=Path(args.snapshot)) if args.snapshot else Source(log_dir=Path(args.log_dir))
        return _dashboard(source, args, err)
    from metashell.demo.dashboard_demo import DEMO_STORY, write_dashboard_demo

    if args.dir:
        target = Path(args.dir)
        if (target / "__cluster_metadata-0").exists():
            raise ConfigError(f"{target} already holds a metadata log: open it with "
                              f"metashell dash --log-dir {target}, or give a new directory")
        return _dashboard(Source(log_dir=write_dashboard_demo(target)), args, err, DEMO_STORY)
    with tempfile.TemporaryDirectory(prefix="metashell-demo-") as tmp:
        return _dashboard(Source(log_dir=write_dashboard_demo(Path(tmp))), args, err, DEMO_STORY)


def _dashboard(source: Source, args, err: Callable[[str], None],
               story: Sequence[tuple[int, str]] = ()) -> int:
    time_ms = _time_ms(args.time)
    if source.snapshot is not None and (args.offset is not None or time_ms is not None):
        raise ConfigError("--offset and --time need a log directory (--log-dir): a snapshot holds one point in time")
    if args.print or not has_terminal():
        return _print_summary(source, args.offset, time_ms, err, story, note=not args.print)
    try:
        from metashell.dashboard.app import DashboardApp
        from metashell.dashboard.history import History
    except ImportError as exc:
        raise ConfigError(f"the dashboard is not available here ({exc}); --print prints the summary") from None
    history = History.open_log_dir(source.log_dir, offset=args.offset, time_ms=time_ms) if source.log_dir \
        else History.open_snapshot(source.snapshot)
    history.replay.check_point(offset=args.offset, time_ms=time_ms)  # out of range: one line before the app opens
    for note in history.info.notes:
        err(f"metashell: note: {note}")
    offset = args.offset if time_ms is None else history.at_time(time_ms).offset
    from engine.common.heap import settle_heap

    settle_heap()
    return _run_dashboard(DashboardApp(history, offset=offset), err)


def _run_dashboard(app, err: Callable[[str], None]) -> int:
    """Run the app; a crash ends with one line naming the log that holds its traceback, exit 1."""
    from metashell.dashboard.failure import run_app

    line = run_app(app)
    if line is None:
        return 0
    err(f"metashell: {line}")
    return 1


def _live_dashboard(args, err: Callable[[str], None]) -> int:
    """``dash --bootstrap-controller``: the dashboard over the live quorum, painted at once while
    it connects and catches up (the header says how far); without a terminal (or with --print)
    the summary at attach time. An attach that gives up is one line and exit code 1 either way."""
    if args.offset is not None or args.time:
        raise ConfigError("--offset and --time open a file at a point; live, the dashboard opens at the "
                          "cluster's present (travel back from there with its keys)")
    if args.print or not has_terminal():
        source = _source(args, Path("."), frozen=True)
        try:
            return _print_summary(source, None, None, err, (), note=not args.print)
        finally:
            source.close()
    _command_config_needs_bootstrap(args)
    try:
        from metashell.dashboard.app import DashboardApp
        from metashell.dashboard.live_history import open_live
    except ImportError as exc:
        raise ConfigError(f"the dashboard is not available here ({exc}); --print prints the summary") from None
    from engine.common.java_properties import load_properties

    config = load_properties(args.command_config) if args.command_config else None
    # checked here (a bad bootstrap or config is one line before the app); connects as the app paints
    source = open_live(args.bootstrap_controller, command_config=config, wait=False)
    try:
        return _run_dashboard(DashboardApp(source), err)
    finally:
        source.close()


def _print_summary(source: Source, offset: int | None, time_ms: int | None, err: Callable[[str], None],
                   story: Sequence[tuple[int, str]], note: bool) -> int:
    from metashell.shell.summary import summarize

    image, info = source.load(offset=offset, time_ms=time_ms)
    if note:
        err(f"metashell: the dashboard needs a terminal (stdin and stdout a TTY, CI unset); "
            f"the summary at offset {image.provenance.last_offset} follows")
    for line in info.notes:
        err(f"metashell: note: {line}")
    for line in summarize(image, info):
        print(line)
    if story:
        print("story (offset: moment; metashell demo --offset N opens there):")
        for at, text in story:
            print(f"  {at:>5}: {text}")
    return 0


def _drive(session: Session, args) -> int:
    from metashell.shell.registry import ExitShell
    from metashell.source import LiveSource

    try:
        if args.commands is not None:
            return session.run_line(args.commands)
        if args.command:
            return session.run_line(shlex.join(args.command))
        if sys.stdin.isatty():
            from engine.common.heap import settle_heap
            from metashell.shell.repl import run_repl

            if isinstance(session.source, LiveSource):
                settle_heap()  # the attach-time image lives on: no full collection rescans it mid-update
            return run_repl(session)
        status = 0
        for line in sys.stdin:
            status = session.run_line(line)
            sys.stdout.flush()  # each answer whole before the next command is read: a program may be driving us
        return status
    except ExitShell:
        return 0


def main() -> None:
    _without_kio_strategies()
    sys.exit(run())


def _without_kio_strategies() -> None:
    """kio registers Hypothesis strategies for its types at import when Hypothesis is importable
    (a venv with the test extras): a sixth of the shell's start, for strategies it never uses. So the
    console command (not ``run``, which tests call in their own process) imports the project's one
    door to kio first with Hypothesis hidden; ``import hypothesis`` works as ever afterwards."""
    if "hypothesis" in sys.modules or "kio" in sys.modules:
        return
    sys.modules["hypothesis"] = None  # type: ignore[assignment]  # an import of it raises ImportError
    try:
        import engine.records.kio_codec  # noqa: F401
    finally:
        del sys.modules["hypothesis"]


if __name__ == "__main__":
    main()
