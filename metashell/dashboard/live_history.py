"""The dashboard's live FrameSource: a History over a LiveSource (metashell.source.live).

    source = open_live("ctrl1:9093,ctrl2:9093")  # attached, caught up
    DashboardApp(source).run()
    source.close()

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
from typing import Callable

from engine.admin.quorum_client import QuorumInfo
from metashell.dashboard.history import History
from metashell.live.feed import AttachStatus
from metashell.source import ATTACH_TIMEOUT_S, LIVE_WINDOW_RECORDS, LiveSource


class LiveHistory(History):
    """The frames of what ``source`` fetched since attach, growing as it polls."""

    def __init__(self, source: LiveSource, *, clock_ms: Callable[[], int] | None = None) -> None:
        """Attaches ``source`` when it is not yet (waiting until caught up: call before the app
        runs, never on its thread). ``clock_ms``: "now" for the Quorum panel's ages (wall clock
        milliseconds; tests fix it)."""
        self.source = source
        self.clock_ms = clock_ms or (lambda: time.time_ns() // 1_000_000)
        source.observe(self)  # before the history begins: its whole single pass is seen
        source.attach()
        self._adopt(source.history)
        self.live: AttachStatus = source.status
        self.quorum: QuorumInfo | None = None

    def poll(self) -> bool:
        """Drain the source: True when frames, the status or the quorum changed."""
        changed = self.source.poll()  # the history grew, restarted or learnt its cluster id
        self._took()
        status = self.source.status
        if status != self.live:
            self.live, changed = status, True
        quorum = self.source.quorum
        if quorum is not self.quorum:
            self.quorum, changed = quorum, True
        return changed

    def watch(self, wake: Callable[[], None]) -> None:
        self.source.watch(wake)

    def close(self) -> None:
        self.source.close()


def open_live(bootstrap: str, *, command_config: dict[str, str] | None = None,
              window_records: int = LIVE_WINDOW_RECORDS, attach_timeout_s: float = ATTACH_TIMEOUT_S) -> LiveHistory:
    """Attach to the quorum at ``bootstrap`` (--bootstrap-controller), wait until caught up
    (raises the attachment's one-line error on a fatal error or the timeout; call before the
    app runs, never on its thread) and return the frames, for ``DashboardApp(source)``. The
    caller closes it (``source.close()``) when the app ends."""
    source = LiveSource.connect(bootstrap, command_config, window_records=window_records,
                                attach_timeout_s=attach_timeout_s)
    try:
        return LiveHistory(source)
    except BaseException:
        source.close()
        raise
