"""A table's columns and how they share the width they are given: pure functions, no Textual.

When the columns do not fit, they give way in a fixed order, as htop's and k9s's do: first
the columns marked ``drop`` are hidden, lowest rank first, but only as many as it takes for
the rest to fit with the shrinkable columns at their narrowest; then the shrinkable columns
give up width, widest first, only as much as needed. A column that neither drops nor shrinks
(the partitions' flags) keeps its width whatever the table's: past that, the table scrolls
sideways. When there is width to spare, the flex column takes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from rich.cells import cell_len, set_cell_size

MIN_SHRINK = 8


@dataclass(frozen=True, slots=True)
class Column:
    key: str
    label: str
    width: int | None = None  # None: fit the content (header and rows), up to max_width
    fit: bool = False  # fit the content like width None, but ``width`` wide past tables too big to scan
    max_width: int = 40
    align: str = "left"  # or "right"
    flex: bool = False  # take the width the other columns leave (at least ``width``)
    shrink: bool = False  # give up width (down to ``min_width``) when the table does not fit
    min_width: int = MIN_SHRINK
    drop: int = 0  # 0: always shown; else hidden when the table cannot fit, rank 1 first


def fit(text: str, width: int, align: str = "left") -> str:
    """``text`` padded or cut (with an ellipsis) to exactly ``width`` cells."""
    length = cell_len(text)
    if length > width:
        return set_cell_size(text, width - 1) + "…" if width > 1 else set_cell_size(text, width)
    pad = " " * (width - length)
    return pad + text if align == "right" else text + pad


def line_width(widths: Sequence[int]) -> int:
    """Cells a row takes: each shown column and the space after it (a hidden column has width 0)."""
    return sum(w + 1 for w in widths if w)


def column_widths(columns: Sequence[Column], fitted: Sequence[int], available: int) -> list[int]:
    """Each column's width within ``available`` cells (0: hidden), from ``fitted`` (the widths the
    content asks for). Before the table is laid out (``available`` <= 0) nothing gives way."""
    widths = list(fitted)
    if available <= 0:
        return widths
    floor = [min(w, c.min_width) if c.shrink else w for w, c in zip(widths, columns)]
    for i in sorted((i for i, c in enumerate(columns) if c.drop), key=lambda i: columns[i].drop):
        if line_width(floor) <= available:
            break
        widths[i] = floor[i] = 0
    spare = available - line_width(widths)
    if spare < 0:  # the shrinkable columns give up width, widest first
        for i in sorted((i for i, c in enumerate(columns) if c.shrink and widths[i]), key=lambda i: -widths[i]):
            cut = min(-spare, max(0, widths[i] - columns[i].min_width))
            widths[i] -= cut
            spare += cut
    flex = [i for i, c in enumerate(columns) if c.flex and widths[i]]
    if spare > 0 and flex:
        widths[flex[-1]] += spare
    return widths
