"""Time travel over a log directory (or one snapshot): frames at any offset, stepping, events, series.

The log is read and replayed once, batch by batch, when the history opens. That one pass
keeps checkpoint images (every ~1000 records, and every batch end whose image costs little
more memory: images are immutable and share what a batch did not touch), finds the events,
and tracks the series for the charts. A frame at any offset is then a replay of at most
~1000 records from the nearest checkpoint or recently shown frame.
"""

from __future__ import annotations

import gc
from bisect import bisect_left, bisect_right
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from engine.storage.log_reader import (
    LogEntry,
    entries_by_batch,
    list_log_dir,
    resolve_metadata_dir,
)
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage, TopicImage
from engine.image.metadata_loader import LoadInfo, load_log_dir, load_snapshot
from metashell.dashboard.events import Touched, events_of_batch, touched
from metashell.dashboard.model import Event, Frame
from metashell.shell.summary import min_isr

CHECKPOINT_RECORDS = 1000  # at most this many records (or one batch) replayed per frame
CHANGED_CAP = 1000  # a frame's ``changed`` holds at most this many entries (the last ones)
_CHEAP_BATCH_IMAGE = 2048  # mapping entries a batch-end image may add and still be kept ...
_BATCH_IMAGE_BUDGET = 1_000_000  # ... and all of them together
_RECENT = 8  # recently built images, so stepping replays from the frame shown, not a checkpoint


class _State(NamedTuple):
    image: MetadataImage
    pending: tuple | None  # records of a KIP-868 transaction still open at this point


def _delta(state: _State) -> MetadataDelta:
    delta = MetadataDelta(state.image)
    if state.pending is not None:
        # a transaction may span batches; MetadataDelta keeps the open one privately
        delta._transaction = list(state.pending)
    return delta


def _pending(delta: MetadataDelta) -> tuple | None:
    open_records = delta._transaction
    return None if open_records is None else tuple(open_records)


class History:
    """A FrameSource over a finished log: built once, then queried at will."""

    def __init__(self, info: LoadInfo, start: MetadataImage, batches: Iterable[list[LogEntry]], start_offset: int):
        self.info = info
        self.start_offset = start_offset  # the starting image's offset (-1: the empty image)
        self.entries: list[LogEntry] = []
        self.batch_starts: list[int] = []
        self.events: list[Event] = []
        self.skipped = 0  # records replay passed over (see MetadataDelta.skipped)
        self._offsets: list[int] = []
        self._ts_max: list[int] = []  # running maximum of timestamps: at_time as the loader's time_ms
        self._batch_ends: list[int] = []  # entry index of each batch's last record
        self._checkpoints: dict[int, _State] = {-1: _State(start, None)}
        self._checkpoint_idx: list[int] = [-1]
        self._recent: OrderedDict[int, _State] = OrderedDict()
        self._broker_seen: dict[int, int] = {b: -1 for b in start.cluster.brokers}  # id -> first entry index
        self._rate: Counter[int] = Counter()
        self._fenced: list[tuple[int, float]] = [(start_offset, float(_fenced_count(start)))]
        self._under_by_topic: dict = {t.id: n for t in start.topics.by_id.values() if (n := _under_count(start, t))}
        self._under: list[tuple[int, float]] = [(start_offset, float(sum(self._under_by_topic.values())))]
        was_enabled = gc.isenabled()
        gc.disable()  # the heap only grows during the pass (as in engine.image.metadata_loader)
        try:
            self._replay_all(batches)
        finally:
            if was_enabled:
                gc.enable()
        self._event_offsets = [e.offset for e in self.events]
        self.first_offset = self._offsets[0] if self._offsets else start_offset
        self.last_offset = self._offsets[-1] if self._offsets else start_offset

    # -- opening ------------------------------------------------------------------------

    @classmethod
    def open_log_dir(cls, path: Path | str) -> History:
        """From the earliest point the directory can rebuild: offset 0, or the oldest snapshot the
        segments continue from (the newest snapshot when they do not)."""
        directory = resolve_metadata_dir(Path(path))
        listing = list_log_dir(directory)
        begin = _starting_offset(listing)
        start, info = load_log_dir(directory, offset=begin - 1)  # the snapshot (or nothing) and the node's files
        notes: list[str] = []
        history = cls(info, start, _batches(listing, begin, notes), begin - 1)
        end = history.last_offset + 1 if history.entries else begin
        newest = listing.latest_snapshot
        if newest is not None and newest[0].end_offset > end:  # Kafka would start from it; the shell does
            notes.append(f"the newest snapshot ({newest[1].name}) is past the log's end ({end}): "
                         "this history stops before it")
        history.info = replace(info, first_offset=begin if history.entries else None, end_offset=end,
                               log_end_offset=max(info.log_end_offset, end),
                               skipped_records=info.skipped_records + history.skipped,
                               notes=info.notes + tuple(notes))
        return history

    @classmethod
    def open_snapshot(cls, path: Path | str) -> History:
        """One frame: the snapshot's image."""
        image, info = load_snapshot(Path(path))
        return cls(info, image, (), image.provenance.last_offset)

    # -- the single pass ------------------------------------------------------------------

    def _replay_all(self, batches: Iterable[list[LogEntry]]) -> None:
        state = self._checkpoints[-1]
        since_checkpoint = kept_cost = 0
        open_scope: list[LogEntry] = []  # entries since a transaction opened: applied at its end
        offsets, ts_max, rate, entries = self._offsets, self._ts_max, self._rate, self.entries
        for batch in batches:
            delta = _delta(state)
            for entry in batch:
                ts = entry.timestamp_ms
                delta.replay(entry.record, entry.offset, entry.leader_epoch, ts)
                offsets.append(entry.offset)
                ts_max.append(ts if not ts_max or ts > ts_max[-1] else ts_max[-1])
                rate[ts // 1000] += 1
            before, after = state.image, delta.apply()
            self.skipped += delta.skipped
            entries.extend(batch)
            last = len(entries) - 1
            self.batch_starts.append(batch[0].offset)
            self._batch_ends.append(last)
            new = _State(after, _pending(delta))
            scope = open_scope + batch if open_scope else batch
            open_scope = scope if new.pending is not None else []
            cost = 0
            if after.cluster is not before.cluster or after.topics is not before.topics \
                    or after.configs is not before.configs or after.quorum is not before.quorum:
                # skipped for the many batches that change nothing shown (NoOpRecords, features)
                t = touched(scope)
                self.events.extend(events_of_batch(before, scope, after, t))
                self._track(before, after, t, last)
                cost = _batch_image_cost(before, after, t)
            since_checkpoint += len(batch)
            if since_checkpoint >= CHECKPOINT_RECORDS or (
                    cost <= _CHEAP_BATCH_IMAGE and kept_cost + cost <= _BATCH_IMAGE_BUDGET):
                if since_checkpoint < CHECKPOINT_RECORDS:
                    kept_cost += cost
                self._checkpoints[last] = new
                self._checkpoint_idx.append(last)
                since_checkpoint = 0
            state = new
        self.events.sort(key=lambda e: e.offset)  # stable: a batch's own order stays

    def _track(self, before: MetadataImage, after: MetadataImage, t: Touched, last: int) -> None:
        offset = self._offsets[last]
        if after.cluster is not before.cluster:
            for broker_id in after.cluster.brokers.keys() - self._broker_seen.keys():
                entry = t.brokers.get(broker_id)  # the record that registered it, near enough
                self._broker_seen[broker_id] = last if entry is None else bisect_left(self._offsets, entry.offset)
            fenced = float(_fenced_count(after))
            if fenced != self._fenced[-1][1]:
                self._fenced.append((offset, fenced))
        if after.topics is not before.topics or after.configs is not before.configs:
            self._track_under_min_isr(before, after, t)
            under = float(sum(self._under_by_topic.values()))
            if under != self._under[-1][1]:
                self._under.append((offset, under))

    def _track_under_min_isr(self, before: MetadataImage, after: MetadataImage, t: Touched) -> None:
        """Per-topic counts, recounted for the topics created, deleted or reconfigured, and
        adjusted partition by partition for the rest: a batch costs what it touched."""
        by_id, counts = after.topics.by_id, self._under_by_topic
        if t.min_isr_default:
            recount = set(by_id) | set(counts)
        else:
            recount = set(t.topics)
            recount.update(tid for name in t.min_isr_topics if (tid := after.topics.by_name.get(name)) is not None)
        for topic_id in recount:
            counts.pop(topic_id, None)
            topic = by_id.get(topic_id)
            if topic is not None and (n := _under_count(after, topic)):
                counts[topic_id] = n
        needed: dict = {}
        for topic_id, pid in t.partitions:
            new_topic, old_topic = by_id.get(topic_id), before.topics.by_id.get(topic_id)
            if topic_id in recount or new_topic is None or old_topic is None or new_topic is old_topic:
                continue
            old, new = old_topic.partitions.get(pid), new_topic.partitions.get(pid)
            if old is new:
                continue
            if topic_id not in needed:
                needed[topic_id] = min_isr(after, new_topic.name)
            n = needed[topic_id]
            change = (new is not None and len(new.isr) < n) - (old is not None and len(old.isr) < n)
            if change:
                counts[topic_id] = counts.get(topic_id, 0) + change

    # -- frames -----------------------------------------------------------------------------

    def frame_at(self, offset: int, previous: Frame | None = None) -> Frame:
        """The state once the record at ``offset`` is applied (clamped to the history's bounds;
        below the first record: the starting image). ``changed``: the entries between
        ``previous`` and this frame, the last CHANGED_CAP of them."""
        return self._frame(self._index(offset), previous)

    def first(self, previous: Frame | None = None) -> Frame:
        return self._frame(-1, previous)

    def last(self, previous: Frame | None = None) -> Frame:
        return self._frame(len(self.entries) - 1, previous)

    def at_time(self, time_ms: int, previous: Frame | None = None) -> Frame:
        """As ``load_log_dir(time_ms=)``: up to the record before the first one stamped after ``time_ms``."""
        return self._frame(bisect_right(self._ts_max, time_ms) - 1, previous)

    def frames(self) -> Iterator[Frame]:
        """The starting frame, then one per batch: the path play mode and the live feed take."""
        frame = self.first()
        yield frame
        for end in self._batch_ends:
            frame = self._frame(end, frame)
            yield frame

    # -- stepping: each returns ``frame`` itself when it cannot move ---------------------------

    def step(self, frame: Frame, records: int) -> Frame:
        index = max(-1, min(len(self.entries) - 1, self._index(frame.offset) + records))
        return self._moved(frame, index)

    def next_batch(self, frame: Frame) -> Frame:
        """To the end of the batch after ``frame`` (of its own batch, when in the middle of one)."""
        at = bisect_right(self._batch_ends, self._index(frame.offset))
        return frame if at == len(self._batch_ends) else self._moved(frame, self._batch_ends[at])

    def prev_batch(self, frame: Frame) -> Frame:
        at = bisect_left(self._batch_ends, self._index(frame.offset)) - 1
        return self._moved(frame, self._batch_ends[at] if at >= 0 else -1)

    def next_event(self, frame: Frame, kinds: set[str] | None = None) -> Frame:
        for event in self.events[bisect_right(self._event_offsets, frame.offset):]:
            if kinds is None or event.kind in kinds:
                return self._moved(frame, self._index(event.offset))
        return frame

    def prev_event(self, frame: Frame, kinds: set[str] | None = None) -> Frame:
        for at in range(bisect_left(self._event_offsets, frame.offset) - 1, -1, -1):
            if kinds is None or self.events[at].kind in kinds:
                return self._moved(frame, self._index(self.events[at].offset))
        return frame

    def events_between(self, low: int, high: int) -> list[Event]:
        """The events at offsets low..high (inclusive): the feed beside a frame."""
        offsets = self._event_offsets
        return self.events[bisect_left(offsets, low):bisect_right(offsets, high)]

    def known_broker_ids(self, frame: Frame) -> frozenset[int]:
        """Brokers registered at some point up to ``frame``: those gone since show as unregistered."""
        index = self._index(frame.offset)
        return frozenset(b for b, seen in self._broker_seen.items() if seen <= index)

    def series(self) -> dict[str, list[tuple[int, float]]]:
        """records_per_s: (second start ms, records stamped in it), seconds with none left out;
        fenced_brokers, under_min_isr: (offset, count) at the start and where a batch changed it."""
        return {"records_per_s": [(second * 1000, float(n)) for second, n in sorted(self._rate.items())],
                "fenced_brokers": list(self._fenced), "under_min_isr": list(self._under)}

    # -- internals ----------------------------------------------------------------------------

    def _index(self, offset: int) -> int:
        """The entry index of the last record at or before ``offset``; -1 for the starting image."""
        return bisect_right(self._offsets, offset) - 1

    def _moved(self, frame: Frame, index: int) -> Frame:
        return frame if index == self._index(frame.offset) else self._frame(index, frame)

    def _frame(self, index: int, previous: Frame | None) -> Frame:
        if index < 0:
            image = self._checkpoints[-1].image
            return Frame(self.start_offset, self.last_offset, image, self._changed(previous, -1),
                         image.provenance.last_timestamp_ms)
        entry = self.entries[index]
        return Frame(entry.offset, self.last_offset, self._state_at(index).image, self._changed(previous, index),
                     entry.timestamp_ms)

    def _changed(self, previous: Frame | None, index: int) -> tuple[LogEntry, ...]:
        if previous is None:
            return ()
        low, high = sorted((self._index(previous.offset), index))
        return tuple(self.entries[max(low + 1, high + 1 - CHANGED_CAP):high + 1])

    def _state_at(self, index: int) -> _State:
        state = self._checkpoints.get(index) or self._recent.get(index)
        if state is not None:
            self._recent.pop(index, None)
            self._recent[index] = state
            return state
        base = self._checkpoint_idx[bisect_right(self._checkpoint_idx, index) - 1]
        base = max([base, *(r for r in self._recent if base < r < index)])
        base_state = self._checkpoints.get(base) or self._recent[base]
        delta = _delta(base_state)
        for entry in self.entries[base + 1:index + 1]:
            delta.replay(entry.record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
        state = self._recent[index] = _State(delta.apply(), _pending(delta))
        if len(self._recent) > _RECENT:
            self._recent.popitem(last=False)
        return state


def _starting_offset(listing) -> int:
    segments, snapshots = listing.segments, listing.snapshots
    if not segments:
        return snapshots[-1][0].end_offset if snapshots else 0
    start = segments[0][0]
    if start == 0 or not snapshots:
        return start
    covered = [s for s, _ in snapshots if s.end_offset >= start]
    return (covered[0] if covered else snapshots[-1][0]).end_offset


def _batches(listing, begin: int, notes: list[str]) -> Iterator[list[LogEntry]]:
    """The segments' batches from ``begin`` on; a torn tail of the last one is noted, not read."""
    segments = listing.segments
    for index, (base, segment) in enumerate(segments):
        if index + 1 < len(segments) and segments[index + 1][0] <= begin:
            continue
        on_torn = (lambda pos, err: notes.append(f"not read, cut short or still being written: {err.one_line()}")) \
            if index == len(segments) - 1 else None
        for entries in entries_by_batch(segment, on_torn, False):
            if entries and entries[0].offset < begin:
                entries = [e for e in entries if e.offset >= begin]
            if entries:
                yield entries


def _fenced_count(image: MetadataImage) -> int:
    return sum(1 for b in image.cluster.brokers.values() if b.fenced)


def _under_count(image: MetadataImage, topic: TopicImage) -> int:
    needed = min_isr(image, topic.name)
    return sum(1 for p in topic.partitions.values() if len(p.isr) < needed)


def _batch_image_cost(before: MetadataImage, after: MetadataImage, t: Touched) -> int:
    """About how many mapping entries ``after`` holds that ``before`` did not share."""
    if t.clear_elr:
        return _CHEAP_BATCH_IMAGE + 1  # may have copied every topic
    cost = 0
    if after.topics is not before.topics:
        cost += 2 * len(after.topics.by_id)
        for topic_id in {tid for tid, _ in t.partitions} | t.topics.keys():
            topic = after.topics.by_id.get(topic_id)
            if topic is not None and topic is not before.topics.by_id.get(topic_id):
                cost += len(topic.partitions)
    if after.cluster is not before.cluster:
        cost += len(after.cluster.brokers)
    if after.configs is not before.configs:
        cost += len(after.configs)
    return cost
