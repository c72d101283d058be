"""Three sparklines over the history — records/s, fenced brokers, under-min-ISR partitions —
each with a marker line showing where the frame shown stands.

A chart holds the source's own series list (no copy): a live source appends to it, and
``Charts.grow`` resamples over the new span (a bisect per sample) and takes the peak of the
points added since, so an update costs the same however long the history.
"""

from __future__ import annotations

from bisect import bisect_right
from operator import itemgetter
from typing import Sequence

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline

from metashell.dashboard.model import FrameSource
from metashell.dashboard.widgets.text_line import TextLine

SAMPLES = 120  # the series are resampled to this many points; the sparkline buckets them to its width
CHARTS = (("records_per_s", "records/s"), ("fenced_brokers", "fenced brokers"), ("under_min_isr", "under min ISR"))
_X = itemgetter(0)


def resample(points: Sequence[tuple[int, float]], start: int, end: int, samples: int = SAMPLES) -> list[float]:
    """A step function given at points (x, value), sampled at ``samples`` evenly spaced x in
    [start, end]: the value of the last point at or before each x (0 before the first)."""
    span = max(1, end - start)
    out = []
    for k in range(samples):
        i = bisect_right(points, start + span * k / max(1, samples - 1), key=_X)
        out.append(float(points[i - 1][1]) if i else 0.0)
    return out


class Chart(Vertical):
    def __init__(self, key: str, label: str) -> None:
        super().__init__(id=f"chart-{key.replace('_', '-')}", classes="chart")
        self.key, self.label = key, label
        self.points: Sequence[tuple[int, float]] = []
        self.start = self.end = 0
        self.position = -1  # the sample index of the frame shown
        self._peak: float = 0
        self._peaked = 0  # points the peak covers (the last one may still grow: it is taken again)

    def compose(self) -> ComposeResult:
        yield TextLine(self.label, classes="chart-label")
        yield Sparkline([], summary_function=max)
        yield TextLine("", markup=False, classes="chart-marker")

    def set_series(self, points: Sequence[tuple[int, float]], start: int, end: int, *, grown: bool = False) -> None:
        """``points``: the source's list, kept (not copied). ``grown``: the same list as before,
        only appended to (its last point maybe raised): the peak is taken over the new points."""
        if not grown or points is not self.points:
            self._peak, self._peaked = 0, 0
        self.points, self.start, self.end = points, start, end
        for k in range(max(0, self._peaked - 1), len(points)):
            self._peak = max(self._peak, points[k][1])
        self._peaked = len(points)
        self.position = -1  # redraw the label and marker at the next show()
        self.query_one(Sparkline).data = resample(points, start, end) if points else [0.0]

    def show(self, x: int) -> None:
        """Mark ``x`` (an offset or a time, in the series' own unit)."""
        span = max(1, self.end - self.start)
        position = round((min(max(x, self.start), self.end) - self.start) / span * (SAMPLES - 1))
        if position == self.position:
            return
        self.position = position
        i = bisect_right(self.points, x, key=_X)
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

    def set_series(self, series: dict[str, list[tuple[int, float]]], first_offset: int, last_offset: int,
                   *, grown: bool = False) -> None:
        for key, _ in CHARTS:
            points = series.get(key, [])
            chart = self.query_one(f"#chart-{key.replace('_', '-')}", Chart)
            if key == "records_per_s":  # by time, not offset
                start = points[0][0] if points else 0
                chart.set_series(points, start, points[-1][0] if points else 0, grown=grown)
            else:
                chart.set_series(points, first_offset, last_offset, grown=grown)

    def follow(self, source: FrameSource, *, grown: bool = False) -> None:
        """The source's series over its span; ``grown``: only appended to since the last call."""
        self.set_series(source.series(), source.first_offset, source.last_offset, grown=grown)

    def show(self, offset: int, timestamp_ms: int) -> None:
        for chart in self.query(Chart):
            chart.show(timestamp_ms if chart.key == "records_per_s" else offset)
