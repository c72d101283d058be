"""The attach rows of ``kraftd bench peer`` (issue 26 §4): ``metashell bench attach`` run as it is.

The engine never imports metashell, and the attach is metashell's to measure (its live attachment
against a quorum of ours, then the same tool against Kafka's). So, as the controller's rows run
``kraftd bench controller``, these run ``metashell bench attach`` as a command of its own, pass its
lines on, and read the figures from its summary table. A Python without metashell says so in one
line, and the other rows stand.
"""

from __future__ import annotations

import importlib.util
import math
import shlex
import subprocess
import sys
from typing import Callable

from engine.bench.peer_report import Figure

# metashell bench attach's summary: a two-space indent, the label in 50 columns, then a
# right-aligned 26-column cell per side (kraftd first, then Kafka's)
LABEL_WIDTH, CELL_WIDTH = 50, 26
# The rows taken, and how each becomes a figure: (label prefix in the summary, our label, unit,
# which of "p50 / p99 / max" to take or None for a single value).
ROWS = (
    ("attach: first answer,", "attach: first answer", "s", None),
    ("attach: start() to caught up (s)", "attach: caught up", "s", None),
    ("attach: start() to the whole image decoded (s)", "attach: whole image decoded", "s", None),
    ("commit to tree p50 / p99 / max (ms)", "live: commit to tree p99", "ms", 1),
)


class AttachUnavailable(Exception):
    """The attach rows could not be measured (said in one line; the other rows stand)."""


def summary_cells(lines: list[str]) -> dict[str, list[str]]:
    """The summary table's rows after its ``summary:`` line: label -> one cell per side."""
    rows: dict[str, list[str]] = {}
    started = False
    for line in lines:
        if line.rstrip() == "summary:":
            started = True
            continue
        if not started or not line.startswith("  ") or len(line) <= 2 + LABEL_WIDTH:
            continue
        label = line[2:2 + LABEL_WIDTH].strip()
        rest = line[2 + LABEL_WIDTH:].rstrip("\n")
        cells = [rest[i:i + CELL_WIDTH].strip() for i in range(0, len(rest), CELL_WIDTH)]
        rows[label] = cells
    return rows


def _number(cell: str, part: int | None) -> float | None:
    text = cell.split(" / ")[part] if part is not None and " / " in cell else cell
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None  # "n/a" or "-": that side did not measure it
    return None if math.isnan(value) else value


def attach_figures(lines: list[str], kafka_version: str) -> list[Figure]:
    """The figures the attach bench's summary holds: ours against Kafka ``kafka_version``'s quorum."""
    rows = summary_cells(lines)
    figures = []
    for prefix, label, unit, part in ROWS:
        cells = next((c for name, c in rows.items() if name.startswith(prefix)), None)
        if not cells or len(cells) < 2:
            continue
        ours, theirs = _number(cells[0], part), _number(cells[1], part)
        if ours is None or theirs is None:
            continue
        figures.append(Figure(label, unit, [ours], {kafka_version: [theirs]}))
    return figures


def bench_attach_rows(partitions: int, kafka_version: str, kafka_home: str, seconds: float,
                      out: Callable[[str], None]) -> list[Figure]:
    """Run ``metashell bench attach`` for ``partitions`` against Kafka ``kafka_version``; its figures."""
    if importlib.util.find_spec("metashell") is None:
        raise AttachUnavailable("metashell is not installed beside kraftd in this Python")
    command = [sys.executable, "-m", "metashell.cli", "bench", "attach", "--partitions", str(partitions),
               "--seconds", f"{seconds:g}", "--kafka", kafka_version, "--kafka-home", kafka_home]
    out(f"the attach, its own command and output: $ {shlex.join(command)}")
    lines: list[str] = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            out("  " + line.rstrip())
    figures = attach_figures(lines, kafka_version)
    if process.returncode != 0 or not figures:
        raise AttachUnavailable(f"metashell bench attach exited {process.returncode} without both sides' "
                                f"attach figures (see above)")
    return figures


__all__ = ["AttachUnavailable", "attach_figures", "bench_attach_rows", "summary_cells"]
