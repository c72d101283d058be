"""kraftd bench peer's attach rows: read from metashell bench attach's own summary table."""

from __future__ import annotations

from engine.bench.peer_attach import attach_figures, summary_cells
from engine.bench.peer_report import table
from metashell.bench.attach import SideFigures, summary


def _summary(ours: SideFigures, theirs: SideFigures) -> list[str]:
    lines: list[str] = []
    summary([ours, theirs], records_per_s=1000, seconds=30, out=lines.append)
    return ["some progress line before", *lines]


def _side(name: str, first: float, caught: float, whole: float, latencies: list[float]) -> SideFigures:
    side = SideFigures(name, partitions=1_000_000, ready_s=3.0)
    side.attached = {"caught_up_s": caught, "first_answer_s": first, "whole_image_s": whole}
    side.commit_to_tree_ms = latencies
    return side


def test_the_attach_figures_are_read_from_the_attach_bench_summary_as_it_prints_it() -> None:
    ours = _side("kraftd", 1.18, 1.17, 5.76, [float(x) for x in range(1, 101)] + [1500.0])
    theirs = _side("Kafka 4.3.1", 1.23, 1.2, 6.54, [250.0] * 10)
    figures = {f.label: f for f in attach_figures(_summary(ours, theirs), "4.3.1")}
    assert figures["attach: first answer"].ours == [1.18] and figures["attach: first answer"].theirs == {"4.3.1": [1.23]}
    assert figures["attach: caught up"].ours == [1.17] and figures["attach: caught up"].theirs["4.3.1"] == [1.2]
    assert figures["attach: whole image decoded"].ours == [5.76]
    p99 = figures["live: commit to tree p99"]
    assert p99.unit == "ms" and p99.ours == [100.0] and p99.theirs["4.3.1"] == [250.0]  # "1,500" max not taken
    row = next(line for line in table(list(figures.values()), ["4.3.1"]) if "commit to tree" in line)
    assert "100.0 ms" in row and "250.0 ms" in row and "0.40" in row


def test_a_side_that_measured_nothing_gives_no_row() -> None:
    ours = _side("kraftd", 1.5, 1.4, 6.0, [3.0] * 10)
    theirs = SideFigures("Kafka 4.3.1", error="no Kafka quorum: java not found")
    assert attach_figures(_summary(ours, theirs), "4.3.1") == []


def test_cells_split_by_the_tables_columns_even_with_spaces_inside() -> None:
    ours = _side("kraftd", 1.0, 1.0, 2.0, [1.0, 2.0])
    cells = summary_cells(_summary(ours, _side("Kafka 4.3.1", 1.0, 1.0, 2.0, [1.0])))
    assert cells["commit to tree p50 / p99 / max (ms)"][0].count(" / ") == 2
    assert len(cells["attach: start() to caught up (s)"]) == 2
