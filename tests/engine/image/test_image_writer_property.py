"""replay(image_records(image)) == image, for images built from random record histories."""

from __future__ import annotations

import dataclasses
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.records import metadata_records as m
from engine.image.image_writer import image_records
from engine.records.kio_codec import i8, i16, i32, i64
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from tests.strategies import record_strategy

TOPICS = [uuid.UUID(int=n) for n in (101, 102, 103)]
brokers = st.integers(1, 4).map(i32)
replica_lists = st.lists(st.integers(0, 4).map(i32), max_size=4).map(tuple)


def _topic(index: int) -> m.TopicRecordV0:
    return m.TopicRecordV0(name=f"topic-{index}", topic_id=TOPICS[index])


# None is MIGRATING as kio reads it, then UNASSIGNED, LOST and a real directory
directory_ids = st.sampled_from([None, uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=9)])
partition_records = st.builds(
    m.PartitionRecordV2, partition_id=st.integers(0, 3).map(i32), topic_id=st.sampled_from(TOPICS),
    replicas=replica_lists, isr=replica_lists, removing_replicas=replica_lists, adding_replicas=replica_lists,
    leader=st.integers(-1, 4).map(i32), leader_recovery_state=st.sampled_from([0, 1]).map(i8),
    leader_epoch=st.integers(0, 50).map(i32), partition_epoch=st.integers(0, 50).map(i32),
    directories=st.lists(directory_ids, max_size=4).map(tuple),
    eligible_leader_replicas=st.one_of(st.none(), replica_lists), last_known_elr=st.one_of(st.none(), replica_lists)
).flatmap(lambda r: st.one_of(st.just(r), st.lists(directory_ids, min_size=len(r.replicas), max_size=len(r.replicas))
                              .map(lambda d: dataclasses.replace(r, directories=tuple(d)))))
partition_changes = st.builds(
    m.PartitionChangeRecordV2, partition_id=st.integers(0, 3).map(i32), topic_id=st.sampled_from(TOPICS),
    isr=st.one_of(st.none(), replica_lists), leader=st.integers(-2, 4).map(i32),
    eligible_leader_replicas=st.one_of(st.none(), replica_lists), last_known_elr=st.one_of(st.none(), replica_lists))
broker_changes = st.builds(m.BrokerRegistrationChangeRecordV1, broker_id=brokers, broker_epoch=st.just(i64(5)),
                           fenced=st.sampled_from([-1, 0, 1]).map(i8), in_controlled_shutdown=st.sampled_from([0, 1]).map(i8))
configs = st.builds(m.ConfigRecordV0, resource_type=st.sampled_from([2, 4]).map(i8),
                    resource_name=st.sampled_from(["topic-0", "1", ""]), name=st.sampled_from(["a", "b"]),
                    value=st.one_of(st.none(), st.sampled_from(["1", "x"])))
features = st.builds(m.FeatureLevelRecordV0, name=st.sampled_from(["metadata.version", "group.version"]),
                     feature_level=st.integers(0, 29).map(i16))
registrations = st.builds(lambda b: dataclasses.replace(_registration(), broker_id=b), brokers)


def _registration() -> m.RegisterBrokerRecordV3:
    return m.RegisterBrokerRecordV3(broker_id=i32(1), is_migrating_zk_broker=False, incarnation_id=uuid.UUID(int=1),
                                    broker_epoch=i64(5), end_points=(), features=(), rack="r", fenced=True,
                                    in_controlled_shutdown=False, log_dirs=())


records = st.one_of(
    st.integers(0, 2).map(_topic), partition_records, partition_changes, registrations, broker_changes, configs,
    features, st.builds(m.RemoveTopicRecordV0, topic_id=st.sampled_from(TOPICS)),
    st.builds(m.ClearElrRecordV0, topic_name=st.sampled_from(["", "topic-1"])),
    record_strategy(m.AccessControlEntryRecordV0), record_strategy(m.UserScramCredentialRecordV0),
    record_strategy(m.DelegationTokenRecordV0), record_strategy(m.ClientQuotaRecordV0),
    st.builds(m.ProducerIdsRecordV0, broker_id=brokers, broker_epoch=st.just(i64(1)),
              next_producer_id=st.integers(0, 10**6).map(i64)),
)


def _replay(history) -> MetadataImage:
    delta = MetadataDelta(MetadataImage())
    for record in history:
        delta.replay(record)
    return delta.apply()


@settings(max_examples=300, deadline=None)
@given(st.lists(records, max_size=40))
def test_written_image_replays_to_itself(history) -> None:
    image = _replay(history)
    again = _replay(image_records(image))
    assert dataclasses.replace(again, provenance=None) == dataclasses.replace(image, provenance=None)


def test_directories_that_are_not_one_migrating_per_replica_survive() -> None:
    """Found by the property above: a v0 PartitionRecord can only say 'MIGRATING, one per replica'."""
    topic = _topic(0)
    odd = m.PartitionRecordV2(partition_id=i32(0), topic_id=TOPICS[0], replicas=(i32(1),), isr=(),
                              removing_replicas=(), adding_replicas=(), leader=i32(0), leader_recovery_state=i8(0),
                              leader_epoch=i32(0), partition_epoch=i32(0), directories=(uuid.UUID(int=2),))
    image = _replay([topic, odd])
    assert _replay(image_records(image)) == image
