"""The shell's ``log`` and ``diff``: a node's history, and what differs between two points.

Both read change items (metashell/history/change_items.py, from the change sets): a log
directory's, replayed for the session once and kept while its segments stay as they were; an
archive's, from its index (metashell/history/history_index.py); live, what the session fetched
since attach.
"""

from __future__ import annotations

import argparse
from typing import Any

from engine.common.errors import MetadataError
from metashell.history.positions import (
    Point, PositionError, check_point, gap_text, gaps_between, parse_point,
)
from metashell.history.query import QueryError, compact, fold, path_query
from metashell.history.render import diff_lines, log_lines, stat_lines
from metashell.shell.registry import ShellError, command
from metashell.shell.session import Session

_HISTORIES = "_histories"  # the session's attribute: its metashell.history.histories.Histories


def session_history(session: Session) -> Any:
    """The History the session's source gives (metashell/history/histories.py), kept on the session."""
    from metashell.history.histories import Histories, HistoryUnavailable

    histories = getattr(session, _HISTORIES, None)
    if histories is None:
        histories = Histories(note=lambda line: session.err(f"metashell: {line}"))
        setattr(session, _HISTORIES, histories)
    try:
        return histories.of(session.source)
    except HistoryUnavailable as exc:
        raise ShellError(str(exc)) from None


def _point(text: str, history: Any, flag: str) -> Point:
    try:
        point = parse_point(text)
        check_point(point, history.runs, history.gaps, history.first_time_ms, history.describe())
    except PositionError as exc:
        raise ShellError(f"{flag}{' ' if flag else ''}{exc}") from None
    return point


def _query(session: Session, path: str) -> Any:
    try:
        return path_query(session.absolute(path))
    except QueryError as exc:
        raise ShellError(str(exc)) from None


def _in_order(a: Point, b: Point, words: str) -> None:
    if a.offset is not None and b.offset is not None and a.offset > b.offset or \
            a.time_ms is not None and b.time_ms is not None and a.time_ms > b.time_ms:
        raise ShellError(f"{words}: {a.text} is after {b.text}")


def _note_gaps(session: Session, name: str, history: Any, low: int | None, high: int | None) -> None:
    for gap in gaps_between(history.gaps, low, high):
        session.err(f"metashell: {name}: {gap_text(gap)}")


# -- log ---------------------------------------------------------------------------------------

@command("log", "the history of a node or a subtree", """
log [PATH] [--since POS] [--until POS] [-n N] [--json]

  Every change under PATH (default: everything), newest first, as git log shows
  commits: the offset where it took effect, its time, the record that made it, the
  path and old -> new (a partition's or a registration's changed fields, created V,
  deleted (was V)). Changes in aborted metadata transactions, which changed nothing,
  and in one still open where the log ends are listed apart, after the others.
  A transaction's changes took effect at its end marker: "1220 (record 1217)".
  PATH is a tree path, whether or not it exists now (a deleted topic's history is
  kept): /configs/TOPIC/orders/retention.ms, /topics/orders (the topic, its partitions
  and its configs), /topics/orders/0/leader (one field), /topic-ids/ID (one topic of
  a name used twice), /brokers/3, /acls, /scram, /features, /quorum (voters,
  kraft.version, leaders).
  --since and --until bound it (both included); POS is an offset, a time (ISO 8601,
  or epoch milliseconds as 1747366920000ms) or latest; an offset the history cannot
  rebuild (before it, past it, in a gap) is an error. -n N prints the N newest.
  --json prints one JSON object per change and line (JSON Lines). Gaps in the range
  (offsets no replay reaches: damage, or an archive's hole) are named on stderr.
  Works on a log directory, an archive (through its index, built on first use in
  ARCHIVE/history-index/) and live (what the session fetched since attach).

  Examples:  log /configs/TOPIC/orders/retention.ms    log /brokers/3 -n 5
             log /topics/payments/0 --since 2026-05-16T03:00:00Z    log /quorum --json
""", lambda p: (p.add_argument("path", nargs="?", default="/"), p.add_argument("--since"), p.add_argument("--until"),
                p.add_argument("-n", type=int, dest="count"), p.add_argument("--json", action="store_true")))
def _log(session: Session, args: argparse.Namespace) -> int:
    if args.count is not None and args.count < 1:
        raise ShellError(f"-n {args.count}: give a positive number of changes")
    query = _query(session, args.path)
    history = _history(session)
    since = _point(args.since, history, "--since") if args.since else Point()
    until = _point(args.until, history, "--until") if args.until else Point()
    if args.since and args.until:
        _in_order(since, until, "--since is after --until")
    low, high = since.offset, until.offset
    items = []
    for item in history.items(query, low, high, newest_first=True):
        if since.time_ms is not None and item.timestamp_ms < since.time_ms or \
                until.time_ms is not None and item.timestamp_ms > until.time_ms:
            continue
        items.append(compact(query.narrow(item)))
        if args.count is not None and len(items) >= args.count:
            break
    _note_gaps(session, "log", history, low, high)
    items = _record_order(items)
    if not items:
        session.err(f"metashell: log: no changes under {query.path} in {_range_words(since, until)}")
        return 0
    for line in log_lines(items, args.json):
        session.out(line)
    return 0


def _record_order(items: list) -> list:
    """Newest first by record, each record's changes in the order it made them (a topic before its
    partitions and configs), as git log lists a commit's files in order."""
    out: list = []
    group: list = []
    for item in items:
        if group and (item.offset, item.record_offset) != (group[0].offset, group[0].record_offset):
            out.extend(reversed(group))
            group = []
        group.append(item)
    out.extend(reversed(group))
    return out


def _range_words(since: Point, until: Point) -> str:
    if since.latest and until.latest:
        return "the history held"
    return f"{since.text if not since.latest else 'the start'}..{until.text}"


def _history(session: Session) -> Any:
    try:
        return session_history(session)
    except MetadataError as exc:
        raise ShellError(exc.one_line()) from None


# -- diff ----------------------------------------------------------------------------------------

@command("diff", "what differs between two points", """
diff A B [PATH] [--stat] [--json]

  What is different under PATH (default: everything) between the image at A and the
  image at B, as git diff shows it: + created, - deleted, ~ changed (a partition's or
  a registration's fields old -> new), ! replaced (a topic deleted and another of the
  same name created). A and B are positions as log takes them (an offset, a time, or
  latest), A not after B. It is the changes that took effect after A up to B, folded
  per path: a value changed and changed back is no difference. --stat counts the
  differences per domain. --json prints one JSON object per difference and line
  (with --stat, one per domain). A and B must be reachable, and the offsets between
  them too: a gap between them (damage, an archive's hole) is an error naming it;
  diff each side of it instead.

  Examples:  diff 1200 1500    diff 2026-05-16T03:00:00Z latest /topics --stat
             diff 0 latest /configs --json
""", lambda p: (p.add_argument("a"), p.add_argument("b"), p.add_argument("path", nargs="?", default="/"),
                p.add_argument("--stat", action="store_true"), p.add_argument("--json", action="store_true")))
def _diff(session: Session, args: argparse.Namespace) -> int:
    query = _query(session, args.path)
    history = _history(session)
    a, b = _point(args.a, history, ""), _point(args.b, history, "")
    if a.latest and not b.latest:
        raise ShellError(f"A is after B: latest is after {b.text}")
    _in_order(a, b, "A is after B")
    low, high = _offset_of(history, a), _offset_of(history, b)
    crossed = [g for g in history.gaps if g.first <= high and (g.resume is None or g.resume - 1 > low)]
    if crossed:
        raise ShellError(f"{a.text}..{b.text} crosses {gap_text(crossed[0])}; diff each side of it")
    # the changes in the image at B and not in the image at A (latest: every change is in it)
    items = [query.narrow(item) for item in history.items(query, low + 1, high)
             if not a.before(item.offset, item.timestamp_ms) and b.before(item.offset, item.timestamp_ms)]
    differences = fold(items)
    lines = stat_lines(differences, args.json) if args.stat else diff_lines(differences, args.json)
    for line in lines:
        session.out(line)
    return 0


def _offset_of(history: Any, point: Point) -> int:
    """The offset a point stands at: latest, the history's last; a time, the last change stamped at
    or before it (the records between carry no change to tell by: a gap is judged from that)."""
    if point.offset is not None:
        return point.offset
    if point.time_ms is None:
        return history.runs[-1][1] if history.runs else -1
    return history.offset_at_time(point.time_ms)
