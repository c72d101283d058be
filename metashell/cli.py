"""``metashell``: the operator's command line.

For now it lists the records of a snapshot, a log directory or the demo history, one
line each (offset, leader epoch, timestamp, JSON as Kafka's tools print it). The shell,
dashboard and export arrive in later issues.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Sequence

from engine.command_line import OneLineParser, run_guarded, stderr_line
from engine.errors import ConfigError, CorruptRecordError, MetadataError
from engine.log_reader import LogEntry, read_file, read_log_dir
from engine.metadata_record_serde import UnknownRecord
from engine.record_json import record_to_json


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog="metashell", description="Browse the metadata of Apache Kafka KRaft clusters.")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--snapshot", help="a .checkpoint snapshot file")
    source.add_argument("--log-dir", help="a node's log directory or its __cluster_metadata-0 directory")
    source.add_argument("--demo", action="store_true", help="a small generated cluster history")
    return parser


def print_records(entries: Iterable[LogEntry], where: str, out: Callable[[str], None] = print) -> int:
    """Print every record; then, if any could only be shown raw, raise one error naming the first."""
    count = 0
    raw: list[LogEntry] = []
    for entry in entries:
        out(f"{entry.offset}\t{entry.leader_epoch}\t{entry.timestamp_ms}\t{record_to_json(entry.record)}")
        if isinstance(entry.record, UnknownRecord) and entry.record.problem:
            raw.append(entry)
        count += 1
    if raw:
        more = f" ({len(raw) - 1} more shown raw)" if len(raw) > 1 else ""
        raise CorruptRecordError(f"record at offset {raw[0].offset} shown raw: {raw[0].record.reason}{more}",
                                 path=where)
    return count


def run(argv: Sequence[str] | None = None, err: Callable[[str], None] | None = None) -> int:
    err = err or stderr_line

    def note_torn_tail(position: int, error: MetadataError) -> None:
        err(f"metashell: note: not read, a batch still being written or cut short: {error.one_line()}")

    def work() -> int:
        args = build_parser().parse_args(argv)
        if args.snapshot:
            print_records(read_file(Path(args.snapshot), snapshot=True), args.snapshot)
        elif args.log_dir:
            print_records(read_log_dir(Path(args.log_dir), on_torn_tail=note_torn_tail), args.log_dir)
        elif args.demo:
            from metashell.demo import write_demo_log_dir

            with tempfile.TemporaryDirectory(prefix="metashell-demo-") as tmp:
                print_records(read_log_dir(write_demo_log_dir(Path(tmp))), "demo")
        else:
            raise ConfigError("give a source: --log-dir DIR, --snapshot FILE or --demo")
        return 0

    return run_guarded("metashell", work, err)


def main() -> None:
    sys.exit(run())


if __name__ == "__main__":
    main()
