"""change_items: one item per changed leaf, from each record's change set; transactions as the
history tables treat them (effect at the marker, aborted, still open)."""

from __future__ import annotations

import uuid

from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i16, i32
from engine.storage.log_reader import LogEntry
from metashell.history.change_items import ChangeItem, change_items
from tests.metashell.history.log_entries import entry_batches

OLD, NEW = uuid.UUID(int=0xA1), uuid.UUID(int=0xA2)
BEGIN, END, ABORT = m.BeginTransactionRecordV0(name="t"), m.EndTransactionRecordV0(), m.AbortTransactionRecordV0()


def _partition(topic_id, pid=0, leader=1) -> m.PartitionRecordV2:
    return m.PartitionRecordV2(
        partition_id=i32(pid), topic_id=topic_id, replicas=(i32(1), i32(2)), isr=(i32(1), i32(2)),
        removing_replicas=(), adding_replicas=(), leader=i32(leader), leader_recovery_state=i8(0),
        leader_epoch=i32(0), partition_epoch=i32(0), directories=(None, None),
        eligible_leader_replicas=None, last_known_elr=None)


def _config(name: str, key: str, value: str | None) -> m.ConfigRecordV0:
    return m.ConfigRecordV0(resource_type=i8(2), resource_name=name, name=key, value=value)


def _batches(*batches) -> list[list[LogEntry]]:
    return entry_batches(*batches, epoch=1)


def _rows(items) -> list[tuple]:
    return [(i.offset, i.record_offset, i.path, i.event, i.aborted) for i in items]


def test_a_topic_created_deleted_and_created_again_is_two_topics() -> None:
    items = list(change_items(MetadataImage(), _batches(
        [m.TopicRecordV0(name="orders", topic_id=OLD), _config("orders", "retention.ms", "1000"), _partition(OLD)],
        [m.RemoveTopicRecordV0(topic_id=OLD)],
        [m.TopicRecordV0(name="orders", topic_id=NEW), _partition(NEW)],
    )))
    assert _rows(items) == [
        (0, 0, "/topics/orders", "created", False), (1, 1, "/configs/TOPIC/orders/retention.ms", "created", False),
        (2, 2, "/topics/orders/0", "created", False),
        (3, 3, "/topics/orders", "deleted", False), (3, 3, "/topics/orders/0", "deleted", False),
        (3, 3, "/configs/TOPIC/orders/retention.ms", "deleted", False),
        (4, 4, "/topics/orders", "created", False), (5, 5, "/topics/orders/0", "created", False)]
    ids = [i.topic_id for i in items if i.domain == "topics"]
    assert ids[0] == ids[1] != ids[2]
    assert items[0].new == {"id": ids[0], "name": "orders"} and items[3].old == items[0].new
    assert items[1].new == "1000" and items[5].old == "1000" and items[5].new is None
    assert items[2].record == "PARTITION_RECORD" and items[2].new["leader"] == 1


def test_transactions_take_effect_at_their_marker_aborted_and_open_apart() -> None:
    start = list(change_items(MetadataImage(), _batches([m.TopicRecordV0(name="t", topic_id=OLD), _partition(OLD)])))
    assert len(start) == 2
    items = list(change_items(MetadataImage(), _batches(
        [m.TopicRecordV0(name="t", topic_id=OLD), _partition(OLD)],  # 0-1
        [BEGIN, _config("t", "a", "1"), ABORT],  # 2-4: aborted
        [BEGIN, _config("t", "a", "2"), _config("t", "a", "3")],  # 5-7
        [END],  # 8: committed, each record's own change
        [BEGIN, _config("t", "b", "x")],  # 9-10: still open
    ), start=2))
    assert [(i.offset, i.record_offset, i.old, i.new, i.aborted) for i in items] == [
        (4, 3, None, "1", True), (8, 6, None, "2", False), (8, 7, "2", "3", False), (10, 10, None, "x", None)]
    assert all(i.record == "CONFIG_RECORD" for i in items)
    assert [i.timestamp_ms for i in items] == [1_004, 1_008, 1_008, 1_010]


def test_end_stops_the_replay_and_leaves_its_transaction_open() -> None:
    batches = _batches([m.TopicRecordV0(name="t", topic_id=OLD)], [BEGIN, _config("t", "a", "1")], [END])
    assert [(i.offset, i.aborted) for i in change_items(MetadataImage(), batches, end=2)] == [(0, False), (2, None)]
    assert [(i.offset, i.aborted) for i in change_items(MetadataImage(), batches)] == [(0, False), (3, False)]


def test_a_partition_item_names_the_fields_that_changed() -> None:
    change = m.PartitionChangeRecordV2(partition_id=i32(0), topic_id=OLD, isr=(i32(1),))
    elect = m.PartitionChangeRecordV2(partition_id=i32(0), topic_id=OLD, leader=i32(2))
    items = list(change_items(MetadataImage(), _batches(
        [m.TopicRecordV0(name="t", topic_id=OLD), _partition(OLD)], [change], [elect]), start=2))
    assert [(i.path, i.key, i.fields) for i in items] == [
        ("/topics/t/0", "0", ("isr", "partitionEpoch")),
        ("/topics/t/0", "0", ("leader", "leaderEpoch", "partitionEpoch"))]
    assert (items[1].old["leader"], items[1].new["leader"]) == (1, 2)
    assert isinstance(items[0], ChangeItem) and items[0].entity == "topic t"


def test_a_scram_credential_never_carries_its_keys() -> None:
    record = m.UserScramCredentialRecordV0(name="alice", mechanism=i8(1), salt=b"salty", stored_key=b"stored",
                                           server_key=b"server", iterations=i32(4096))
    [item] = change_items(MetadataImage(), _batches([record]))
    assert item.path == "/scram/SCRAM-SHA-256/alice" and item.key == "SCRAM-SHA-256" and item.entity == "user alice"
    assert item.new["iterations"] == 4096 and not {"salty", "stored", "server"} & set(map(str, item.new.values()))
    assert item.new["salt"] == item.new["storedKey"] == item.new["serverKey"] == "[redacted]"


def test_feature_and_secret_config_items() -> None:
    items = list(change_items(MetadataImage(), _batches(
        [m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27))],
        [m.ConfigRecordV0(resource_type=i8(4), resource_name="", name="sasl.jaas.config", value="secret!")])))
    assert [(i.path, i.entity, i.key, i.new) for i in items] == [
        ("/features/metadata.version", "feature metadata.version", "metadata.version", 27),
        ("/configs/BROKER/<default>/sasl.jaas.config", "broker <default>", "sasl.jaas.config", "[redacted]")]


def test_controller_producer_id_and_client_quota_items() -> None:
    controller = m.RegisterControllerRecordV0(controller_id=i32(3000), incarnation_id=uuid.UUID(int=7),
                                              zk_migration_ready=False, end_points=(), features=())
    items = list(change_items(MetadataImage(), _batches(
        [controller], [m.ProducerIdsRecordV0(broker_id=i32(1), broker_epoch=5, next_producer_id=1000)],
        [m.ProducerIdsRecordV0(broker_id=i32(1), broker_epoch=5, next_producer_id=2000)])))
    assert [(i.domain, i.path, i.entity, i.event, i.old, i.new) for i in items] == [
        ("controllers", "/controllers/3000", "controller 3000", "register", None,
         {"id": 3000, "incarnation-id": "AAAAAAAAAAAAAAAAAAAABw", "zk-migration-ready": False, "endpoints": [],
          "features": {}}),
        ("producer_ids", "/producer-ids", "producer ids", "created", None, 1000),
        ("producer_ids", "/producer-ids", "producer ids", "changed", 1000, 2000)]


def test_a_path_query_takes_names_as_cd_does() -> None:
    from metashell.history.query import path_query

    record = m.ConfigRecordV0(resource_type=i8(32), resource_name="my group", name="k", value="v")
    [item] = change_items(MetadataImage(), _batches([record]))
    assert item.path == "/configs/GROUP/my%20group/k"
    for typed in ("/configs/GROUP/my group/k", "/configs/GROUP/my%20group", "/configs/GROUP/my%20group/k", "/"):
        assert path_query(typed).reaches(item), typed
    assert not path_query("/configs/GROUP/my").reaches(item)
