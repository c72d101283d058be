"""The diff of two marks (A before B), as the dashboard's diff box lists it: what is different at
B from A, leaf by leaf, with counts per domain (as ``diff A B --stat``). No Textual here.

The leaves come from the change items of the records after A up to B (metashell.history, from
the change sets): each path's value before its first change and after its last one, the paths
whose two values are equal left out (changed and changed back), aborted transactions left out
(they changed nothing), a transaction still open at B listed apart (it has not taken effect).
The replay starts from the state at A as the History holds it, an open transaction included.

Two marks in different runs have a gap between them (damage, or an archive's hole): its records
are gone, so the box lists what changed on each side of it, and says that a leaf changed only
inside the gap cannot be seen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Sequence

from engine.image.log_runs import Gap
from metashell.dashboard.archive_runs import gap_words
from metashell.dashboard.change_views import CAP, ChangesView, Replayable, TableRow, change_text, replayable, value_text

if TYPE_CHECKING:
    from metashell.history.change_items import ChangeItem


def fold(items: Iterable["ChangeItem"]) -> tuple[dict[str, tuple[str, Any, Any]], list["ChangeItem"], int]:
    """Per path, (domain, value before the first change, value after the last) over the items that
    took effect; the items of a transaction still open; how many were aborted."""
    leaves: dict[str, tuple[str, Any, Any]] = {}
    still_open: list[ChangeItem] = []
    aborted = 0
    for item in items:
        if item.aborted is None:
            still_open.append(item)
        elif item.aborted:
            aborted += 1
        else:
            held = leaves.get(item.path)
            leaves[item.path] = (item.domain, item.old if held is None else held[1], item.new)
    return leaves, still_open, aborted


def leaf_text(old: Any, new: Any) -> str:
    """old → new; of two objects, only the keys that differ (as ``log`` words a partition)."""
    from metashell.history.item_values import changed_fields

    fields = changed_fields(old, new)
    if fields:
        return ", ".join(f"{name} {value_text(old.get(name))} → {value_text(new.get(name))}" for name in fields)
    return change_text(old, new)


def diff_rows(leaves: dict[str, tuple[str, Any, Any]]) -> list[TableRow]:
    rows = [((domain, "muted"), (path, "leader"), (leaf_text(old, new), None))
            for path, (domain, old, new) in sorted(leaves.items()) if old != new]
    return rows


def domain_counts(rows: Sequence[TableRow]) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row[0][0]] = counts.get(row[0][0], 0) + 1
    return sorted(counts.items())


def marks_parts(before: Any, a: int, after: Any, b: int) -> tuple[Replayable, ...]:
    """What the diff replays, taken on the UI thread: the records after ``a`` up to ``b``; across a
    gap (``before`` and ``after`` the Histories of two runs), A to the end of its run, then the
    start of B's run to B."""
    if before is after:
        return (replayable(before, a, b),)
    return replayable(before, a, before.last_offset), replayable(after, after.start_offset, b)


def marks_diff(parts: Sequence[Replayable], a: int, b: int, gaps: Sequence[Gap]) -> ChangesView:
    """What differs at ``b`` from ``a`` (a < b), from ``marks_parts``; ``gaps``: those between
    (each part replayed here: off the UI thread)."""
    items = [item for part in parts for item in part.items()]
    leaves, still_open, aborted = fold(items)
    rows = diff_rows(leaves)
    counts = domain_counts(rows)
    stat = " · ".join(f"{domain} {n:,}" for domain, n in counts) or "nothing differs"
    summary = f"diff {a} {b}: {len(rows):,} leaves differ · {stat}"
    if aborted:
        summary += f" · {aborted:,} changes of aborted transactions left out"
    if gaps:
        summary += ("\nthe records of " + " and ".join(gap_words(g) for g in gaps)
                    + " are gone: a leaf changed only inside it is not listed, and the values around it are "
                      "those on either side")
    apart = tuple(((item.domain, "muted"), (item.path, "leader"), (change_text(item.old, item.new), None))
                  for item in still_open[-CAP:])
    title = f"{len(still_open):,} in a transaction still open at {b} (not in effect)" if still_open else ""
    return ChangesView(summary, tuple(rows[:CAP]), apart, title, tuple(items))
