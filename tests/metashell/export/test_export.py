"""Spark export: the exported tables hold what the node tree shows, with typed schemas.

One local SparkSession for the run (tests/conftest.py ``spark``). Each corpus node is
exported once per table kind and compared with the shell's ``ls``/``cat``; a generated image
covers what the corpus lacks (secrets, ACLs, quotas, SCRAM, tokens, flags); the history
tables are checked against the records they come from.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from engine.records import metadata_records as m
from engine.common.kafka_uuid import uuid_to_kafka
from engine.records.kio_codec import f64, i8, i16, i32, i64
from engine.storage.log_reader import LogEntry, read_log_dir
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from metashell.demo.shell_demo import write_demo_log_dir
from tests.broker_records import broker_fencing as _fence, broker_registration as _broker
from engine.storage.meta_properties import read_meta_properties
from metashell.export import export, history_dataframe, to_dataframe
from metashell.spark.table_schema import source_spark_schema
from metashell.export.history_tables import history_rows
from metashell.export.schemas import COLUMNS, SCHEMA_DOCS, spark_schema
from metashell.export.spark_session import ExportError
from metashell.export.tables import table_for
from metashell.tree.nodes import resolve
from metashell.shell.session import Session
from metashell.source import Source
from metashell.tree.tree_layout import REDACTED
from metashell.tree.root import build_tree
from tests.conftest import CORPUS, corpus_file, corpus_params
from tests.metashell.export.spark_rows import collected, plain

NODES = ["AdiletBatyrbayev0520__air_analyzer", "Danielowo2000__BigDataTechnologies-Version-2__tarball-3.5.0",
         "Yashasvi960__kafka-service", "djsoler__Big_Data_Proye_Docker", "hiage__kafka-raft/kafka1",
         "hiage__kafka-raft/kafka2", "hiage__kafka-raft/kafka3", "weebee-io__backend"]
KINDS = {"/topics": "partitions", "/brokers": "brokers", "/quorum": "voters", "/configs": "configs",
         "/features": "features", "/acls": "acls", "/client-quotas": "client_quotas", "/scram": "scram_users",
         "/delegation-tokens": "delegation_tokens", "/producer-ids": "producer_ids"}


def _ask(session: Session, line: str) -> list[str]:
    lines: list[str] = []
    session.out = session.err = lines.append
    assert session.run_line(line) == 0, (line, lines)
    return lines


def _rows(table) -> list[tuple]:
    return [tuple(plain(list(v) if isinstance(v, tuple) else v) for v in row) for row in table.rows]


# -- the corpus -------------------------------------------------------------------------------


@pytest.mark.parametrize("node", corpus_params(NODES), ids=lambda n: n or "no-corpus")
@pytest.mark.slow
def test_corpus_tables_equal_the_tree(spark, node: str) -> None:
    session = Session(Source(log_dir=CORPUS / node), out=lambda line: None)
    session.load()
    image, root = session.image, session.root
    frames = {path: to_dataframe(image, path, spark) for path in KINDS}
    for path, kind in KINDS.items():
        assert frames[path].schema == spark_schema(kind), path
    rows = {path: frames[path].collect() for path in KINDS}

    partitions = rows["/topics"]
    assert len(partitions) == image.partition_count
    assert sorted({r.topic for r in partitions}) == sorted(_ask(session, "ls /topics"))
    for r in partitions:
        shown = resolve(root, f"/topics/{r.topic}/{r.partition}").value()
        assert (r.topic_id, r.leader, r.isr, r.replicas, r.leader_epoch, r.partition_epoch, r.elr, r.directories) == (
            shown["topicId"], shown["leader"], shown["isr"], shown["replicas"], shown["leaderEpoch"],
            shown["partitionEpoch"], shown["eligibleLeaderReplicas"], shown["directories"])
        assert r.leaderless == (r.leader < 0) and r.under_min_isr == (len(r.isr) < r.min_isr)
    summary = dict(line.split(":", 1) for line in _ask(session, "summary"))
    assert sum(r.leaderless for r in partitions) == int(summary["leaderless"])

    brokers = rows["/brokers"]
    assert [str(b.broker_id) for b in brokers] == _ask(session, "ls /brokers")
    states = json.loads("\n".join(_ask(session, "cat --json /brokers/*/state")))
    assert [b.state for b in brokers] == list(states.values())
    for b in brokers:
        assert b.partitions_led == len(resolve(root, f"/brokers/{b.broker_id}/leader-of").value())
        assert b.replicas_hosted == len(resolve(root, f"/brokers/{b.broker_id}/replica-of").value())
        assert [e.asDict() for e in b.endpoints] == [
            {"name": e["name"], "host": e["host"], "port": e["port"], "security_protocol": e["securityProtocol"]}
            for e in resolve(root, f"/brokers/{b.broker_id}/endpoints").value()]

    assert [str(v.node_id) for v in rows["/quorum"]] == _ask(session, "ls /quorum/voters")
    leader = int(_ask(session, "cat /quorum/leader")[0])
    assert [v.node_id for v in rows["/quorum"] if v.is_leader] == ([leader] if leader in
                                                                    [v.node_id for v in rows["/quorum"]] else [])
    levels = json.loads("\n".join(_ask(session, "cat --json /features/*")))
    assert {f.name: f.level for f in rows["/features"]} == {path.rsplit("/", 1)[1]: v for path, v in levels.items()}
    for c in rows["/configs"]:
        kind = {"topic": "TOPIC", "cluster": "BROKER", "broker": "BROKER"}.get(c.resource_type,
                                                                           c.resource_type.upper())
        assert resolve(root, f"/configs/{kind}/{c.resource_name or '<default>'}/{c.key}").value() == c.value
    assert len(rows["/configs"]) == sum(len(v) for v in image.configs.values())
    for path in ("/acls", "/delegation-tokens"):
        assert len(rows[path]) == len(_ask(session, f"ls {path}"))
    assert [r.next_producer_id for r in rows["/producer-ids"]] == [int(_ask(session, "cat /producer-ids")[0])]


@pytest.mark.parametrize("node", corpus_params(["hiage__kafka-raft/kafka1", "weebee-io__backend"]),
                         ids=lambda n: n or "no-corpus")
@pytest.mark.slow
def test_corpus_history(spark, node: str) -> None:
    log_dir = CORPUS / node
    entries = {e.offset: e for e in read_log_dir(log_dir, use_snapshot=False)}
    records = history_dataframe(log_dir, "records", spark)  # the kraft data source: cluster_id first
    assert records.schema == source_spark_schema("records")
    assert records.count() == len(entries)
    assert {r.cluster_id for r in records.select("cluster_id").distinct().collect()} == {
        read_meta_properties(log_dir).cluster_id}
    changes = history_dataframe(log_dir, "partition_changes", spark).collect()
    # the data source's rows are the driver-side export's, in the same order, cluster_id aside
    assert [tuple(plain(v) for v in r)[1:] for r in changes] == collected(
        history_dataframe(log_dir, "partition_changes", spark, driver=True))
    assert len(changes) == sum(e.record.type_name in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD")
                               for e in entries.values())
    for row in changes[:: max(1, len(changes) // 25)]:
        record = entries[row.offset].record
        assert (row.type, row.topic_id, row.partition, row.leader) == (
            record.type_name, uuid_to_kafka(record.topic_id), record.partition_id, record.leader)
        assert row.isr == (None if record.isr is None else list(record.isr))
    leaders = history_dataframe(log_dir, "leader_changes", spark).collect()
    session = Session(Source(log_dir=log_dir), out=lambda line: None)
    session.load()
    assert len(leaders) == len(_ask(session, "ls /quorum/leader-changes"))
    assert leaders[-1].leader_id == int(_ask(session, "cat /quorum/leader")[0])
    # the last change of each partition leaves the state the image holds
    last = {(r.topic, r.partition): r for r in changes}
    for (topic, pid), r in last.items():
        if topic is not None and topic in session.image.topics.by_name:
            p = session.image.topics.topic(topic).partitions[pid]
            assert (r.leader_after, r.isr_after, r.partition_epoch_after) == (p.leader, list(p.isr),
                                                                             p.partition_epoch)
    window = history_dataframe(log_dir, "records", spark, start=10, end=19).collect()
    assert [r.offset for r in window] == [o for o in sorted(entries) if 10 <= o <= 19]


@pytest.mark.corpus
def test_snapshot_file_source(spark) -> None:
    checkpoint = corpus_file("AdiletBatyrbayev0520__air_analyzer", "bootstrap.checkpoint")
    features = to_dataframe(checkpoint, "/features", spark).collect()
    assert "metadata.version" in {f.name for f in features}


# -- a generated image ------------------------------------------------------------------------

T1 = uuid.UUID(int=0xA1)
T2 = uuid.UUID(int=0xB2)
DIR = uuid.UUID(int=0xD1D1)


def _partition(topic_id, pid, replicas=(1, 2, 3), isr=None, leader=None, elr=None, adding=(), removing=()):
    isr = replicas if isr is None else isr
    return m.PartitionRecordV2(
        partition_id=i32(pid), topic_id=topic_id, replicas=tuple(map(i32, replicas)), isr=tuple(map(i32, isr)),
        removing_replicas=tuple(map(i32, removing)), adding_replicas=tuple(map(i32, adding)),
        leader=i32(replicas[0] if leader is None else leader), leader_recovery_state=i8(0),
        leader_epoch=i32(3), partition_epoch=i32(5), directories=(DIR,) * len(replicas),
        eligible_leader_replicas=None if elr is None else tuple(map(i32, elr)), last_known_elr=None)


def _generated_records() -> list:
    return [
        m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27)),
        _broker(1), _broker(2), _broker(3), _fence(1, False), _fence(2, False),
        m.TopicRecordV0(name="orders", topic_id=T1),
        _partition(T1, 0), _partition(T1, 1, isr=(1,)), _partition(T1, 2, isr=(), leader=-1, elr=(2, 3)),
        _partition(T1, 3, replicas=(1, 2, 3, 4), adding=(4,), removing=(1,)),
        m.TopicRecordV0(name="logs", topic_id=T2), _partition(T2, 0, replicas=(2,)),
        m.ConfigRecordV0(resource_type=i8(2), resource_name="orders", name="min.insync.replicas", value="2"),
        m.ConfigRecordV0(resource_type=i8(4), resource_name="", name="log.retention.ms", value="1000"),
        m.ConfigRecordV0(resource_type=i8(4), resource_name="1", name="ssl.keystore.password", value="hunter2"),
        m.UserScramCredentialRecordV0(name="alice", mechanism=i8(1), salt=b"salt", stored_key=b"sk",
                                      server_key=b"vk", iterations=i32(4096)),
        m.AccessControlEntryRecordV0(id=uuid.UUID(int=0xAC1), resource_type=i8(2),
                                     resource_name="orders", pattern_type=i8(3), principal="User:alice", host="*",
                                     operation=i8(3), permission_type=i8(3)),
        m.ClientQuotaRecordV0(entity=(m.ClientQuotaRecordV0EntityData(entity_type="user", entity_name="alice"),),
                              key="producer_byte_rate", value=f64(1024.0), remove=False),
        m.DelegationTokenRecordV0(owner="User:alice", requester="User:alice", renewers=("User:bob",),
                                  issue_timestamp=i64(1), max_timestamp=i64(3), expiration_timestamp=i64(2),
                                  token_id="tok-1"),
        m.ProducerIdsRecordV0(broker_id=i32(1), broker_epoch=i64(11), next_producer_id=i64(5000)),
    ]


@pytest.fixture(scope="module")
def generated() -> MetadataImage:
    delta = MetadataDelta(MetadataImage())
    for n, record in enumerate(_generated_records()):
        entry = LogEntry(n, 1, 1_700_000_000_000, record)
        delta.replay(entry.record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
    return delta.apply()


def test_generated_image_tables(spark, generated: MetadataImage) -> None:
    parts = {(r.topic, r.partition): r for r in to_dataframe(generated, "/topics", spark).collect()}
    assert len(parts) == generated.partition_count == 5
    assert parts[("orders", 0)].min_isr == 2 and parts[("logs", 0)].min_isr == 1
    assert [k for k, r in sorted(parts.items()) if r.under_min_isr] == [("orders", 1), ("orders", 2)]
    assert [k for k, r in parts.items() if r.leaderless] == [("orders", 2)]
    assert parts[("orders", 2)].elr == [2, 3] and parts[("orders", 3)].adding == [4]
    assert parts[("orders", 0)].directories == [uuid_to_kafka(DIR)] * 3
    assert parts[("orders", 0)].topic_id == uuid_to_kafka(T1)
    one = to_dataframe(generated, "/topics/logs", spark).collect()
    assert [(r.topic, r.partition, r.replicas) for r in one] == [("logs", 0, [2])]

    brokers = {b.broker_id: b for b in to_dataframe(generated, "/brokers", spark).collect()}
    assert {i: (b.state, b.partitions_led, b.replicas_hosted) for i, b in brokers.items()} == {
        1: ("active", 3, 4), 2: ("active", 1, 5), 3: ("fenced", 0, 4)}
    assert brokers[1].endpoints[0].asDict() == {"name": "PLAINTEXT", "host": "broker-1", "port": 9092,
                                                "security_protocol": 0}

    configs = {(c.resource_type, c.resource_name, c.key): c.value for c in
               to_dataframe(generated, "/configs", spark).collect()}
    assert configs == {("topic", "orders", "min.insync.replicas"): "2", ("cluster", None, "log.retention.ms"): "1000",
                       ("broker", "1", "ssl.keystore.password"): REDACTED}
    shown = to_dataframe(generated, "/configs", spark, show_secrets=True).where("key = 'ssl.keystore.password'")
    assert shown.first().value == "hunter2"

    assert collected(to_dataframe(generated, "/scram", spark)) == [("alice", "SCRAM-SHA-256", 4096)]
    assert "salt" not in str(spark_schema("scram_users")) and "hmac" not in str(spark_schema("delegation_tokens"))
    assert collected(to_dataframe(generated, "/acls", spark)) == [
        (uuid_to_kafka(uuid.UUID(int=0xAC1)), "TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")]
    assert collected(to_dataframe(generated, "/client-quotas", spark)) == [
        ([("user", "alice")], "producer_byte_rate", 1024.0)]
    assert collected(to_dataframe(generated, "/delegation-tokens", spark)) == [
        ("tok-1", "User:alice", "User:alice", ["User:bob"], 1, 2, 3)]
    assert collected(to_dataframe(generated, "/producer-ids", spark)) == [(5000,)]
    assert collected(to_dataframe(generated, "/features", spark)) == [("metadata.version", 27)]


def test_generic_table_walks_the_tree(spark, generated: MetadataImage) -> None:
    df = to_dataframe(generated, "/topics/orders/configs", spark)
    assert df.schema == spark_schema("generic")
    assert collected(df) == [("/topics/orders/configs", "configs", "dir", None),
                            ("/topics/orders/configs/min.insync.replicas", "min.insync.replicas", "file", '"2"')]
    root = build_tree(generated)
    rows = table_for(generated, "/brokers/1").rows
    for path, _, kind, value in rows:
        if kind == "file":
            assert json.loads(value) == json.loads(json.dumps(resolve(root, path).value(), default=str))
    assert table_for(generated, "/scram/SCRAM-SHA-256/alice").rows[0][3].count(REDACTED) == 3


@pytest.mark.slow
def test_parquet_round_trip_and_formats(spark, generated: MetadataImage, tmp_path: Path) -> None:
    for path in ("/topics", "/brokers", "/client-quotas"):
        df = to_dataframe(generated, path, spark)
        target = export(df, tmp_path, "parquet", table=path.strip("/"))
        back = spark.read.parquet(str(target))
        assert back.schema == df.schema
        assert sorted(collected(back)) == sorted(collected(df)) == sorted(_rows(table_for(generated, path)))
    df = to_dataframe(generated, "/topics", spark)
    csv = spark.read.option("header", "true").csv(str(export(df, tmp_path / "csv", "csv")))
    assert sorted(json.loads(r.isr) for r in csv.collect()) == sorted(list(r.isr) for r in df.collect())
    for fmt in ("json", "orc"):
        assert getattr(spark.read, fmt)(str(export(df, tmp_path / fmt, fmt))).count() == 5
    with pytest.raises(ExportError, match="unknown export format"):
        export(df, tmp_path, "xlsx")


# -- history of a generated log ----------------------------------------------------------------


def test_demo_history_and_isr_over_time(spark, tmp_path: Path) -> None:
    log_dir = write_demo_log_dir(tmp_path / "demo")
    entries = list(read_log_dir(log_dir, use_snapshot=False))
    tables = history_rows(log_dir)
    assert len(tables["records"].rows) == len(entries)
    fencing = history_dataframe(log_dir, "broker_fencing", spark).collect()
    assert len(fencing) == sum(e.record.type_name in ("REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD",
                                                       "FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD",
                                                       "UNREGISTER_BROKER_RECORD") for e in entries)
    for row in fencing:
        record = entries[row.offset].record
        if row.event in ("fence", "unfence"):
            assert row.fenced == (row.event == "fence") and record.fenced == (1 if row.fenced else -1)
    changes = [r for r in tables["partition_changes"].rows if r[2] == "PARTITION_CHANGE_RECORD"]
    assert changes
    offsets = sorted({r[0] for r in changes})[:4]
    over_time = history_dataframe(log_dir, spark=spark, offsets=offsets)
    assert over_time.columns[0] == "as_of_offset" and over_time.schema == spark_schema("partitions_over_time")
    isr_at = {(r.as_of_offset, r.topic, r.partition): r.isr for r in over_time.collect()}
    for r in changes:
        if r[0] in offsets:
            assert isr_at[(r[0], r[3], r[5])] == r[17]  # the image at that offset shows isr_after
    with pytest.raises(ExportError, match="unknown history table"):
        history_dataframe(log_dir, "nope", spark)


# -- schemas and missing dependencies -----------------------------------------------------------


def test_schema_docs_cover_every_column() -> None:
    for kind, columns in COLUMNS.items():
        assert list(SCHEMA_DOCS[kind]) == [name for name, _, _ in columns]
        assert all(doc.split(": ", 1)[1] for doc in SCHEMA_DOCS[kind].values())


def test_a_path_not_in_the_tree_is_one_line_error() -> None:
    from engine.image.metadata_image import EMPTY_IMAGE
    from metashell.export.spark_session import ExportError
    from metashell.export.tables import table_for

    with pytest.raises(ExportError, match="no such node"):
        table_for(EMPTY_IMAGE, "/topics/nope")


def test_remote_without_the_connect_client_is_one_sentence(monkeypatch) -> None:
    import builtins

    from metashell.export.spark_session import NO_CONNECT, ExportError, get_spark

    real_import = builtins.__import__

    def no_connect(name, *args, **kwargs):
        if name.startswith("pyspark.sql.connect"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_connect)
    with pytest.raises(ExportError) as info:
        get_spark(remote="sc://localhost:15002")
    assert str(info.value) == NO_CONNECT
