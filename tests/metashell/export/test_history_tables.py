"""The history tables read what each record did from its change set: the partitions a ClearElrRecord
cleared (applied, in a transaction committed, aborted or still open), the quorum's leader changes,
and rows of a transaction written at its end. Pure Python: no Spark."""

from __future__ import annotations

import uuid

from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.records import kio_codec as kio
from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i16, i32
from engine.records.metadata_record_serde import ControlRecord, UnknownRecord, control_record
from engine.storage.log_reader import LogEntry
from metashell.export.history_tables import history_rows_of

PAY, NEW = uuid.UUID(int=0x9A), uuid.UUID(int=0x9B)
BEGIN, END, ABORT = m.BeginTransactionRecordV0(name="t"), m.EndTransactionRecordV0(), m.AbortTransactionRecordV0()


def _partition(topic_id, pid, elr=None, last_known=None) -> m.PartitionRecordV2:
    return m.PartitionRecordV2(
        partition_id=i32(pid), topic_id=topic_id, replicas=(i32(1), i32(2), i32(3)), isr=(i32(1),),
        removing_replicas=(), adding_replicas=(), leader=i32(1), leader_recovery_state=i8(0),
        leader_epoch=i32(0), partition_epoch=i32(0), directories=(None,) * 3,
        eligible_leader_replicas=None if elr is None else tuple(map(i32, elr)),
        last_known_elr=None if last_known is None else tuple(map(i32, last_known)))


def _start() -> MetadataImage:
    """pay-0 with ELR [2] and last-known ELR [3], pay-1 with neither, new-0 with ELR [1]."""
    delta = MetadataDelta(MetadataImage())
    for record in (m.TopicRecordV0(name="pay", topic_id=PAY), _partition(PAY, 0, (2,), (3,)), _partition(PAY, 1),
                   m.TopicRecordV0(name="new", topic_id=NEW), _partition(NEW, 0, (1,))):
        delta.replay(record)
    return delta.apply()


def _leader(leader_id: int) -> ControlRecord:
    voters = tuple(kio.LeaderChangeVoter(voter_id=i32(v)) for v in (1, 2, 3))
    return control_record(kio.LeaderChangeMessage(version=i16(0), leader_id=i32(leader_id), voters=voters,
                                                  granting_voters=voters[:2]))


def _batches(*batches) -> list[list[LogEntry]]:
    out, offset = [], 0
    for records in batches:
        out.append([LogEntry(offset + n, 4, 1_000 + offset + n, r, isinstance(r, ControlRecord))
                    for n, r in enumerate(records)])
        offset += len(records)
    return out


def _cleared(tables) -> list[tuple]:
    """(offset, topic, partition, elr after, aborted) of each ClearElrRecord row."""
    rows = [dict(zip(tables["partition_changes"].columns, row)) for row in tables["partition_changes"].rows]
    return [(r["offset"], r["topic"], r["partition"], r["elr_after"], r["aborted"]) for r in rows
            if r["type"] == "CLEAR_ELR_RECORD"]


def test_clear_elr_rows_in_transactions_aborted_committed_and_open() -> None:
    tables = history_rows_of(_start(), _batches(
        [BEGIN, m.ClearElrRecordV0(topic_name="pay"), ABORT],  # 0-2: aborted, the ELR stays
        [BEGIN, _leader(2), m.ClearElrRecordV0(topic_name="")],  # 3-5: a leader change inside ...
        [END],  # 6: ... committed: both topics cleared, rows written at the end
        [m.PartitionChangeRecordV2(partition_id=i32(0), topic_id=PAY, eligible_leader_replicas=(i32(3),))],  # 7
        [BEGIN, m.ClearElrRecordV0(topic_name="")],  # 8-9: still open where the log ends
    ))
    assert _cleared(tables) == [
        (1, "pay", 0, [2], True),  # the partition it would have cleared; the state as it stayed
        (5, "pay", 0, [], False), (5, "new", 0, [], False),  # the image's order of topics
        (9, "pay", 0, [3], None)]  # not applied: the state without it
    leaders = tables["leader_changes"]
    assert leaders.rows == [(4, 1_004, 4, 2, [1, 2, 3], [1, 2])]
    records = [dict(zip(tables["records"].columns, row)) for row in tables["records"].rows]
    assert [r["offset"] for r in records] == list(range(10))  # log order, the transaction's rows at its end
    assert [r["aborted"] for r in records] == [True] * 3 + [False] * 5 + [None] * 2


def test_a_clear_elr_applied_at_once_has_a_row_per_partition_it_cleared() -> None:
    tables = history_rows_of(_start(), _batches([m.ClearElrRecordV0(topic_name="")],
                                                [m.ClearElrRecordV0(topic_name="pay")]))
    assert _cleared(tables) == [(0, "pay", 0, [], False), (0, "new", 0, [], False)]  # nothing left for 1


def test_an_undecodable_partition_record_is_a_record_row_only() -> None:
    # an UnknownRecord spells its type as the record it could not decode: no partition row, no crash
    unknown = UnknownRecord(b"", b"\x00", "undecodable PartitionRecord v9", api_key=3, version=9)
    assert unknown.type_name == "PARTITION_RECORD"
    tables = history_rows_of(_start(), _batches([unknown]))
    assert tables["partition_changes"].rows == [] and len(tables["records"].rows) == 1
