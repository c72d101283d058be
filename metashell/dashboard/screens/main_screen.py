"""The dashboard's one screen: every panel, the time-travel keys, play mode.

Frames reach the panels through ``show(frame)`` only — stepping, jumping, play mode and the
live feed all take that path. Each panel compares what it is given with what it
shows and redraws only the difference; panels over parts of the image the frame shares with
the previous one (images are immutable and share what a batch did not touch) are skipped.

Play mode is two reactive attributes, ``playing`` and ``speed``; their watchers start and stop a
ticker (Textual's timers, or one the app was given: tests advance a ManualTicker by hand).

A source that grows (a live one) is polled on a ticker of its own and whenever it wakes the
screen (``SourceChanged``, posted from the feed's thread). At the last frame the screen
follows: new frames are shown as they come. Anywhere else it stays where the user is and the
header says "paused @N, +K new"; ``end`` follows again. A poll that raises stops the polling:
the header says so, what was fetched stays browsable (metashell.dashboard.failure logs why).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import replace
from datetime import datetime, timezone
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.reactive import var
from textual.widgets import Footer, Input

from engine.common.heap import settle_more
from metashell.dashboard import counting, panels
from metashell.dashboard.counting import WholeImageCounts
from metashell.dashboard.failure import EndedOnError, one_line, report
from metashell.dashboard.layout import PANELS
from metashell.dashboard.model import Frame, FrameSource, HeaderInfo
from metashell.dashboard.partition_view import PartitionView
from metashell.dashboard.screens.goto_checks import checked_offset, checked_time
from metashell.dashboard.screens.history_keys import HISTORY_BINDINGS, HistoryKeys
from metashell.dashboard.screens.panel_navigation import PanelNavigation
from metashell.dashboard.screens.prompt_screen import PromptScreen
from metashell.dashboard.ticker import IntervalTicker, Ticker, Ticking
from metashell.dashboard.widgets import (BrokersPanel, Charts, EventsFeed, HeaderBar, NodeBrowser, PartitionsPanel,
                                         QuorumPanel)
from metashell.dashboard.widgets.controller_panel import ControllerPanel
from metashell.dashboard.widgets.panel_tabs import PanelTabs
from metashell.dashboard.widgets.timeline import Timeline

POLL_SECONDS = 0.25  # a growing source is drained at least this often (and whenever it wakes us)
SPEEDS = (0.5, 1, 2, 4, 8, 16, 32, 64)
BATCH_SECONDS = 0.5  # at 1x, one batch every half second
TICK_SECONDS = 1 / 30  # never faster than this: at high speeds a tick takes several batches
FENCE_KINDS = frozenset({"fence", "unfence"})
ISR_KINDS = frozenset({"isr-shrink", "isr-expand"})
# The travel keys are priority bindings (tables and the tree bind arrows, home/end and space
# for scrolling); they stand down while an Input has focus, see check_action.
TRAVEL_ACTIONS = frozenset({"step", "batch", "first", "last", "play"})
RECORD_KEYS = Binding.Group("record", compact=True)
BATCH_KEYS = Binding.Group("batch", compact=True)
EVENT_KEYS = Binding.Group("event", compact=True)


def play_cadence(speed: float) -> tuple[float, int]:
    """(seconds between ticks, batches per tick) to play ``speed`` times BATCH_SECONDS' pace:
    ticks no closer than TICK_SECONDS, and the interval stretched to fit the whole batches a
    tick takes, so the pace is exactly ``speed / BATCH_SECONDS`` batches a second."""
    batches = max(1, math.ceil(TICK_SECONDS * speed / BATCH_SECONDS))
    return batches * BATCH_SECONDS / speed, batches


class SourceChanged(Message):
    """The source has something new to poll (posted from the live feed's thread)."""


class Counted(Message):
    """The whole-image counts are made (posted from the counting thread): ``counts``, or ``error``."""

    def __init__(self, counts: WholeImageCounts | None, error: Exception | None = None) -> None:
        super().__init__()
        self.counts, self.error = counts, error


class MainScreen(HistoryKeys, PanelNavigation, Screen):
    BINDINGS: ClassVar[list[BindingType]] = [
        # first: the footer lists the focused widget's keys, then these in order, and cuts the
        # rest on a narrow terminal; the key to every other key and the legend must stay
        Binding("question_mark", "app.help", "Help · legend"),
        # pairs share one footer label (Binding.Group): room for more keys on a narrow terminal
        Binding("left", "step(-1)", "-1 record", priority=True, group=RECORD_KEYS),
        Binding("right", "step(1)", "+1 record", priority=True, group=RECORD_KEYS),
        Binding("left_square_bracket,shift+left", "batch(-1)", "-1 batch", priority=True, group=BATCH_KEYS),
        Binding("right_square_bracket,shift+right", "batch(1)", "+1 batch", priority=True, group=BATCH_KEYS),
        Binding("n", "event(1)", "Next event", group=EVENT_KEYS),
        Binding("p", "event(-1)", "Prev event", group=EVENT_KEYS),
        Binding("f", "next_fence", "Next fence/unfence", show=False),
        Binding("i", "next_isr", "Next ISR change", show=False),
        Binding("g", "goto_offset", "Go to offset", show=False),
        Binding("T,ctrl+t", "goto_time", "Go to time", show=False),
        Binding("home", "first", "First record", priority=True, show=False),
        Binding("end", "last", "Last record", priority=True, show=False),
        Binding("space", "play", "Play/pause", priority=True),
        Binding("plus,equals_sign", "speed(1)", "Faster", show=False),
        Binding("minus", "speed(-1)", "Slower", show=False),
        Binding("slash", "filter", "Filter"),
        Binding("tab", "cycle_panel(1)", "Next panel", show=False),
        Binding("shift+tab", "cycle_panel(-1)", "Previous panel", show=False),
        *(Binding(spec.key, f"show_panel('{spec.id}')", f"Show {spec.title}", show=False) for spec in PANELS),
        Binding("enter", "drill_down", "Drill down"),
        Binding("escape", "escape", "Clear filter"),
        Binding("w", "app.save_screen", "Save screen (SVG)", show=False),
        *HISTORY_BINDINGS,
    ]

    playing = var(False, init=False)
    speed = var(1.0, init=False)

    def __init__(self, source: FrameSource, offset: int | None = None, *, ticker: Ticker | None = None,
                 poll_ticker: Ticker | None = None) -> None:
        """``ticker``: what play mode ticks on, ``poll_ticker`` what a growing source is polled
        on (default: Textual's timers for both)."""
        super().__init__()
        self.source = source
        self.frame: Frame | None = None
        self.frames_shown = 0
        self.following = True  # at the last frame: a growing source's new frames are shown
        self._paused_in = 0  # the source's records_in when the screen stopped following
        self._start_offset = offset
        self._ticker: Ticker = ticker if ticker is not None else IntervalTicker(self)
        self._ticking: Ticking | None = None
        self._poll_ticker: Ticker = poll_ticker if poll_ticker is not None else IntervalTicker(self)
        self._polling: Ticking | None = None
        self.feed_failure: str | None = None  # why a growing source was stopped (its poll raised)
        self._seen = (source.generation, source.reshaped)
        # False while a big lazily loaded image's whole-image counts are made in the background
        # (metashell.dashboard.counting): the panels say "counting…" until then
        self.counted = True
        self.counted_event = asyncio.Event()  # set once they are (tests await it)
        self.count_failure: str | None = None
        self.counts: WholeImageCounts | None = None
        self._counting: counting.Counting | None = None

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header")
        yield Timeline(id="timeline")
        yield PanelTabs(id="panel-tabs")
        with Horizontal(id="body"):
            # in the wide layout, top to bottom and left to right in the order of their keys
            # (metashell.dashboard.layout.PANELS): the partitions first, as htop's process table
            with Vertical(id="left"):
                yield PartitionsPanel(id="partitions-panel")
                yield BrokersPanel(id="brokers-panel")
                yield QuorumPanel(id="quorum")
            with Vertical(id="right"):
                yield EventsFeed(self.source, id="events-panel")
                yield ControllerPanel(id="controller")
                yield Charts(id="charts")
                yield NodeBrowser(id="nodes")
        yield Footer()

    def on_mount(self) -> None:
        src = self.source
        frame = src.last() if self._start_offset is None else src.frame_at(self._start_offset)
        self.counted = not counting.counted_in_background(frame.image)
        if self.counted:
            if not getattr(src, "under_counted", True):  # its own start was big, what is shown is not
                src.set_under_base(src.count_under_base())
                self._seen = (src.generation, src.reshaped)
            self.counted_event.set()
        else:  # after the first paint: the counting's start (a fork) would delay it
            self.call_after_refresh(self._start_counting, frame.image)
        self.query_one(Charts).follow(src)
        self.show(frame)
        for spec in PANELS:
            self.panel(spec.id).border_title = f"{spec.key} {spec.title}"
        self.apply_layout(*self.app.size)
        self._mark_active()
        # after the first refresh: the layout's classes must have taken effect, else the table
        # would still be undisplayed and lose the focus again
        self.call_after_refresh(self.query_one(PartitionsPanel).table.focus)
        if src.grows:
            src.watch(lambda: self.post_message(SourceChanged()))  # post_message is thread-safe
            self._polling = self._poll_ticker.start(POLL_SECONDS, self.poll_source)

    # -- whole-image counts in the background -----------------------------------------------------

    def _start_counting(self, image) -> None:
        """Quitting does not wait for it: its process is ended on unmount, a thread is a daemon."""
        try:
            self._counting = counting.start_counting(image, self.source,
                                    lambda counts, error: self.post_message(Counted(counts, error)),
                                    fork=self.source.live is None)
        except Exception as exc:  # noqa: BLE001 - could not start (no process or thread left): said in one line
            self.on_counted(Counted(None, exc))

    def on_counted(self, message: Counted) -> None:
        if message.error is not None:
            self.count_failure, _ = report("counting the partitions failed", message.error)
            self.notify(self.count_failure, severity="error", timeout=30)
            return
        counts, src = message.counts, self.source
        panels.seed_leadership(counts.leadership)
        self.query_one(ControllerPanel).take_counts(counts.topic_counts)
        if counts.under_base is not None and hasattr(src, "set_under_base"):
            src.set_under_base(counts.under_base)
        self.counts = counts
        self.counted = True
        self.counted_event.set()
        self._seen = (src.generation, src.reshaped)
        self.query_one(Charts).follow(src)
        if self.frame is not None:
            self._show_counted(self.frame)
        settle_more()  # the counts live as long as the app: kept out of every later full collection

    def _show_counted(self, frame: Frame) -> None:
        """The panels that waited for the counts, over the frame on screen."""
        image = frame.image
        self.query_one(BrokersPanel).show(panels.broker_rows(image, self.source.known_broker_ids(frame)))
        self.query_one(PartitionsPanel).show(self._partition_view(image))
        self.query_one(ControllerPanel).show(image)
        self.query_one(Charts).show(frame.offset, frame.timestamp_ms)

    def _partition_view(self, image) -> PartitionView:
        shown = self.query_one(PartitionsPanel).all_rows
        return PartitionView(image, self.counts.partition_counts if self.counts is not None else None,
                             shown if isinstance(shown, PartitionView) else None)

    def on_unmount(self) -> None:
        if self._counting is not None:
            self._counting.stop()  # quitting: the count's process ends with the app
        if self._polling is not None:
            self._polling.stop()
        self.source.watch(lambda: None)

    def on_source_changed(self, _: SourceChanged) -> None:
        self.poll_source()

    # -- a growing source ------------------------------------------------------------------------

    def poll_source(self) -> None:
        """Take in what the source has: following, show its last frame; else stay, and say so."""
        src = self.source
        if self.feed_failure is not None:
            return
        try:
            changed = src.poll()
        except Exception as exc:  # noqa: BLE001 - a failing feed stops; the app and what it fetched stay
            self._feed_failed(exc)
            return
        if not changed or self.frame is None:
            return
        if (src.generation, src.reshaped) != self._seen:
            grown = src.reshaped == self._seen[1]
            self._seen = (src.generation, src.reshaped)
            self.query_one(Charts).follow(src, grown=grown)
        if self.following:
            self.show(src.last(self.frame))
            return
        frame = self.frame  # where the user is looking: only what tells of the present moves
        self._refresh_header()
        self._show_quorum(frame)
        self.query_one(EventsFeed).show(frame.offset, _changed_from(frame))
        self.query_one(Charts).show(frame.offset, frame.timestamp_ms)

    def _feed_failed(self, exc: Exception) -> None:
        """The source's poll raised (a record the replay cannot take, a broken attachment): its
        state is unknown, so it is polled no more; what was fetched stays browsable, the header
        says why it stopped and the traceback goes to the failure log. A live source that never
        attached (it gave up connecting) has nothing to browse: the app ends with its one line,
        as the command line would (metashell.dashboard.failure.EndedOnError)."""
        if not getattr(self.source, "attached", True):
            self.feed_failure = one_line(exc)
            self.app.exit(EndedOnError(self.feed_failure), return_code=1)
            return
        self.feed_failure = f"live feed stopped: {one_line(exc)}"
        if self._polling is not None:
            self._polling.stop()
            self._polling = None
        self.source.watch(lambda: None)
        line, _ = report("the live feed stopped", exc)
        self.notify(line, severity="error", timeout=30)
        self._refresh_header()

    def live_state(self) -> tuple[str, str]:
        """The header's word on a live source: ("", "") for a file."""
        src, frame = self.source, self.frame
        if frame is not None and self.feed_failure is not None:
            return f"✖ {self.feed_failure}", "down"
        if src.live is None or frame is None:
            return "", ""
        return panels.live_state(src.live, following=self.following, offset=frame.offset,
                                 new_records=src.records_in - self._paused_in,
                                 playing=self.speed if self.playing else None)

    def _show_quorum(self, frame: Frame) -> None:
        """At a live source's last frame, the quorum as its leader tells it now; else the frame's."""
        src, image = self.source, frame.image
        quorum, status = src.quorum, src.live
        if status is not None and self.following and quorum is not None:
            rows = panels.live_voter_rows(image, quorum, src.clock_ms())
            note = f"live · leader {quorum.leader_id} · epoch {quorum.leader_epoch} · " \
                   f"high watermark {quorum.high_watermark}"
        else:
            rows, note = panels.voter_rows(frame, src.info), ""
            if status is not None and self.following and status.leader_id >= 0:  # the Raft leader, not the log's
                rows = [replace(r, role="leader" if r.node_id == status.leader_id else "voter") for r in rows]
        self.query_one(QuorumPanel).show(rows, panels.leader_history(image), note)

    def _header(self, frame: Frame) -> HeaderInfo:
        header = panels.header_info(frame, self.source.info)
        if frame.last_offset != self.source.last_offset:  # a frame shown before the source grew
            header = replace(header, position=panels.position_text(frame.offset, self.source.last_offset))
        damage = getattr(self.source, "damage_words", None)
        words = damage() if damage is not None else None
        if words:  # stays in the header: the note printed before the app opened is hidden by its screen
            header = replace(header, position=f"{header.position} · {words}")
        status = self.source.live
        if status is not None and self.following and status.leader_id >= 0:
            header = replace(header, leader=f"{status.leader_id} (epoch {status.leader_epoch})")
        return header

    # -- frames -------------------------------------------------------------------------------

    def show(self, frame: Frame) -> None:
        """Update every panel from ``frame``; each redraws only what differs from before."""
        previous, self.frame = self.frame, frame
        self.frames_shown += 1
        following = frame.offset >= self.source.last_offset
        if self.following and not following:
            self._paused_in = self.source.records_in
        self.following = following
        info = self.source.info
        image, old = frame.image, previous.image if previous else None
        self.query_one(HeaderBar).show(self._header(frame), self.play_state(), self.live_state())
        self._show_quorum(frame)
        counted = self.counted
        if old is None or image.cluster is not old.cluster or image.topics is not old.topics:
            self.query_one(BrokersPanel).show(panels.broker_rows(image, self.source.known_broker_ids(frame),
                                                                 counted=counted))
        if old is None or image.topics is not old.topics or image.configs is not old.configs:
            # only the rows on screen are built (a lazily loaded image decodes only their topics)
            self.query_one(PartitionsPanel).show(self._partition_view(image))
        # the feed marks the events of the records applied since the last frame shown
        self.query_one(EventsFeed).show(frame.offset, _changed_from(frame))
        self.query_one(Charts).show(frame.offset, frame.timestamp_ms)
        self.query_one(ControllerPanel).show(image, counted=counted)
        if old is None or image is not old:
            self.query_one(NodeBrowser).show(image, info)
        self.show_timeline(frame)

    def play_state(self) -> str:
        """``▶ playing 2x``, unless the live state already says so (away from a live source's
        newest frame it tells where the view is, playing or paused: the header says it once)."""
        if not self.playing:
            return ""
        if self.source.live is not None and self.feed_failure is None and not self.following:
            return ""
        return f"▶ playing {self.speed:g}x"

    def _go(self, frame: Frame) -> None:
        if frame is not self.frame:
            self.show(frame)

    # -- time travel ---------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in TRAVEL_ACTIONS and isinstance(self.focused, Input):
            return False  # let the Input have its arrows, home/end and space
        if action == "escape":  # only while there is a filter to clear (and only then in the footer)
            return self.is_mounted and self.escape_enabled()
        return True

    def action_step(self, records: int) -> None:
        assert self.frame is not None
        self._go(self.source.step(self.frame, records))

    def action_batch(self, direction: int) -> None:
        assert self.frame is not None
        self._go(self.source.next_batch(self.frame) if direction > 0 else self.source.prev_batch(self.frame))

    def action_event(self, direction: int) -> None:
        assert self.frame is not None
        self._go(self.source.next_event(self.frame) if direction > 0 else self.source.prev_event(self.frame))

    def action_next_fence(self) -> None:
        assert self.frame is not None
        self._go(self.source.next_event(self.frame, set(FENCE_KINDS)))

    def action_next_isr(self) -> None:
        assert self.frame is not None
        self._go(self.source.next_event(self.frame, set(ISR_KINDS)))

    def action_first(self) -> None:
        self._go(self.source.first(self.frame))

    def action_last(self) -> None:
        self._go(self.source.last(self.frame))

    def action_goto_offset(self) -> None:
        src = self.source
        low, high = reachable(src.start_offset, src.first_offset, src.last_offset)
        runs = self.spans.runs
        where = ", ".join(f"{a}..{b}" for a, b in runs) if len(runs) > 1 else f"{low}..{high}"
        # the range is read again at the answer: a live source may have grown (or its window moved)
        self.app.push_screen(PromptScreen(f"Go to offset ({where})", "offset",
                                          lambda text: checked_offset(src, text, lambda typed: parse_offset(
                                              typed, src.start_offset, src.first_offset, src.last_offset))),
                             lambda value: self.goto_offset(value) if isinstance(value, int) else None)

    def action_goto_time(self) -> None:
        src = self.source  # as --time: before the earliest point (or into damage) is refused, not moved to
        self.app.push_screen(PromptScreen("Go to time (UTC)", "2026-01-01T00:00:05Z or epoch ms",
                                          lambda text: checked_time(src, parse_time(text))),
                             lambda value: self.goto_time(value) if isinstance(value, int) else None)

    # -- play mode ------------------------------------------------------------------------------

    def action_play(self) -> None:
        if not self.playing and self.frame is not None and self.frame.offset >= self.source.last_offset:
            self.show(self.source.first(self.frame))  # at the end: play from the start
        self.playing = not self.playing

    def action_speed(self, direction: int) -> None:
        index = min(range(len(SPEEDS)), key=lambda i: abs(SPEEDS[i] - self.speed)) + direction
        self.speed = float(SPEEDS[max(0, min(len(SPEEDS) - 1, index))])
        self.notify(f"speed {self.speed:g}x", timeout=1)

    def watch_playing(self) -> None:
        self._restart_ticking()

    def watch_speed(self) -> None:
        self._restart_ticking()

    def _restart_ticking(self) -> None:
        """Stop the ticker; start it again at the cadence of the speed while playing."""
        if self._ticking is not None:
            self._ticking.stop()
            self._ticking = None
        if self.playing:
            interval_s, _ = play_cadence(self.speed)
            self._ticking = self._ticker.start(interval_s, self.play_tick)
        self._refresh_header()

    def play_tick(self) -> None:
        """One tick of play mode: the next batch(es), shown through the same ``show`` path; play
        stops on reaching the end of the history."""
        if self.frame is None or not self.playing:
            return
        frame = self.frame
        for _ in range(play_cadence(self.speed)[1]):
            frame = self.source.next_batch(frame)
        moved = frame is not self.frame
        if moved:
            self.show(frame)
        if not moved or frame.offset >= self.source.last_offset:
            self.playing = False

    def _refresh_header(self) -> None:
        if self.frame is not None:
            self.query_one(HeaderBar).show(self._header(self.frame), self.play_state(), self.live_state())

def _changed_from(frame: Frame) -> int:
    """The offset before the first record applied since the frame shown before."""
    return frame.changed[0].offset - 1 if frame.changed else frame.offset - 1


def reachable(start_offset: int, first_offset: int, last_offset: int) -> tuple[int, int]:
    """The offsets ``g`` takes, as told to the user: from the starting snapshot's (when there is
    one) or the first record's to the last one's. -1, before the first record of a log that
    starts at 0, is taken too but not advertised (``home`` goes there)."""
    return (start_offset if start_offset >= 0 else first_offset), last_offset


def parse_offset(text: str, start_offset: int, first_offset: int, last_offset: int) -> int:
    """An offset the history holds; a ValueError of one line naming the reachable range otherwise
    (never clamped: ``g 99999`` on a log ending at 214 is an error, not the end)."""
    low, high = reachable(start_offset, first_offset, last_offset)
    if not text.lstrip("-").isdigit():
        raise ValueError(f"{text or 'nothing'} is not an offset: give one of {low}..{high}")
    offset = int(text)
    if offset > last_offset:
        raise ValueError(f"offset {offset} is past the end: offsets {low}..{high} can be reached")
    if offset < start_offset:
        raise ValueError(f"offset {offset} is before the start: offsets {low}..{high} can be reached")
    return offset


def parse_time(text: str) -> int:
    """Epoch milliseconds, or ISO-8601 (UTC unless it says otherwise)."""
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError("a time: 2026-01-01T00:00:05Z, or epoch milliseconds") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)
