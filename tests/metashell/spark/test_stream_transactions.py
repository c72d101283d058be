"""Where a kraft stream's micro-batch may end, and each row's ``aborted``, from record types alone
(metashell.spark.stream_transactions), against the export's replay of the same records through
MetadataDelta (metashell.history.transactions): the same outcome for every record, and no safe
end point inside a transaction, whatever the order of markers, control and unknown records."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st
from kio.schema.leader_change_message.v0.data import LeaderChangeMessage

from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import i8
from engine.records.metadata_record_serde import UnknownRecord, control_record
from engine.storage.log_reader import LogEntry
from metashell.history.transactions import TransactionReplay, replay_outcomes
from metashell.spark.stream_offsets import Position
from metashell.spark.stream_transactions import TransactionScan, aborted_of

KINDS = ("begin", "end", "abort", "config", "noop", "control", "unknown")


def _entry(offset: int, kind: str) -> LogEntry:
    record = {
        "begin": lambda: m.BeginTransactionRecordV0(name="t"),
        "end": lambda: m.EndTransactionRecordV0(),
        "abort": lambda: m.AbortTransactionRecordV0(reason="r"),
        "config": lambda: m.ConfigRecordV0(resource_type=i8(2), resource_name="t", name="k", value=str(offset)),
        "noop": lambda: m.NoOpRecordV0(),
        "control": lambda: control_record(LeaderChangeMessage(version=0, leader_id=1, voters=(), granting_voters=())),
        "unknown": lambda: UnknownRecord(None, b"\x01\x7f\x00", "unknown type", 127, 0),
    }[kind]()
    return LogEntry(offset, 3, 1_700_000_000_000 + offset, record, kind == "control")


def _replayed(entries: list[LogEntry]) -> dict[int, bool | None]:
    replay = TransactionReplay(MetadataDelta(MetadataImage(), per_record=True))
    return {o.entry.offset: o.aborted for o in replay_outcomes(replay, [entries])}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(KINDS), max_size=40), st.integers(0, 40))
@example(["begin", "config", "control", "begin", "abort", "config", "end", "unknown"], 4)
@example(["end", "begin", "noop", "end", "begin", "config"], 3)
def test_the_scan_gives_the_replays_outcome_and_ends_batches_outside_transactions(kinds, cut):
    entries = [_entry(i, kind) for i, kind in enumerate(kinds)]
    expected = _replayed(entries)
    scan = TransactionScan(Position(0, 0))
    scan.feed(entries[:cut])  # fed in two goes, as micro-batches see a growing log
    scan.feed(entries[cut:])
    safe = scan.safe.next
    # the safe end: every record before it has a known outcome, and it is as far as it can be
    assert all(expected[e.offset] is not None for e in entries[:safe])
    if scan.open_first is None:
        assert safe == len(entries)
    else:
        assert safe == scan.open_first and expected[scan.open_first] is None
    spans = scan.spans_between(0, max(safe - 1, 0))
    assert [aborted_of(e, spans) for e in entries[:safe]] == [expected[e.offset] for e in entries[:safe]]
    # a scan started again from the safe end (a restarted query) agrees on what follows
    again = TransactionScan(scan.safe)
    again.feed(entries[safe:])
    assert again.safe == scan.safe and again.open_first == scan.open_first


def test_the_epoch_of_the_safe_end_is_the_record_before_it():
    entries = [LogEntry(10, 4, 0, m.NoOpRecordV0()), LogEntry(11, 5, 0, m.BeginTransactionRecordV0(name="t")),
               LogEntry(12, 5, 0, m.NoOpRecordV0())]
    scan = TransactionScan(Position(10, 4))
    scan.feed(entries)
    assert scan.safe == Position(11, 4) and scan.scanned == Position(13, 5)
