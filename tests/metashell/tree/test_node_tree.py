"""The metadata filesystem over an image: layout, paths, globs, secrets, laziness."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i32
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import load_log_dir
from metashell.tree.nodes import NodeError, expand, normalize, resolve, walk
from metashell.tree.tree_layout import REDACTED
from metashell.tree.root import build_tree


def test_corpus_facts_through_the_tree(corpus: Path) -> None:
    image, info = load_log_dir(corpus / "hiage__kafka-raft" / "kafka1")
    root = build_tree(image, info)
    assert resolve(root, "/brokers").child_names() == ["1", "2", "3"]
    assert {resolve(root, f"/brokers/{b}/state").value() for b in (1, 2, 3)} == {"active"}
    topics = resolve(root, "/topics").child_names()
    assert len(topics) == 3
    partitions = [n for n in resolve(root, f"/topics/{topics[0]}").child_names() if n.isdigit()]
    assert partitions == [str(i) for i in range(len(partitions))]  # numeric order, not 0, 1, 10, 11...
    assert sum(len([n for n in resolve(root, f"/topics/{t}").child_names() if n.isdigit()]) for t in topics) == 60
    assert resolve(root, "/features/metadata.version").value() == 7
    assert resolve(root, "/quorum/leader").value() == 1 and resolve(root, "/quorum/epoch").value() == 1
    assert resolve(root, "/local/cluster-id").value() == "EP6hyiddQNW5FPrAvR9kWw"
    topic_id = resolve(root, f"/topics/{topics[0]}/id").value()
    assert resolve(root, f"/topic-ids/{topic_id}/name").value() == topics[0]
    led = sum(len(resolve(root, f"/brokers/{b}/leader-of").value()) for b in (1, 2, 3))
    assert led == 60


def test_paths_normalize_and_errors_name_the_part_missing() -> None:
    root = build_tree(MetadataImage())
    assert normalize("/brokers", "../topics/./x/..") == "/topics"
    assert normalize("/", "..") == "/"
    with pytest.raises(NodeError, match="^/nope: no such node$"):
        resolve(root, "/nope")
    with pytest.raises(NodeError, match="^/producer-ids: not a directory$"):
        resolve(root, "/producer-ids/x")


def _image_with_secrets() -> MetadataImage:
    delta = MetadataDelta(MetadataImage())
    delta.replay(m.ConfigRecordV0(resource_type=i8(4), resource_name="1", name="ssl.keystore.password", value="hunter2"))
    delta.replay(m.ConfigRecordV0(resource_type=i8(4), resource_name="1", name="num.io.threads", value="8"))
    delta.replay(m.UserScramCredentialRecordV0(name="alice", mechanism=i8(1), salt=b"salt", stored_key=b"sk",
                                               server_key=b"svk", iterations=i32(4096)))
    return delta.apply()


def test_secrets_are_redacted_unless_asked_for() -> None:
    image = _image_with_secrets()
    root = build_tree(image)
    assert resolve(root, "/configs/BROKER/1/ssl.keystore.password").value() == REDACTED
    assert resolve(root, "/configs/BROKER/1/num.io.threads").value() == "8"
    scram = resolve(root, "/scram/SCRAM-SHA-256/alice").value()
    assert scram["salt"] == scram["storedKey"] == scram["serverKey"] == REDACTED and scram["iterations"] == 4096
    shown = build_tree(image, show_secrets=True)
    assert resolve(shown, "/configs/BROKER/1/ssl.keystore.password").value() == "hunter2"
    assert resolve(shown, "/scram/SCRAM-SHA-256/alice").value()["salt"] == "c2FsdA=="


def test_globs_in_every_part() -> None:
    delta = MetadataDelta(MetadataImage())
    for index, name in enumerate(["orders", "payments", "audit"]):
        topic_id = uuid.UUID(int=index + 1)
        delta.replay(m.TopicRecordV0(name=name, topic_id=topic_id))
        for p in range(12):
            delta.replay(m.PartitionRecordV0(partition_id=i32(p), topic_id=topic_id, replicas=(i32(1),),
                                             isr=(i32(1),), removing_replicas=(), adding_replicas=(),
                                             leader=i32(1), leader_epoch=i32(0), partition_epoch=i32(0)))
    root = build_tree(delta.apply())
    assert expand(root, "/", "/topics/*ay*") == ["/topics/payments"]
    assert expand(root, "/topics", "o*/1?") == ["/topics/orders/10", "/topics/orders/11"]
    assert expand(root, "/", "/topics/[ap]*/0") == ["/topics/audit/0", "/topics/payments/0"]
    assert expand(root, "/", "/nothing*") == []
    assert len([p for p, n in walk(resolve(root, "/topics"), "/topics") if not n.is_directory]) == 3 * (12 + 2)


class _Exploding(dict):
    def __iter__(self):
        raise AssertionError("the tree touched every partition")

    def items(self):
        raise AssertionError("the tree touched every partition")


def test_the_tree_is_lazy() -> None:
    """Building the tree and walking into one partition never iterates the others."""
    from dataclasses import replace

    from engine.image.metadata_image import TopicImage, TopicsImage
    from engine.image.partition_registration import PartitionRegistration

    topic_id = uuid.UUID(int=9)
    partitions = _Exploding({0: PartitionRegistration((1,), (1,), leader=1)})
    image = replace(MetadataImage(), topics=TopicsImage({topic_id: TopicImage("big", topic_id, partitions)},
                                                        {"big": topic_id}))
    root = build_tree(image)
    assert resolve(root, "/topics/big/0").value()["leader"] == 1


def test_kafka_metadata_shell_paths_work_unchanged(corpus: Path) -> None:
    """Paths of kafka-metadata-shell (3.6+) under /image, as runbooks use them."""
    image, info = load_log_dir(corpus / "Yashasvi960__kafka-service")
    root = build_tree(image, info)
    assert resolve(root, "/image").child_names() == ["acls", "clientQuotas", "cluster", "configs", "delegationToken",
                                                     "features", "producerIds", "provenance", "scram", "topics"]
    assert resolve(root, "/image/features/metadataVersion").value() == "4.1-IV1"
    assert resolve(root, "/image/features/finalized_group.version").value() == 1
    # no ZkMigrationStateRecord in a 4.x log: Kafka 4.1's shell lists the name but has no node for it, 4.3's
    # no longer lists it (tests/metashell/tree/test_kafka_metadata_shell.py)
    assert "zkMigrationState" not in resolve(root, "/image/features").child_names()
    assert resolve(root, "/image/cluster/brokers/1").value()["fenced"] is False
    topic_id = resolve(root, "/image/topics/byName/telemetry/id").value()
    assert resolve(root, f"/image/topics/byId/{topic_id}/name").value() == "telemetry"
    assert resolve(root, "/image/topics/byName/telemetry/0").value()["leader"] == 1
    assert "BROKER" in resolve(root, "/image/configs").child_names()
    assert resolve(root, "/image/configs/TOPIC:__consumer_offsets/cleanup.policy").value() == "compact"
    assert resolve(root, "/image/producerIds/nextProducerId").value() == image.producer_ids.next_producer_id
    assert resolve(root, "/image/provenance").value()["last_offset"] == image.provenance.last_offset


def test_kafka_names_for_quota_entities_and_topic_nodes() -> None:
    from metashell.tree.image_layout import kafka_quota_entity_name, quota_node_name

    assert kafka_quota_entity_name((("user", "alice"), ("client-id", "app"))) == "clientId(app)_user(alice)"
    assert kafka_quota_entity_name((("user", "a(b)\\c"),)) == "user(a\\(b\\)\\\\c)"
    # Kafka leaves a default part out of the name (so an all-default entity's name is empty, and its
    # shell cannot open it); our node says <default>
    assert kafka_quota_entity_name((("ip", None),)) == ""
    assert kafka_quota_entity_name((("user", "bob"), ("client-id", None))) == "user(bob)"
    assert quota_node_name((("user", "bob"), ("client-id", None))) == "clientId(<default>)_user(bob)"
    assert quota_node_name((("user", "a/b"), ("client-id", ""))) == "clientId()_user(a%2Fb)"
    delta = MetadataDelta(MetadataImage())
    delta.replay(m.TopicRecordV0(name="orders", topic_id=uuid.UUID(int=3)))
    entity = (m.ClientQuotaRecordV0EntityData(entity_type="user", entity_name="alice"),)
    delta.replay(m.ClientQuotaRecordV0(entity=entity, key="producer_byte_rate", value=1024.0, remove=False))
    root = build_tree(delta.apply())
    assert resolve(root, "/image/topics/byName/orders").child_names() == ["id", "name"]
    assert resolve(root, "/image/clientQuotas/user(alice)/producer_byte_rate").value() == 1024.0
    assert resolve(root, "/local").child_names() == []  # no load info: nothing to say
