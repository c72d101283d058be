"""What the dashboard's history and diff boxes list, as plain rows: no Textual here.

Every change comes from metashell.history, the same objects the shell's ``log`` and ``diff``
answer from (metashell/shell/history_commands.py): a History of change items (made from the
change sets of engine/image/change_set.py) for the source shown — an archive's index
(``IndexHistory``: a path's items read without the others), a log directory's items (one replay
per run, ``log_dir_history``), or, live, what the session holds (``fetched_history``). Their
path queries, ``fold`` and wording (metashell.history.query, .render) are used as they are:
nothing here reads a record or works out a change.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metashell.dashboard.widgets.columns import Column

if TYPE_CHECKING:
    from metashell.history.change_items import ChangeItem

Cell = tuple[str, "str | None"]
TableRow = tuple[Cell, ...]

HISTORY_COLUMNS = (Column("offset", "offset", align="right", max_width=20), Column("time", "time UTC", max_width=24),
                   Column("what", "what", max_width=48, shrink=True, min_width=12),
                   Column("change", "old -> new", width=16, flex=True),
                   Column("record", "record", max_width=32, drop=1))
DIFF_COLUMNS = (Column("domain", "domain", max_width=14, drop=1),
                Column("difference", "+ created  - deleted  ~ changed  ! replaced", width=24, flex=True))
CAP = 5_000  # rows listed at most (the newest): the summary says how many there were


@dataclass(frozen=True, slots=True)
class ChangesView:
    summary: str  # one or a few lines over the table
    rows: tuple[TableRow, ...]
    apart: tuple[TableRow, ...] = ()  # listed below, under ``apart_title``: aborted, or still open
    apart_title: str = ""
    items: tuple[Any, ...] = field(default=(), compare=False)  # what the rows came from (tests)


def time_text(time_ms: int) -> str:
    if time_ms < 0:
        return "-"
    try:
        return datetime.fromtimestamp(time_ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    except (OverflowError, OSError, ValueError):
        return f"{time_ms} ms"


def relative(path: str, item_path: str) -> str:
    """The item's path below the node asked about (the node itself: its last name; reached under
    another name, as a topic's configs are: its whole path)."""
    base = path.rstrip("/")
    if item_path == base:
        return item_path.rsplit("/", 1)[-1] or "/"
    if item_path.startswith(base + "/"):
        return item_path[len(base) + 1:]
    return item_path


# -- which History of change items answers -------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Held:
    """A live source's records, taken on the UI thread (the live History grows and is cut there;
    a worker must not read its lists meanwhile): what ``LiveItems.history`` reads of a growing
    MetadataHistory, frozen."""

    start_image: Any
    entries: tuple[Any, ...]
    start_offset: int
    last_offset: int
    resets: int = 0

    def index_of(self, offset: int) -> int:
        return bisect_right([entry.offset for entry in self.entries], offset) - 1


def held(source: Any) -> Held | None:
    """What a live source holds (a copy of the references: cheap); None for a file's History, whose
    items come from its directory."""
    if getattr(source, "live", None) is None:
        return None
    replay = source.replay
    return Held(replay.start_image, tuple(replay.entries), source.start_offset, source.last_offset)


def change_history(directory: Path | None, live: Held | None, note=lambda line: None) -> Any:
    """The History of change items ``log`` and ``diff`` would ask (metashell.history.sources):
    live, what the session holds; an archive, its index (built or brought up to date here, in the
    worker: sqlite objects stay in the thread that made them, so it is made per question); a log
    directory, every run's items (a MemoryHistory: plain data, kept by the caller)."""
    from metashell.history.history_index import IndexHistory, archive_root
    from metashell.history.sources import LiveItems, log_dir_history

    if live is not None:  # as the shell's log live: the items of the records held (replayed here, in the worker)
        return LiveItems().history(live, "what the dashboard holds")
    if directory is None:
        raise ValueError("a snapshot holds one point in time: a history needs a log directory, an archive or a "
                         "live quorum")
    root = archive_root(directory)
    if root is not None:
        try:
            return IndexHistory(root, note=note)
        except OSError:  # a read-only archive: answered without its index, as the shell does
            pass
    return log_dir_history(directory)


def gaps_words(history: Any, low: int | None = None, high: int | None = None) -> list[str]:
    from metashell.history.positions import gap_text, gaps_between

    return [gap_text(g) for g in gaps_between(history.gaps, low, high)]


# -- a node's history -----------------------------------------------------------------------------

def item_row(item: "ChangeItem", path: str) -> TableRow:
    from metashell.history.render import change_text

    where = str(item.offset) if item.record_offset in (-1, item.offset) else f"{item.offset} (record {item.record_offset})"
    return ((where, "muted"), (time_text(item.timestamp_ms), "muted"), (relative(path, item.path), "leader"),
            (change_text(item), None), (item.record, "muted"))


def node_history_view(history: Any, path: str) -> ChangesView:
    """Every change under ``path`` (as ``log PATH``: the helper's path query, a field narrowed,
    objects compacted to the fields that changed), newest first; those of aborted transactions and
    of one still open at the end apart; the gaps named."""
    from metashell.history.query import compact, path_query

    query = path_query(path)  # QueryError (a ValueError of one line): no history kept there
    items = [compact(query.narrow(item)) for item in history.items(query, newest_first=True)]
    applied = [i for i in items if i.aborted is False]
    others = [i for i in items if i.aborted is not False]
    words = [f"{len(applied):,} change{'s' * (len(applied) != 1)} under {query.path}, newest first"
             if applied else f"no change under {query.path}", f"offsets {_runs(history)}", *gaps_words(history)]
    if len(applied) > CAP:
        words.insert(1, f"the newest {CAP:,} listed")
    aborted = sum(1 for i in others if i.aborted)
    still_open = len(others) - aborted
    title = " · ".join(filter(None, [f"{aborted:,} in aborted transactions (no effect)" if aborted else "",
                                     f"{still_open:,} in a transaction still open (not applied yet)"
                                     if still_open else ""]))
    return ChangesView(" · ".join(words), tuple(item_row(i, query.path) for i in applied[:CAP]),
                       tuple(item_row(i, query.path) for i in others[:CAP]), title, tuple(items))


def _runs(history: Any) -> str:
    return " and ".join(f"{a}..{b}" for a, b in history.runs) or "none"
