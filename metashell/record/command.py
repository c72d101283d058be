"""``metashell record``: the flight recorder's command line (metashell.cli hands it the arguments).

    metashell record --bootstrap-controller HOST:PORT[,...] [--command-config FILE] --archive DIR
                     [--retention-ms MS] [--snapshot-every-records N] [--segment-bytes N]
    metashell record --status DIR [--json]

Exit codes: 0 after a clean close (SIGTERM, SIGINT) or a status printed; 1 after an error,
which is one line on stderr.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path
from typing import Callable, Sequence

from engine.common.command_line import OneLineParser
from engine.common.errors import ConfigError
from metashell.record.archive import DEFAULT_SEGMENT_BYTES
from metashell.record.recorder import DEFAULT_SNAPSHOT_EVERY_RECORDS, PROGRESS_INTERVAL_MS, Recorder, RecordSettings

DESCRIPTION = """\
Follow a KRaft quorum's metadata log as a read-only observer and keep every committed batch in an
archive, in Kafka's own log format (metashell --log-dir DIR, kraftd dump-log DIR and Kafka's
kafka-dump-log read it). It runs until SIGTERM or SIGINT, through leader changes, controller
restarts, a quorum down for a while and a full disk; where the controllers deleted records before
it fetched them, the archive records a gap. --status summarises an archive (docs/recorder.md)."""


def _positive(name: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ConfigError(f"{name} takes a whole number, not {text!r}") from None
        if value < 0:
            raise ConfigError(f"{name} must not be negative, got {value}")
        return value
    return parse


def build_record_parser() -> OneLineParser:
    parser = OneLineParser(prog="metashell record", description=DESCRIPTION,
                           formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap-controller", metavar="HOST:PORT[,HOST:PORT...]",
                        help="the quorum's controllers (bootstrap.controllers)")
    parser.add_argument("--command-config", metavar="FILE",
                        help="Kafka client properties: security.protocol, sasl.*, ssl.*, timeouts, cluster.id")
    parser.add_argument("--archive", metavar="DIR", help="the archive to write (created if need be)")
    parser.add_argument("--retention-ms", type=_positive("--retention-ms"), metavar="MS",
                        help="drop whole segments older than this (default: keep everything)")
    parser.add_argument("--snapshot-every-records", type=_positive("--snapshot-every-records"), metavar="N",
                        default=DEFAULT_SNAPSHOT_EVERY_RECORDS,
                        help="a snapshot every N records, for fast seeking "
                             f"(0: none; default {DEFAULT_SNAPSHOT_EVERY_RECORDS})")
    parser.add_argument("--segment-bytes", type=_positive("--segment-bytes"), metavar="N",
                        default=DEFAULT_SEGMENT_BYTES,
                        help=f"roll to a new segment at this size (default {DEFAULT_SEGMENT_BYTES})")
    parser.add_argument("--progress-interval-ms", type=_positive("--progress-interval-ms"), metavar="MS",
                        default=PROGRESS_INTERVAL_MS,
                        help=f"a progress line this often (default {PROGRESS_INTERVAL_MS})")
    parser.add_argument("--status", metavar="DIR", help="summarise the archive DIR and exit")
    parser.add_argument("--json", action="store_true", help="with --status: the summary as JSON")
    return parser


def run_record(argv: Sequence[str], err: Callable[[str], None], out: Callable[[str], None] = print) -> int:
    """Parse and run; a MetadataError escapes as the caller's one line (metashell.cli's run_guarded)."""
    args = build_record_parser().parse_args(list(argv))
    if args.status is not None:
        if args.bootstrap_controller or args.archive:
            raise ConfigError("--status takes only the archive's directory")
        from metashell.record.status import archive_status, status_json, status_lines
        status = archive_status(Path(args.status))
        for line in ([status_json(status)] if args.json else status_lines(status)):
            out(line)
        return 0
    if not args.bootstrap_controller or not args.archive:
        raise ConfigError("record needs --bootstrap-controller HOST:PORT and --archive DIR (or --status DIR)")
    if args.segment_bytes < 1024:
        raise ConfigError(f"--segment-bytes must be at least 1024, got {args.segment_bytes}")
    config: dict[str, str] = {}
    if args.command_config:
        from metashell.live.attach import load_command_config
        config = load_command_config(args.command_config)
    settings = RecordSettings(args.bootstrap_controller, Path(args.archive), config, args.retention_ms,
                              args.snapshot_every_records, args.segment_bytes, max(args.progress_interval_ms, 100))
    # a file size limit (ulimit -f) must fail a write with EFBIG, which is retried, not kill the recorder
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    recorder = Recorder(settings, log=lambda line: _say(err, line))
    return asyncio.run(recorder.run())


def _say(err: Callable[[str], None], line: str) -> None:
    err(f"metashell record: {line}")
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
