"""Time travel over a log directory (or one snapshot): frames at any offset, stepping, events, series.

The log is read and replayed once, batch by batch, by engine.image.metadata_history's
MetadataHistory (the shell's ``seek`` and the export ask the same kind of object): it keeps
checkpoint images and answers the image after any record by replaying at most ~1000 records
from the nearest checkpoint or recently shown frame. This module watches that single pass
(as its ReplayObserver) to find the events and track the series for the charts, both read
from each batch's change set (what the batch changed, engine/image/change_set.py).

``History`` is the dashboard's FrameSource (metashell.dashboard.model): a file's history is
one that never grows (a file Source's, metashell.source). A growing one is grown through its
MetadataHistory (``History.growing`` and ``extend``, or metashell.dashboard.live_history's
LiveHistory, over a LiveSource that drains a live attachment) and bounded by its window; the
events and series grow in place (appended, never copied), and are cut at the front when the
window moves. The History reads the MetadataHistory only through its public API.
"""

from __future__ import annotations

import time
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import itemgetter
from pathlib import Path

from engine.common.config_resource import ConfigResourceType
from engine.image.change_set import ChangeSet
from engine.image.metadata_history import MetadataHistory, ReplayedBatch
from engine.image.metadata_image import MetadataImage, TopicImage, min_isr
from engine.image.metadata_loader import LoadInfo
from engine.storage.log_reader import LogEntry
from metashell.dashboard.counting import counted_in_background
from metashell.dashboard.events import events_of_changes
from metashell.dashboard.model import Event, Frame

CHANGED_CAP = 1000  # a frame's ``changed`` holds at most this many entries (the last ones)
_X = itemgetter(0)


class History:
    """A FrameSource over a log: a file's (built once, then queried at will) or a growing one."""

    live = None  # a live source's AttachStatus (metashell.live.feed); None: a file, which never grows
    quorum = None  # a live source's latest DescribeQuorum answer (engine.admin.quorum_client.QuorumInfo)
    clock_ms: Callable[[], int] = staticmethod(lambda: time.time_ns() // 1_000_000)  # "now" of a live panel

    def __init__(self, info: LoadInfo, start: MetadataImage, batches: Iterable[list[LogEntry]], start_offset: int):
        self._adopt(MetadataHistory(info, start, batches, start_offset, observer=self))

    def _adopt(self, replay: MetadataHistory) -> None:
        """Show ``replay``, which this History observed from its start (its ReplayObserver)."""
        self.replay = replay
        self.generation = 0  # bumped whenever what the source holds changed (grown, cut, reset)
        self.reshaped = 0  # bumped when events or series changed other than by appending
        self._seen = (replay.resets, replay.records_added)  # what _took has taken in
        self._took()

    def _took(self) -> bool:
        """Take in what the replay did since the last look: grown (``generation``), restarted
        (``reshaped`` too), its window moved (the events and series below it cut). True when it
        grew or restarted."""
        replay = self.replay
        resets, added = replay.resets, replay.records_added
        restarted, grown = resets != self._seen[0], added != self._seen[1]
        self._seen = (resets, added)
        if restarted:  # replay_started made new events and series
            self.generation += 1
            self.reshaped += 1
        if grown:
            self.generation += 1
        if replay.start_offset != self.start_offset:
            self._cut(replay.start_offset)  # the window moved
        self.start_offset = replay.start_offset  # the starting image's offset (-1: the empty image)
        return restarted or grown

    @property
    def info(self) -> LoadInfo:
        return self.replay.info

    @property
    def skipped(self) -> int:
        """Records replay passed over (see MetadataDelta.skipped)."""
        return self.replay.skipped

    @property
    def first_offset(self) -> int:
        return self.replay.first_offset

    @property
    def last_offset(self) -> int:
        return self.replay.last_offset

    @property
    def entries(self) -> Sequence[LogEntry]:
        """The records held, in log order (read only)."""
        return self.replay.entries

    @property
    def batch_starts(self) -> Sequence[int]:
        """The offset of each batch's first record (read only)."""
        return self.replay.batch_starts

    @property
    def records_in(self) -> int:
        """Records taken in by extend since opening: "+K new" counts from it."""
        return self.replay.records_added

    # -- growing ------------------------------------------------------------------------

    @classmethod
    def growing(cls, info: LoadInfo, start: MetadataImage, start_offset: int, *, window_records: int) -> History:
        """An empty history at ``start`` that ``extend`` grows, keeping about ``window_records``
        records (MetadataHistory.growing)."""
        history = cls.__new__(cls)
        history._adopt(MetadataHistory.growing(info, start, start_offset, window_records=window_records,
                                               observer=history))
        return history

    def extend(self, batches: Iterable[list[LogEntry]]) -> int:
        """Replay ``batches`` after the last record; the records added (0: nothing new)."""
        added = self.replay.extend(batches)
        self._took()
        return added

    def reset(self, image: MetadataImage, offset: int) -> None:
        """Start anew from ``image`` at ``offset`` (a live attachment fetched a snapshot again)."""
        self.replay.reset(image, offset)  # calls replay_started: new events and series
        self._took()

    def poll(self) -> bool:
        """Take in what arrived since the last poll: True when anything changed. A file: never."""
        return False

    def watch(self, wake: Callable[[], None]) -> None:
        """Have ``wake`` called (from any thread) when ``poll`` has something: a file never does."""

    @property
    def grows(self) -> bool:
        return self.live is not None

    @property
    def event_offsets(self) -> list[int]:
        """The events' offsets, in order (read only: the feed bisects it)."""
        return self._event_offsets

    def _cut(self, start_offset: int) -> None:
        """Drop what is at or below the new starting image's offset: its frames are gone."""
        low = bisect_right(self._event_offsets, start_offset)
        del self.events[:low], self._event_offsets[:low]
        for points in (self._fenced, self._under):
            at = bisect_right(points, start_offset, key=_X)
            if at >= 1:
                points[:at] = [(start_offset, points[at - 1][1])]  # the value at the new start
        start_ms = self.replay.start_image.provenance.last_timestamp_ms
        del self._rate[:bisect_right(self._rate, start_ms // 1000 * 1000 - 1, key=_X)]
        self.reshaped += 1

    # -- opening ------------------------------------------------------------------------

    @classmethod
    def open_log_dir(cls, path: Path | str, *, offset: int | None = None, time_ms: int | None = None) -> History:
        """From the earliest point the directory can rebuild: offset 0, or the oldest snapshot the
        segments continue from (the newest snapshot when they do not). A damaged log's offsets are
        runs (engine.image.log_runs) and one pass holds one run: the run holding ``offset`` / ``time_ms``,
        else the newest (the latest point, as the shell opens), which may start at a snapshot past
        the damage. A point no run holds is an OffsetOutOfRange naming them."""
        history = cls.__new__(cls)
        history._adopt(MetadataHistory.open_log_dir(path, earliest=True, observer=history))
        replay = history.replay
        if not replay.gaps:
            return history
        replay.check_point(offset=offset, time_ms=time_ms)
        if offset is None and time_ms is not None:
            offset = replay.image_at(time_ms=time_ms)[0].provenance.last_offset
        runs = replay.reachable()
        run = next((r for r in runs if offset is not None and r[0] <= offset <= r[1]), runs[-1])
        if run == runs[0]:
            return history  # the run from the earliest point: this pass
        other = cls.__new__(cls)
        other._adopt(MetadataHistory.open_log_dir(path, offset=run[0], observer=other))
        return other

    def damage_words(self) -> str | None:
        """When part of the log is damaged, or an archive has gaps: which offsets this History shows
        and which other runs exist (``g`` goes there; a header's words); None otherwise."""
        gaps = self.replay.gaps if self.live is None else ()
        if not gaps:
            return None
        shown = (self.start_offset, self.last_offset)
        others = [f"{low}..{high}" for low, high in self.replay.reachable() if not low <= self.last_offset <= high]
        elsewhere = f" ({' and '.join(others)} by g)" if others else ""
        # an archive's holes are gaps too (their line says so: engine.image.log_runs), not damage
        what = "archive with gaps" if all("archive gap" in gap.damage for gap in gaps) else "damaged log"
        return f"⚠ {what}: {shown[0]}..{shown[1]} shown{elsewhere}"

    @classmethod
    def open_snapshot(cls, path: Path | str) -> History:
        """One frame: the snapshot's image."""
        history = cls.__new__(cls)
        replay = MetadataHistory.of_snapshot(path)
        history.replay_started(replay.start_image, replay.start_offset)
        history._adopt(replay)
        return history

    # -- the single pass, as MetadataHistory's observer -------------------------------------

    def replay_started(self, image: MetadataImage, start_offset: int) -> None:
        self.events: list[Event] = []
        self._event_offsets: list[int] = []
        self.start_offset = start_offset
        self._broker_seen: dict[int, int] = {b: start_offset for b in image.cluster.brokers}  # id -> first offset
        self._rate: list[tuple[int, float]] = []  # (second start ms, records stamped in it), in time order
        self._fenced: list[tuple[int, float]] = [(start_offset, float(_fenced_count(image)))]
        # Under-min-ISR partitions: the starting image's total (``_under_base``) plus, per topic a
        # batch touched since, its count now less its count then. A big lazily loaded image's total
        # is counted in the background (metashell.dashboard.counting): until ``set_under_base``
        # the series holds only that difference, and ``series`` leaves it out.
        self._start_image = image
        self._under_now: dict = {}  # topic id -> under-min-ISR partitions now, for the topics touched
        self._under_then: dict = {}  # topic id -> the same in the starting image (0: created since)
        self._under_delta = 0  # sum(now) - sum(then)
        self._under_base: int | None = None
        self._under: list[tuple[int, float]] = [(start_offset, 0.0)]
        if not counted_in_background(image):
            self._under_base = self.count_under_base()
            self._under[0] = (start_offset, float(self._under_base))

    def batch_replayed(self, batch: ReplayedBatch) -> None:
        self._count_rate(batch.entries)
        changes = batch.changes  # a transaction's: at the batch of its end, where its records apply
        if changes:  # none for the many batches of NoOpRecords (and those inside a transaction)
            self._add_events(events_of_changes(changes, batch.after))
            self._track(batch.before, batch.after, changes, batch.entries[-1].offset)

    def _count_rate(self, entries: list[LogEntry]) -> None:
        rate = self._rate
        for entry in entries:
            second = entry.timestamp_ms // 1000 * 1000
            if rate and rate[-1][0] == second:
                rate[-1] = (second, rate[-1][1] + 1)
            elif not rate or second > rate[-1][0]:
                rate.append((second, 1.0))
            else:  # a record stamped before the last one (clocks differ between leaders): rare
                at = bisect_left(rate, second, key=_X)
                if at < len(rate) and rate[at][0] == second:
                    rate[at] = (second, rate[at][1] + 1)
                else:
                    rate.insert(at, (second, 1.0))
                self.reshaped += 1

    def _add_events(self, events: list[Event]) -> None:
        """Append in offset order (a batch's own order kept, as a stable sort would)."""
        offsets = self._event_offsets
        if not events:
            return
        if not offsets or events[0].offset >= offsets[-1]:
            self.events.extend(events)
            offsets.extend(e.offset for e in events)
            return
        for event in events:
            at = bisect_right(offsets, event.offset)
            self.events.insert(at, event)
            offsets.insert(at, event.offset)
        self.reshaped += 1

    def _track(self, before: MetadataImage, after: MetadataImage, changes: ChangeSet, offset: int) -> None:
        if after.cluster is not before.cluster:
            for broker_id in after.cluster.brokers.keys() - self._broker_seen.keys():
                change = changes.brokers.get(broker_id)  # the record that registered it, near enough
                self._broker_seen[broker_id] = offset if change is None else change.offset
            fenced = float(_fenced_count(after))
            if fenced != self._fenced[-1][1]:
                self._fenced.append((offset, fenced))
        if after.topics is not before.topics or after.configs is not before.configs:
            self._track_under_min_isr(after, changes)
            base = self._under_base
            under = float(self._under_delta if base is None else base + self._under_delta)
            if under != self._under[-1][1]:
                self._under.append((offset, under))

    def _track_under_min_isr(self, after: MetadataImage, changes: ChangeSet) -> None:
        """Per-topic counts, recounted for the topics created, deleted, renamed or reconfigured, and
        adjusted partition by partition for the rest: a batch costs what it changed."""
        by_id, counts = after.topics.by_id, self._under_now
        min_isr_topics, min_isr_default = _min_isr_changes(changes)
        if min_isr_default:  # every topic's threshold moved: each one is recounted (decoded)
            recount = set(by_id) | set(counts) | set(self._start_image.topics.by_id)
        else:
            recount = set(changes.topics)
            recount.update(tid for name in min_isr_topics if (tid := after.topics.by_name.get(name)) is not None)
        for topic_id in recount:
            self._touch(topic_id)
            topic = by_id.get(topic_id)
            self._set_under(topic_id, _under_count(after, topic) if topic is not None else 0)
        needed: dict = {}
        for (topic_id, _), change in changes.partitions.items():
            new_topic = by_id.get(topic_id)
            if topic_id in recount or new_topic is None:  # (a topic created or deleted is recounted)
                continue
            old, new = change.before, change.after
            if topic_id not in needed:
                needed[topic_id] = min_isr(after, new_topic.name)
            n = needed[topic_id]
            change = (new is not None and len(new.isr) < n) - (old is not None and len(old.isr) < n)
            if change:
                self._touch(topic_id)
                self._set_under(topic_id, counts[topic_id] + change)

    def _touch(self, topic_id) -> None:
        """From the first batch that touches a topic on, its count is kept here: it starts at the
        starting image's (that topic's partitions are decoded for it, as the batch needed them)."""
        if topic_id in self._under_now:
            return
        start = self._start_image
        topic = start.topics.by_id.get(topic_id)
        then = _under_count(start, topic) if topic is not None else 0
        self._under_then[topic_id] = self._under_now[topic_id] = then

    def _set_under(self, topic_id, count: int) -> None:
        self._under_delta += count - self._under_now[topic_id]
        self._under_now[topic_id] = count

    def count_under_base(self) -> int:
        """The starting image's under-min-ISR partitions, counted afresh: every partition is read
        (a lazily loaded image decodes them). Reads only that immutable image: safe from a
        background thread while the history grows."""
        image = self._start_image
        return sum(_under_count(image, topic) for topic in image.topics.by_id.values())

    def set_under_base(self, base: int) -> None:
        """The starting image's total is known: the series holds totals from now on."""
        if self._under_base is not None:
            return
        self._under_base = base
        self._under[:] = [(offset, base + delta) for offset, delta in self._under]  # in place: the charts hold it
        self.reshaped += 1

    @property
    def under_counted(self) -> bool:
        """Whether the under-min-ISR series is known (else it is still being counted)."""
        return self._under_base is not None

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
        return self._frame(self.replay.index_at_time(time_ms), previous)

    def frames(self) -> Iterator[Frame]:
        """The starting frame, then one per batch: the path play mode and the live feed take."""
        frame = self.first()
        yield frame
        for end in self.replay.batch_ends:
            frame = self._frame(end, frame)
            yield frame

    # -- stepping: each returns ``frame`` itself when it cannot move ---------------------------

    def step(self, frame: Frame, records: int) -> Frame:
        index = max(-1, min(len(self.entries) - 1, self._index(frame.offset) + records))
        return self._moved(frame, index)

    def next_batch(self, frame: Frame) -> Frame:
        """To the end of the batch after ``frame`` (of its own batch, when in the middle of one)."""
        batch_ends = self.replay.batch_ends
        at = bisect_right(batch_ends, self._index(frame.offset))
        return frame if at == len(batch_ends) else self._moved(frame, batch_ends[at])

    def prev_batch(self, frame: Frame) -> Frame:
        batch_ends = self.replay.batch_ends
        at = bisect_left(batch_ends, self._index(frame.offset)) - 1
        return self._moved(frame, batch_ends[at] if at >= 0 else -1)

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
        return frozenset(b for b, seen in self._broker_seen.items() if seen <= frame.offset)

    def time_span(self) -> tuple[int, int]:
        """(first, last) record time held, in ms (the last no earlier than the first); the
        starting image's time twice when no record is held."""
        entries = self.entries
        if not entries:
            moment = self.replay.start_image.provenance.last_timestamp_ms
            return moment, moment
        first = entries[0].timestamp_ms
        return first, max(first, entries[-1].timestamp_ms)

    def offset_at_time(self, time_ms: int) -> int:
        """The offset of the last record stamped at or before ``time_ms`` (the starting image's
        below the first), as ``at_time`` finds it but without building the frame."""
        index = self.replay.index_at_time(time_ms)
        return self.entries[index].offset if index >= 0 else self.start_offset

    def series(self) -> dict[str, list[tuple[int, float]]]:
        """records_per_s: (second start ms, records stamped in it), seconds with none left out;
        fenced_brokers, under_min_isr: (offset, count) at the start and where a batch changed it;
        under_min_isr only once counted (``under_counted``).
        The lists themselves, which grow with the history (read only)."""
        series = {"records_per_s": self._rate, "fenced_brokers": self._fenced}
        if self._under_base is not None:  # else still counting: no number rather than a partial one
            series["under_min_isr"] = self._under
        return series

    # -- internals ----------------------------------------------------------------------------

    def _index(self, offset: int) -> int:
        """The entry index of the last record at or before ``offset``; -1 for the starting image."""
        return self.replay.index_of(offset)

    def _moved(self, frame: Frame, index: int) -> Frame:
        return frame if index == self._index(frame.offset) else self._frame(index, frame)

    def _frame(self, index: int, previous: Frame | None) -> Frame:
        if index < 0:
            image = self.replay.start_image
            return Frame(self.start_offset, self.last_offset, image, self._changed(previous, -1),
                         image.provenance.last_timestamp_ms)
        entry = self.entries[index]
        return Frame(entry.offset, self.last_offset, self.replay.image_at_index(index), self._changed(previous, index),
                     entry.timestamp_ms)

    def _changed(self, previous: Frame | None, index: int) -> tuple[LogEntry, ...]:
        if previous is None:
            return ()
        low, high = sorted((self._index(previous.offset), index))
        return tuple(self.entries[max(low + 1, high + 1 - CHANGED_CAP):high + 1])


def _min_isr_changes(changes: ChangeSet) -> tuple[set[str], bool]:
    """The topics whose min.insync.replicas changed, and whether the cluster default did (the
    broker resource named "")."""
    topics, default = set(), False
    for (resource_type, resource_name), key in changes.configs:
        if key == "min.insync.replicas":
            if resource_type == ConfigResourceType.TOPIC:
                topics.add(resource_name)
            elif resource_type == ConfigResourceType.BROKER and not resource_name:
                default = True
    return topics, default


def _fenced_count(image: MetadataImage) -> int:
    return sum(1 for b in image.cluster.brokers.values() if b.fenced)


def _under_count(image: MetadataImage, topic: TopicImage) -> int:
    needed = min_isr(image, topic.name)
    return sum(1 for p in topic.partitions.values() if len(p.isr) < needed)
