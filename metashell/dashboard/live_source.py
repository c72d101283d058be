"""The dashboard's live FrameSource: a History that a live attachment grows.

    source = open_live("ctrl1:9093,ctrl2:9093", window_records=100_000)  # attached, caught up
    DashboardApp(source).run()
    source.close()

The attachment (metashell.live.attach) follows the metadata log on its own thread; ``poll``
drains it on the UI thread — a reset (a snapshot fetched) starts the history anew, committed
batches extend it — and takes its status (the header's note) and its latest DescribeQuorum
answer (the Quorum panel's live columns). ``poll`` never waits: ``drain`` hands over what is
there. The attachment's ``on_update`` calls ``notify`` from its thread; ``notify`` calls the
screen's wake-up (a thread-safe ``post_message``) once per batch of updates, so the attachment
never waits on the UI either.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable, Protocol

from engine.image.metadata_history import MetadataHistory
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import LoadInfo
from engine.admin.quorum_client import QuorumInfo
from metashell.dashboard.history import History
from metashell.live.feed import AttachStatus, FeedUpdate

DEFAULT_WINDOW_RECORDS = 100_000  # records kept: ~53 MB of entries at ~530 bytes each, plus images (see bench_window)
CAUGHT_UP_TIMEOUT_S = 30.0


class Feed(Protocol):
    """What a live source drains: metashell.live.attach.Attachment's surface."""

    @property
    def status(self) -> AttachStatus: ...

    @property
    def quorum(self) -> QuorumInfo | None: ...

    def drain(self) -> FeedUpdate: ...

    def close(self) -> None: ...


class LiveSource(History):
    """A growing History fed by ``feed``; memory bounded by ``window_records`` records."""

    def __init__(self, feed: Feed, *, window_records: int = DEFAULT_WINDOW_RECORDS,
                 initial: FeedUpdate | None = None, clock_ms: Callable[[], int] | None = None) -> None:
        """``initial``: an update drained already (``wait_caught_up``'s); ``clock_ms``: "now" for
        the Quorum panel's ages (wall clock milliseconds; tests fix it)."""
        self.feed = feed
        self.clock_ms = clock_ms or (lambda: time.time_ns() // 1_000_000)
        status = feed.status
        replay = MetadataHistory.growing(LoadInfo(Path(status.bootstrap)), MetadataImage(), -1,
                                         window_records=window_records, observer=self)
        replay.learn_cluster_id(getattr(feed, "cluster_id", None))
        self._adopt(replay)
        self.live: AttachStatus = status
        self.quorum: QuorumInfo | None = None
        self._pending = threading.Event()
        self._wake: Callable[[], None] | None = None
        if initial is not None:
            self._take(initial)

    @property
    def window_records(self) -> int:
        return self.replay.window_records or 0

    # -- growth ---------------------------------------------------------------------------

    def poll(self) -> bool:
        """Drain the feed: True when frames, the status or the quorum changed."""
        self._pending.clear()  # before draining: an update arriving meanwhile wakes us again
        changed = self._take(self.feed.drain())
        quorum = self.feed.quorum
        if quorum is not self.quorum:
            self.quorum, changed = quorum, True
        if self.replay.learn_cluster_id(getattr(self.feed, "cluster_id", None)):  # DescribeCluster answered after the attach
            changed = True
        return changed

    def _take(self, update: FeedUpdate) -> bool:
        changed = update.status != self.live
        self.live = update.status
        if update.reset is not None:
            self.reset(*update.reset)
            changed = True
        if update.batches and self.extend(update.batches):
            changed = True
        return changed

    def watch(self, wake: Callable[[], None]) -> None:
        self._wake = wake
        if self._pending.is_set():  # notified before anyone watched: that wake-up is owed
            wake()

    def notify(self) -> None:
        """Something to drain (called from the feed's thread): wake the screen, once until it polls."""
        if self._pending.is_set():
            return
        self._pending.set()
        wake = self._wake
        if wake is not None:
            wake()

    def close(self) -> None:
        self.feed.close()


def open_live(bootstrap: str, *, command_config: dict[str, str] | None = None,
              window_records: int = DEFAULT_WINDOW_RECORDS,
              caught_up_timeout_s: float = CAUGHT_UP_TIMEOUT_S) -> LiveSource:
    """Attach to the quorum at ``bootstrap`` (--bootstrap-controller), wait until caught up
    (raises the attachment's one-line error on a fatal error or the timeout; call before the
    app runs, never on its thread) and return the source, for ``DashboardApp(source)``. The
    caller closes it (``source.close()``) when the app ends."""
    from metashell.live.attach import Attachment  # late: the file dashboard never needs the network

    holder: list[LiveSource] = []
    attachment = Attachment(bootstrap, command_config=command_config,
                            on_update=lambda: holder[0].notify() if holder else None)
    attachment.start()
    try:
        initial = attachment.wait_caught_up(caught_up_timeout_s)
        holder.append(LiveSource(attachment, window_records=window_records, initial=initial))
    except BaseException:
        attachment.close()
        raise
    return holder[0]
