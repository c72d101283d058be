"""Shell commands: one small handler each, with its own argument parser and ``man`` text."""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from datetime import datetime, timezone
from typing import Any

from metashell.export import FORMATS as EXPORT_FORMATS
from metashell.export.schemas import HISTORY_TABLES
from metashell.tree.nodes import has_glob, render, render_json, walk_paths
from metashell.shell.kafka_form import cat_lines, ls_lines, tree_lines, under_image
from metashell.shell.registry import COMMANDS, ArgParser, ExitShell, ShellError, command
from metashell.shell.session import Session
from metashell.shell.suggest import hint


# -- navigation -----------------------------------------------------------------------

@command("pwd", "print the current directory", "pwd\n\n  Prints the current directory, e.g. /topics/orders.")
def _pwd(session: Session, args: argparse.Namespace) -> int:
    session.out(session.cwd)
    return 0


@command("cd", "change directory", """
cd [PATH]

  Changes the current directory; no PATH goes to /. PATH may be relative and use
  .. and globs that match one directory. Names are typed as ls shows them: a
  character that cannot stand in a path (/ * ? [ ] ' " \\ ; , < > %, spaces) as %XX,
  e.g. /client-quotas/user=kafka%2Fhost1@REALM; a name of . or .. as %2E or %2E%2E;
  the empty name as <empty>.

  Examples:  cd /topics/orders    cd ..    cd /brokers/1
""", lambda p: p.add_argument("path", nargs="?", default="/"))
def _cd(session: Session, args: argparse.Namespace) -> int:
    matches = session.paths(args.path)
    if len(matches) > 1:
        raise ShellError(f"{args.path}: matches {len(matches)} nodes")
    if not session.node(matches[0]).is_directory:
        raise ShellError(f"{matches[0]}: not a directory")
    session.cwd = matches[0]
    return 0


@command("ls", "list directories", """
ls [-l] [PATH...]

  Lists the children of each directory PATH (default: the current one); a file PATH
  lists itself. -l adds each child's kind and, for files, its value. Under /image,
  ls prints as kafka-metadata-shell does (one name per line, Kafka's order).

  Examples:  ls /brokers    ls -l /topics/orders    ls /topics/*/0
""", lambda p: (p.add_argument("-l", dest="long", action="store_true"), p.add_argument("paths", nargs="*")))
def _ls(session: Session, args: argparse.Namespace) -> int:
    targets = [path for pattern in (args.paths or ["."]) for path in session.paths(pattern)]
    if not args.long and under_image(targets):
        for line in ls_lines([(path, session.node(path)) for path in targets]):
            session.out(line)
        return 0
    for index, path in enumerate(targets):
        node = session.node(path)
        if not node.is_directory:
            session.out(_long_line(path.rsplit("/", 1)[-1], node) if args.long else path)
            continue
        if len(targets) > 1:
            if index:
                session.out("")
            session.out(f"{path}:")
        for name in node.child_names():
            session.out(_long_line(name, node.child(name)) if args.long else name)
    return 0


def _long_line(name: str, node: Any) -> str:
    if node.is_directory:
        return f"d  {name}/"
    value = node.human_value()
    value = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), default=str)
    return f"-  {name}  {value if len(value) <= 120 else value[:117] + '...'}"


@command("cat", "print files", """
cat [--json] PATH...

  Prints the value of each file: text as is, records and structures as JSON, with
  Kafka's enums named (securityProtocol PLAINTEXT, leaderRecoveryState RECOVERED,
  ACL operations, metadata.version 4.1-IV1 (27), the log directory ids MIGRATING,
  UNASSIGNED and LOST). With several files each is headed by ==> PATH <==, as
  head does. --json prints valid JSON with Kafka's numbers instead: the file's
  value for one PATH without globs, else an object of path: value (its shape
  follows what was typed, not how many files matched). Under /image, cat prints
  Kafka's text of each file, as kafka-metadata-shell does, without headers.

  Examples:  cat /features/metadata.version    cat /topics/orders/0    cat /brokers/*/state
             cat --json /brokers/1/endpoints
""", lambda p: (p.add_argument("--json", action="store_true"), p.add_argument("paths", nargs="+")))
def _cat(session: Session, args: argparse.Namespace) -> int:
    paths = [path for pattern in args.paths for path in session.paths(pattern)]
    if args.json:
        values = {path: _file(session, path).value() for path in paths}
        one = len(args.paths) == 1 and not has_glob(args.paths[0])
        session.out(render_json(values[paths[0]] if one else values))
        return 0
    if under_image(paths):
        for text in cat_lines(_file(session, path) for path in paths):
            session.out(text)
        return 0
    for index, path in enumerate(paths):
        node = _file(session, path)
        if len(paths) > 1:
            if index:
                session.out("")
            session.out(f"==> {path} <==")
        session.out(render(node.human_value()))
    return 0


def _file(session: Session, path: str) -> Any:
    node = session.node(path)
    if node.is_directory:
        raise ShellError(f"{path}: is a directory")
    return node


@command("find", "find nodes by name and kind", """
find [PATH] [-name GLOB] [-type f|d]

  Prints every node under PATH (default: the current directory) whose name matches
  GLOB and whose kind is f (file) or d (directory). When none does, says so (on
  stderr; the exit code stays 0, as for an empty answer).

  Examples:  find /topics -name 0    find /brokers -type d    find / -name '*epoch*'
""", lambda p: (p.add_argument("path", nargs="?", default="."), p.add_argument("-name"),
                p.add_argument("-type", choices=["f", "d"])))
def _find(session: Session, args: argparse.Namespace) -> int:
    keep = None
    if args.name or args.type:
        def keep(name: str, is_directory: bool) -> bool:
            return (not args.name or fnmatch.fnmatchcase(name, args.name)) \
                and (not args.type or (args.type == "d") == is_directory)
    found = 0
    for base in session.paths(args.path):
        for lines in walk_paths(session.node(base), base, keep):
            out_lines(session, lines)
            found += len(lines)
    if not found:  # said, as kubectl's "No resources found": an empty answer is not a silent one
        which = " ".join(f"-{k} {v}" for k, v in (("name", args.name), ("type", args.type)) if v)
        session.err(f"metashell: find: no node under {args.path} matches {which}")
    return 0


def out_lines(session: Session, lines: list[str]) -> None:
    """``lines`` out, as many ``session.out`` calls would print them: to standard output (print,
    the shell's one-shot and piped forms) in one write; to any other sink (the terminal's pager,
    a test) line by line."""
    if session.out is print:
        sys.stdout.write("\n".join(lines) + "\n")
    else:
        for line in lines:
            session.out(line)


@command("tree", "show a subtree", """
tree [PATH] [-d DEPTH]

  Draws the tree under PATH (default: the current directory), DEPTH levels deep (default 2).
  Under /image, tree prints the whole subtree as kafka-metadata-shell does (NAME: lines,
  two spaces deeper per level, each file's text under its name).

  Examples:  tree /brokers    tree / -d 1
""", lambda p: (p.add_argument("path", nargs="?", default="."), p.add_argument("-d", "--depth", type=int, default=2)))
def _tree(session: Session, args: argparse.Namespace) -> int:
    bases = session.paths(args.path)
    if under_image(bases):
        for base in bases:
            tree_lines(session.node(base), session.out)
        return 0
    for base in bases:
        session.out(base)
        _draw(session, session.node(base), "", args.depth)
    return 0


def _draw(session: Session, node: Any, prefix: str, depth: int) -> None:
    if depth <= 0 or not node.is_directory:
        return
    names = node.child_names()
    for index, name in enumerate(names):
        last = index == len(names) - 1
        child = node.child(name)
        session.out(f"{prefix}{'└── ' if last else '├── '}{name}{'/' if child.is_directory else ''}")
        _draw(session, child, prefix + ("    " if last else "│   "), depth - 1)


# -- time travel and records ---------------------------------------------------------------

@command("seek", "move the image to a point in the log's history", """
seek OFFSET | seek --time TIME | seek latest

  Moves the image to right after OFFSET, or after the last record stamped at or before
  TIME (ISO 8601, e.g. 2025-05-16T03:42:00Z, or epoch milliseconds). Needs a log
  directory (--log-dir) or a live quorum (--bootstrap-controller). The log is read once
  and replayed from kept checkpoints; seek latest also reads what a running node appended
  since. Live, seek reaches back into what the session fetched since attach (to the
  snapshot it attached from) and the shell stops following ([seek @N]) until seek latest
  or live.

  Examples:  seek 1200    seek --time 2025-05-16T03:42:00Z    seek latest
""", lambda p: (p.add_argument("offset", nargs="?"), p.add_argument("--time")))
def _seek(session: Session, args: argparse.Namespace) -> int:
    if args.time:
        session.load(time_ms=parse_time_ms(args.time))
    elif args.offset in (None, "latest"):
        session.load()
    elif args.offset.removeprefix("-").isdigit():  # a negative one is refused with the range, as any outside it
        session.load(offset=int(args.offset))
    else:
        raise ShellError(f"{args.offset}: expected an offset, 'latest' or --time TIME")
    session.out(f"at offset {session.image.provenance.last_offset}")
    return 0


def parse_time_ms(text: str) -> int:
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ShellError(f"{text}: not a time (ISO 8601 or epoch milliseconds)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


@command("summary", "the cluster at a glance", """
summary

  Brokers by state, topics, partitions, leaderless and under-min-ISR partitions,
  partitions with ELR, offline replicas, finalized features, quorum leader and voters.
""")
def _summary(session: Session, args: argparse.Namespace) -> int:
    from metashell.shell.summary import summarize

    for line in summarize(session.image, session.info):
        session.out(line)
    return 0


def _records_man() -> str:
    from metashell.shell.record_types import type_list

    return f"""
records [--from OFFSET] [--to OFFSET] [--type TYPE...]

  Prints the records of the source, as kafka-dump-log does: offset, leader epoch,
  timestamp and the record's JSON. A log directory: its segments' records; live: the
  records fetched since attach. --from and --to bound the offsets (both included): one
  outside the records there are is an error naming them; --to past the last record
  prints up to it and says where they end. --type keeps the records of each TYPE:
  Kafka's name of a record type in either spelling, in any case
  (BROKER_REGISTRATION_CHANGE_RECORD or BrokerRegistrationChangeRecord), or a glob
  (PARTITION_*, Partition*, *CHANGE*). A name that is no type is an error; a type with
  no record in range says so. The types:
{type_list()}

  Examples:  records --from 100 --to 120    records --type BrokerRegistrationChangeRecord
             records --type PARTITION_* --from 4000
"""


@command("records", "the decoded records between two offsets", _records_man(),
         lambda p: (p.add_argument("--from", dest="start", type=int), p.add_argument("--to", dest="stop", type=int),
                    p.add_argument("--type", nargs="+")))
def _records(session: Session, args: argparse.Namespace) -> int:
    from engine.records.record_json import dumps, record_to_jsonable
    from metashell.shell.record_types import display_name, type_filter
    from metashell.tree.tree_layout import redact_record_json

    wanted = type_filter(args.type)  # a bad name fails before any reading
    start, stop = args.start, args.stop
    if start is not None and stop is not None and start > stop:
        raise ShellError(f"--from {start} is after --to {stop}")
    entries = iter(session.source.entries())
    first = last = None
    shown = 0
    for entry in entries:
        if first is None:
            first = entry.offset
            if start is not None and start < first or stop is not None and stop < first:
                bound = f"--from {start}" if start is not None and start < first else f"--to {stop}"
                raise ShellError(f"{bound} is before the first record: {_span(first, entries)}")
        if stop is not None and entry.offset > stop:
            break
        last = entry.offset
        if start is not None and entry.offset < start or wanted and not wanted(entry.record.type_name):
            continue
        data = record_to_jsonable(entry.record)
        if not session.show_secrets:
            data = redact_record_json(data)
        session.out(f"{entry.offset}\t{entry.leader_epoch}\t{entry.timestamp_ms}\t{dumps(data)}")
        shown += 1
    else:
        if first is None:
            raise ShellError(f"no records in {session.source.description}")
        if start is not None and start > last:
            raise ShellError(f"--from {start} is past the last record: offsets {first}..{last}")
        if stop is not None and stop > last:
            session.err(f"metashell: records: the records end at offset {last}, before --to {stop}")
    if wanted and not shown:
        session.err(f"metashell: records: no {' or '.join(map(display_name, args.type))} records at offsets "
                    f"{first if start is None else start}..{last}")
    return 0


def _span(first: int, rest: Any) -> str:
    """``offsets FIRST..LAST``, reading the rest of the records for LAST (an error's words only)."""
    last = first
    for entry in rest:
        last = entry.offset
    return f"offsets {first}..{last}"


# -- export ---------------------------------------------------------------------------------

PROGRESS_PARTITIONS = 100_000  # images with at least this many partitions report each step


def _export_arguments(p: ArgParser) -> None:
    p.add_argument("path", nargs="?")
    p.add_argument("--format", default="parquet", choices=EXPORT_FORMATS)
    p.add_argument("--out", required=True)
    p.add_argument("--table")
    p.add_argument("--history", nargs="?", const="records", choices=HISTORY_TABLES)


@command("export", "write a subtree or the log's history as a Spark table", """
export PATH --out DIR [--format parquet|json|csv|orc] [--table NAME]
export --history [TABLE] --out DIR [--format F]
       TABLE: records, partition_changes, broker_fencing, controller_registrations,
       leader_changes; or a change table: config_changes, acl_changes, client_quota_changes,
       scram_changes, feature_changes, topic_changes, broker_changes, voter_changes, gaps

  Writes the nodes under PATH of the current image (as of the last seek) as one table
  under DIR/NAME (NAME: the table's kind, e.g. partitions, unless --table), through Spark:
  a local session unless one is active. Secrets stay redacted unless the shell was started
  with --show-secrets. --history writes a table of the whole log instead (default:
  records); it needs a log directory or archive (--log-dir), read by the kraft data
  source on Spark's executors (cluster_id first), or, live, it is what the session
  fetched since attach. CSV flattens lists to JSON text.
  docs/export.md has the schemas and example analyses.

  Examples:  export /topics --out /tmp/meta    export /brokers --format json --out /tmp/meta
             export --history partition_changes --out /tmp/meta
             export --history config_changes --format csv --out /tmp/audit
""", _export_arguments)
def _export(session: Session, args: argparse.Namespace) -> int:
    import time

    from metashell.export import table_dataframe
    from metashell.export.spark_session import get_spark, preflight

    preflight()  # what Spark lacks is said before the rows are built
    started = time.perf_counter()
    progress = session.image.partition_count >= PROGRESS_PARTITIONS

    def step(text: str) -> None:
        if progress:
            session.out(f"{text} ({time.perf_counter() - started:.1f} s)")

    if args.history:
        if args.path:
            raise ShellError("give either PATH or --history, not both")
        if not session.source.live and session.source.log_dir is not None:
            return _export_from_source(session, args, step)
        step("building rows…")
        table = _history_table(session, args.history)
        cluster_id = session.source.cluster_id(wait_s=CLUSTER_ID_WAIT_S)
        if cluster_id is None:
            session.err("metashell: note: the leader has not told the cluster id yet: cluster_id is null")
        return _write(session, _with_cluster_id(table_dataframe(table, get_spark()), cluster_id), table, args, step)
    if not args.path:
        raise ShellError("give a PATH to export (e.g. /topics) or --history")
    matches = session.paths(args.path)
    if len(matches) > 1:
        raise ShellError(f"{args.path}: matches {len(matches)} nodes; export takes one")
    session.node(matches[0])  # there, or one line saying what is not
    from metashell.export.tables import table_for

    step("building rows…")
    table = table_for(session.image, matches[0], show_secrets=session.show_secrets)
    return _write(session, table_dataframe(table, get_spark()), table, args, step)


def _write(session: Session, frame: Any, table: Any, args: argparse.Namespace, step: Any) -> int:
    from pathlib import Path

    from metashell.export import export

    out, name = Path(args.out), args.table or table.kind
    step("writing…")
    export(frame, out, args.format, table=name)
    step("done")
    _exported(session, len(table.rows), table.kind, out / name, args.format)
    return 0


# how long a live --history export waits for the leader's DescribeCluster (asked once a second)
CLUSTER_ID_WAIT_S = 5.0


def _with_cluster_id(frame: Any, cluster_id: str | None) -> Any:
    """A live history table with the data source's cluster_id column first (the quorum's id as
    the attachment learnt it; null if it has not), so that it unions with the files' tables."""
    from pyspark.sql import functions as F

    return frame.select(F.lit(cluster_id).cast("string").alias("cluster_id"), "*")


def _export_from_source(session: Session, args: argparse.Namespace, step: Any) -> int:
    """A history table of a log directory or archive: read by the kraft data source, decoded
    on the executors (metashell.spark), written by Spark; its rows counted from what was written."""
    from pathlib import Path

    from metashell.export import export, source_dataframe
    from metashell.export.spark_failure import is_spark_failure, spark_failure
    from metashell.export.spark_session import get_spark

    spark = get_spark()
    out, name = Path(args.out), args.table or args.history
    step("reading and writing…")
    try:
        target = export(source_dataframe(session.source.log_dir, args.history, spark), out, args.format, table=name)
        rows = _written_rows(spark, target, args.format)
    except Exception as exc:
        if is_spark_failure(exc):
            raise spark_failure(exc, f"{session.source.log_dir}: {args.history}") from None
        raise
    step("done")
    _exported(session, rows, args.history, target, args.format)
    return 0


def _written_rows(spark: Any, target: Any, fmt: str) -> int:
    """The rows Spark wrote under ``target`` (Parquet and ORC answer from their footers)."""
    reader = spark.read.format(fmt)
    return reader.option("header", "true").load(str(target)).count() if fmt == "csv" else reader.load(str(target)).count()


def _exported(session: Session, rows: int, kind: str, target: Any, fmt: str) -> None:
    from metashell.export.spark_session import after_local_export

    session.out(f"exported {rows} row{'' if rows == 1 else 's'} of {kind} to {target} ({fmt})")
    after_local_export(lambda line: session.err(f"metashell: {line}"))


def _history_table(session: Session, kind: str) -> Any:
    """The whole log's table ``kind``; live, what the session fetched (from the snapshot it attached from)."""
    from metashell.export.history_tables import history_rows, history_rows_of

    source = session.source
    if source.live:
        return history_rows_of(*source.fetched(), tables=[kind])[kind]
    if source.log_dir is None:
        raise ShellError("--history needs a log directory (--log-dir): a snapshot holds one point in time")
    return history_rows(source.log_dir, tables=[kind])[kind]


# -- the shell itself -----------------------------------------------------------------------

@command("help", "list the commands", "help [COMMAND]\n\n  Lists the commands; help COMMAND (or man COMMAND) tells more.",
         lambda p: p.add_argument("name", nargs="?"))
def _help(session: Session, args: argparse.Namespace) -> int:
    if args.name:
        return _man(session, args)
    for name in sorted(COMMANDS):
        session.out(f"{name:<9} {COMMANDS[name].summary}")
    return 0


@command("man", "show a command's manual", "man COMMAND\n\n  Usage and examples of COMMAND.\n\n  Example:  man ls",
         lambda p: p.add_argument("name"))
def _man(session: Session, args: argparse.Namespace) -> int:
    found = COMMANDS.get(args.name)
    if found is None:
        raise ShellError(f"{args.name}: no such command{hint(args.name, COMMANDS) or ' (try: help)'}")
    session.out(f"{found.name} — {found.summary}\n\n{found.man}")
    return 0


@command("history", "commands run in this session", "history\n\n  The commands typed so far, numbered.")
def _history(session: Session, args: argparse.Namespace) -> int:
    for number, line in enumerate(session.history, 1):
        session.out(f"{number:5}  {line}")
    return 0


@command("exit", "leave the shell", "exit\n\n  Leaves the shell (so does Ctrl-D).")
def _exit(session: Session, args: argparse.Namespace) -> int:
    raise ExitShell()
