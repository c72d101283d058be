"""The change tables over a scripted history: each table's rows written out as expected tables.

The history (``SCRIPT``, one batch per line, offsets in the comments) sets, changes and deletes
a config (a secret one too), creates and deletes an ACL, sets and removes a quota, upserts and
deletes a SCRAM credential, upgrades a feature, creates, deletes and re-creates a topic of the
same name, registers, fences and re-registers a broker with a new incarnation, adds and removes
a voter, and runs metadata transactions: one aborted, one committed, one still open at the end.
Pure Python (no Spark): the rows come from ``change_rows_of`` (a live session's path) and from a
log directory written with our own MetadataLog (``change_rows``, the shell's ``--log-dir``).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from engine.common.kafka_uuid import uuid_to_kafka
from engine.image.metadata_image import MetadataImage
from engine.records import kio_codec as kio
from engine.records import metadata_records as m
from engine.records.kio_codec import f64, i8, i16, i32, i64, u16
from engine.records.metadata_record_serde import ControlRecord, control_record
from engine.storage.log_reader import LogEntry
from engine.storage.metadata_log import MetadataLog
from metashell.export.change_tables import change_rows, change_rows_of
from metashell.export.history_tables import history_rows, history_rows_of
from metashell.export.schemas import CHANGE_TABLES, column_names
from tests.metashell.history.history_script import register

ORDERS_1, ORDERS_2 = uuid.UUID(int=0x0A1), uuid.UUID(int=0x0A2)
ACL_ID = uuid.UUID(int=0xAC1)
INCARNATION_1, INCARNATION_2 = uuid.UUID(int=0xB1), uuid.UUID(int=0xB2)
DIR_1, DIR_2 = uuid.UUID(int=0xD1), uuid.UUID(int=0xD2)
BEGIN, END, ABORT = m.BeginTransactionRecordV0(name="t"), m.EndTransactionRecordV0(), m.AbortTransactionRecordV0()
T0 = 1_767_225_600_000  # every record's time: T0 + the offset of its batch's first record


def config(resource_type: int, name: str, key: str, value: str | None) -> m.ConfigRecordV0:
    return m.ConfigRecordV0(resource_type=i8(resource_type), resource_name=name, name=key, value=value)


def partition(topic_id: uuid.UUID, leader: int) -> m.PartitionRecordV2:
    return m.PartitionRecordV2(
        partition_id=i32(0), topic_id=topic_id, replicas=(i32(1),), isr=(i32(1),), removing_replicas=(),
        adding_replicas=(), leader=i32(leader), leader_recovery_state=i8(0), leader_epoch=i32(0),
        partition_epoch=i32(0), directories=(None,), eligible_leader_replicas=None, last_known_elr=None)


def scram(iterations: int) -> m.UserScramCredentialRecordV0:
    return m.UserScramCredentialRecordV0(name="alice", mechanism=i8(1), salt=b"SALT-SECRET",
                                         stored_key=b"STORED-SECRET", server_key=b"SERVER-SECRET",
                                         iterations=i32(iterations))


def quota(value: float, remove: bool) -> m.ClientQuotaRecordV0:
    entity = (m.ClientQuotaRecordV0EntityData(entity_type="user", entity_name="alice"),
              m.ClientQuotaRecordV0EntityData(entity_type="client-id", entity_name=None))
    return m.ClientQuotaRecordV0(entity=entity, key="producer_byte_rate", value=f64(value), remove=remove)


def kraft_version(level: int) -> ControlRecord:
    return control_record(kio.KRaftVersionRecord(version=i16(0), k_raft_version=i16(level)))


def voters(*ids: int) -> ControlRecord:
    versions = kio.KRaftVersionFeature(min_supported_version=i16(0), max_supported_version=i16(1))
    return control_record(kio.VotersRecord(version=i16(0), voters=tuple(kio.VotersVoter(
        voter_id=i32(v), voter_directory_id={1: DIR_1, 2: DIR_2}[v], k_raft_version_feature=versions,
        endpoints=(kio.VotersEndpoint(name="CONTROLLER", host=f"c{v}", port=u16(9093)),)) for v in ids)))


ACL = m.AccessControlEntryRecordV0(id=ACL_ID, resource_type=i8(2), resource_name="orders", pattern_type=i8(3),
                                   principal="User:alice", host="*", operation=i8(3), permission_type=i8(3))
ACL_2 = m.AccessControlEntryRecordV0(id=uuid.UUID(int=0xAC2), resource_type=i8(3), resource_name="g",
                                     pattern_type=i8(4), principal="User:bob", host="*", operation=i8(3),
                                     permission_type=i8(2))

SCRIPT: list[list] = [
    [m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(21))],  # 0
    [register(10, INCARNATION_1)],  # 1: broker 1 registered, fenced
    [m.UnfenceBrokerRecordV0(id=i32(1), epoch=i64(10))],  # 2: unfenced
    [m.TopicRecordV0(name="orders", topic_id=ORDERS_1), partition(ORDERS_1, 1)],  # 3-4: orders created
    [config(2, "orders", "retention.ms", "1000")],  # 5: set
    [config(2, "orders", "retention.ms", "2000")],  # 6: changed
    [config(4, "", "ssl.keystore.password", "hunter2")],  # 7: a secret on the cluster default
    [config(2, "orders", "retention.ms", None)],  # 8: deleted
    [ACL],  # 9: ACL created
    [m.RemoveAccessControlEntryRecordV0(id=ACL_ID)],  # 10: deleted
    [quota(1024.0, False)],  # 11: quota set
    [quota(0.0, True)],  # 12: removed
    [scram(4096)],  # 13: SCRAM upserted
    [scram(8192)],  # 14: upserted again (more iterations)
    [m.RemoveUserScramCredentialRecordV0(name="alice", mechanism=i8(1))],  # 15: deleted
    [m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(22))],  # 16: upgraded
    [config(2, "orders", "cleanup.policy", "compact")],  # 17: orders gets a config ...
    [m.RemoveTopicRecordV0(topic_id=ORDERS_1)],  # 18: ... and is deleted, its config and partition with it
    [m.TopicRecordV0(name="orders", topic_id=ORDERS_2), partition(ORDERS_2, 1)],  # 19-20: re-created
    [m.FenceBrokerRecordV0(id=i32(1), epoch=i64(10))],  # 21: broker 1 fenced
    [register(21, INCARNATION_2)],  # 22: restarted: a new epoch and incarnation
    [kraft_version(1), voters(1)],  # 23-24: kraft.version 1 (KIP-853), voter 1
    [voters(1, 2)],  # 25: voter 2 added
    [voters(1)],  # 26: voter 2 removed
    [BEGIN, config(2, "orders", "retention.ms", "5"), ABORT],  # 27-29: aborted
    [BEGIN, config(2, "orders", "segment.ms", "100")],  # 30-31: a transaction across batches ...
    [END],  # 32: ... committed
    [BEGIN, ACL_2],  # 33-34: still open where the log ends
]


def entries() -> list[list[LogEntry]]:
    out, offset = [], 0
    for records in SCRIPT:
        out.append([LogEntry(offset + n, 1, T0 + offset, r, isinstance(r, ControlRecord))
                    for n, r in enumerate(records)])
        offset += len(records)
    return out


def write_log(directory: Path, script: list[list] = SCRIPT) -> Path:
    """The script as a node's log directory, one batch per line (control batches apart)."""
    offset = 0
    with MetadataLog.create(directory, fsync_policy="never") as log:
        for records in script:
            log.append(records, epoch=1, timestamp_ms=T0 + offset, control=isinstance(records[0], ControlRecord))
            offset += len(records)
    return directory


def dicts(table) -> list[dict]:
    return [dict(zip(table.columns, row)) for row in table.rows]


def pick(table, *columns: str) -> list[tuple]:
    return [tuple(row[c] for c in columns) for row in dicts(table)]


@pytest.fixture(scope="module")
def tables() -> dict:
    return change_rows_of(MetadataImage(), entries())


# -- each table, as expected --------------------------------------------------------------------

def test_config_changes(tables) -> None:
    assert pick(tables["config_changes"], "offset", "record_offset", "entity", "key", "resource_type",
                "resource_name", "old_value", "new_value", "event", "record", "aborted") == [
        (5, 5, "topic orders", "retention.ms", "topic", "orders", None, "1000", "created", "CONFIG_RECORD", False),
        (6, 6, "topic orders", "retention.ms", "topic", "orders", "1000", "2000", "changed", "CONFIG_RECORD", False),
        (7, 7, "broker <default>", "ssl.keystore.password", "cluster", None, None, "[redacted]", "created",
         "CONFIG_RECORD", False),
        (8, 8, "topic orders", "retention.ms", "topic", "orders", "2000", None, "deleted", "CONFIG_RECORD", False),
        (17, 17, "topic orders", "cleanup.policy", "topic", "orders", None, "compact", "created", "CONFIG_RECORD",
         False),
        # the topic's deletion took its config with it
        (18, 18, "topic orders", "cleanup.policy", "topic", "orders", "compact", None, "deleted",
         "REMOVE_TOPIC_RECORD", False),
        # aborted: shown at its marker, changing nothing
        (29, 28, "topic orders", "retention.ms", "topic", "orders", None, "5", "created", "CONFIG_RECORD", True),
        # committed: takes effect at the EndTransactionRecord
        (32, 31, "topic orders", "segment.ms", "topic", "orders", None, "100", "created", "CONFIG_RECORD", False)]
    first = dicts(tables["config_changes"])[0]
    assert first["timestamp_ms"] == T0 + 5 and first["path"] == "/configs/TOPIC/orders/retention.ms"


def test_acl_changes(tables) -> None:
    acl = uuid_to_kafka(ACL_ID)
    assert pick(tables["acl_changes"], "offset", "entity", "key", "acl_id", "resource_type", "resource_name",
                "pattern_type", "principal", "host", "operation", "permission_type", "event", "aborted") == [
        (9, f"ACL {acl}", None, acl, "TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW", "created",
         False),
        (10, f"ACL {acl}", None, acl, "TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW", "deleted",
         False),
        # still open where the log ends: not applied, aborted null, at its own place
        (34, f"ACL {uuid_to_kafka(ACL_2.id)}", None, uuid_to_kafka(ACL_2.id), "GROUP", "g", "PREFIXED", "User:bob",
         "*", "READ", "DENY", "created", None)]
    created, deleted = dicts(tables["acl_changes"])[:2]
    assert created["old_value"] is None and deleted["new_value"] is None
    assert created["new_value"] == deleted["old_value"]
    assert created["new_value"].startswith('{"id":"' + acl + '","resourceType":2,"resourceName":"orders"')
    assert (created["record"], deleted["record"]) == ("ACCESS_CONTROL_ENTRY_RECORD",
                                                      "REMOVE_ACCESS_CONTROL_ENTRY_RECORD")


def test_client_quota_changes(tables) -> None:
    entity = [("client-id", None), ("user", "alice")]  # Kafka's entity: its parts by type
    assert pick(tables["client_quota_changes"], "offset", "entity", "key", "quota_entity", "old_value",
                "new_value", "event", "path") == [
        (11, "client-id=<default>,user=alice", "producer_byte_rate", entity, None, 1024.0, "created",
         "/client-quotas/client-id=<default>,user=alice/producer_byte_rate"),
        (12, "client-id=<default>,user=alice", "producer_byte_rate", entity, 1024.0, None, "deleted",
         "/client-quotas/client-id=<default>,user=alice/producer_byte_rate")]


def test_scram_changes_never_hold_the_salt_or_keys(tables) -> None:
    assert pick(tables["scram_changes"], "offset", "entity", "key", "user", "mechanism", "old_value", "new_value",
                "event", "path", "record") == [
        (13, "user alice", "SCRAM-SHA-256", "alice", "SCRAM-SHA-256", None, 4096, "created",
         "/scram/SCRAM-SHA-256/alice", "USER_SCRAM_CREDENTIAL_RECORD"),
        (14, "user alice", "SCRAM-SHA-256", "alice", "SCRAM-SHA-256", 4096, 8192, "changed",
         "/scram/SCRAM-SHA-256/alice", "USER_SCRAM_CREDENTIAL_RECORD"),
        (15, "user alice", "SCRAM-SHA-256", "alice", "SCRAM-SHA-256", 8192, None, "deleted",
         "/scram/SCRAM-SHA-256/alice", "REMOVE_USER_SCRAM_CREDENTIAL_RECORD")]
    every_value = repr(change_rows_of(MetadataImage(), entries()))
    assert "SECRET" not in every_value and "hunter2" not in every_value


def test_feature_changes(tables) -> None:
    assert pick(tables["feature_changes"], "offset", "entity", "key", "feature", "old_value", "new_value",
                "event", "path") == [
        (0, "feature metadata.version", "metadata.version", "metadata.version", None, 21, "created",
         "/features/metadata.version"),
        (16, "feature metadata.version", "metadata.version", "metadata.version", 21, 22, "changed",
         "/features/metadata.version"),
        # the quorum's own feature, from its KRaftVersionRecord: a row here too, named as Kafka's tools do
        (23, "quorum", None, "kraft.version", None, 1, "created", "/quorum/kraft-version")]


def test_topic_changes_tell_a_re_created_topic_by_its_id(tables) -> None:
    one, two = uuid_to_kafka(ORDERS_1), uuid_to_kafka(ORDERS_2)
    assert pick(tables["topic_changes"], "offset", "entity", "key", "topic", "topic_id", "partition", "leader",
                "isr", "event", "path", "record") == [
        (3, "topic orders", None, "orders", one, None, None, None, "created", "/topics/orders", "TOPIC_RECORD"),
        (4, "topic orders", "0", "orders", one, 0, 1, [1], "created", "/topics/orders/0", "PARTITION_RECORD"),
        (18, "topic orders", None, "orders", one, None, None, None, "deleted", "/topics/orders",
         "REMOVE_TOPIC_RECORD"),
        (18, "topic orders", "0", "orders", one, 0, 1, [1], "deleted", "/topics/orders/0", "REMOVE_TOPIC_RECORD"),
        (19, "topic orders", None, "orders", two, None, None, None, "created", "/topics/orders", "TOPIC_RECORD"),
        (20, "topic orders", "0", "orders", two, 0, 1, [1], "created", "/topics/orders/0", "PARTITION_RECORD")]
    rows = dicts(tables["topic_changes"])
    assert rows[0]["new_value"] == f'{{"id":"{one}","name":"orders"}}' and rows[2]["old_value"] == rows[0]["new_value"]
    assert rows[4]["new_value"] == f'{{"id":"{two}","name":"orders"}}' and rows[4]["old_value"] is None
    assert rows[1]["new_value"].startswith(f'{{"partitionId":0,"topicId":"{one}","replicas":[1],"isr":[1]')


def test_broker_changes_show_a_new_incarnation(tables) -> None:
    one, two = uuid_to_kafka(INCARNATION_1), uuid_to_kafka(INCARNATION_2)
    assert pick(tables["broker_changes"], "offset", "entity", "broker_id", "broker_epoch", "incarnation_id", "fenced",
                "in_controlled_shutdown", "event", "fields", "record") == [
        (1, "broker 1", 1, 10, one, True, False, "register", [], "REGISTER_BROKER_RECORD"),
        (2, "broker 1", 1, 10, one, False, False, "unfence", ["state", "fenced"], "UNFENCE_BROKER_RECORD"),
        (21, "broker 1", 1, 10, one, True, False, "fence", ["state", "fenced"], "FENCE_BROKER_RECORD"),
        (22, "broker 1", 1, 21, two, True, False, "register", ["epoch", "incarnation-id"],
         "REGISTER_BROKER_RECORD")]
    rows = dicts(tables["broker_changes"])
    assert rows[0]["old_value"] is None and '"incarnation-id":"' + one + '"' in rows[0]["new_value"]
    assert rows[3]["old_value"] == rows[2]["new_value"] and '"epoch":21' in rows[3]["new_value"]


def test_voter_changes(tables) -> None:
    assert pick(tables["voter_changes"], "offset", "entity", "key", "voter_id", "directory_id", "event", "path",
                "record") == [
        (24, "voter 1", "1", 1, uuid_to_kafka(DIR_1), "created", "/quorum/voters/1", "KRAFT_VOTERS"),
        (25, "voter 2", "2", 2, uuid_to_kafka(DIR_2), "created", "/quorum/voters/2", "KRAFT_VOTERS"),
        (26, "voter 2", "2", 2, uuid_to_kafka(DIR_2), "deleted", "/quorum/voters/2", "KRAFT_VOTERS")]
    added = dicts(tables["voter_changes"])[1]
    assert added["new_value"] == ('{"id":2,"directory-id":"' + uuid_to_kafka(DIR_2)
                                  + '","endpoints":[{"name":"CONTROLLER","host":"c2","port":9093}]}')


def test_every_row_fits_its_schema(tables) -> None:
    assert list(tables) == list(CHANGE_TABLES)
    for kind, table in tables.items():
        assert table.columns == column_names(kind)
        assert all(len(row) == len(table.columns) for row in table.rows), kind
    assert tables["gaps"].rows == []  # one replay, nothing missing


# -- the same rows wherever they come from -------------------------------------------------------

def test_a_log_directory_gives_the_same_rows(tables, tmp_path) -> None:
    from_disk = change_rows(write_log(tmp_path / "node"))
    assert {kind: t.rows for kind, t in from_disk.items()} == {kind: t.rows for kind, t in tables.items()}


def test_history_rows_dispatch_the_change_tables(tmp_path) -> None:
    """What ``export --history TABLE`` calls, alone and beside a record table (the batches read once each)."""
    live = history_rows_of(MetadataImage(), iter(entries()), tables=["config_changes", "records"])
    assert list(live) == ["records", "config_changes"]
    assert len(live["config_changes"].rows) == 8 and len(live["records"].rows) == 35
    from_disk = history_rows(write_log(tmp_path / "node"), tables=["voter_changes"])
    assert list(from_disk) == ["voter_changes"] and len(from_disk["voter_changes"].rows) == 3


def test_start_and_end_keep_the_rows_between(tables) -> None:
    window = change_rows_of(MetadataImage(), entries(), start=6, end=16)
    assert [r[0] for r in window["config_changes"].rows] == [6, 7, 8]
    assert window["config_changes"].rows[0][7] == "1000"  # the state before the window still replayed
    assert [r[0] for r in window["feature_changes"].rows] == [16]


def test_docs_list_every_column_of_the_change_tables() -> None:
    """docs/export.md's schema tables of the change tables are the code's columns, types and words."""
    from metashell.export.schemas import COLUMNS, type_name

    text = (Path(__file__).parents[3] / "docs" / "export.md").read_text()
    for kind in CHANGE_TABLES:
        section = text.split(f"### `{kind}`\n", 1)[1].lstrip("\n").split("\n\n", 1)[0]
        documented = [line.split(" | ") for line in section.splitlines()[2:]]
        assert [(n.strip("| `"), t.strip("`"), d.rstrip(" |").replace("&lt;", "<")) for n, t, d in documented] == [
            (name, type_name(t), doc) for name, t, doc in COLUMNS[kind]], kind
    assert "What a record cannot say" in text and "kafka.authorizer.logger" in text and "kafka.request.logger" in text
