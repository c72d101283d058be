"""Our image replay and snapshot writer against Kafka's own (org.apache.kafka.image).

A valid metadata log (metadata_sequences.py) goes, as the bytes our codec writes, through
Kafka's loader path (MetadataBatchLoader: MetadataDelta.replay and apply, batch by batch,
flushed per commit; tests/kafka/harness/ImageReplayOp.java) and through ours (MetadataDelta per
batch, carrying an open transaction over). Each final image is then written back as records:
Kafka's by MetadataImage.write at the image's metadata.version, ours by image_records. The two
lists must hold the same records, byte for byte; and Kafka's list, loaded by us as a snapshot
(records without a place in the log), must make an image that writes it again.

What is compared in order and what as a multiset: the domains come in Kafka's order (features,
with metadata.version first, cluster, topics, configs, quotas, producer ids, ACLs, SCRAM,
delegation tokens), and each topic's PartitionRecords follow its TopicRecord. Within a domain,
Kafka writes in the iteration order of its hash maps (brokers, topics, config resources, ACL
ids...), which says nothing, so those are compared sorted; so are the arrays a record is
written from a hash map (a broker's or controller's listeners and features: ours come sorted
by name; engine/image/broker_registration.py says their order means nothing). Kafka's writer must report no loss (our writer drops nothing), Kafka's loader no
fault (the log is valid), and our replay must skip no record.
"""

from __future__ import annotations

import base64
import dataclasses
import difflib
import functools
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings

from engine.image.image_writer import image_records
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.records.metadata_record_serde import decode_metadata_value, encode_metadata_value
from engine.records.metadata_records import ClientQuotaRecordV0EntityData
from engine.records.record_json import record_to_json
from kafka_peer.harness import DIFF_EXAMPLES
from metadata_sequences import KafkaKnows, metadata_logs, record

pytestmark = pytest.mark.kafka

# api key -> the image domain whose write() writes it, in Kafka's MetadataImage.write order
_DOMAINS = {12: "features", 21: "features", 0: "cluster", 27: "cluster", 2: "topics", 3: "topics", 4: "configs",
            14: "client quotas", 15: "producer ids", 18: "acls", 11: "scram", 10: "delegation tokens"}


@functools.cache
def _knows(kafka_classes: Any) -> KafkaKnows:
    return KafkaKnows.ask(kafka_classes)


def our_snapshot(commits: list[list[list[Any]]]) -> tuple[list[bytes], int]:
    """The records our image of the log writes, and how many records our replay skipped.
    Each record is read back from the bytes our codec writes, as a log reader would."""
    image, open_transaction, skipped, offset = MetadataImage(), None, 0, 0
    for commit in commits:
        for batch in commit:
            if not batch:
                continue
            delta = MetadataDelta(image, open_transaction)
            for rec in batch:
                delta.replay(decode_metadata_value(encode_metadata_value(rec)), offset, 1, 1000 + offset)
                offset += 1
            image, open_transaction, skipped = delta.apply(), delta.open_transaction, skipped + delta.skipped
    return [encode_metadata_value(rec) for rec in image_records(image)], skipped


def our_snapshot_load(records: list[bytes]) -> list[bytes]:
    """What our image of a snapshot's records writes again: the records replayed without a place
    in the log, as a snapshot load does (engine.image.metadata_loader.image_of_snapshot)."""
    delta = MetadataDelta(MetadataImage())
    for value in records:
        delta.replay(decode_metadata_value(value))
    return [encode_metadata_value(rec) for rec in image_records(delta.apply())]


def kafka_snapshot(kafka_classes: Any, commits: list[list[list[Any]]]) -> dict:
    """Kafka's answer: the records its image writes, its writer's losses, its loader's faults."""
    wire = [[[base64.b64encode(encode_metadata_value(rec)).decode() for rec in batch] for batch in commit]
            for commit in commits]
    answer = kafka_classes.call("ImageReplay", commits=wire)
    answer["records"] = [base64.b64decode(text) for text in answer["records"]]
    return answer


# record type -> its array fields Kafka fills from a hash map (a broker's listeners and supported
# features): their order in the record is that map's, and means nothing. (A quota entity is a map
# too, but ours writes its parts in the order Kafka's map does for every entity Kafka allows.)
_MAP_ORDERED = {"RegisterBrokerRecord": ("end_points", "features"),
                "RegisterControllerRecord": ("end_points", "features")}


def _unordered(value: bytes) -> bytes:
    """The record with its hash-map-ordered arrays sorted, re-encoded."""
    rec = decode_metadata_value(value)
    fields = _MAP_ORDERED.get(rec.record_name)
    if not fields:
        return value
    return encode_metadata_value(dataclasses.replace(rec, **{
        name: tuple(sorted(getattr(rec, name), key=repr)) for name in fields}))


def canonical(records: list[bytes]) -> list[tuple[str, list]]:
    """The records as runs of one domain each, in order; within a run, sorted (topics as
    sorted groups of a TopicRecord and its partitions), metadata.version's record first."""
    runs: list[tuple[str, list[bytes]]] = []
    for value in map(_unordered, records):
        domain = _DOMAINS.get(decode_metadata_value(value).api_key, "other")
        if not runs or runs[-1][0] != domain:
            runs.append((domain, []))
        runs[-1][1].append(value)
    shaped: list[tuple[str, list]] = []
    for domain, values in runs:
        if domain == "topics":
            groups: list[list[bytes]] = []
            for value in values:
                if decode_metadata_value(value).api_key == 2 or not groups:
                    groups.append([])
                groups[-1].append(value)
            shaped.append((domain, sorted([group[0], *sorted(group[1:])] for group in groups)))
        elif domain == "features":
            shaped.append((domain, values[:1] + sorted(values[1:])))
        else:
            shaped.append((domain, sorted(values)))
    return shaped


def _lines(shaped: list[tuple[str, list]]) -> list[str]:
    lines = []
    for domain, items in shaped:
        lines.append(f"-- {domain}")
        for item in items:
            for value in item if isinstance(item, list) else [item]:
                lines.append(record_to_json(decode_metadata_value(value)))
    return lines


def _log_text(commits: list[list[list[Any]]]) -> str:
    return "\n".join(f"commit {c} batch {b}: {record_to_json(rec)}" for c, commit in enumerate(commits)
                     for b, batch in enumerate(commit) for rec in batch)


def assert_same_snapshot(kafka_classes: Any, commits: list[list[list[Any]]]) -> None:
    kafka = kafka_snapshot(kafka_classes, commits)
    ours, skipped = our_snapshot(commits)
    where = f"Kafka {kafka_classes.version}, log:\n{_log_text(commits)}"
    assert not kafka["faults"], f"Kafka's loader refused the log: {kafka['faults']}\n{where}"
    assert not kafka["losses"], f"Kafka's writer dropped what ours writes: {kafka['losses']}\n{where}"
    assert skipped == 0, f"our replay skipped {skipped} records Kafka applied\n{where}"
    theirs = canonical(kafka["records"])
    _assert_same(theirs, canonical(ours), "the images write different records", where)
    _assert_same(theirs, canonical(our_snapshot_load(kafka["records"])),
                 "our image of Kafka's snapshot writes it differently", where)


def _assert_same(theirs: list, mine: list, what: str, where: str) -> None:
    if theirs != mine:
        diff = "\n".join(difflib.unified_diff(_lines(theirs), _lines(mine), "Kafka's", "ours", lineterm=""))
        pytest.fail(f"{what}:\n{diff}\n{where}", pytrace=False)


def _mv(level: int) -> Any:
    return record("FeatureLevelRecord", name="metadata.version", feature_level=level)


_DIR_LOW, _DIR_HIGH, _DIR_SIGNED = uuid.UUID(int=7 << 64), uuid.UUID(int=(7 << 64) + 1), uuid.UUID(int=(1 << 127) + 9)
_TOPIC_ID, _TOPIC_AGAIN = uuid.UUID(int=(1 << 64) + 1), uuid.UUID(int=(1 << 64) + 2)


def _broker(log_dirs: tuple) -> Any:
    return record("RegisterBrokerRecord", 3, broker_id=0, is_migrating_zk_broker=False,
                  incarnation_id=uuid.UUID(int=(5 << 64) + 1), broker_epoch=10, end_points=(), features=(), rack=None,
                  fenced=True, in_controlled_shutdown=False, log_dirs=log_dirs)


# Found by the property: Kafka's BrokerRegistration sorts a broker's log directories (Uuid.compareTo,
# signed halves) and writes them back so; ours kept the record's order.
@example(commits=[[[_mv(17), _broker((_DIR_HIGH, _DIR_SIGNED, _DIR_LOW))]]])
@example(commits=[[[_mv(17), _broker((_DIR_LOW,))], [
    record("BrokerRegistrationChangeRecord", 2, broker_id=0, broker_epoch=10, fenced=-1, in_controlled_shutdown=0,
           log_dirs=(_DIR_HIGH, _DIR_LOW, _DIR_SIGNED))]]])
def _quota(entity: tuple, value: float) -> Any:
    return record("ClientQuotaRecord", key="producer_byte_rate", value=value, remove=False,
                  entity=tuple(ClientQuotaRecordV0EntityData(entity_type=t, entity_name=n) for t, n in entity))


# Found by the property: Kafka 4 replays a 3.x log's ZkMigrationStateRecord to nothing and writes
# none; our writer wrote the state back.
@example(commits=[[[_mv(8), record("ZkMigrationStateRecord", zk_migration_state=3)]]])
# Found by the property: Kafka's quota entity is a map, so (user, client-id) and (client-id, user)
# are one entity, written client-id first; ours kept two entities in the records' orders.
@example(commits=[[[_mv(21), _quota((("user", "alice"), ("client-id", "app")), 1.0)],
                   [_quota((("client-id", "app"), ("user", "alice")), 2.0)]]])
@settings(max_examples=DIFF_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commits=metadata_logs())
def test_the_image_of_a_log_writes_what_kafkas_writes(kafka_classes, commits) -> None:
    assume(_knows(kafka_classes).fits(commits))
    assert_same_snapshot(kafka_classes, commits)


# Where Kafka's loader and ours part, on purpose. The property keeps its logs off these shapes
# (metadata_sequences.py); these tests say how each side behaves there, so that a Kafka that
# changes its mind shows up here.

def _topic_with_config() -> list:
    return [record("TopicRecord", name="orders", topic_id=_TOPIC_ID),
            record("ConfigRecord", resource_type=2, resource_name="orders", name="retention.ms", value="1")]


def _configs(records: list[bytes]) -> list[str]:
    return [record_to_json(rec) for rec in map(decode_metadata_value, records) if rec.record_name == "ConfigRecord"]


def test_kafka_keeps_configs_given_in_the_delta_of_the_deletion(kafka_classes) -> None:
    """Kafka's ConfigurationsDelta.replay(RemoveTopicRecord) deletes the configs its base image
    holds, not those given in the same delta: they outlive the topic, and a topic made again
    under the name inherits them. Ours deletes them, whatever the delta's bounds; so does Kafka
    when the deletion comes in a later commit."""
    same_commit = [[[_mv(21), *_topic_with_config(), record("RemoveTopicRecord", topic_id=_TOPIC_ID),
                     record("TopicRecord", name="orders", topic_id=_TOPIC_AGAIN)]]]
    assert len(_configs(kafka_snapshot(kafka_classes, same_commit)["records"])) == 1
    assert _configs(our_snapshot(same_commit)[0]) == []
    assert_same_snapshot(kafka_classes, [[[_mv(21), *_topic_with_config()]],
                                         [[record("RemoveTopicRecord", topic_id=_TOPIC_ID),
                                           record("TopicRecord", name="orders", topic_id=_TOPIC_AGAIN)]]])


def test_kafka_applies_an_aborted_transaction_when_its_commit_goes_on(kafka_classes) -> None:
    """Kafka's MetadataBatchLoader drops an aborted transaction only if the commit ends at the
    AbortTransactionRecord: records after it in the same commit go into the delta that still
    holds the transaction's, and all are applied. Ours drops the transaction at the marker."""
    begin = [[_mv(21)], [record("BeginTransactionRecord", name=""), *_topic_with_config()]]
    abort = record("AbortTransactionRecord", reason=None)
    going_on = [begin, [[abort, record("NoOpRecord")]]]
    topics = [rec for rec in map(decode_metadata_value, kafka_snapshot(kafka_classes, going_on)["records"])
              if rec.record_name == "TopicRecord"]
    assert [rec.name for rec in topics] == ["orders"]
    ours, _ = our_snapshot(going_on)
    assert [decode_metadata_value(value).record_name for value in ours] == ["FeatureLevelRecord"]
    assert_same_snapshot(kafka_classes, [begin, [[abort]], [[record("NoOpRecord")]]])
