"""What the dashboard's history and diff boxes list, as plain rows: no Textual here.

Every change comes from metashell.history (the change items of the ``log`` and ``diff``
commands, themselves made from the change sets of engine/image/change_set.py): nothing here
reads a record. This module only picks the items under a path, orders them newest first, puts
the aborted ones apart and words the cells.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

from metashell.dashboard.widgets.columns import Column

if TYPE_CHECKING:
    from metashell.history.change_items import ChangeItem
    from engine.storage.log_reader import LogEntry

Cell = tuple[str, "str | None"]
TableRow = tuple[Cell, ...]

HISTORY_COLUMNS = (Column("offset", "offset", align="right", max_width=12), Column("time", "time UTC", max_width=24),
                   Column("what", "what", max_width=48, shrink=True, min_width=12),
                   Column("change", "old → new", width=16, flex=True),
                   Column("record", "record", max_width=32, drop=1))
DIFF_COLUMNS = (Column("domain", "domain", max_width=14, drop=1), Column("path", "path", max_width=60, shrink=True,
                                                                        min_width=16),
                Column("change", "old → new", width=16, flex=True))
ABSENT = "(absent)"
CAP = 5_000  # rows listed at most (the newest): the summary says how many there were


@dataclass(frozen=True, slots=True)
class ChangesView:
    summary: str  # one or a few lines over the table
    rows: tuple[TableRow, ...]
    apart: tuple[TableRow, ...] = ()  # listed below, under ``apart_title``: the aborted ones
    apart_title: str = ""
    items: tuple[Any, ...] = field(default=(), compare=False)  # what the rows came from (tests)


def value_text(value: Any) -> str:
    """A value as ``cat --json`` gives it, on one line; absent: ``(absent)``."""
    if value is None:
        return ABSENT
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def change_text(old: Any, new: Any) -> str:
    return f"{value_text(old)} → {value_text(new)}"


def time_text(time_ms: int) -> str:
    if time_ms < 0:
        return "-"
    try:
        return datetime.fromtimestamp(time_ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    except (OverflowError, OSError, ValueError):
        return f"{time_ms} ms"


def under(path: str, item_path: str) -> bool:
    """Whether ``item_path`` is ``path`` or below it (``/`` holds everything)."""
    base = path.rstrip("/")
    return not base or item_path == base or item_path.startswith(base + "/")


def relative(path: str, item_path: str) -> str:
    """The item's path below the node asked about (its own leaf: its last name)."""
    base = path.rstrip("/")
    if item_path == base:
        return item_path.rsplit("/", 1)[-1] or "/"
    return item_path[len(base) + 1:] if base else item_path


def batches_of(entries: Sequence["LogEntry"], batch_starts: Sequence[int]) -> Iterator[list["LogEntry"]]:
    """A History's entries cut back into their batches (a transaction's end needs its batch)."""
    position = 0
    starts = list(batch_starts) + [None]
    for index in range(len(starts) - 1):
        batch: list[LogEntry] = []
        stop = starts[index + 1]
        while position < len(entries) and (stop is None or entries[position].offset < stop):
            batch.append(entries[position])
            position += 1
        if batch:
            yield batch


def item_change_text(item: "ChangeItem") -> str:
    """old → new; of an object changed in place (a partition, a registration), only the keys that
    differ, as ``log`` prints them: ``leader 1 → 2, isr [1,2,3] → [1,3]``."""
    old, new = item.old, item.new
    if item.fields and isinstance(old, dict) and isinstance(new, dict):
        return ", ".join(f"{name} {value_text(old.get(name))} → {value_text(new.get(name))}" for name in item.fields)
    return change_text(old, new)


def history_row(item: "ChangeItem", path: str) -> TableRow:
    record = item.record if item.aborted is not None else f"{item.record} (transaction open)"
    what = relative(path, item.path)
    if item.event not in ("changed", "created", "deleted") or (item.old is None) != (item.new is None):
        what = f"{what} {item.event}"  # a broker fenced, a topic created: the word before the values
    return ((str(item.offset), "muted"), (time_text(item.timestamp_ms), "muted"), (what, "leader"),
            (item_change_text(item), None), (record, "muted"))


def node_history_view(items: Iterable["ChangeItem"], path: str, scope: str) -> ChangesView:
    """``items`` (in log order) under ``path``, newest first, those of aborted transactions apart.
    ``scope``: which offsets were read, and the gaps (the summary's words)."""
    applied: list[ChangeItem] = []
    aborted: list[ChangeItem] = []
    for item in items:
        if under(path, item.path):
            (aborted if item.aborted else applied).append(item)
    shown = applied[-CAP:]
    summary = f"{len(applied):,} change{'s' * (len(applied) != 1)} under {path}, newest first · {scope}"
    if len(shown) < len(applied):
        summary += f" · the newest {len(shown):,} listed"
    if not applied and not aborted:
        summary = f"no change under {path} · {scope}"
    rows = tuple(history_row(item, path) for item in reversed(shown))
    apart = tuple(history_row(item, path) for item in reversed(aborted[-CAP:]))
    title = f"{len(aborted):,} in aborted transactions (they changed nothing)" if aborted else ""
    return ChangesView(summary, rows, apart, title, tuple(applied) + tuple(aborted))


@dataclass(frozen=True, slots=True)
class Replayable:
    """What a replay of part of a History needs, taken on the UI thread (a live History grows and
    is cut there; a worker must not read its lists meanwhile): the state to start from (its image
    and the transaction it left open) and the records after it, in their batches' order."""

    image: Any
    open_transaction: Any
    entries: tuple[Any, ...]
    batch_starts: tuple[int, ...]

    def items(self) -> Iterator["ChangeItem"]:
        """The change items of the records (the log/diff helper's change_items: change sets,
        transactions as the export handles them). Safe off the UI thread."""
        from metashell.history.change_items import change_items

        return change_items(self.image, batches_of(self.entries, self.batch_starts),
                            open_transaction=self.open_transaction)


def replayable(history: Any, low: int | None = None, high: int | None = None) -> Replayable:
    """The records of ``history`` after offset ``low`` (None: its starting image) up to ``high``
    (None: its last), and the state at ``low``: a copy of the references (cheap), on the UI thread."""
    replay = history.replay
    first = -1 if low is None else replay.index_of(low)
    last = len(replay.entries) - 1 if high is None else replay.index_of(high)
    state = replay.state_at(first)
    entries = tuple(replay.entries[first + 1:last + 1])
    starts = [s for s in replay.batch_starts if entries and entries[0].offset <= s <= entries[-1].offset]
    if entries and (not starts or starts[0] != entries[0].offset):
        starts.insert(0, entries[0].offset)  # ``low`` in the middle of a batch: the rest of that batch
    return Replayable(state.image, state.open_transaction, entries, tuple(starts))
