"""Three sparklines over the history — records/s, fenced brokers, under-min-ISR partitions —
each with a marker line showing where the frame shown stands."""

from __future__ import annotations

from bisect import bisect_right
from typing import Sequence

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline

from metashell.dashboard.widgets.text_line import TextLine

SAMPLES = 120  # the series are resampled to this many points; the sparkline buckets them to its width
CHARTS = (("records_per_s", "records/s"), ("fenced_brokers", "fenced brokers"), ("under_min_isr", "under min ISR"))


def resample(points: Sequence[tuple[int, float]], start: int, end: int, samples: int = SAMPLES) -> list[float]:
    """A step function given at points (x, value), sampled at ``samples`` evenly spaced x in
    [start, end]: the value of the last point at or before each x (0 before the first)."""
    xs = [x for x, _ in points]
    span = max(1, end - start)
    out = []
    for k in range(samples):
        i = bisect_right(xs, start + span * k / max(1, samples - 1))
        out.append(float(points[i - 1][1]) if i else 0.0)
    return out


class Chart(Vertical):
    def __init__(self, key: str, label: str) -> None:
        super().__init__(id=f"chart-{key.replace('_', '-')}", classes="chart")
        self.key, self.label = key, label
        self.points: list[tuple[int, float]] = []
        self.start = self.end = 0
        self.position = -1  # the sample index of the frame shown
        self._xs: list[int] = []
        self._peak: float = 0

    def compose(self) -> ComposeResult:
        yield TextLine(self.label, classes="chart-label")
        yield Sparkline([], summary_function=max)
        yield TextLine("", markup=False, classes="chart-marker")

    def set_series(self, points: Sequence[tuple[int, float]], start: int, end: int) -> None:
        self.points, self.start, self.end = list(points), start, end
        self._xs = [p for p, _ in self.points]
        self._peak = max((v for _, v in self.points), default=0)
        self.position = -1  # redraw the label and marker at the next show()
        self.query_one(Sparkline).data = resample(self.points, start, end) if points else [0.0]

    def show(self, x: int) -> None:
        """Mark ``x`` (an offset or a time, in the series' own unit)."""
        span = max(1, self.end - self.start)
        position = round((min(max(x, self.start), self.end) - self.start) / span * (SAMPLES - 1))
        if position == self.position:
            return
        self.position = position
        i = bisect_right(self._xs, x)
        now = self.points[i - 1][1] if i else 0
        peak = self._peak
        self.query_one(".chart-label", TextLine).set_text(
            f"[b]{self.label}[/b]  [$text-muted]now[/] {now:g}  [$text-muted]max[/] {peak:g}")
        self._draw_marker()

    def _draw_marker(self) -> None:
        width = self.query_one(Sparkline).size.width or self.size.width
        if width <= 0 or self.position < 0:
            return
        column = min(width - 1, self.position * width // SAMPLES)
        # a rule up to the position reads as progress
        self.query_one(".chart-marker", TextLine).set_text("─" * column + "▲")

    def on_resize(self) -> None:
        self._draw_marker()


class Charts(Vertical):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="panel")
        self.border_title = "Charts"

    def compose(self) -> ComposeResult:
        for key, label in CHARTS:
            yield Chart(key, label)

    def set_series(self, series: dict[str, list[tuple[int, float]]], first_offset: int, last_offset: int) -> None:
        for key, _ in CHARTS:
            points = series.get(key, [])
            chart = self.query_one(f"#chart-{key.replace('_', '-')}", Chart)
            if key == "records_per_s":  # by time, not offset
                start = points[0][0] if points else 0
                chart.set_series(points, start, points[-1][0] if points else 0)
            else:
                chart.set_series(points, first_offset, last_offset)

    def show(self, offset: int, timestamp_ms: int) -> None:
        for chart in self.query(Chart):
            chart.show(timestamp_ms if chart.key == "records_per_s" else offset)
