"""Three sparklines over the history — records/s, fenced brokers, under-min-ISR partitions — on
one time axis, with a marker showing where the frame shown stands.

Every chart spans the same time (the first record's to the last one's), so their columns line
up and one axis line under them names the times: HH:MM:SS, or the date too when the history
spans more than a day. The records/s series is by time already; the other two change at
offsets, and a sample at time t reads them at the offset of the last record stamped at or
before t (``FrameSource.offset_at_time``, a bisect).

A chart holds the source's own series list (no copy): a live source appends to it, and
``Charts.follow(grown=True)`` resamples over the new span (a bisect or two per sample) and takes
the peak of the points added since, so an update costs the same however long the history.
"""

from __future__ import annotations

from bisect import bisect_right
from datetime import datetime, timezone
from operator import itemgetter
from typing import Callable, Sequence

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline

from metashell.dashboard.model import FrameSource
from metashell.dashboard.widgets.text_line import TextLine

SAMPLES = 120  # the series are resampled to this many points; the sparkline buckets them to its width
CHARTS = (("records_per_s", "records/s"), ("fenced_brokers", "fenced brokers"), ("under_min_isr", "under min ISR"))
BY_TIME = frozenset({"records_per_s"})  # the others are (offset, value)
DAY_MS = 86_400_000
_X = itemgetter(0)


def resample(points: Sequence[tuple[int, float]], start: int, end: int, samples: int = SAMPLES,
             x_at: Callable[[int], int] | None = None) -> list[float]:
    """A step function given at points (x, value), sampled at ``samples`` evenly spaced times in
    [start, end]: the value of the last point at or before each time's x (0 before the first).
    ``x_at``: a time's x in the points' unit (an offset); None: the points are by time."""
    span = max(1, end - start)
    out = []
    for k in range(samples):
        moment = start + span * k // max(1, samples - 1)
        i = bisect_right(points, moment if x_at is None else x_at(moment), key=_X)
        out.append(float(points[i - 1][1]) if i else 0.0)
    return out


def time_label(time_ms: int, with_date: bool) -> str:
    moment = datetime.fromtimestamp(time_ms / 1000, timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M" if with_date else "%H:%M:%S")


def axis_line(start_ms: int, end_ms: int, width: int) -> str:
    """``09:00:00         09:01:05         09:02:10 UTC`` across ``width`` cells: the times at the
    left edge, the middle and the right edge (the middle, then "UTC", left out when short of
    room), dates included when the span passes a day."""
    with_date = end_ms - start_ms > DAY_MS
    left, right = time_label(start_ms, with_date), time_label(end_ms, with_date)
    middle = time_label((start_ms + end_ms) // 2, with_date)
    for labels in ((left, middle, right + " UTC"), (left, right + " UTC"), (left, right), (left,)):
        used = sum(cell_len(label) for label in labels)
        if used + 2 * (len(labels) - 1) <= width:
            break
    else:
        return left[:width]
    if len(labels) == 1:
        return labels[0]
    if len(labels) == 2:
        return labels[0] + " " * (width - used) + labels[1]
    gap = width - used
    before = (width - cell_len(labels[1])) // 2 - cell_len(labels[0])  # the middle label centred
    before = max(1, min(before, gap - 1))
    return labels[0] + " " * before + labels[1] + " " * (gap - before) + labels[2]


class Chart(Vertical):
    def __init__(self, key: str, label: str) -> None:
        super().__init__(id=f"chart-{key.replace('_', '-')}", classes="chart")
        self.key, self.label = key, label
        self.points: Sequence[tuple[int, float]] = []
        self.start = self.end = 0  # the span, in ms
        self.position = -1  # the sample index of the frame shown
        self._now: float | None = None
        self._peak: float = 0
        self._peaked = 0  # points the peak covers (the last one may still grow: it is taken again)
        self.counting = False  # the source is still counting this series: no number is shown

    def compose(self) -> ComposeResult:
        yield TextLine(self.label, classes="chart-label")
        yield Sparkline([], summary_function=max)

    def set_series(self, points: Sequence[tuple[int, float]], start_ms: int, end_ms: int, *,
                   x_at: Callable[[int], int] | None = None, grown: bool = False) -> None:
        """``points``: the source's list, kept (not copied), over the span ``start_ms``..``end_ms``;
        ``x_at``: a time's x in the points' unit (None: by time). ``grown``: the same list as
        before, only appended to (its last point maybe raised): the peak is taken over the new points."""
        if not grown or points is not self.points:
            self._peak, self._peaked = 0, 0
        self.points, self.start, self.end = points, start_ms, end_ms
        for k in range(max(0, self._peaked - 1), len(points)):
            self._peak = max(self._peak, points[k][1])
        self._peaked = len(points)
        self._now = None  # redraw the label at the next show()
        # an empty series too: a lone sample would draw as a full bar, zeros draw as the floor
        self.query_one(Sparkline).data = resample(points, start_ms, end_ms, x_at=x_at)

    def show(self, x: int) -> None:
        """The value at ``x`` (in the series' own unit: a time or an offset) in the label."""
        if self.counting:
            if self._now != -1:
                self._now = -1  # (no count is negative)
                self.query_one(".chart-label", TextLine).set_text(
                    f"[b]{self.label}[/b]  [$text-muted]counting…[/]")
            return
        i = bisect_right(self.points, x, key=_X)
        now = self.points[i - 1][1] if i else 0
        if now == self._now:
            return
        self._now = now
        self.query_one(".chart-label", TextLine).set_text(
            f"[b]{self.label}[/b]  [$text-muted]now[/] {now:g}  [$text-muted]max[/] {self._peak:g}")


class Charts(Vertical, can_focus=True):  # focusable: a panel the tab keys stop at
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="panel")
        self.border_title = "Charts"
        self.start = self.end = 0  # the span shown, in ms
        self.position = -1  # the column of the marker

    def compose(self) -> ComposeResult:
        for key, label in CHARTS:
            yield Chart(key, label)
        yield TextLine("", markup=False, classes="chart-marker")
        yield TextLine("", markup=False, classes="chart-axis")

    def set_series(self, series: dict[str, list[tuple[int, float]]], start_ms: int, end_ms: int,
                   x_at: Callable[[int], int], *, grown: bool = False) -> None:
        """Every chart over ``start_ms``..``end_ms``; ``x_at``: the offset at a time (the charts by offset)."""
        self.start, self.end = start_ms, max(end_ms, start_ms)
        for key, _ in CHARTS:
            chart = self.query_one(f"#chart-{key.replace('_', '-')}", Chart)
            chart.counting = key not in series  # a series still being counted (the source leaves it out)
            chart.set_series(series.get(key, []), self.start, self.end, x_at=None if key in BY_TIME else x_at,
                             grown=grown)
        self.position = -1
        self._draw_axis()

    def follow(self, source: FrameSource, *, grown: bool = False) -> None:
        """The source's series over its span; ``grown``: only appended to since the last call."""
        self.set_series(source.series(), *source.time_span(), source.offset_at_time, grown=grown)

    def show(self, offset: int, timestamp_ms: int) -> None:
        for chart in self.query(Chart):
            chart.show(timestamp_ms if chart.key in BY_TIME else offset)
        span = max(1, self.end - self.start)
        position = round((min(max(timestamp_ms, self.start), self.end) - self.start) / span * (SAMPLES - 1))
        if position != self.position:
            self.position = position
            self._draw_marker()

    def _width(self) -> int:
        return self.query_one(Sparkline).size.width or self.query_one(".chart-axis", TextLine).size.width

    def _draw_marker(self) -> None:
        width = self._width()
        if width <= 0 or self.position < 0:
            return
        column = min(width - 1, self.position * width // SAMPLES)
        # a rule up to the position reads as progress
        self.query_one(".chart-marker", TextLine).set_text("─" * column + "▲")

    def _draw_axis(self) -> None:
        width = self._width()
        if width > 0:
            self.query_one(".chart-axis", TextLine).set_text(axis_line(self.start, self.end, width))

    def axis_text(self) -> str:
        """The axis as shown (tests)."""
        return self.query_one(".chart-axis", TextLine).plain

    def on_resize(self) -> None:
        self._draw_marker()
        self._draw_axis()
