"""A running quorum as a Source: an Attachment whose committed batches grow a MetadataHistory.

    source = LiveSource.connect("ctrl1:9093,ctrl2:9093")  # checked; nothing connects yet
    image, info = source.load()  # attached, caught up: the newest image
    source.close()

``attach`` waits until caught up (the command line, the shell); ``start`` does not (the
dashboard: it paints at once, and its polls take the first update once caught up, or raise the
attachment's one line when it gave up: every bootstrap controller failed its connection setup, or
nothing moved for ``attach_timeout_s`` once one was reached; see metashell.live.startup).

The attachment (metashell.live.attach) follows the metadata log on its own thread. ``poll``
drains it on the caller's thread — a reset (a snapshot fetched) starts the history anew,
committed batches extend it — and keeps its status; it never waits (``wait`` does, up to a
timeout). The attachment's ``on_update`` calls ``notify`` from its thread: that wakes ``wait``,
and calls the ``wake`` given to ``watch`` (the dashboard's screen) once until the next poll, so
the attachment never waits on its reader either.

The history (engine.image.metadata_history, growing) holds the image at attach time, then every
commit since, about ``window_records`` records of them at most (LIVE_WINDOW_RECORDS by default:
the oldest go first). It is the shell's ``seek`` range, the export's ``--history``, and, seen
by an observer (``observe``: the dashboard's LiveHistory), the dashboard's frames. The source
follows (the newest image) until ``seek`` moves it into what was fetched; ``frozen`` (one-shot
commands) keeps it at the state at attach time. The cluster id, once the attachment knows it,
is the history's /local/cluster-id. What changed since a point it reached (``mark``) is a change
set (``changes_since``): ``watch`` prints a path again only when one reaches it, and the shell's
refresh keeps what it left as it was.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple, Protocol

from engine.common.errors import ConfigError, OffsetOutOfRange
from engine.image.change_set import ChangeSet
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_history import MetadataHistory, ReplayObserver
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import LoadInfo
from engine.storage.log_reader import LogEntry

if TYPE_CHECKING:
    from engine.admin.quorum_client import QuorumInfo
    from metashell.live.feed import AttachStatus, FeedUpdate

# records since attach kept for seek and the dashboard (older ones dropped): about 53 MB of entries
# at about 530 bytes each, plus images (metashell.bench.window measures it)
LIVE_WINDOW_RECORDS = 100_000
# before catching up, once a controller was reached: give up when nothing moved this long (a
# refused or unresolvable controller is told apart at once, a silent one by its setup timeout)
ATTACH_TIMEOUT_S = 30.0
SLOW_AFTER_S = 2.0  # a wait this long at a terminal gets one line of progress (``LiveSource.on_slow``)
CHANGES_MAX_RECORDS = 10_000  # changes_since replays at most this many records (more: unknown, show it all again)


class Mark(NamedTuple):
    """A point a live history reached: its last offset, and how often it had been reset by then."""

    offset: int
    resets: int


class Feed(Protocol):
    """What a live source drains: metashell.live.attach.Attachment's surface. ``start`` and
    ``wait_caught_up`` (``caught_up_update`` for ``start``) are needed only when the source
    attaches itself (no ``initial`` update);
    a ``cluster_id`` attribute, when the feed has one, names the cluster once known."""

    @property
    def status(self) -> AttachStatus: ...

    @property
    def quorum(self) -> QuorumInfo | None: ...

    def drain(self) -> FeedUpdate: ...

    def close(self) -> None: ...


class LiveSource:
    """A running quorum, attached as an observer: the image at attach, then each commit since."""

    live = True
    snapshot = None
    log_dir = None

    def __init__(self, feed: Feed, *, window_records: int = LIVE_WINDOW_RECORDS,
                 attach_timeout_s: float = ATTACH_TIMEOUT_S, initial: FeedUpdate | None = None) -> None:
        """``feed``: an Attachment not started yet (``attach`` starts it and waits until caught
        up, or until it gives up), or, with ``initial``, one that handed this update over
        already (``wait_caught_up``'s): ``attach`` takes it instead. ``window_records`` may be
        changed until the source attaches."""
        self.feed = feed
        self.bootstrap = feed.status.bootstrap
        self.window_records = window_records
        self.attach_timeout_s = attach_timeout_s
        self.following = True  # the newest image; False after a seek into the past
        self.frozen = False  # one-shot commands: the state at attach time, nothing drained after it
        self._initial = initial
        self._observer: ReplayObserver | None = None
        self.changed = threading.Event()  # set from the feed's thread: something to drain
        self._wake: Callable[[], None] | None = None
        self._history: MetadataHistory | None = None
        self._status: AttachStatus | None = None
        self._started = False  # attached: the first update taken
        self._feed_started = False
        # ``attach``'s wait: after ``slow_after_s``, one line of progress to ``on_slow`` (a terminal's stderr)
        self.on_slow: Callable[[str], None] | None = None
        self.slow_after_s = SLOW_AFTER_S

    @classmethod
    def connect(cls, bootstrap: str, command_config: dict[str, str] | None = None, *,
                window_records: int = LIVE_WINDOW_RECORDS, attach_timeout_s: float = ATTACH_TIMEOUT_S) -> LiveSource:
        """The quorum at ``bootstrap`` (--bootstrap-controller, checked as Kafka's tools check it:
        a one-line ConfigError) with ``command_config`` (--command-config's properties); nothing
        connects until ``attach`` (or the first ``load``)."""
        from metashell.live.attach import Attachment  # late: a file source never needs the network

        source: LiveSource | None = None

        def on_update() -> None:  # from the attachment's thread, which starts after ``source`` is set
            if source is not None:
                source.notify()

        attachment = Attachment(bootstrap, command_config=command_config, on_update=on_update,
                                stall_timeout_ms=int(attach_timeout_s * 1000))
        source = cls(attachment, window_records=window_records, attach_timeout_s=attach_timeout_s)
        return source

    # -- attaching and following ---------------------------------------------------------------

    def observe(self, observer: ReplayObserver) -> None:
        """Have ``observer`` see the history's single pass, from its starting image on (before attach)."""
        if self._history is not None:
            raise ValueError("observe before attach: the history has begun without the observer")
        self._observer = observer

    def attach(self) -> None:
        """Connect and wait until caught up with the high watermark first seen (the attachment's
        one-line error when it stops or gives up, metashell.live.startup)."""
        if self._started:
            return
        update, self._initial = self._initial, None
        if update is None:
            self.start()
            if self.on_slow is not None:
                update = self.feed.wait_caught_up(None, slow_s=self.slow_after_s, on_slow=self.on_slow)
            else:
                update = self.feed.wait_caught_up(None)
        self._started = True
        self._apply(update)

    def start(self) -> None:
        """Start the attachment without waiting: ``poll`` takes the first update once caught up."""
        if not self._feed_started and self._initial is None:
            self._feed_started = True
            self.feed.start()

    @property
    def attached(self) -> bool:
        """Caught up once, the first update taken: the history exists."""
        return self._started

    def poll(self) -> bool:
        """Take what was committed since the last poll: True when the history grew or restarted
        (or learnt its cluster id). Started but not attached yet: True once the first update
        came (the history begins); the attachment's AttachError when it gave up."""
        if not self._started:
            if not self._feed_started and self._initial is None:
                return False
            self.changed.clear()
            update, self._initial = self._initial or self.feed.caught_up_update(), None
            if update is None:
                self._status = self.feed.status  # connecting, catching up: shown meanwhile
                return False
            self._started = True
            self._apply(update)
            return True
        self.changed.clear()  # before draining: an update after the drain sets it again
        return self._apply(self.feed.drain())

    def wait(self, timeout_s: float | None) -> bool:
        """Wait up to ``timeout_s`` for something committed, then take it (True when the history changed)."""
        self.changed.wait(timeout_s)
        return self.poll()

    def cluster_id(self, wait_s: float = 0.0) -> str | None:
        """The cluster's id as the attachment learnt it (the command config's cluster.id, or the
        leader's DescribeCluster, asked about once a second after attaching); waits up to
        ``wait_s`` for that answer. None if it has not come."""
        deadline = time.monotonic() + wait_s
        while True:
            found = getattr(self.feed, "cluster_id", None)
            if found is not None or time.monotonic() >= deadline:
                return found
            time.sleep(0.05)

    def notify(self) -> None:
        """Something to drain (called from the feed's thread): wake ``wait``, and the watcher once
        until the next poll."""
        if self.changed.is_set():
            return
        self.changed.set()
        wake = self._wake
        if wake is not None:
            wake()

    def watch(self, wake: Callable[[], None]) -> None:
        """Have ``wake`` called (from the feed's thread) when ``poll`` has something to take."""
        self._wake = wake
        if self.changed.is_set():  # notified before anyone watched: that wake-up is owed
            wake()

    def _apply(self, update: FeedUpdate) -> bool:
        self._status = update.status
        changed = False
        if update.reset is not None:
            image, offset = update.reset
            if self._history is None:
                # LoadInfo.source names where the image came from (/local/source): here, the quorum asked
                self._history = MetadataHistory.growing(LoadInfo(source=Path(self.bootstrap)), image, offset,
                                                        window_records=self.window_records, observer=self._observer)
            else:  # fell behind the leader's log start: what was fetched before is gone
                self._history.reset(image, offset)
            changed = True
        if update.batches:
            if self._history is None:  # the attachment always resets first; a guard, not a path
                raise ConfigError(f"{self.bootstrap}: the attachment sent records before a starting image")
            changed = self._history.extend(update.batches) > 0 or changed
        # /local/cluster-id: the attachment's cluster.id, or what DescribeCluster answered (which may
        # come after the attach), as meta.properties gives it offline; the tree shows it from its next look
        learnt = self._history is not None and self._history.learn_cluster_id(getattr(self.feed, "cluster_id", None))
        return learnt or changed

    @property
    def status(self) -> AttachStatus:
        """The attachment's AttachStatus as of the last update taken (metashell.live.feed)."""
        return self._status if self._status is not None else self.feed.status

    @property
    def quorum(self) -> QuorumInfo | None:
        """The leader's latest DescribeQuorum answer (engine.admin.quorum_client), as the feed has it now."""
        return self.feed.quorum

    # -- the image at a point --------------------------------------------------------------------

    def load(self, offset: int | None = None, time_ms: int | None = None) -> tuple[MetadataImage, LoadInfo]:
        self.attach()
        history = self._history
        if offset is None and time_ms is None:
            if not self.frozen:
                self.poll()
            self.following = True
            return self._history.image_at()
        first, last = self.window
        if offset is not None and offset < first:
            since = (f"in its window of {self.window_records:,} records" if self.trimmed else
                     "since it fetched a snapshot again" if history.resets else "since attach")
            raise OffsetOutOfRange(f"offset {offset} is before what this session fetched {since}: "
                                   f"seek {first}..{last}", first=first, last=last)
        if offset is not None and offset > last:  # not a silent clamp to the newest, and still following
            raise OffsetOutOfRange(f"offset {offset} is past the newest record this session fetched: "
                                   f"seek {first}..{last}, or live", first=first, last=last)
        if time_ms is not None and time_ms < history.start_image.provenance.last_timestamp_ms:
            raise OffsetOutOfRange(f"time {time_ms} is before what this session fetched (from offset {first}, "
                                   f"stamped {history.start_image.provenance.last_timestamp_ms} ms)",
                                   first=first, last=last)
        answer = history.image_at(offset=offset, time_ms=time_ms)
        self.following = False  # only once the point is answered: a refused seek leaves the shell following
        return answer

    @property
    def window(self) -> tuple[int, int]:
        """The offsets ``seek`` reaches: (the starting image's, the newest fetched)."""
        history = self._history
        if history is None:
            return (-1, -1)
        return history.start_offset, history.last_offset

    @property
    def trimmed(self) -> bool:
        """The history dropped its oldest records to the window (seek no longer reaches attach time)."""
        history = self._history
        return history is not None and history.dropped_records > 0

    def tag(self, shown_offset: int) -> str:
        """Where the shell stands, for its prompt: [live @N], [live @N lag L], [seek @N], [disconnected @N]."""
        status = self.status
        if not self.following:
            return f"[seek @{shown_offset}]"
        if status.error:
            return f"[stopped @{shown_offset}]"
        if not status.connected:
            return f"[disconnected @{shown_offset}]"
        lag = max(0, status.high_watermark - 1 - shown_offset) if status.high_watermark >= 0 else 0
        return f"[live @{shown_offset} lag {lag}]" if lag else f"[live @{shown_offset}]"

    # -- what the session fetched, for records and export --history ------------------------------------

    # -- what changed since a point --------------------------------------------------------------------

    def mark(self) -> Mark | None:
        """Where the history stands now (None before attaching): for ``changes_since`` later."""
        history = self._history
        return None if history is None else Mark(history.last_offset, history.resets)

    def changes_since(self, mark: Mark | None) -> ChangeSet | None:
        """What the records committed after ``mark`` changed, up to the newest: one change set,
        as the delta that replays them says. None when it cannot be told cheaply: no mark, a
        point the window dropped, a history fetched anew since, or more than CHANGES_MAX_RECORDS."""
        history = self._history
        if mark is None or history is None or mark.resets != history.resets or mark.offset < history.start_offset:
            return None
        low, high = history.index_of(mark.offset), len(history.entries) - 1
        if high - low > CHANGES_MAX_RECORDS:
            return None
        state = history.state_at(low)  # the mark's: a checkpoint (each drain ends at one) or a recent image
        delta = MetadataDelta(state.image, state.open_transaction)
        for entry in history.entries[low + 1:high + 1]:
            delta.replay(entry.record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
        return delta.changes()

    def fetched(self) -> tuple[MetadataImage, list[list[LogEntry]]]:
        """The starting image of the history and its batches since, in order."""
        self.attach()
        history = self._history
        bounds = [-1, *history.batch_ends]
        return history.start_image, [history.entries[a + 1:b + 1] for a, b in zip(bounds, bounds[1:])]

    def entries(self) -> Iterator[LogEntry]:
        for batch in self.fetched()[1]:
            yield from batch

    def close(self) -> None:
        self.feed.close()

    @property
    def history(self) -> MetadataHistory | None:
        """The history grown since attach (None before)."""
        return self._history

    @property
    def description(self) -> str:
        return f"the quorum at {self.bootstrap}"
