"""A metadata log replayed once, with checkpoints: the image at any offset or time, on demand.

``MetadataHistory`` reads the segments of a log directory once, from a starting point (a
snapshot, or the log's start), replays them batch by batch through MetadataDelta, and keeps
every entry it read (decoded), checkpoint images, and the few images asked for last. The
image at an offset or a time is then a replay of at most about CHECKPOINT_RECORDS records
from the nearest checkpoint: the files are not read again. The dashboard's History, the
shell's ``seek`` (through its Source) and the export's ``images_at`` all ask it.

Checkpoints: every CHECKPOINT_RECORDS records (at a batch end) and the last record. With an
observer, which sees the images before and after every batch, also every batch end whose
image costs little memory (images are immutable and share what a batch did not touch).

A history opened at the newest snapshot (the shell's: a fast first answer) reaches back on
demand: asked for a point before its start, it reads an older span of the log once, from the
newest snapshot (or the log's start) at or before that point up to where the next span
begins, and keeps it for the next question.

A history that grows (``growing``, the live tools'): ``extend`` replays the batches a live
attachment hands over after the last entry, the observer seeing them as in the single pass.
Memory is bounded by a window: past about ``window_records`` entries, the oldest are dropped
up to a checkpoint, whose image becomes the new starting image (``first_offset`` moves on);
a point below the window is then an ``OutsideWindowError``, not a silent answer from
elsewhere. ``reset`` starts anew from another image (the attachment fetched a snapshot again).
Each ``extend`` ends at a checkpoint (the next one replays from there), and the previous
end's is dropped unless it is a checkpoint by the rules above: a drain a second does not
keep an image a second.

A metadata transaction (KIP-868) is carried from batch to batch and checkpoint to checkpoint
(``MetadataDelta.open_transaction``); one still open at a point is in no image of it, as in
Kafka, and the LoadInfo of that point says so in a note.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path
from typing import Iterable, NamedTuple, Protocol

from engine.common.errors import MetadataError
from engine.image.change_set import ChangeSet
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import (
    TORN_TAIL_NOTE, LoadInfo, collector_paused, load_snapshot, open_transaction_notes, replay_start, segment_batches,
)
from engine.storage.log_reader import LogDirListing, LogEntry, list_log_dir

CHECKPOINT_RECORDS = 1000  # at most about this many records replayed per question ...
CHECKPOINT_BUDGET = 4_000_000  # ... while those checkpoints add fewer mapping entries than this (else
# every other one goes and the spacing doubles: a long log of a big cluster stays in memory)
CHEAP_BATCH_IMAGE = 2048  # mapping entries a batch-end image may add and still be kept ...
BATCH_IMAGE_BUDGET = 1_000_000  # ... and all of them together
RECENT_IMAGES = 8  # images built last, so stepping replays from the one shown, not a checkpoint
WINDOW_SLACK = 8  # a window trims an eighth more than it must: trims (which renumber the entries) stay rare


class OutsideWindowError(MetadataError):
    """A point the history held once but dropped: before its window, or before its last reset."""


class ReplayState(NamedTuple):
    image: MetadataImage
    open_transaction: tuple | None  # records of a metadata transaction open at this point
    skipped: int  # records replay passed over since the history's start


class ReplayedBatch(NamedTuple):
    before: MetadataImage
    after: MetadataImage
    entries: list[LogEntry]
    last_index: int  # of the batch's last entry in ``MetadataHistory.entries``
    in_transaction: bool  # a metadata transaction is open after it
    changes: ChangeSet  # what the batch changed (engine/image/change_set.py): what observers read


class ReplayObserver(Protocol):
    """Sees the single pass: the starting image, then every batch's images before and after and
    the change set between them."""

    def replay_started(self, image: MetadataImage, start_offset: int) -> None:
        ...

    def batch_replayed(self, batch: ReplayedBatch) -> None:
        ...


class MetadataHistory:
    """The entries of a log from a starting image on, and the image after any of them."""

    def __init__(self, info: LoadInfo, start: MetadataImage, batches: Iterable[list[LogEntry]], start_offset: int,
                 *, observer: ReplayObserver | None = None, listing: LogDirListing | None = None,
                 files_read: list[Path] | None = None):
        self.info = info  # the whole history's: as of its last record
        self.start_image = start
        self.start_offset = start_offset  # the starting image's offset (-1: the empty image)
        self.entries: list[LogEntry] = []
        self.offsets: list[int] = []
        self.ts_max: list[int] = []  # running maximum of timestamps: at_time as the loader's time_ms
        self.batch_starts: list[int] = []  # offset of each batch's first record
        self.batch_ends: list[int] = []  # entry index of each batch's last record
        self.skipped = 0  # records replay passed over (see MetadataDelta.skipped)
        self.files_read: list[Path] = files_read if files_read is not None else []  # segments, once each
        self._listing = listing
        self._begin = start_offset + 1  # the first offset replayed from the segments
        self._notes = info.notes
        self._read_size: tuple | None = None  # the segments' names and sizes when read (see read_new)
        self._start_skipped = info.skipped_records  # the snapshot's own
        self._checkpoints: dict[int, ReplayState] = {-1: ReplayState(start, None, 0)}
        self._checkpoint_idx: list[int] = [-1]
        self._recent: OrderedDict[int, ReplayState] = OrderedDict()
        self._older: list[MetadataHistory] = []  # spans before the starting snapshot, read on demand
        self._spacing = CHECKPOINT_RECORDS  # records between checkpoints (doubles past CHECKPOINT_BUDGET)
        self._spaced: dict[int, int] = {}  # index -> cost of the checkpoints kept for the spacing
        self._kept: dict[int, int] = {}  # index -> cost of the cheap batch-end checkpoints (an observer's)
        self._kept_cost = 0  # their sum, against BATCH_IMAGE_BUDGET
        self._since_checkpoint = 0  # records replayed since the last spaced or kept checkpoint
        self._tail: int | None = None  # a checkpoint kept only as the last entry's (dropped once passed)
        self.window_records: int | None = None  # growing: the entries kept at most (about)
        self.dropped_records = 0  # by the window, since the start or the last reset
        self.resets = 0
        self._observer: ReplayObserver | None = None  # a growing history's, for extend
        self._start_ts = start.provenance.last_timestamp_ms  # the starting image's time (window checks)
        if observer is not None:
            observer.replay_started(start, start_offset)
        with collector_paused():  # the heap only grows during the pass
            self._replay_all(batches, observer)
        self.first_offset = self.offsets[0] if self.offsets else start_offset
        self.last_offset = self.offsets[-1] if self.offsets else start_offset
        self.info = self.info_at(len(self.entries) - 1)

    # -- opening --------------------------------------------------------------------------

    @classmethod
    def open_log_dir(cls, path: Path | str, *, offset: int | None = None, time_ms: int | None = None,
                     earliest: bool = False, observer: ReplayObserver | None = None) -> MetadataHistory:
        """Read a log directory to its end from the newest snapshot at or before ``offset`` /
        ``time_ms`` (the newest of all without either), or, with ``earliest``, from the
        earliest point it can rebuild (offset 0, or the oldest snapshot the segments continue from)."""
        start = replay_start(Path(path), offset=offset, time_ms=time_ms, earliest=earliest)
        notes = list(start.info.notes)
        files: list[Path] = []
        size = _size(start.listing)  # before reading: what is appended meanwhile is new to read_new
        history = cls(start.info, start.image, segment_batches(start.listing, start.begin, notes, files_read=files),
                      start.start_offset, observer=observer, listing=start.listing, files_read=files)
        history._begin = start.begin
        history._read_size = size
        newest = start.listing.latest_snapshot
        end = history.info.end_offset
        if newest is not None and newest[0].end_offset > end:  # Kafka would start from it
            notes.append(f"the newest snapshot ({newest[1].name}) is past the log's end ({end}): "
                         "this history stops before it")
        history._notes = tuple(notes)
        history.info = history.info_at(len(history.entries) - 1)
        return history

    def read_new(self) -> bool:
        """Read what was appended to the log since it was read (a running node's directory):
        False, reading nothing, when its segments are as they were."""
        if self._listing is None or self._read_size is None:
            return False
        listing = list_log_dir(self._listing.path)
        size = _size(listing)
        if size == self._read_size:
            return False
        notes: list[str] = []
        begin = self.last_offset + 1 if self.offsets else self._begin
        with collector_paused():
            self._replay_all(segment_batches(listing, begin, notes, files_read=self.files_read), None)
        self._listing, self._read_size = listing, size
        self._notes = tuple(n for n in self._notes if not n.startswith(TORN_TAIL_NOTE)) + tuple(notes)
        self.last_offset = self.offsets[-1] if self.offsets else self.start_offset
        self.first_offset = self.offsets[0] if self.offsets else self.start_offset
        self.info = self.info_at(len(self.entries) - 1)
        return True

    @classmethod
    def of_snapshot(cls, path: Path | str) -> MetadataHistory:
        """One point: a snapshot file's image."""
        image, info = load_snapshot(Path(path))
        return cls(info, image, (), image.provenance.last_offset)

    # -- growing ------------------------------------------------------------------------------

    @classmethod
    def growing(cls, info: LoadInfo, start: MetadataImage, start_offset: int, *, window_records: int,
                observer: ReplayObserver | None = None) -> MetadataHistory:
        """An empty history at ``start`` (offset ``start_offset``; -1: the empty image) that
        ``extend`` grows, keeping about ``window_records`` entries (at least 1)."""
        if window_records < 1:
            raise ValueError(f"window_records must be at least 1, not {window_records}")
        history = cls(info, start, (), start_offset, observer=observer)
        history.window_records, history._observer = window_records, observer
        return history

    def extend(self, batches: Iterable[list[LogEntry]]) -> int:
        """Replay ``batches`` after the last entry (entries at or below it are passed over: a
        batch handed over twice); the observer sees them; then trim to the window. Returns the
        records added."""
        before = len(self.entries)
        with collector_paused():
            self._replay_all(self._after_last(batches), self._observer)
        added = len(self.entries) - before
        if added:
            self._moved()
            self._trim()
        return added

    def reset(self, image: MetadataImage, offset: int) -> None:
        """Start anew from ``image`` at ``offset`` (the attachment fetched a snapshot again): every
        entry goes; the observer sees a new start."""
        for kept in (self.entries, self.offsets, self.ts_max, self.batch_starts, self.batch_ends):
            kept.clear()  # in place: a wrapper holds these lists
        self.start_image, self.start_offset, self._begin = image, offset, offset + 1
        self.skipped = self._start_skipped = self.dropped_records = 0
        self._checkpoints = {-1: ReplayState(image, None, 0)}
        self._checkpoint_idx = [-1]
        self._recent.clear()
        self._spaced, self._kept, self._kept_cost, self._since_checkpoint, self._tail = {}, {}, 0, 0, None
        self._spacing = CHECKPOINT_RECORDS
        self._older = []
        self._start_ts = image.provenance.last_timestamp_ms
        self.resets += 1
        if self._observer is not None:
            self._observer.replay_started(image, offset)
        self._moved()

    def _after_last(self, batches: Iterable[list[LogEntry]]) -> Iterable[list[LogEntry]]:
        for batch in batches:
            last = self.offsets[-1] if self.offsets else self.start_offset
            if batch and batch[0].offset <= last:
                batch = [entry for entry in batch if entry.offset > last]
            if batch:
                yield batch

    def _moved(self) -> None:
        self.first_offset = self.offsets[0] if self.offsets else self.start_offset
        self.last_offset = self.offsets[-1] if self.offsets else self.start_offset
        self.info = self.info_at(len(self.entries) - 1)

    def _trim(self) -> None:
        """Past the window: drop the oldest entries up to a checkpoint, the new starting image."""
        window = self.window_records
        if window is None or len(self.entries) <= window:
            return
        need = len(self.entries) - window + window // WINDOW_SLACK - 1  # cut at this entry or after
        idx = self._checkpoint_idx
        cut = idx[min(bisect_left(idx, need), len(idx) - 1)]  # the last entry's is always one
        state, k = self._checkpoints[cut], cut + 1
        self.start_image, self.start_offset = state.image, self.offsets[cut]
        self._start_ts = self.ts_max[cut]
        self._begin = self.start_offset + 1
        del self.entries[:k], self.offsets[:k], self.ts_max[:k]
        gone = bisect_right(self.batch_ends, cut)
        del self.batch_starts[:gone], self.batch_ends[:gone]
        self.batch_ends[:] = [i - k for i in self.batch_ends]
        self._checkpoints = {i - k: s for i, s in self._checkpoints.items() if i >= cut}  # cut becomes -1
        self._checkpoint_idx = sorted(self._checkpoints)
        self._recent = OrderedDict((i - k, s) for i, s in self._recent.items() if i > cut)
        self._spaced = {i - k: c for i, c in self._spaced.items() if i > cut}
        self._kept_cost -= sum(c for i, c in self._kept.items() if i <= cut)
        self._kept = {i - k: c for i, c in self._kept.items() if i > cut}
        self._tail = None if self._tail is None or self._tail <= cut else self._tail - k
        self.dropped_records += k
        self._moved()

    def _check_window(self, offset: int | None, time_ms: int | None) -> None:
        if not (self.dropped_records or self.resets):
            return
        if (offset is not None and offset < self.start_offset) or \
                (offset is None and time_ms is not None and time_ms < self._start_ts):
            point = f"offset {offset}" if offset is not None else f"time {time_ms}"
            raise OutsideWindowError(
                f"{point} is before what this session keeps: from offset {self.start_offset} on "
                f"(the last {self.window_records or len(self.entries):,} records at most)")

    # -- the single pass ----------------------------------------------------------------------

    def _replay_all(self, batches: Iterable[list[LogEntry]], observer: ReplayObserver | None) -> None:
        """Replay ``batches`` after the last entry (whose state is always a checkpoint)."""
        state = self._checkpoints[self._checkpoint_idx[-1]]
        delta = MetadataDelta(state.image, state.open_transaction)
        since_checkpoint, kept_cost, tail = self._since_checkpoint, self._kept_cost, self._tail
        offsets, ts_max, entries = self.offsets, self.ts_max, self.entries
        for batch in batches:
            for entry in batch:
                ts = entry.timestamp_ms
                delta.replay(entry.record, entry.offset, entry.leader_epoch, ts)
                offsets.append(entry.offset)
                ts_max.append(ts if not ts_max or ts > ts_max[-1] else ts_max[-1])
            entries.extend(batch)
            last = len(entries) - 1
            self.batch_starts.append(batch[0].offset)
            self.batch_ends.append(last)
            since_checkpoint += len(batch)
            if observer is None and since_checkpoint < self._spacing:
                continue  # one delta across batches until the next checkpoint: the loader's pace
            before, after = state.image, delta.apply()
            self.skipped += delta.skipped
            state = ReplayState(after, delta.open_transaction, self.skipped)
            cost = _image_cost(before, after, delta)
            if observer is not None:
                observer.batch_replayed(ReplayedBatch(before, after, batch, last, state.open_transaction is not None,
                                                      delta.changes()))
            if since_checkpoint >= self._spacing:
                self._checkpoint(last, state)
                self._spaced[last] = cost
                self._thin()
                since_checkpoint = 0
            elif observer is not None and cost <= CHEAP_BATCH_IMAGE and kept_cost + cost <= BATCH_IMAGE_BUDGET:
                kept_cost += cost  # a batch end that costs little: stepping batch by batch replays nothing
                self._kept[last] = cost
                self._checkpoint(last, state)
                since_checkpoint = 0
            delta = MetadataDelta(after, state.open_transaction)
        self._since_checkpoint, self._kept_cost = since_checkpoint, kept_cost
        last = len(entries) - 1
        if tail is not None and tail != last and tail in self._checkpoints:  # passed: the next end is the tail
            del self._checkpoints[tail], self._checkpoint_idx[bisect_left(self._checkpoint_idx, tail)]
            self._recent.pop(tail, None)
            self._tail = None
        if last not in self._checkpoints:  # the latest image: the one asked for most
            self.skipped += delta.skipped
            self._checkpoint(last, ReplayState(delta.apply(), delta.open_transaction, self.skipped))
            self._tail = last

    def _checkpoint(self, index: int, state: ReplayState) -> None:
        self._checkpoints[index] = state
        self._checkpoint_idx.append(index)

    def _thin(self) -> None:
        """Past CHECKPOINT_BUDGET: drop every other spaced checkpoint and double the spacing."""
        while sum(self._spaced.values()) > CHECKPOINT_BUDGET and len(self._spaced) > 1:
            for index in sorted(self._spaced)[::2]:
                del self._spaced[index], self._checkpoints[index]
            self._checkpoint_idx = sorted(self._checkpoints)
            self._spacing *= 2

    # -- questions ------------------------------------------------------------------------------

    @property
    def checkpoints(self) -> tuple[int, ...]:
        """The entry indexes whose image is kept (-1: the starting image)."""
        return tuple(self._checkpoint_idx)

    def index_of(self, offset: int) -> int:
        """The entry index of the last record at or before ``offset``; -1 for the starting image."""
        return bisect_right(self.offsets, offset) - 1

    def index_at_time(self, time_ms: int) -> int:
        """As ``load_log_dir(time_ms=)``: the record before the first one stamped after ``time_ms``."""
        return bisect_right(self.ts_max, time_ms) - 1

    def state_at(self, index: int) -> ReplayState:
        """The state once the entry at ``index`` is applied (-1: the starting image)."""
        state = self._checkpoints.get(index) or self._recent.get(index)
        if state is not None:
            self._recent.pop(index, None)
            self._recent[index] = state
            return state
        base = self._checkpoint_idx[bisect_right(self._checkpoint_idx, index) - 1]
        base = max([base, *(r for r in self._recent if base < r < index)])
        base_state = self._checkpoints.get(base) or self._recent[base]
        delta = MetadataDelta(base_state.image, base_state.open_transaction)
        for entry in self.entries[base + 1:index + 1]:
            delta.replay(entry.record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
        state = self._recent[index] = ReplayState(delta.apply(), delta.open_transaction,
                                                  base_state.skipped + delta.skipped)
        if len(self._recent) > RECENT_IMAGES:
            self._recent.popitem(last=False)
        return state

    def image_at_index(self, index: int) -> MetadataImage:
        return self.state_at(index).image

    def info_at(self, index: int) -> LoadInfo:
        """What the loader would report for the image after the entry at ``index``."""
        begin = self._begin
        state = self.state_at(index) if index >= 0 else self._checkpoints[-1]
        end = self.entries[index].offset + 1 if index >= 0 else begin
        log_end = max(self.offsets[-1] + 1 if self.offsets else 0, begin)
        notes = self._notes + tuple(open_transaction_notes(state.open_transaction, end))
        return replace(self.info, first_offset=begin if index >= 0 else None, end_offset=end, log_end_offset=log_end,
                       skipped_records=self._start_skipped + state.skipped, notes=notes)

    def image_at(self, *, offset: int | None = None, time_ms: int | None = None) -> tuple[MetadataImage, LoadInfo]:
        """As ``load_log_dir``: the latest image, or the one at or before ``offset`` (inclusive) or
        ``time_ms``. A point before this history's starting snapshot is answered by an older span
        of the log, read once (from the newest snapshot at or before it, as the loader would)."""
        self._check_window(offset, time_ms)
        history = self._span_for(offset, time_ms)
        if offset is not None:
            index = history.index_of(offset)
        elif time_ms is not None:
            index = history.index_at_time(time_ms)
        else:
            index = len(history.entries) - 1
        return history.image_at_index(index), history.info_at(index)

    # -- reaching back -------------------------------------------------------------------------

    def _before_start(self, offset: int | None, time_ms: int | None) -> bool:
        if self.info.snapshot is None or self._listing is None:
            return False  # nothing older to read: the start is the log's
        if offset is not None:
            return offset < self.start_offset
        return time_ms is not None and time_ms < self.start_image.provenance.last_timestamp_ms

    def _span_for(self, offset: int | None, time_ms: int | None) -> MetadataHistory:
        """This history, or the older span that starts last at or before the point (read now
        if none does: up to where the next span begins)."""
        if not self._before_start(offset, time_ms):
            return self
        for span in self._older:  # newest start first
            if not span._before_start(offset, time_ms):
                return span
        start = replay_start(self.info.source, offset=offset, time_ms=time_ms)  # an error when nothing is older
        end = min([span._begin for span in self._older if span._begin > start.begin] + [self._begin])
        notes = list(start.info.notes)
        span = MetadataHistory(start.info, start.image,
                               segment_batches(start.listing, start.begin, notes, end=end, files_read=self.files_read),
                               start.start_offset, listing=start.listing, files_read=self.files_read)
        span._begin, span._notes = start.begin, tuple(notes)
        span.info = span.info_at(len(span.entries) - 1)
        self._older.append(span)
        self._older.sort(key=lambda h: h.start_offset, reverse=True)
        return span


def _size(listing: LogDirListing) -> tuple:
    """The segments' names and sizes: what changes when a node appends to its log."""
    return tuple((path.name, _file_size(path)) for _, path in listing.segments)


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # deleted since listed (retention): the next listing will not name it
        return -1


def _image_cost(before: MetadataImage, after: MetadataImage, delta: MetadataDelta) -> int:
    """About how many mapping entries ``after`` holds that ``before`` did not share."""
    cost = 0
    if after.topics is not before.topics:
        by_id = after.topics.by_id
        cost += 2 * len(by_id)
        for topic_id in delta.changed_topic_ids():
            topic = by_id.get(topic_id)
            if topic is not None:
                cost += len(topic.partitions)
    if after.cluster is not before.cluster:
        cost += len(after.cluster.brokers)
    if after.configs is not before.configs:
        cost += len(after.configs)
    return cost
