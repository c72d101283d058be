"""The figures of ``kraftd bench peer`` as one table: ours beside each Kafka version's, with ratios.

Each figure is a list of runs per side, taken in turns (A B C A B C ...), so run i of ours and
run i of a Kafka were neighbours in time. A ratio is ours/Kafka's: the ratio of the medians,
then the range of the pairs' own ratios (run i against run i), which a drifting machine moves
less than it moves the medians.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field


@dataclass
class Figure:
    """One row: its label, how its values print, what a ratio above 1 means, the runs of each side."""

    label: str
    unit: str  # "s", "ms", "MiB" or "records/s"
    ours: list[float] = field(default_factory=list)
    theirs: dict[str, list[float]] = field(default_factory=dict)
    higher_is_better: bool = False


def ratio(ours: list[float], theirs: list[float]) -> tuple[float, float, float]:
    """Median of ours / median of theirs, and the lowest and highest pair-by-pair ratio."""
    if not ours or not theirs:
        raise ValueError("a ratio needs runs on both sides")
    pairs = sorted(a / b for a, b in zip(ours, theirs) if b)
    middle = statistics.median(theirs)
    whole = statistics.median(ours) / middle if middle else math.nan
    return (whole, pairs[0], pairs[-1]) if pairs else (whole, math.nan, math.nan)


def _value(value: float, unit: str) -> str:
    if unit == "records/s":
        return f"{value:,.0f}"
    if unit == "MiB":
        return f"{value:,.0f} MiB"
    if unit == "ms":
        return f"{value:,.1f} ms"
    return f"{value:.2f} s"


def cell(values: list[float], unit: str) -> str:
    """``median (min - max)``, or the one value."""
    if not values:
        return "-"
    if len(values) == 1:
        return _value(values[0], unit)
    return (f"{_value(statistics.median(values), unit)} "
            f"({_value(min(values), unit).split()[0]} - {_value(max(values), unit).split()[0]})")


def ratio_cell(ours: list[float], theirs: list[float]) -> str:
    if not ours or not theirs:
        return "-"
    whole, low, high = ratio(ours, theirs)
    return f"{whole:.2f}" if len(ours) == 1 else f"{whole:.2f} ({low:.2f} - {high:.2f})"


def table(figures: list[Figure], versions: list[str]) -> list[str]:
    """A Markdown table: a row per figure, metashell's column, then each Kafka's and its ratio."""
    head = "| figure (median (min - max)) | metashell | " + " | ".join(
        f"Kafka {v} | ratio" for v in versions) + " |"
    lines = [head, "|" + "---|" * (2 + 2 * len(versions))]
    for f in figures:
        cells = [f.label + (" (higher is better)" if f.higher_is_better else ""), cell(f.ours, f.unit)]
        for v in versions:
            theirs = f.theirs.get(v, [])
            cells += [cell(theirs, f.unit), ratio_cell(f.ours, theirs)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines
