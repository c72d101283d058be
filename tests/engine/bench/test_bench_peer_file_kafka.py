"""The snapshot ``kraftd bench peer`` writes is what Kafka's own classes read back: every batch
valid, the control records Kafka 4.x puts around a snapshot, and each metadata record, decoded
by Kafka, equal to the one the bench meant to write."""

from __future__ import annotations

import pytest

from engine.bench.peer_files import kafka4_records, write_kafka4_snapshot
from engine.records.record_json import record_to_jsonable

pytestmark = pytest.mark.kafka


def test_kafka_reads_back_what_the_bench_wrote(kafka_classes, tmp_path):
    path, manifest = write_kafka4_snapshot(tmp_path, 250)
    batches = kafka_classes.call("SnapshotFileRead", path=str(path))["batches"]
    assert batches[0]["control"] and batches[0]["records"] == ["SNAPSHOT_HEADER", "KRAFT_VERSION", "KRAFT_VOTERS"]
    assert batches[-1]["control"] and batches[-1]["records"] == ["SNAPSHOT_FOOTER"]
    data = [record for batch in batches[1:-1] for record in batch["records"]]
    assert not any(batch["control"] for batch in batches[1:-1])
    records, _ = kafka4_records(250)
    assert data == [record_to_jsonable(r) for r in records]
    assert len(data) == manifest.records
    # the offsets run on from batch to batch, and the file's name ends where the last batch does
    assert [b["baseOffset"] for b in batches[1:]] == [b["lastOffset"] + 1 for b in batches[:-1]]
    assert path.name.startswith(f"{batches[-1]['lastOffset'] + 1:020d}-")
    # as a 4.x controller writes them: every replica in its broker's one directory, PartitionRecord v2
    partitions = [r for r in data if r["type"] == "PARTITION_RECORD"]
    assert len(partitions) == 250 and {r["version"] for r in partitions} == {2}
    brokers = {r["data"]["brokerId"]: r["data"]["logDirs"] for r in data if r["type"] == "REGISTER_BROKER_RECORD"}
    assert all(len(dirs) == 1 for dirs in brokers.values())
    assert all(r["data"]["directories"] == [brokers[b][0] for b in r["data"]["replicas"]] for r in partitions)
