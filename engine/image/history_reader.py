"""Reading a MetadataHistory's log directory: each segment once, and what a running node appends.

A ``LogDirReader`` reads one span of a log directory, from where its replay begins (a snapshot,
or the log's start: metadata_loader.replay_start) to the log's end, or, for a span before a
history's starting snapshot, up to where the next span begins. Every file it opens is added to
``files_read`` (shared by a history and its older spans: the shell's ``seek`` reads each segment
once), and what it finds on the way (a torn tail, a snapshot past the log's end) to ``notes``.
``read_appended`` reads what was appended since (nothing when the segments' sizes are as they
were).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Iterator

from engine.common.errors import CorruptRecordError
from engine.image.log_holes import HOLE_NOTE
from engine.image.metadata_loader import DAMAGE_NOTE, TORN_TAIL_NOTE, ReplayStart, segment_batches
from engine.storage.log_reader import LogDirListing, LogEntry, list_log_dir


class LogDirReader:
    """The segments of one span of a log directory, from ``start`` on (up to ``end``: before it)."""

    def __init__(self, start: ReplayStart, *, end: int | None = None, files_read: list[Path] | None = None) -> None:
        self.begin = start.begin  # the first offset replayed from the segments
        self.files_read: list[Path] = files_read if files_read is not None else []  # segments, once each
        self.notes: list[str] = list(start.info.notes)
        self.damage: list[CorruptRecordError] = []  # where damage stopped the reading (engine.image.metadata_loader)
        self._listing = start.listing
        self._end = end
        # the segments' names and sizes before reading: what is appended meanwhile is new to read_appended
        self._size = segment_sizes(start.listing) if end is None else None

    @property
    def reads_to_end(self) -> bool:
        """Whether this span reads to the log's end (not up to where a newer span begins)."""
        return self._end is None

    @property
    def listing(self) -> LogDirListing:
        """The directory's files as last listed."""
        return self._listing

    def batches(self) -> Iterator[list[LogEntry]]:
        """The span's records, a list per batch (read as they are asked for)."""
        return segment_batches(self._listing, self.begin, self.notes, end=self._end, files_read=self.files_read,
                               damage=self.damage)

    def finished(self, end_offset: int) -> None:
        """The span was read up to ``end_offset``: note a newest snapshot past it (Kafka would start from it)."""
        newest = self._listing.latest_snapshot
        # (stopped by damage, the history's damage note says more: the newest snapshot is another span)
        if self._end is None and not self.damage and newest is not None and newest[0].end_offset > end_offset:
            self.notes.append(f"the newest snapshot ({newest[1].name}) is past the log's end ({end_offset}): "
                              "this history stops before it")

    def read_appended(self, begin: int, replay: Callable[[Iterable[list[LogEntry]]], None]) -> bool:
        """Hand what was appended since the log was read (a running node's directory), from offset
        ``begin``, to ``replay``: False, reading nothing, when its segments are as they were."""
        if self._size is None:
            return False
        listing = list_log_dir(self._listing.path)
        size = segment_sizes(listing)
        if size == self._size:
            return False
        notes: list[str] = []
        damage: list[CorruptRecordError] = []
        replay(segment_batches(listing, begin, notes, files_read=self.files_read, damage=damage))
        self._listing, self._size, self.damage = listing, size, damage
        self.notes = [n for n in self.notes if not n.startswith((TORN_TAIL_NOTE, DAMAGE_NOTE, HOLE_NOTE))] + notes
        return True


def segment_sizes(listing: LogDirListing) -> tuple:
    """The segments' names and sizes: what changes when a node appends to its log."""
    return tuple((path.name, _file_size(path)) for _, path in listing.segments)


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # deleted since listed (retention): the next listing will not name it
        return -1
