"""Everything Kafka writes decodes, dumps and replays: the newest server, and each tested version.

The newest release on Maven Central is often a server whose tools are not published yet (Kafka
4.4.0 on 2026-11-23): its nodes run the scripted history without the steps that need Kafka's
command-line tools, and we read what they wrote with nothing of Kafka's beside us. When the
newest server has its tools, this runs on the newest full release's history instead.

What "decodes" means here: every record of every segment and snapshot becomes a typed record
(no UnknownRecord except the raw-by-design transaction markers), and the records carrying tagged
fields a schema does not define are counted and shown, not turned into bytes.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from engine.cluster.kafka_dist import version_key
from engine.image.metadata_loader import load_log_dir, load_snapshot
from engine.image.metadata_version import BY_LEVEL
from engine.records.metadata_record_serde import UnknownRecord, decode_record, encode_record
from engine.storage.log_reader import read_batches, read_file
from kafka_peer.fixtures import NEWEST_SERVERS, VERSIONS
from kafka_peer.history import CIDR_ACLS, CIDR_HOST, CONTROLLER_UNREGISTRATION

pytestmark = pytest.mark.kafka


def check_every_record_decodes(kafka_newest_history):
    kinds: dict[str, int] = {}
    problems = []
    for node in kafka_newest_history.nodes:
        for path in node.segments + node.snapshots:
            for entry in read_file(path):
                record = entry.record
                if isinstance(record, UnknownRecord) and record.problem:
                    problems.append(f"{path.name} offset {entry.offset}: {record.reason}")
                kinds[record.type_name] = kinds.get(record.type_name, 0) + 1
    assert problems == []
    # Not vacuous: the history's every kind of record is there.
    for kind in ("TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD", "REGISTER_BROKER_RECORD",
                 "BROKER_REGISTRATION_CHANGE_RECORD", "CONFIG_RECORD", "USER_SCRAM_CREDENTIAL_RECORD",
                 "ACCESS_CONTROL_ENTRY_RECORD", "PRODUCER_IDS_RECORD", "FEATURE_LEVEL_RECORD",
                 "REGISTER_CONTROLLER_RECORD", "SNAPSHOT_HEADER", "LEADER_CHANGE", "KRAFT_VOTERS"):
        assert kinds.get(kind, 0) > 0, f"no {kind} in Kafka {kafka_newest_history.version}'s files: {sorted(kinds)}"
    assert kinds["PARTITION_RECORD"] >= 2000
    if _unregisters_controllers(kafka_newest_history):
        assert kinds.get("UNREGISTER_CONTROLLER_RECORD", 0) > 0, sorted(kinds)


def check_every_record_reencodes(kafka_history):
    """Every record Kafka wrote, decoded and encoded again, is the bytes Kafka wrote (key and value):
    4.4's UnregisterControllerRecord, cordoned directories and CIDR hosts too."""
    problems = []
    records = 0
    for node in kafka_history.nodes:
        for path in node.segments + node.snapshots:
            for _, batch in read_batches(path):
                for record in batch.records:
                    decoded = decode_record(record.key, record.value, batch.is_control)
                    records += 1
                    if encode_record(decoded) != (record.key, record.value):
                        problems.append(f"{path.name} offset {batch.base_offset + record.offset_delta}: "
                                        f"{decoded.type_name} re-encodes otherwise")
    assert problems == [], f"{len(problems)} of {records} records:\n" + "\n".join(problems[:20])
    assert records > 10_000


def check_replay(kafka_newest_history):
    for node in kafka_newest_history.voters:
        image, _ = load_log_dir(node.metadata_dir)
        assert image.metadata_version in BY_LEVEL, f"metadata.version {image.metadata_version} unknown to us"
        assert image.features.get("eligible.leader.replicas.version") == 1
        topics = {name: len(image.topics.topic(name).partitions) for name in image.topics.by_name}
        assert {"orders": 6, "payments": 3, "wide": 2000, "elr": 3, "moving": 1}.items() <= topics.items(), topics
        assert "scratch" not in topics and "__transaction_state" in topics
        assert sorted(image.cluster.brokers) == [1, 2, 3]
        assert image.topics.topic("moving").partitions[0].replicas == (3, 2)
        assert {user for _, user in image.scram} == {"alice", "bob"}
        cidr = version_key(kafka_newest_history.version) >= CIDR_ACLS
        assert len(image.acls) == 5 + cidr
        assert any(acl.host == CIDR_HOST for acl in image.acls.values()) == cidr
        # the fourth controller, removed from the voters, is unregistered too from 4.4 (KIP-1312): so the
        # three nodes that lived on say (the fourth stopped before it)
        if "broker" in node.roles:
            assert (4 in image.cluster.controllers) != _unregisters_controllers(kafka_newest_history)
        assert image.configs[(2, "orders")]["retention.ms"] == "172800000"
        assert image.producer_ids.next_producer_id > 0
        # The newest snapshot holds the image the log held at its offset.
        newest = node.snapshots[-1]
        snapshot_image, _ = load_snapshot(newest)
        at_offset, _ = load_log_dir(node.metadata_dir, offset=int(newest.name.split("-")[0]) - 1)
        assert snapshot_image.topics == at_offset.topics and snapshot_image.cluster == at_offset.cluster


def _unregisters_controllers(history) -> bool:
    """The history removed a controller with `--unregister` (Kafka 4.4's tools and up)."""
    return (version_key(history.version) >= CONTROLLER_UNREGISTRATION
            and any(step.startswith("add and remove a fourth controller") for step in history.steps))


def check_dump_log(kafka_newest_history):
    node = kafka_newest_history.voters[0]
    done = subprocess.run([sys.executable, "-m", "engine.tools.cli", "dump-log", str(node.metadata_dir)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.strip() == ""
    assert "UNKNOWN" not in done.stdout
    assert done.stdout.count("Dumping ") == len(node.segments) + len(node.snapshots)


# When the newest server is a tested version (its tools served: 4.4.0 from 2026-11-27), its history
# is that version's, whose decoding and replay the second test checks already.
NEWEST_CHECKS = {"dumps": check_dump_log} if set(NEWEST_SERVERS) <= set(VERSIONS) else {
    "decodes": check_every_record_decodes, "replays": check_replay, "dumps": check_dump_log}


@pytest.mark.parametrize("check", list(NEWEST_CHECKS.values()), ids=list(NEWEST_CHECKS))
def test_what_the_newest_server_wrote(kafka_newest_history, check):
    check(kafka_newest_history)


@pytest.mark.parametrize("check", [check_every_record_decodes, check_every_record_reencodes, check_replay],
                         ids=["decodes", "reencodes", "replays"])
def test_what_each_tested_version_wrote(kafka_history, check):
    check(kafka_history)
