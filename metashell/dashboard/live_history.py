"""The dashboard's live FrameSource: a History over a LiveSource (metashell.source.live).

    source = open_live("ctrl1:9093,ctrl2:9093")  # attached, caught up
    DashboardApp(source).run()
    source.close()

    source = LiveHistory(LiveSource.connect("ctrl1:9093"), wait=False)  # the command line's way
    DashboardApp(source).run()  # painted at once: "connecting to ...", then catching up, then the data

Opened without waiting, it shows an empty frame (the empty image at offset -1) while the
attachment connects and catches up, its status in the header; the first poll after the catch-up
adopts the source's history (generation and reshaped move on, so the screen shows its last frame
and the charts start over). A poll raises the attachment's one line when it gave up.

The LiveSource owns the attachment and the growing MetadataHistory; this History observes
that history's single pass (the events, the series for the charts) from its start, and shows
its frames. ``poll`` has the source drain the attachment on the UI thread and takes in what
changed: new frames, the status (the header's note) and the latest DescribeQuorum answer (the
Quorum panel's live columns). ``poll`` never waits; the source calls the screen's wake-up (a
thread-safe ``post_message``) from the attachment's thread once per batch of updates, so the
attachment never waits on the UI either.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from engine.admin.quorum_client import QuorumInfo
from engine.image.metadata_history import MetadataHistory
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import LoadInfo
from metashell.dashboard.history import History
from metashell.live.feed import AttachStatus
from metashell.source import ATTACH_TIMEOUT_S, LIVE_WINDOW_RECORDS, LiveSource


class LiveHistory(History):
    """The frames of what ``source`` fetched since attach, growing as it polls."""

    def __init__(self, source: LiveSource, *, clock_ms: Callable[[], int] | None = None, wait: bool = True) -> None:
        """With ``wait``, attaches ``source`` when it is not yet (waiting until caught up: call
        before the app runs, never on its thread); without, starts it and shows an empty frame
        until a poll finds it caught up. ``clock_ms``: "now" for the Quorum panel's ages (wall
        clock milliseconds; tests fix it)."""
        self.source = source
        self.clock_ms = clock_ms or (lambda: time.time_ns() // 1_000_000)
        source.observe(self)  # before the history begins: its whole single pass is seen
        if wait or source.attached:
            source.attach()
            self._adopt(source.history)
        else:
            source.start()
            empty = MetadataImage()
            self.replay_started(empty, -1)
            self._adopt(MetadataHistory.growing(LoadInfo(source=Path(source.bootstrap)), empty, -1, window_records=1))
        self.live: AttachStatus = source.status
        self.quorum: QuorumInfo | None = None

    def poll(self) -> bool:
        """Drain the source: True when frames, the status or the quorum changed. Raises the
        attachment's one-line error when it gave up before catching up."""
        attached = self.source.attached
        changed = self.source.poll()  # the history grew, restarted or learnt its cluster id
        if not attached and self.source.attached:
            self._adopt_attached()
        else:
            self._took()
        status = self.source.status
        if status != self.live:
            self.live, changed = status, True
        quorum = self.source.quorum
        if quorum is not self.quorum:
            self.quorum, changed = quorum, True
        return changed

    def _adopt_attached(self) -> None:
        """The source caught up: show its history instead of the empty frame; the counters move
        on (never back), so a screen over this source sees new frames and new lists."""
        generation, reshaped = self.generation, self.reshaped
        self._adopt(self.source.history)
        self.generation, self.reshaped = generation + 1, reshaped + 1
        from engine.common.heap import settle_heap

        settle_heap()  # as the command line does before a file's dashboard: the attach-time image lives on

    @property
    def attached(self) -> bool:
        """Caught up once: the frames are the quorum's (before, one empty frame)."""
        return self.source.attached

    def watch(self, wake: Callable[[], None]) -> None:
        self.source.watch(wake)

    def close(self) -> None:
        self.source.close()


def open_live(bootstrap: str, *, command_config: dict[str, str] | None = None,
              window_records: int = LIVE_WINDOW_RECORDS, attach_timeout_s: float = ATTACH_TIMEOUT_S,
              wait: bool = True) -> LiveHistory:
    """Attach to the quorum at ``bootstrap`` (--bootstrap-controller) and return the frames, for
    ``DashboardApp(source)``. With ``wait``, caught up first (raises the attachment's one-line
    error when it stops or gives up; call before the app runs, never on its thread); without,
    at once (a bad bootstrap or command config still raises here), connecting meanwhile. The
    caller closes it (``source.close()``) when the app ends."""
    source = LiveSource.connect(bootstrap, command_config, window_records=window_records,
                                attach_timeout_s=attach_timeout_s)
    try:
        return LiveHistory(source, wait=wait)
    except BaseException:
        source.close()
        raise
