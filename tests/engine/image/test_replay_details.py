"""Replay details where Kafka's image deltas (ClusterDelta, TopicsDelta) decide, and the cost of
keeping the quorum's leader changes."""

from __future__ import annotations

import tracemalloc
import uuid

from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import LeaderChangeMessage, LeaderChangeVoter, i8, i16, i32, i64
from engine.records.metadata_record_serde import control_record
from tests.engine.image.test_metadata_delta import broker

ORDERS, AUDIT, LOGS = uuid.UUID(int=0x51), uuid.UUID(int=0x52), uuid.UUID(int=0x53)


def replay(*records, image: MetadataImage | None = None) -> tuple[MetadataImage, MetadataDelta]:
    delta = MetadataDelta(image or MetadataImage())
    for record in records:
        delta.replay(record)
    return delta.apply(), delta


def _partition(topic_id, pid: int, elr=None, last_known=None) -> m.PartitionRecordV2:
    return m.PartitionRecordV2(partition_id=i32(pid), topic_id=topic_id, replicas=(i32(1), i32(2)),
                               isr=(i32(1),), removing_replicas=(), adding_replicas=(), leader=i32(1),
                               leader_recovery_state=i8(0), leader_epoch=i32(0), partition_epoch=i32(0),
                               directories=(None, None), eligible_leader_replicas=elr, last_known_elr=last_known)


def _topics() -> MetadataImage:
    image, _ = replay(m.TopicRecordV0(name="orders", topic_id=ORDERS), _partition(ORDERS, 0, elr=(i32(2),)),
                      _partition(ORDERS, 1),
                      m.TopicRecordV0(name="audit", topic_id=AUDIT), _partition(AUDIT, 0, last_known=(i32(2),)),
                      m.TopicRecordV0(name="logs", topic_id=LOGS), _partition(LOGS, 0), _partition(LOGS, 1))
    return image


# -- brokers ---------------------------------------------------------------------------------


def test_unregister_removes_the_broker_whatever_its_epoch() -> None:
    """Kafka's ClusterDelta.replay(UnregisterBrokerRecord) removes the registration by id."""
    image, _ = replay(broker(1, 10), broker(2, 20))
    gone, delta = replay(m.UnregisterBrokerRecordV0(broker_id=i32(1), broker_epoch=i64(9)), image=image)
    assert sorted(gone.cluster.brokers) == [2] and delta.skipped == 0
    assert sorted(image.cluster.brokers) == [1, 2]  # the old image keeps it
    nobody, delta = replay(m.UnregisterBrokerRecordV0(broker_id=i32(7), broker_epoch=i64(1)), image=gone)
    assert nobody.cluster is gone.cluster and delta.skipped == 0  # nothing to remove: nothing changes


# -- ClearElrRecord ----------------------------------------------------------------------------


def test_clear_elr_of_an_unknown_topic_is_skipped() -> None:
    """Kafka's TopicsDelta refuses it ("no such topic found"): it changes nothing and counts."""
    image = _topics()
    after, delta = replay(m.ClearElrRecordV0(topic_name="payments"), image=image)
    assert delta.skipped == 1 and after.topics is image.topics
    removed, delta = replay(m.RemoveTopicRecordV0(topic_id=AUDIT), m.ClearElrRecordV0(topic_name="audit"),
                            image=image)
    assert delta.skipped == 1 and "audit" not in removed.topics.by_name


def test_clear_elr_of_one_topic_finds_a_topic_made_in_the_same_delta() -> None:
    after, delta = replay(m.TopicRecordV0(name="fresh", topic_id=uuid.UUID(int=0x54)),
                          _partition(uuid.UUID(int=0x54), 0, elr=(i32(2),)), m.ClearElrRecordV0(topic_name="fresh"),
                          image=_topics())
    assert delta.skipped == 0 and after.topics.topic("fresh").partitions[0].elr == ()


def test_clear_elr_of_all_topics_keeps_untouched_topics_shared() -> None:
    image = _topics()
    after, delta = replay(m.ClearElrRecordV0(topic_name=""), image=image)
    assert delta.skipped == 0
    orders, audit, logs = (after.topics.by_id[t] for t in (ORDERS, AUDIT, LOGS))
    assert orders.partitions[0].elr == () and audit.partitions[0].last_known_elr == ()
    assert orders.partitions[0].partition_epoch == 1  # a change, as Kafka merges it
    assert logs is image.topics.by_id[LOGS]  # no ELR to clear: the same object, not a copy
    assert orders.partitions[1] is image.topics.by_id[ORDERS].partitions[1]
    again, _ = replay(m.ClearElrRecordV0(topic_name=""), image=after)
    assert again.topics is after.topics  # nothing left to clear anywhere


# -- leader changes --------------------------------------------------------------------------


def _election(leader: int, epoch: int):
    voters = tuple(LeaderChangeVoter(voter_id=i32(v)) for v in (1, 2, 3))
    return control_record(LeaderChangeMessage(version=i16(0), leader_id=i32(leader), voters=voters,
                                              granting_voters=voters[:2])), epoch


def _elected(image: MetadataImage, *elections) -> MetadataImage:
    delta = MetadataDelta(image)
    for (record, epoch) in elections:
        delta.replay(record, offset=100 + epoch, epoch=epoch, timestamp_ms=epoch)
    return delta.apply()


def _history_bytes(elections: int) -> int:
    """Memory held by one image per election, as the dashboard's History keeps them."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        images = [MetadataImage()]
        for epoch in range(1, elections + 1):
            images.append(_elected(images[-1], _election(epoch % 3 + 1, epoch)))
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert [c.epoch for c in images[-1].quorum.leader_changes] == list(range(1, elections + 1))
    return held


def test_leader_changes_are_appended_not_copied() -> None:
    """Each image holds its whole history, but shares it with the image before: memory grows
    with the number of elections, not with its square (a tuple copied per append would)."""
    assert _history_bytes(4000) < 2.5 * _history_bytes(2000)


def test_leader_changes_of_every_image_stay_as_they_were() -> None:
    first = _elected(MetadataImage(), _election(1, 1), _election(2, 2))
    second = _elected(first, _election(3, 3))
    branch = _elected(first, _election(1, 4))  # replayed from the older image: another history
    same = _elected(first, _election(3, 3))  # the same history again
    assert [c.leader_id for c in first.quorum.leader_changes] == [1, 2]
    assert [c.leader_id for c in second.quorum.leader_changes] == [1, 2, 3]
    assert [c.epoch for c in branch.quorum.leader_changes] == [1, 2, 4]
    assert same.quorum == second.quorum and same.quorum.leader_changes == tuple(second.quorum.leader_changes)
    changes = second.quorum.leader_changes
    assert second.quorum.leader.leader_id == 3 and changes[-1] is changes[2] and len(changes) == 3
    assert [c.epoch for c in changes[1:]] == [2, 3] and [c.epoch for c in reversed(changes)] == [3, 2, 1]
    assert not MetadataImage().quorum.leader_changes and MetadataImage().quorum.leader is None
