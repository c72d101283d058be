"""metashell's ``/image`` against Kafka's ``kafka-metadata-shell`` (4.1.2 and the newest release) on
a log of what the corpus and the scripted history rarely hold (tests/image_edges.py): configs
Kafka 4.3 drops, a ZooKeeper migration state, Java's name order, ``0+`` feature ranges, Uuid
order, E-notation quotas, a delegation token, a name with a space, a quota entity with a default
part; and, for the newest release, brokers' cordoned log directories. Compared as
test_kafka_shell_corpus.py compares (tests/kafka_shell_compare.py), and the
releases' known differences are checked to be real here: what 4.1.2 shows and 4.3 hides."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cluster.kafka_dist import version_key
from engine.storage.metadata_log import MetadataLog
from metashell.source import Source
from tests.image_edges import HIDDEN_IN_4_3, HIDDEN_RESOURCES, cordoned_records, write_edge_log
from tests.kafka_shell_compare import OLDER_SHELL, compare, kafka_transcript, our_transcript
from kafka_peer.fixtures import VERSIONS

pytestmark = pytest.mark.kafka


def test_image_prints_what_kafkas_shell_prints_on_the_edges(kafka_dist, tmp_path: Path) -> None:
    segment = write_edge_log(tmp_path / "node")
    kafka = kafka_transcript(kafka_dist, segment, tmp_path / "kafka")
    older = version_key(kafka_dist.version) < OLDER_SHELL
    ours, quota_names = our_transcript(Source(snapshot=segment), list(kafka), older)
    comparison = compare(f"edges, Kafka {kafka_dist.version}", kafka, ours, quota_names, older)
    assert not comparison.differences, "\n".join(comparison.differences[:40])
    for kind in ("broker", "controller", "partition", "acl", "scram", "token", "config", "quota",
                 "partition with ELR", "partition being reassigned", "fenced broker", "broker shutting down"):
        assert comparison.compared[kind] > 0, f"no {kind} compared: {dict(comparison.compared)}"

    # the releases' differences are real: 4.1.2 shows what 4.3 drops, and lists zkMigrationState
    assert ("zkMigrationState" in kafka["ls /image/features"]) == older
    listed = set(kafka["ls /image/configs"].splitlines())
    assert (HIDDEN_RESOURCES <= listed) == older and (HIDDEN_RESOURCES & listed == set()) != older, listed
    for resource, name in HIDDEN_IN_4_3:
        if resource in listed:
            assert (f"\n{name}:\n" in "\n" + kafka[f"tree '/image/configs/{resource}'"]) == older, (resource, name)


# Kafka before 4.3 reads no RegisterBrokerRecord v4 (cordoned log directories): only the newer ones are asked
@pytest.mark.parametrize("kafka_dist", [v for v in VERSIONS if version_key(v) >= OLDER_SHELL], indirect=True,
                         ids=lambda v: f"kafka-{v}")
def test_cordoned_directories_print_as_the_newest_kafka_prints_them(kafka_dist, tmp_path: Path) -> None:
    """KIP-1066's cordoned log directories, in the order recorded, and an empty list (not null)."""
    with MetadataLog.create(tmp_path / "node", fsync_policy="never") as log:
        log.append(cordoned_records(), epoch=1, timestamp_ms=1)
    segment = tmp_path / "node" / "__cluster_metadata-0" / "00000000000000000000.log"
    kafka = kafka_transcript(kafka_dist, segment, tmp_path / "kafka")
    ours, quota_names = our_transcript(Source(snapshot=segment), list(kafka))
    comparison = compare(f"cordoned, Kafka {kafka_dist.version}", kafka, ours, quota_names, older=False)
    assert not comparison.differences, "\n".join(comparison.differences)
    brokers = kafka["tree '/image/cluster/brokers'"]
    assert "cordonedDirectories=[ew9NfhwqSlGdji9sGjtdcA, 8A9NfhwqSlGdji9sGjtdcA])" in brokers
    assert "cordonedDirectories=[])" in brokers
