"""A metadata log replayed once, with checkpoints: the image at any offset or time, on demand.

``MetadataHistory`` replays the batches of a log, from a starting image, once, through
MetadataDelta; the image at an offset or a time is then a replay of at most about
CHECKPOINT_RECORDS records from the nearest kept image: the files are not read again. The
dashboard's History, the shell's ``seek`` (through its Source) and the export's ``images_at``
all ask it. Three parts do the work, each in a module of its own:

* history_reader: the log directory's segments, each read once from the starting point (a
  snapshot, or the log's start), and what a running node appended since (``read_new``);
* history_checkpoints: the images kept (every CHECKPOINT_RECORDS records, cheap batch ends
  while an observer watches, the last entry's, the few asked for last) and the replay from them;
* history_window: the entries held (decoded, indexed by offset and time) and, for a history
  that grows, the window that bounds them.

An observer (``ReplayObserver``: the dashboard's History) sees the single pass: the starting
image, then every batch's images before and after.

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

from dataclasses import replace
from pathlib import Path
from typing import Iterable, NamedTuple, Protocol, Sequence

from engine.image.history_checkpoints import HistoryCheckpoints, ReplayState, image_cost as _image_cost
from engine.image.history_reader import LogDirReader
from engine.image.history_window import HistoryWindow, OutsideWindowError
from engine.image.log_runs import (
    Gap, LogScan, damage_of, iso_time as _iso, point_words as _point, runs_of, runs_words, scan_log, with_damage_note,
)
from engine.common.errors import OffsetOutOfRange
from engine.image.change_set import ChangeSet
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import (
    LoadInfo, collector_paused, first_reachable, first_reachable_time, load_file,
    open_transaction_notes, replay_start,
)
from engine.image.run_replay import RunGap, run_spans
from engine.storage.log_reader import LogEntry
from engine.storage.meta_properties import MetaProperties

__all__ = ["MetadataHistory", "OutsideWindowError", "ReplayObserver", "ReplayState", "ReplayedBatch"]


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
                 *, observer: ReplayObserver | None = None, reader: LogDirReader | None = None,
                 window_records: int | None = None):
        """``reader``: where ``batches`` come from, when a log directory (for ``read_new`` and
        reaching back); ``window_records``: a growing history's bound (see ``growing``)."""
        self._info = info  # the whole history's: as of its last record
        self._reader = reader
        self._base_notes = info.notes  # without a reader: the notes the history was opened with
        self._start_skipped = info.skipped_records  # the snapshot's own
        self._skipped = 0  # records replay passed over (see MetadataDelta.skipped)
        self._window = HistoryWindow(start_offset, start.provenance.last_timestamp_ms,
                                     reader.begin if reader is not None else start_offset + 1, window_records)
        self._checkpoints = HistoryCheckpoints(ReplayState(start, None, 0))
        self._older: list[MetadataHistory] = []  # spans before the starting snapshot, read on demand
        self._first: tuple[int, int] | None = None  # the earliest point (offset, time ms), once asked
        self._scan: LogScan | None = None  # where the directory's damage is (log_runs), once asked
        self._observer = observer
        self._records_added = 0  # by extend since the history opened (a reset goes on counting)
        if observer is not None:
            observer.replay_started(start, start_offset)
        with collector_paused():  # the heap only grows during the pass
            self._replay_all(batches, observer)
        if reader is not None:
            reader.finished(self.last_offset + 1 if self.entries else self._window.begin)
        self._moved()

    # -- opening --------------------------------------------------------------------------

    @classmethod
    def open_log_dir(cls, path: Path | str, *, offset: int | None = None, time_ms: int | None = None,
                     earliest: bool = False, observer: ReplayObserver | None = None) -> MetadataHistory:
        """Read a log directory to its end from the newest snapshot at or before ``offset`` /
        ``time_ms`` (the newest of all without either), or, with ``earliest``, from the
        earliest point it can rebuild (offset 0, or the oldest snapshot the segments continue from)."""
        start = replay_start(Path(path), offset=offset, time_ms=time_ms, earliest=earliest)
        reader = LogDirReader(start)
        return cls(start.info, start.image, reader.batches(), start.start_offset, observer=observer, reader=reader)

    def read_new(self) -> bool:
        """Read what was appended to the log since it was read (a running node's directory):
        False, reading nothing, when its segments are as they were."""
        if self._reader is None:
            return False

        def replay(batches: Iterable[list[LogEntry]]) -> None:
            with collector_paused():
                self._replay_all(batches, None)

        if not self._reader.read_appended(self.last_offset + 1 if self.entries else self._window.begin, replay):
            return False
        scan = self._scan  # appending adds no damage before what was read: rescan only a damaged log
        self._scan = LogScan((), self.last_offset) if scan is not None and not scan.gaps and not self.damage else None
        self._moved()
        return True

    @classmethod
    def of_snapshot(cls, path: Path | str) -> MetadataHistory:
        """One point: the image of a snapshot file, or of a segment replayed from its first batch
        (``load_file``: what ``kafka-metadata-shell --snapshot`` and ``metashell --snapshot`` open)."""
        image, info = load_file(Path(path))
        return cls(info, image, (), image.provenance.last_offset)

    # -- growing ------------------------------------------------------------------------------

    @classmethod
    def growing(cls, info: LoadInfo, start: MetadataImage, start_offset: int, *, window_records: int,
                observer: ReplayObserver | None = None) -> MetadataHistory:
        """An empty history at ``start`` (offset ``start_offset``; -1: the empty image) that
        ``extend`` grows, keeping about ``window_records`` entries (at least 1)."""
        if window_records < 1:
            raise ValueError(f"window_records must be at least 1, not {window_records}")
        return cls(info, start, (), start_offset, observer=observer, window_records=window_records)

    def extend(self, batches: Iterable[list[LogEntry]]) -> int:
        """Replay ``batches`` after the last entry (entries at or below it are passed over: a
        batch handed over twice); the observer sees them; then trim to the window. Returns the
        records added."""
        before = len(self.entries)
        with collector_paused():
            self._replay_all(self._window.after_last(batches), self._observer)
        added = len(self.entries) - before
        if added:
            self._records_added += added
            self._moved()
            self._trim()
        return added

    def reset(self, image: MetadataImage, offset: int) -> None:
        """Start anew from ``image`` at ``offset`` (the attachment fetched a snapshot again): every
        entry goes; the observer sees a new start."""
        self._window.reset(offset, image.provenance.last_timestamp_ms)
        self._checkpoints = HistoryCheckpoints(ReplayState(image, None, 0))
        self._skipped = self._start_skipped = 0
        self._older = []
        if self._observer is not None:
            self._observer.replay_started(image, offset)
        self._moved()

    def learn_cluster_id(self, cluster_id: str | None) -> bool:
        """The cluster this history is of, told after it opened (a live attachment learns it from
        DescribeCluster): /local/cluster-id, as meta.properties gives it offline. True when it is
        learnt now; False when ``cluster_id`` is empty or the history knows its cluster already."""
        info = self._info
        if not cluster_id or (info.meta is not None and info.meta.cluster_id):
            return False
        self._info = replace(info, meta=MetaProperties(1, cluster_id))
        return True

    def _moved(self) -> None:
        self._info = self.info_at(len(self.entries) - 1)

    def _trim(self) -> None:
        """Past the window: drop the oldest entries up to a checkpoint, the new starting image."""
        cut = self._window.cut(self._checkpoints.indexes)
        if cut is None:
            return
        self._window.drop_through(cut)
        self._checkpoints.drop_through(cut)
        self._moved()

    # -- the single pass ----------------------------------------------------------------------

    def _replay_all(self, batches: Iterable[list[LogEntry]], observer: ReplayObserver | None) -> None:
        """Replay ``batches`` after the last entry (whose state is always a checkpoint)."""
        checkpoints, window = self._checkpoints, self._window
        state = checkpoints.latest
        delta = MetadataDelta(state.image, state.open_transaction)
        since_checkpoint = checkpoints.since
        offsets, ts_max, entries = window.offsets, window.ts_max, window.entries
        batch_starts, batch_ends = window.batch_starts, window.batch_ends
        for batch in batches:
            for entry in batch:
                ts = entry.timestamp_ms
                delta.replay(entry.record, entry.offset, entry.leader_epoch, ts)
                offsets.append(entry.offset)
                ts_max.append(ts if not ts_max or ts > ts_max[-1] else ts_max[-1])
            entries.extend(batch)
            last = len(entries) - 1
            batch_starts.append(batch[0].offset)
            batch_ends.append(last)
            since_checkpoint += len(batch)
            if observer is None and since_checkpoint < checkpoints.spacing:
                continue  # one delta across batches until the next checkpoint: the loader's pace
            before, after = state.image, delta.apply()
            self._skipped += delta.skipped
            state = ReplayState(after, delta.open_transaction, self._skipped)
            cost = _image_cost(before, after, delta)
            if observer is not None:
                observer.batch_replayed(ReplayedBatch(before, after, batch, last, state.open_transaction is not None,
                                                      delta.changes()))
            if checkpoints.batch_end(last, state, cost, since_checkpoint, observer is not None):
                since_checkpoint = 0
            delta = MetadataDelta(after, state.open_transaction)
        last = len(entries) - 1
        if checkpoints.pass_ended(last, since_checkpoint):  # the latest image: the one asked for most
            self._skipped += delta.skipped
            checkpoints.keep_tail(last, ReplayState(delta.apply(), delta.open_transaction, self._skipped))

    # -- what it holds ----------------------------------------------------------------------------

    @property
    def info(self) -> LoadInfo:
        """What the loader would report for the latest image (with a note when part of the log is damaged)."""
        return self._with_damage(self._info)

    @property
    def start_image(self) -> MetadataImage:
        return self._checkpoints.start.image

    @property
    def start_offset(self) -> int:
        """The starting image's offset (-1: the empty image)."""
        return self._window.start_offset

    @property
    def first_offset(self) -> int:
        return self._window.first_offset

    @property
    def last_offset(self) -> int:
        return self._window.last_offset

    @property
    def entries(self) -> Sequence[LogEntry]:
        """Every entry held, in log order (read only)."""
        return self._window.entries

    @property
    def batch_starts(self) -> Sequence[int]:
        """The offset of each batch's first record (read only)."""
        return self._window.batch_starts

    @property
    def batch_ends(self) -> Sequence[int]:
        """The entry index of each batch's last record (read only)."""
        return self._window.batch_ends

    @property
    def skipped(self) -> int:
        """Records replay passed over (see MetadataDelta.skipped)."""
        return self._skipped

    @property
    def records_added(self) -> int:
        """Records ``extend`` added since the history opened (a reset goes on counting)."""
        return self._records_added

    @property
    def files_read(self) -> Sequence[Path]:
        """The segments read, once each (a log directory's; older spans' included)."""
        return self._reader.files_read if self._reader is not None else ()

    @property
    def window_records(self) -> int | None:
        """A growing history's bound: the entries kept at most (about); None: all."""
        return self._window.records

    @property
    def dropped_records(self) -> int:
        """Records the window dropped, since the start or the last reset."""
        return self._window.dropped_records

    @property
    def resets(self) -> int:
        return self._window.resets

    @property
    def checkpoints(self) -> tuple[int, ...]:
        """The entry indexes whose image is kept (-1: the starting image)."""
        return self._checkpoints.indexes

    # -- questions ------------------------------------------------------------------------------

    def index_of(self, offset: int) -> int:
        """The entry index of the last record at or before ``offset``; -1 for the starting image."""
        return self._window.index_of(offset)

    def index_at_time(self, time_ms: int) -> int:
        """As ``load_log_dir(time_ms=)``: the record before the first one stamped after ``time_ms``."""
        return self._window.index_at_time(time_ms)

    def state_at(self, index: int) -> ReplayState:
        """The state once the entry at ``index`` is applied (-1: the starting image)."""
        return self._checkpoints.state_at(index, self._window.entries)

    def image_at_index(self, index: int) -> MetadataImage:
        return self.state_at(index).image

    def info_at(self, index: int) -> LoadInfo:
        """What the loader would report for the image after the entry at ``index``."""
        window = self._window
        begin = window.begin
        state = self.state_at(index) if index >= 0 else self._checkpoints.start
        end = window.entries[index].offset + 1 if index >= 0 else begin
        log_end = max(window.offsets[-1] + 1 if window.offsets else 0, begin)
        base = tuple(self._reader.notes) if self._reader is not None else self._base_notes
        notes = base + tuple(open_transaction_notes(state.open_transaction, end))
        return replace(self._info, first_offset=begin if index >= 0 else None, end_offset=end, log_end_offset=log_end,
                       skipped_records=self._start_skipped + state.skipped, notes=notes)

    def image_at(self, *, offset: int | None = None, time_ms: int | None = None) -> tuple[MetadataImage, LoadInfo]:
        """As ``load_log_dir``: the latest image, or the one at or before ``offset`` (inclusive) or
        ``time_ms``. A point outside this history's own span is answered by another span of the
        log, read once (from the newest snapshot at or before it, as the loader would): an older
        one, or, past damage, a newer one. Never another point than the one asked for."""
        self._window.check(offset, time_ms)  # a point a growing history dropped: the more telling error
        if offset is None and time_ms is None:
            return self.image_at_index(len(self.entries) - 1), self.info
        self.check_point(offset=offset, time_ms=time_ms)
        history = self._span_for(offset, time_ms)
        if not history._answers(offset, time_ms):  # the span stops before the point: never answer another
            raise self._refuse(f"{_point(offset, time_ms)} cannot be replayed: the log's span from offset "
                               f"{history.start_offset} stops at {history.last_offset}")
        index = history.index_of(offset) if offset is not None else history.index_at_time(time_ms)
        return history.image_at_index(index), self._with_damage(history.info_at(index))

    # -- what can be reached ---------------------------------------------------------------------

    def reachable(self) -> tuple[tuple[int, int], ...]:
        """The runs of offsets ``image_at`` answers, (first, last) inclusive, in order. A log
        directory's: from each starting point (its first record, or a snapshot its segments
        continue from) up to the first damaged batch after it (engine.image.log_runs); one run
        when nothing is damaged. A growing history's: its window."""
        if self._reader is None:
            return ((self._first_point()[0], self.last_offset),)
        listing = self._reader.listing
        first = first_reachable(listing)
        starts = [first] + [s.end_offset - 1 for s, _ in listing.snapshots if s.end_offset - 1 > first]
        return runs_of(starts, self._log_scan())

    @property
    def damage(self) -> str | None:
        """Where damage stopped the reading of a log directory (one line naming file and byte
        offset), or None: the log ended, or was read to its torn tail."""
        damage = self._reader.damage if self._reader is not None else []
        return damage[0].one_line() if damage else None

    def run_spans(self) -> tuple[tuple[tuple[int, int], ...], tuple[RunGap, ...]]:
        """The runs of a log directory and the gaps between them, as every history finds and names
        them (engine.image.run_replay: records first..resume-1 missing, the next run from snapshot resume)."""
        if self._reader is None or not self.gaps:
            return self.reachable(), ()
        return run_spans(self._reader.listing, self._log_scan(), strict=False)

    @property
    def gaps(self) -> tuple[Gap, ...]:
        """The damaged places of a log directory no replay gets past (engine.image.log_runs); () when none."""
        return self._log_scan().gaps if self._reader is not None else ()

    def _log_scan(self) -> LogScan:
        if self._reader is None:
            return LogScan((), self.last_offset)
        if self._scan is None:
            reader = self._reader
            if reader.reads_to_end and not reader.damage and self.start_offset == first_reachable(reader.listing):
                self._scan = LogScan((), self.last_offset)  # this history read it all, undamaged: nothing to scan
            else:  # its own span ended at damage, or the log before its start is unread: one pass over the CRCs
                self._scan = scan_log(reader.listing)
        return self._scan

    def _with_damage(self, info: LoadInfo) -> LoadInfo:
        """``info`` with the damage and the runs that can be reached named (log_runs.with_damage_note)."""
        gaps = self.gaps
        return with_damage_note(info, gaps, self.reachable()) if gaps else info

    def _first_point(self) -> tuple[int, int]:
        """(offset, time in ms) of the earliest image; a log directory's is found once, reading
        nothing when this history starts there (each segment is opened once)."""
        if self._reader is None:  # a growing history's start moves (trims, resets): asked each time
            return self.start_offset, self.start_image.provenance.last_timestamp_ms
        if self._first is None:
            listing = self._reader.listing
            first = first_reachable(listing)
            if first != self.start_offset:
                time_ms = first_reachable_time(listing)
            elif first >= 0:
                time_ms = self.start_image.provenance.last_timestamp_ms  # the starting snapshot's
            else:
                time_ms = self.entries[0].timestamp_ms if self.entries else None
            self._first = (first, time_ms if time_ms is not None else 0)
        return self._first

    def _refuse(self, reason: str) -> OffsetOutOfRange:
        runs = self.reachable()
        return OffsetOutOfRange(f"{reason}: {runs_words(runs)}", first=runs[0][0], last=runs[-1][1],
                                damage=self.damage or next((g.damage for g in self._log_scan().gaps), None), runs=runs)

    def check_point(self, *, offset: int | None = None, time_ms: int | None = None) -> None:
        """OffsetOutOfRange for a point the log cannot answer: an offset in no reachable run (before
        the log, in a damaged gap, past the end or the damage the log stops at), a time before its
        earliest point, or one whose records may be in damage (after the last record a replay
        reaches before damage). A time after the last record of a whole log is the latest image:
        nothing changed after it (as Kafka's tools read "as of T")."""
        if offset is None and time_ms is None:
            return  # the latest: always there
        runs = self.reachable()
        first, last = runs[0][0], runs[-1][1]
        if offset is not None:
            if any(low <= offset <= high for low, high in runs):
                return
            if offset < first:
                raise self._refuse(f"offset {offset} is before the log's earliest point")
            scan = self._log_scan()
            damage = damage_of(scan, offset)
            if offset > last:  # past the damage only when a gap cuts the last run short
                damage = next((gap.damage for gap in scan.gaps if gap.resume is None or gap.resume > last + 1), None)
                raise self._refuse(f"offset {offset} is past the damage the log stops at ({damage})" if damage
                                   else f"offset {offset} is past the log's end")
            hole = next((g for g in scan.gaps if g.hole and g.first <= offset < (g.resume or offset + 1)), None)
            if hole is not None:
                raise self._refuse(f"offset {offset} is in a gap of the archive, which no replay reaches ({hole.damage})")
            raise self._refuse(f"offset {offset} is in a damaged part of the log, which no replay reaches ({damage})")
        first_ts = self._first_point()[1]
        if last < max(first, 0):
            raise self._refuse(f"time {_iso(time_ms)}")
        if time_ms < first_ts:
            raise self._refuse(f"time {_iso(time_ms)} is before the log's earliest point (offset {first}, "
                               f"{_iso(first_ts)})")
        span = self._span_for(None, time_ms)
        if not span._answers(None, time_ms):
            ts_max = span._window.ts_max
            read = f"offset {span.last_offset}, {_iso(ts_max[-1])}" if ts_max else f"offset {span.last_offset}"
            damage = span.damage or damage_of(self._log_scan(), span.last_offset + 1)
            raise self._refuse(f"time {_iso(time_ms)} is after the last record read ({read}) and the log stops "
                               f"at damage ({damage}): its records may be past it")

    # -- other spans -----------------------------------------------------------------------------

    def _answers(self, offset: int | None, time_ms: int | None) -> bool:
        """Whether this span's own records answer the point exactly."""
        window = self._window
        if offset is not None:
            return window.start_offset <= offset <= window.last_offset
        if time_ms is None:
            return True
        if window.start_offset >= 0 and time_ms < window.start_ts_ms:
            return False
        if window.ts_max and time_ms < window.ts_max[-1]:
            return True
        # at or after its last record: only a span read to the log's very end knows nothing follows
        return self._reader is None or (self._reader.reads_to_end and not self._reader.damage)

    def _span_for(self, offset: int | None, time_ms: int | None) -> MetadataHistory:
        """The span that answers the point: this history, one read before, or one read now from
        the newest snapshot at or before the point (up to where the next span begins)."""
        spans = [self, *self._older]
        if self._reader is None or (offset is None and time_ms is None):
            return self
        for span in spans:
            if span._answers(offset, time_ms):
                return span
        start = replay_start(self._info.source, offset=offset, time_ms=time_ms)  # an error when nothing is older
        for span in spans:
            if span._window.begin == start.begin:
                return span  # read already, and it stops before the point: image_at refuses
        end = min((span._window.begin for span in spans if span._window.begin > start.begin), default=None)
        reader = LogDirReader(start, end=end, files_read=self._reader.files_read)
        span = MetadataHistory(start.info, start.image, reader.batches(), start.start_offset, reader=reader)
        self._older.append(span)
        self._older.sort(key=lambda h: h.start_offset, reverse=True)
        return span
