"""``metashell``: the operator's command line. For now it lists the records of a source;
the shell, dashboard and export arrive in later issues."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from engine.errors import ConfigError, MetadataError
from engine.log_reader import read_file, read_log_dir
from engine.record_json import record_to_json


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        raise ConfigError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="metashell", description="Browse the metadata of Apache Kafka KRaft clusters.")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--snapshot", help="a .checkpoint snapshot file")
    source.add_argument("--log-dir", help="a node's log directory or its __cluster_metadata-0 directory")
    source.add_argument("--demo", action="store_true", help="a small generated cluster history")
    return parser


def print_records(entries, out=print) -> int:
    count = 0
    for entry in entries:
        out(f"{entry.offset}\t{entry.leader_epoch}\t{entry.timestamp_ms}\t{record_to_json(entry.record)}")
        count += 1
    return count


def run(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.snapshot:
            print_records(read_file(Path(args.snapshot)))
        elif args.log_dir:
            print_records(read_log_dir(Path(args.log_dir)))
        else:
            from metashell.demo import write_demo_log_dir

            with tempfile.TemporaryDirectory(prefix="metashell-demo-") as tmp:
                print_records(read_log_dir(write_demo_log_dir(Path(tmp))))
        return 0
    except MetadataError as exc:
        sys.stderr.write(f"metashell: {exc.one_line()}\n")
    except BrokenPipeError:
        return 0
    except OSError as exc:
        sys.stderr.write(f"metashell: {exc.filename or ''}: {exc.strerror or exc}\n")
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback
        sys.stderr.write(f"metashell: internal error: {type(exc).__name__}: {exc}\n")
    return 1


def main() -> None:
    sys.exit(run())
