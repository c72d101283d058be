"""The whole of a log directory or an archive as the dashboard's timeline shows it: its runs, its
gaps, and which run's History answers a point. No Textual here.

A damaged log, or an archive whose recorder had to fetch a snapshot (a hole between segments),
is a set of runs with gaps between them (engine.image.run_replay, as ``log``, ``diff`` and the
export see them, in the same words: ``gap_words``): one replay never runs across a gap. The
dashboard shows one run at a time (one History, one pass), but the timeline spans them all and
``g`` / ``T`` to a point of another run opens that run (from the snapshot it starts at, its own
voters included) and shows it. The runs opened are kept (``RunCache``), so going back is a lookup, not a replay.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from engine.image.run_replay import RunGap as Gap, gap_words

Run = tuple[int, int]  # first, last offset (inclusive); -1: before the first record
CellStyle = str  # "shown", "other", "gap", "position", "mark", "mark-here"


@dataclass(frozen=True, slots=True)
class Spans:
    """What the timeline spans: every run in order, the gaps between (and after) them."""

    runs: tuple[Run, ...]
    gaps: tuple[Gap, ...]

    @property
    def low(self) -> int:
        return self.runs[0][0]

    @property
    def high(self) -> int:
        """The last offset drawn: the last run's, or a gap's first offset past it (a log whose tail is damaged)."""
        return max([self.runs[-1][1], *(g.first for g in self.gaps)])

    def run_of(self, offset: int) -> Run | None:
        return next((run for run in self.runs if run[0] <= offset <= run[1]), None)

    def gap_of(self, offset: int) -> Gap | None:
        return next((g for g in self.gaps if g.first <= offset and (g.resume is None or offset < g.resume)), None)


def spans_of(source: object) -> Spans:
    """The runs and gaps of a History over a log directory (its MetadataHistory's); one run, no
    gaps, for anything else (a snapshot, a live window)."""
    replay = getattr(source, "replay", None)
    if replay is not None and getattr(source, "live", None) is None and getattr(replay, "gaps", ()):
        return Spans(*replay.run_spans())
    start = getattr(source, "start_offset", -1)
    return Spans(((start, max(start, getattr(source, "last_offset", start))),), ())


def timeline_cells(width: int, spans: Spans, shown: Run, position: int, marks: Sequence[int]) -> list[tuple[str, CellStyle]]:
    """``width`` cells over the offsets ``spans.low``..``spans.high``: ``━`` the run shown, ``─``
    the other runs, ``░`` a gap (at least one cell each, however short: a gap is never hidden),
    ``●`` the position and ``A`` / ``B`` the marks (a mark at the position: ``mark-here``)."""
    if width <= 0:
        return []
    low, high = spans.low, spans.high

    def cell(offset: int) -> int:  # the first offset at the first cell, the last at the last
        return max(0, min(width - 1, (offset - low) * (width - 1) // max(1, high - low)))

    cells: list[tuple[str, CellStyle]] = [(" ", "other")] * width
    for first, last in spans.runs:
        style = "shown" if (first, last) == shown else "other"
        for c in range(cell(first), cell(last) + 1):
            cells[c] = ("━" if style == "shown" else "─", style)
    for gap in spans.gaps:
        end = high if gap.resume is None else gap.resume - 1
        for c in range(cell(gap.first), cell(max(gap.first, end)) + 1):
            cells[c] = ("░", "gap")
    for c in range(1, width):  # a cell between two offsets' cells (a wide bar) is its left neighbour's
        if cells[c][0] == " ":
            cells[c] = cells[c - 1]
    cells[cell(position)] = ("●", "position")
    for letter, offset in zip("AB", marks):  # a mark where the position is: the letter, highlighted
        at = cell(offset)
        cells[at] = (letter, "mark-here" if at == cell(position) else "mark")
    return cells


def offset_at_cell(width: int, spans: Spans, column: int) -> int:
    """The offset a cell of the bar stands for (the inverse of timeline_cells' placing)."""
    low, high = spans.low, spans.high
    column = max(0, min(width - 1, column))
    return low + (column * (high - low) + (width - 1) // 2) // max(1, width - 1)


def neighbour_run(spans: Spans, shown: Run, direction: int) -> Run | None:
    """The run before (-1) or after (1) the one shown; None at either end."""
    runs = list(spans.runs)
    at = runs.index(shown) + direction if shown in runs else -1
    return runs[at] if 0 <= at < len(runs) else None


def timeline_words(spans: Spans, shown: Run, position: int, marks: Sequence[int]) -> str:
    """The line under the bar: the span, the run shown, the gaps named, the marks."""
    parts = [f"offsets {spans.low}..{spans.high}"]
    if len(spans.runs) > 1:
        parts.append(f"run {shown[0]}..{shown[1]} shown (of {len(spans.runs)} runs)")
    if marks:
        parts.append("marks " + " ".join(f"{letter} {offset}" for letter, offset in zip("AB", marks)))
    parts += [gap_words(g) for g in spans.gaps]  # last: a reason is long (the tooltip has it whole)
    return " · ".join(parts)


class RunCache:
    """The Histories opened for the runs of one log directory, by run; ``open`` is how one is
    made (History.open_log_dir at an offset of that run)."""

    def __init__(self, directory: Path, opener: Callable[[Path, int], object]) -> None:
        self.directory = directory
        self._open = opener
        self._held: dict[Run, object] = {}

    def add(self, run: Run, history: object) -> None:
        self._held[run] = history

    def held(self, run: Run) -> object | None:
        """The History of ``run`` if it was opened."""
        return self._held.get(run)

    def history_for(self, run: Run) -> object:
        """The History of ``run``: opened once (a replay from the run's starting snapshot)."""
        held = self._held.get(run)
        if held is None:
            held = self._open(self.directory, run[0])
            got = (getattr(held, "start_offset", run[0]), getattr(held, "last_offset", run[1]))
            if got[0] > run[0] or got[1] < run[1]:  # the directory changed since the runs were found
                raise ValueError(f"the log changed since it was opened: offsets {run[0]}..{run[1]} now read as "
                                 f"{got[0]}..{got[1]}")
            self._held[run] = held
        return held

    @property
    def opened(self) -> tuple[Run, ...]:
        return tuple(self._held)
