"""Metadata transactions (KIP-868) in the stream: where a micro-batch may end, and each row's
``aborted``, from the records' types alone (no image is replayed).

The rules are metashell.history.transactions' (MetadataDelta's, Kafka's MetadataBatchLoader's):
a BeginTransactionRecord opens a transaction; every record after it is held in it, until an
EndTransactionRecord (committed: ``aborted`` false) or an AbortTransactionRecord (``aborted``
true), the markers included; control records and records of unknown types are never held (they
are applied at their place: false); a Begin inside an open transaction is held in it; an End or
Abort outside one changes nothing (false). A record outside any transaction: false.

The driver finds the spans as it plans (``TransactionScan``, fed the records in log order); the
tasks get the spans that touch their range, so that a transaction split over two tasks (two
segments, two chunks of a fetch) gives every row its outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from engine.records.metadata_record_serde import UnknownRecord
from engine.storage.log_reader import LogEntry
from metashell.history.transactions import ABORT, BEGIN, END, marker_of
from metashell.spark.stream_offsets import Position



@dataclass(frozen=True, slots=True)
class Span:
    """A transaction from its Begin at ``first`` to its End or Abort at ``last`` (``aborted``
    None: the log broke off at ``last`` with the transaction still open, see TransactionScan.cut)."""

    first: int
    last: int
    aborted: bool | None


def _held(entry: LogEntry) -> bool:
    """Whether a record is held in an open transaction (never a control or unknown record)."""
    return not entry.control and not isinstance(entry.record, UnknownRecord)


@dataclass
class TransactionScan:
    """Fed every record from ``start`` (a point outside any transaction) in log order: the spans
    ended, and ``safe``, the furthest point outside any transaction (where a micro-batch may end:
    at the Begin of the transaction open now, if one is)."""

    start: Position  # where the scan began (outside any transaction)
    spans: list[Span] = field(default_factory=list)
    open_first: int | None = None
    scanned: Position | None = None  # after the last record fed (None: none yet)
    safe: Position | None = None  # after the last record fed that left no transaction open

    def __post_init__(self) -> None:
        self.scanned = self.safe = self.start

    def feed(self, entries: Iterable[LogEntry]) -> None:
        for entry in entries:
            if entry.offset < self.scanned.next:
                continue  # the scan already holds it (a batch read again)
            self.scanned = Position(entry.offset + 1, entry.leader_epoch)
            if _held(entry):
                name = marker_of(entry)
                if self.open_first is None:
                    if name == BEGIN:
                        self.open_first = entry.offset
                elif name in (END, ABORT):
                    self.spans.append(Span(self.open_first, entry.offset, name == ABORT))
                    self.open_first = None
            if self.open_first is None:
                self.safe = self.scanned

    def cut(self) -> None:
        """The log breaks off after the records fed (an archive's hole: the recorder resumed at a
        snapshot, the open transaction's End was never recorded): the open transaction ends here
        with no outcome (null, as the export says of a transaction open where a run ends), and what
        follows the hole starts outside any transaction, as a run from a snapshot does."""
        if self.open_first is not None:
            self.spans.append(Span(self.open_first, self.scanned.next - 1, None))
            self.open_first = None
        self.safe = self.scanned

    def covers(self, first: int, last: int) -> bool:
        """Whether the scan saw every record from ``first`` to ``last`` (its spans are whole there)."""
        return self.start.next <= first and self.scanned.next > last

    def spans_between(self, first: int, last: int) -> tuple[Span, ...]:
        return tuple(s for s in self.spans if s.last >= first and s.first <= last)

    def forget_below(self, offset: int) -> None:
        """Spans wholly below ``offset`` are no longer asked for (Spark committed them)."""
        self.spans = [s for s in self.spans if s.last >= offset]


def aborted_of(entry: LogEntry, spans: Sequence[Span]) -> bool | None:
    """A row's ``aborted`` (the planners never hand a task a range that ends inside a transaction,
    so a held record always lies in one of ``spans``)."""
    if not _held(entry):
        return False
    offset = entry.offset
    for span in spans:
        if span.first <= offset <= span.last:
            return span.aborted
    return False
