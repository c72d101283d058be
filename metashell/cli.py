"""``metashell``: browse the metadata of a KRaft cluster like a filesystem.

    metashell --log-dir DIR                 interactive shell (a terminal), or commands from stdin
    metashell --snapshot FILE -- ls -l /topics
    metashell --log-dir DIR --offset 1200 -c "cd /brokers; ls"
    metashell --demo -c summary             a generated cluster history

Exit code 0 when every command succeeded, 1 otherwise; errors are one line.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from engine.command_line import OneLineParser, run_guarded, stderr_line
from engine.errors import ConfigError
from metashell.shell.session import ExitShell, Session
from metashell.shell.source import Source


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog="metashell", description="Browse the metadata of Apache Kafka KRaft clusters.")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--snapshot", help="a .checkpoint snapshot file")
    source.add_argument("--log-dir", help="a node's log directory or its __cluster_metadata-0 directory")
    source.add_argument("--demo", action="store_true", help="a small generated cluster history")
    point = parser.add_mutually_exclusive_group()
    point.add_argument("--offset", type=int, help="the image as of this offset (log directories)")
    point.add_argument("--time", help="the image as of this time: ISO 8601 or epoch milliseconds")
    parser.add_argument("--show-secrets", action="store_true", help="print SCRAM keys and secret configs")
    parser.add_argument("-c", dest="commands", help='commands to run, separated by ";"')
    parser.add_argument("command", nargs="*", help="a command to run (after --)")
    return parser


def run(argv: Sequence[str] | None = None, err: Callable[[str], None] | None = None) -> int:
    err = err or stderr_line

    def work() -> int:
        args = build_parser().parse_args(argv)
        with tempfile.TemporaryDirectory(prefix="metashell-demo-") as tmp:
            session = Session(_source(args, Path(tmp)), out=print, err=err, show_secrets=args.show_secrets)
            _load(session, args)
            for note in session.info.notes if session.info else ():
                err(f"metashell: note: {note}")
            return _drive(session, args)

    return run_guarded("metashell", work, err)


def _source(args, tmp: Path) -> Source:
    if args.snapshot:
        return Source(snapshot=Path(args.snapshot))
    if args.log_dir:
        return Source(log_dir=Path(args.log_dir))
    if args.demo:
        from metashell.demo import write_demo_log_dir

        return Source(log_dir=write_demo_log_dir(tmp))
    raise ConfigError("give a source: --log-dir DIR, --snapshot FILE or --demo")


def _load(session: Session, args) -> None:
    time_ms = None
    if args.time:
        from metashell.shell.commands import parse_time_ms
        from metashell.shell.session import ShellError

        try:
            time_ms = parse_time_ms(args.time)
        except ShellError as exc:
            raise ConfigError(str(exc)) from None
    session.load(offset=args.offset, time_ms=time_ms)


def _drive(session: Session, args) -> int:
    try:
        if args.commands is not None:
            return session.run_line(args.commands)
        if args.command:
            return session.run_line(shlex.join(args.command))
        if sys.stdin.isatty():
            from metashell.shell.repl import run_repl

            return run_repl(session)
        status = 0
        for line in sys.stdin:
            status = session.run_line(line)
        return status
    except ExitShell:
        return 0


def main() -> None:
    sys.exit(run())


if __name__ == "__main__":
    main()
