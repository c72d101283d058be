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
from tests.metashell.history.log_entries import entry_batches

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
    return entry_batches(*batches, epoch=4)


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


def _registration(epoch: int) -> m.RegisterBrokerRecordV3:
    return m.RegisterBrokerRecordV3(broker_id=i32(1), is_migrating_zk_broker=False, incarnation_id=uuid.UUID(int=epoch),
                                    broker_epoch=epoch, end_points=(), features=(), rack=None, fenced=True,
                                    in_controlled_shutdown=False, log_dirs=())


def test_broker_rows_are_the_registrations_each_record_changed() -> None:
    tables = history_rows_of(MetadataImage(), _batches(
        [_registration(5)],  # 0: register
        [m.UnfenceBrokerRecordV0(id=i32(1), epoch=5)],  # 1: unfence
        [m.UnfenceBrokerRecordV0(id=i32(1), epoch=5)],  # 2: unfenced already: changes nothing, no row
        [m.FenceBrokerRecordV0(id=i32(1), epoch=4)],  # 3: another epoch: skipped, no row
        [m.BrokerRegistrationChangeRecordV1(broker_id=i32(1), broker_epoch=5, fenced=i8(0),
                                            in_controlled_shutdown=i8(1))],  # 4: controlled shutdown
        [m.FenceBrokerRecordV0(id=i32(1), epoch=5)],  # 5: fence
        [_registration(9)],  # 6: registered again, a new epoch
        [m.UnregisterBrokerRecordV0(broker_id=i32(1), broker_epoch=9)],  # 7: unregister
    ))
    rows = [dict(zip(tables["broker_fencing"].columns, row)) for row in tables["broker_fencing"].rows]
    assert [(r["offset"], r["broker_epoch"], r["event"], r["fenced"], r["in_controlled_shutdown"]) for r in rows] == [
        (0, 5, "register", True, False), (1, 5, "unfence", False, False), (4, 5, "controlled_shutdown", False, True),
        (5, 5, "fence", True, True), (6, 9, "register", True, False), (7, 9, "unregister", None, None)]


def test_a_partition_row_says_what_the_record_states_and_the_state_after() -> None:
    change = m.PartitionChangeRecordV2(partition_id=i32(1), topic_id=PAY, isr=(i32(1), i32(2)), leader=i32(2))
    tables = history_rows_of(_start(), _batches([change], [_partition(NEW, 1)]))
    rows = [dict(zip(tables["partition_changes"].columns, row)) for row in tables["partition_changes"].rows]
    first, second = rows
    assert (first["type"], first["topic"], first["partition"], first["leader"], first["isr"], first["replicas"],
            first["elr"], first["leader_recovery_state"]) == ("PARTITION_CHANGE_RECORD", "pay", 1, 2, [1, 2], None,
                                                               None, -1)
    assert (first["leader_after"], first["isr_after"], first["replicas_after"], first["partition_epoch_after"]) == (
        2, [1, 2], [1, 2, 3], 1)
    assert (second["type"], second["topic"], second["partition"], second["leader"], second["replicas"]) == (
        "PARTITION_RECORD", "new", 1, 1, [1, 2, 3])


def _min_isr_config(resource: str, value: str | None) -> m.ConfigRecordV0:
    """min.insync.replicas of topic ``resource`` (or, "", the cluster's default)."""
    return m.ConfigRecordV0(resource_type=i8(2 if resource else 4), resource_name=resource,
                            name="min.insync.replicas", value=value)


def test_min_isr_after_follows_the_topic_then_the_cluster_default_then_one() -> None:
    change = m.PartitionChangeRecordV0(partition_id=i32(1), topic_id=PAY, isr=(i32(1), i32(2)))
    tables = history_rows_of(_start(), _batches(
        [change],  # 0: nothing set: 1
        [_min_isr_config("", "2"), change],  # 1-2: the cluster's default
        [_min_isr_config("pay", "3"), change],  # 3-4: the topic's own wins
        [BEGIN, _min_isr_config("pay", None), change, END],  # 5-8: removed in the transaction: the default again
    ))
    rows = [dict(zip(tables["partition_changes"].columns, row)) for row in tables["partition_changes"].rows]
    assert [(r["offset"], r["min_isr_after"]) for r in rows] == [(0, 1), (2, 2), (4, 3), (7, 2)]
