"""The diff of two marks (A before B), as the dashboard's diff box lists it: what ``diff A B``
prints (metashell/shell/history_commands.py), from the same History of change items and the
same ``fold`` (metashell.history.query: the changes that took effect after A up to B, per path; a
value changed and changed back is no difference; aborted transactions changed nothing), the
counts per domain as ``--stat`` gives them. No Textual here.

Two marks with a gap between them (damage, an archive's hole) are refused as ``diff`` refuses
them, naming the gap: its records are gone, so what differs across it is not known.
"""

from __future__ import annotations

from typing import Any

from metashell.dashboard.change_views import CAP, ChangesView


def marks_diff(history: Any, a: int, b: int) -> ChangesView:
    """What differs at offset ``b`` from offset ``a`` (a <= b); a ValueError of one line when a gap
    lies between them."""
    from metashell.history.positions import gap_text
    from metashell.history.query import fold, path_query
    from metashell.history.render import difference_text, stat_lines

    crossed = [g for g in history.gaps if g.first <= b and (g.resume is None or g.resume - 1 > a)]
    if crossed:
        raise ValueError(f"diff {a} {b} crosses {gap_text(crossed[0])}; mark two points on one side of it")
    items = list(history.items(path_query("/"), a + 1, b))
    differences = fold(items)
    stat = stat_lines(differences, False)
    aborted = sum(1 for item in items if item.aborted)
    summary = f"diff {a} {b}: {stat[-1]}"
    if aborted:
        summary += f" · {aborted:,} change{'s' * (aborted != 1)} of aborted transactions left out (no effect)"
    if len(stat) > 1:
        summary += "\n" + " · ".join(" ".join(line.split()) for line in stat[:-1])
    rows = tuple(((d.domain, "muted"), (difference_text(d), None)) for d in differences[:CAP])
    return ChangesView(summary, rows, items=tuple(differences))
