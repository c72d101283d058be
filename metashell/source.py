"""Where the shell's image comes from, and how to move it in time.

A log directory is read once, into a MetadataHistory (engine.image.metadata_history), from
its newest snapshot at or before the first point asked for; ``seek`` then replays from the
history's checkpoints instead of reading the log again. A point before that snapshot reads
the older span of the log once; ``seek latest`` reads what a running node appended since
(nothing when the segments' sizes are as they were).

A live quorum (``LiveSource``, ``--bootstrap-controller``) is an Attachment (metashell.live)
whose committed batches grow a MetadataHistory: the image at attach time, then every commit
since. It follows (the newest image) until ``seek`` moves it into what was fetched since
attach; ``frozen`` (one-shot commands) keeps it at the state at attach time. What changed since
a point it reached (``mark``) is a change set (``changes_since``): ``watch`` prints a path again
only when one reaches it, and the session's refresh keeps what it left as it was.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple

from engine.common.errors import ConfigError
from engine.image.change_set import ChangeSet
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_history import MetadataHistory
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import LoadInfo, load_snapshot
from engine.storage.log_reader import LogEntry, read_file, read_log_dir
from engine.storage.meta_properties import MetaProperties

ATTACH_TIMEOUT_S = 30.0  # connect, fetch the snapshot and catch up to the first high watermark
LIVE_WINDOW_RECORDS = 100_000  # records since attach kept for seek (older ones dropped), as the live dashboard keeps
CHANGES_MAX_RECORDS = 10_000  # changes_since replays at most this many records (more: unknown, show it all again)


class Mark(NamedTuple):
    """A point a live history reached: its last offset, and how often it had been reset by then."""

    offset: int
    resets: int


@dataclass
class Source:
    """A snapshot file or a log directory; ``load`` gives the image at a point of its history."""

    snapshot: Path | None = None
    log_dir: Path | None = None
    _history: MetadataHistory | None = field(default=None, init=False, repr=False, compare=False)

    live = False

    def load(self, offset: int | None = None, time_ms: int | None = None) -> tuple[MetadataImage, LoadInfo]:
        if self.log_dir is not None:
            if self._history is None:
                self._history = MetadataHistory.open_log_dir(self.log_dir, offset=offset, time_ms=time_ms)
            elif offset is None and time_ms is None:
                self._history.read_new()  # the latest: what a running node appended since
            return self._history.image_at(offset=offset, time_ms=time_ms)
        if offset is not None or time_ms is not None:
            raise ConfigError("seek needs a log directory (--log-dir): a snapshot holds one point in time")
        return load_snapshot(self.snapshot)

    def entries(self) -> Iterable[LogEntry]:
        """Every record of the source, in log order (the segments', not a snapshot's, for a log directory)."""
        return read_log_dir(self.log_dir, use_snapshot=False) if self.log_dir else read_file(self.snapshot)

    def close(self) -> None:
        """Nothing to release: the files are read and closed."""

    @property
    def history(self) -> MetadataHistory | None:
        """The log directory's history, once a ``load`` has read it (None before, and for a snapshot)."""
        return self._history

    @property
    def description(self) -> str:
        return str(self.log_dir or self.snapshot)


class LiveSource:
    """A running quorum, attached as an observer: the image at attach, then each commit since."""

    live = True
    snapshot = None
    log_dir = None

    def __init__(self, bootstrap: str, command_config: dict[str, str] | None = None, *,
                 window_records: int = LIVE_WINDOW_RECORDS, attach_timeout_s: float = ATTACH_TIMEOUT_S):
        from metashell.live.attach import Attachment

        self.bootstrap = bootstrap
        self.window_records = window_records
        self.attach_timeout_s = attach_timeout_s
        self.changed = threading.Event()  # set from the attachment's thread: something to drain
        self.attachment = Attachment(bootstrap, command_config=command_config, on_update=self.changed.set)
        self.following = True  # the newest image; False after a seek into the past
        self.frozen = False  # one-shot commands: the state at attach time, nothing drained after it
        self._history: MetadataHistory | None = None
        self._status: Any = None
        self._started = False

    # -- attaching and following ---------------------------------------------------------------

    def attach(self) -> None:
        """Connect and wait until caught up with the high watermark first seen (a one-line error
        on a fatal error or when that takes longer than ``attach_timeout_s``)."""
        if self._started:
            return
        self._started = True
        self.attachment.start()
        self._apply(self.attachment.wait_caught_up(self.attach_timeout_s))

    def poll(self) -> bool:
        """Take what was committed since the last poll: True when the history grew or restarted."""
        if not self._started:
            return False
        self.changed.clear()  # before draining: an update after the drain sets it again
        return self._apply(self.attachment.drain())

    def wait(self, timeout_s: float | None) -> bool:
        """Wait up to ``timeout_s`` for something committed, then take it (True when the history changed)."""
        self.changed.wait(timeout_s)
        return self.poll()

    def _apply(self, update: Any) -> bool:
        self._status = update.status
        changed = False
        if update.reset is not None:
            image, offset = update.reset
            if self._history is None:
                self._history = MetadataHistory.growing(self._info(), image, offset,
                                                        window_records=self.window_records)
            else:  # fell behind the leader's log start: what was fetched before is gone
                self._history.reset(image, offset)
            changed = True
        if update.batches:
            if self._history is None:  # the attachment always resets first; a guard, not a path
                raise ConfigError(f"{self.bootstrap}: the attachment sent records before a starting image")
            changed = self._history.extend(update.batches) > 0 or changed
        return self._learn_cluster_id() or changed

    def _learn_cluster_id(self) -> bool:
        """/local/cluster-id: the cluster the attachment reads (its cluster.id, or what DescribeCluster
        answered, which may come after the attach), as meta.properties gives it offline. True when
        it was learnt now (the session's tree shows it from its next look)."""
        history, cluster_id = self._history, self.attachment.cluster_id
        if history is None or not cluster_id or (history.info.meta is not None and history.info.meta.cluster_id):
            return False
        history.info = replace(history.info, meta=MetaProperties(1, cluster_id))
        return True

    def _info(self) -> LoadInfo:
        # LoadInfo.source names where the image came from (/local/source): here, the quorum asked
        return LoadInfo(source=Path(self.bootstrap))

    @property
    def status(self) -> Any:
        """The attachment's AttachStatus as of the last update taken (metashell.live.feed)."""
        return self._status if self._status is not None else self.attachment.status

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
            raise ConfigError(f"offset {offset} is before what this session fetched {since}: seek {first}..{last}")
        if time_ms is not None and time_ms < history.start_image.provenance.last_timestamp_ms:
            raise ConfigError(f"time {time_ms} is before what this session fetched (from offset {first}, "
                              f"stamped {history.start_image.provenance.last_timestamp_ms} ms)")
        self.following = False
        return history.image_at(offset=offset, time_ms=time_ms)

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

    # -- what the session fetched, for records and export --history ------------------------------------

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
        self.attachment.close()

    @property
    def history(self) -> MetadataHistory | None:
        return self._history

    @property
    def description(self) -> str:
        return f"the quorum at {self.bootstrap}"
