"""What each record of a log changed, metadata transactions (KIP-868) included: one pass, shared.

The history tables (metashell/export/history_tables.py) and the change items
(metashell/history/change_items.py) both read, for every record in log order, its change set
(``MetadataDelta.record_changes()``) and whether it took effect. This module is the one place that
works that out:

- a record outside any transaction takes effect at its place: ``aborted`` False;
- records of a transaction wait until it ends. Committed (EndTransactionRecord), they all take
  effect at the marker: ``aborted`` False, ``effect`` the marker's entry. Aborted
  (AbortTransactionRecord), none takes effect: ``aborted`` True, ``effect`` the marker's entry;
- records of a transaction still open where the log (or ``end``) stops have ``aborted`` None and
  no ``effect``: Kafka has not applied them.

A record held in an open transaction has changed nothing yet; what it would change is asked of a
scratch delta over the state without the transaction, fed the transaction's records in order (as
Kafka's replay would see them, were it committed at once). The markers change nothing of their
own: the records between them carry what they did. So the change sets of a committed
transaction's records are each record's own, in order, not the transaction's total.

Outcomes are handed over when they are known (a transaction's when it ends), in log order, while
the delta stands just after the record that made them known: a consumer that reads the delta's
state (the history tables' "state after" columns) reads the state once the transaction ended.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, NamedTuple

from engine.image.change_set import EMPTY_CHANGE_SET, ChangeSet
from engine.image.metadata_delta import ABORTED, APPLIED, PENDING, MetadataDelta
from engine.records.metadata_record_serde import ControlRecord, UnknownRecord
from engine.storage.log_reader import LogEntry

BEGIN, END, ABORT = "BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord"


class RecordOutcome(NamedTuple):
    """One record, what it changed (or would have), and whether that took effect."""

    entry: LogEntry
    changes: ChangeSet
    aborted: bool | None  # False: took effect; True: in an aborted transaction; None: transaction still open
    effect: LogEntry | None  # the marker ending its transaction (None: outside one, or still open)

    @property
    def offset(self) -> int:
        """Where it took effect: the transaction's marker, else the record's own place."""
        return self.effect.offset if self.effect is not None else self.entry.offset

    @property
    def timestamp_ms(self) -> int:
        return self.effect.timestamp_ms if self.effect is not None else self.entry.timestamp_ms


class TransactionReplay:
    """Replays entries through ``delta`` (made with ``per_record=True``) and says, per record, what
    it changed once that is known. Also remembers every topic name a change named (an aborted
    creation's too), for rows and items about a topic the delta no longer (or never) holds."""

    def __init__(self, delta: MetadataDelta):
        self.delta = delta
        self.names: dict[Any, str] = {}  # topic id -> name, from every topic change seen
        self._scratch: MetadataDelta | None = None  # the open transaction's records, as if committed
        self._waiting: list[tuple[LogEntry, ChangeSet, bool]] = []  # (entry, what it changed, in the transaction)

    def replay(self, entry: LogEntry) -> list[RecordOutcome]:
        """Replay one entry; the outcomes it made known (none while a transaction stays open)."""
        delta = self.delta
        held = len(delta.open_transaction or ())
        outcome = delta.replay(entry.record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
        if outcome is PENDING:
            changes = self._would_change(entry, held)
        elif outcome is APPLIED:
            changes = delta.record_changes()
        else:  # a transaction's end: its records' change sets already say what they did
            changes, self._scratch = EMPTY_CHANGE_SET, None
        for topic_id, change in changes.topics.items():
            self.names[topic_id] = change.after or change.before
        if outcome is APPLIED and not self._waiting:
            return [RecordOutcome(entry, changes, False, None)]
        if outcome is APPLIED or outcome is PENDING:
            self._waiting.append((entry, changes, outcome is PENDING))
            return []
        self._waiting.append((entry, changes, True))
        return self._flush(outcome is ABORTED, entry)

    def finish(self) -> list[RecordOutcome]:
        """A transaction still open: its records' outcomes, ``aborted`` None."""
        return self._flush(None, None)

    def pending(self) -> list[RecordOutcome]:
        """The outcomes ``finish`` would give now, the transaction left open (more may come)."""
        return [RecordOutcome(entry, changes, None if in_transaction else False, None)
                for entry, changes, in_transaction in self._waiting]

    def topic_name(self, topic_id: Any) -> str | None:
        """The topic's name as the delta stands, else the last name a change gave it."""
        return self.delta.topic_name(topic_id) or self.names.get(topic_id)

    def _flush(self, aborted: bool | None, marker: LogEntry | None) -> list[RecordOutcome]:
        waiting, self._waiting = self._waiting, []
        return [RecordOutcome(entry, changes, aborted if in_transaction else False,
                              marker if in_transaction else None)
                for entry, changes, in_transaction in waiting]

    def _would_change(self, entry: LogEntry, held: int) -> ChangeSet:
        """What a record the open transaction holds would change, its earlier records applied: none
        for the marker that opened it (the transaction holds no more records after it)."""
        if len(self.delta.open_transaction or ()) == held:
            return EMPTY_CHANGE_SET
        if self._scratch is None:
            self._scratch = MetadataDelta(self.delta.apply(), per_record=True)
        self._scratch.replay(entry.record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
        return self._scratch.record_changes()


def replay_outcomes(replay: TransactionReplay, batches: Iterable[list[LogEntry]], *,
                    end: int | None = None) -> Iterator[RecordOutcome]:
    """Every record's outcome, in log order, up to offset ``end`` (included; None: all); a
    transaction open where it stops ends the pass with ``aborted`` None. Each outcome is yielded
    while ``replay.delta`` stands where it became known."""
    for batch in batches:
        if end is not None and batch and batch[0].offset > end:
            break
        for entry in batch:
            if end is not None and entry.offset > end:
                break
            yield from replay.replay(entry)
    yield from replay.finish()


# -- the same outcomes from the markers alone (no state: the records table's ``aborted``) ---------

def marker_of(entry: LogEntry) -> str | None:
    """BEGIN, END or ABORT for a transaction marker, None for any other record."""
    record = entry.record
    if entry.control or isinstance(record, (ControlRecord, UnknownRecord)):
        return None
    name = getattr(record, "record_name", None)
    return name if name in (BEGIN, END, ABORT) else None


def in_transactions(entry: LogEntry) -> bool:
    """Whether an open transaction holds this record: MetadataDelta's rule (control records and
    records of unknown types never)."""
    return not (entry.control or isinstance(entry.record, (ControlRecord, UnknownRecord)))


def marker_outcomes(entries: Iterable[LogEntry], *, open_at_start: bool = False,
                    stop_after: int | None = None) -> Iterator[tuple[LogEntry, bool | None]]:
    """(entry, aborted) in log order, by the markers alone: what ``replay_outcomes`` says of
    ``aborted`` without replaying any state (a Begin inside a transaction and an End or Abort
    outside one are skipped, as MetadataDelta skips them). ``open_at_start``: a transaction is open
    before the first entry. ``stop_after``: no entry past this offset is yielded; the entries after
    it are read only to settle a transaction still open there."""
    waiting: list[tuple[LogEntry, bool]] | None = [] if open_at_start else None
    for entry in entries:
        marker = marker_of(entry)
        if stop_after is not None and entry.offset > stop_after and waiting is None:
            return
        if waiting is None:
            if marker == BEGIN:
                waiting = [(entry, True)]
            else:
                yield entry, False
            continue
        waiting.append((entry, in_transactions(entry)))
        if marker in (END, ABORT):
            aborted = marker == ABORT
            yield from ((e, aborted if held else False) for e, held in waiting
                        if stop_after is None or e.offset <= stop_after)
            waiting = None
    for e, held in waiting or ():
        if stop_after is None or e.offset <= stop_after:
            yield e, None if held else False
