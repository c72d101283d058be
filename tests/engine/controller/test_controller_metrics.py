"""The controller's metrics (Kafka's ControllerMetadataMetrics and QuorumControllerMetrics names):
an image, its metrics; records replayed, the metrics again — each metric by Kafka 4.1's rule."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.controller.controller_metrics import (
    BROKER_STATE_ACTIVE,
    BROKER_STATE_CONTROLLED_SHUTDOWN,
    BROKER_STATE_FENCED,
    BROKER_STATE_UNREGISTERED,
    ControllerNumbers,
    TopicCounts,
    broker_registration_state,
    controller_metrics,
    kafka_metrics,
    topic_counts,
)
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import LeaderChangeMessage, LeaderChangeVoter, i8, i16, i32, i64, u16
from engine.records.metadata_record_serde import control_record
from tests.controller_helpers import bootstrapped

ORDERS, EVENTS = uuid.UUID(int=(1 << 64) + 1), uuid.UUID(int=(1 << 64) + 2)


def replayed(image: MetadataImage, *records, timestamp_ms: int = 5_000) -> MetadataImage:
    offset = image.provenance.last_offset + 1
    delta = MetadataDelta(image)
    for i, record in enumerate(records):
        delta.replay(record, offset + i, 3, timestamp_ms + i)
    return delta.apply()


def broker(broker_id: int, fenced: bool, shutdown: bool = False) -> m.RegisterBrokerRecordV3:
    endpoint = m.RegisterBrokerRecordV3BrokerEndpoint(name="PLAINTEXT", host="h", port=u16(9092),
                                                      security_protocol=i16(0))
    return m.RegisterBrokerRecordV3(broker_id=i32(broker_id), is_migrating_zk_broker=False,
                                    incarnation_id=uuid.UUID(int=broker_id), broker_epoch=i64(10 + broker_id),
                                    end_points=(endpoint,), features=(), rack=None, fenced=fenced,
                                    in_controlled_shutdown=shutdown)


def partition(topic_id: uuid.UUID, pid: int, replicas: tuple[int, ...], leader: int,
              isr: tuple[int, ...] | None = None, elr: tuple[int, ...] = ()) -> m.PartitionRecordV2:
    isr = replicas if isr is None else isr
    return m.PartitionRecordV2(partition_id=i32(pid), topic_id=topic_id, replicas=tuple(map(i32, replicas)),
                               isr=tuple(map(i32, isr)), removing_replicas=(), adding_replicas=(),
                               leader=i32(leader), leader_epoch=i32(0), partition_epoch=i32(0),
                               directories=tuple(None for _ in replicas),
                               eligible_leader_replicas=tuple(map(i32, elr)), last_known_elr=())


def leader_change(leader_id: int) -> object:
    voters = tuple(LeaderChangeVoter(voter_id=v) for v in (1000, 1001, 1002))
    return control_record(LeaderChangeMessage(version=i16(0), leader_id=leader_id, voters=voters,
                                              granting_voters=voters[:2]))


def cluster() -> MetadataImage:
    """Brokers 1 and 2 active, 3 fenced; orders-0 led by its preferred replica, orders-1 by another
    (imbalanced), orders-2 offline; events-0 balanced; controller 1000 leads."""
    return replayed(bootstrapped(), broker(1, False), broker(2, False), broker(3, True),
                    m.TopicRecordV0(name="orders", topic_id=ORDERS),
                    partition(ORDERS, 0, (1, 2, 3), 1), partition(ORDERS, 1, (1, 2, 3), 2),
                    partition(ORDERS, 2, (3, 1, 2), -1, isr=(), elr=(1,)),
                    m.TopicRecordV0(name="events", topic_id=EVENTS), partition(EVENTS, 0, (2, 1), 2),
                    leader_change(1000))


def test_each_metric_of_an_image() -> None:
    image = cluster()
    metrics = controller_metrics(image)
    assert (metrics.fenced_broker_count, metrics.active_broker_count, metrics.controlled_shutdown_broker_count) \
        == (1, 2, 0)
    assert metrics.broker_registration_states == ((1, BROKER_STATE_ACTIVE), (2, BROKER_STATE_ACTIVE),
                                                  (3, BROKER_STATE_FENCED))
    assert (metrics.global_topic_count, metrics.global_partition_count) == (2, 4)
    assert metrics.offline_partitions_count == 1  # orders-2: leader -1
    # orders-1 (leader 2, preferred 1) and the offline orders-2 (leader -1, preferred 3)
    assert metrics.preferred_replica_imbalance_count == 2
    assert (metrics.partitions_with_elr_count, metrics.partitions_with_empty_isr_count) == (1, 1)
    # the last record applied: the leader change, at the image's last offset
    assert metrics.last_applied_record_offset == metrics.last_committed_record_offset \
        == image.provenance.last_offset
    assert metrics.last_applied_record_timestamp == image.provenance.last_timestamp_ms == 5_000 + 9  # the 10th record
    assert metrics.last_applied_record_lag_ms is None
    assert controller_metrics(image, now_ms=6_000).last_applied_record_lag_ms == 6_000 - 5_009
    assert (metrics.active_controller_id, metrics.active_controller_epoch) == (1000, 3)
    assert metrics.new_active_controllers_count == 1


def test_active_controller_follows_the_latest_leader_change() -> None:
    image = cluster()
    assert controller_metrics(image).active_controller_count == 1  # the quorum has a leader
    assert controller_metrics(image, node_id=1000).active_controller_count == 1
    assert controller_metrics(image, node_id=1001).active_controller_count == 0
    moved = replayed(image, leader_change(1001))
    assert controller_metrics(moved, node_id=1000).active_controller_count == 0
    assert controller_metrics(moved, node_id=1001).active_controller_count == 1
    assert (controller_metrics(moved).active_controller_id, controller_metrics(moved).new_active_controllers_count) \
        == (1001, 2)
    # no leader change yet: no active controller, whoever asks
    bare = bootstrapped()
    assert controller_metrics(bare).active_controller_count == 0
    assert controller_metrics(bare, node_id=1000).active_controller_count == 0
    assert (controller_metrics(bare).active_controller_id, controller_metrics(bare).active_controller_epoch) == (-1, -1)


def test_the_controllers_own_numbers_win_over_the_image() -> None:
    image = cluster()
    # a controller that has not claimed yet (its LeaderChange applied, not committed): not active
    own = ControllerNumbers(node_id=1000, active=False, last_applied_offset=40, last_committed_offset=38,
                            last_applied_timestamp_ms=7_000)
    metrics = controller_metrics(image, own=own, now_ms=7_250)
    assert metrics.active_controller_count == 0
    assert (metrics.last_applied_record_offset, metrics.last_committed_record_offset) == (40, 38)
    assert (metrics.last_applied_record_timestamp, metrics.last_applied_record_lag_ms) == (7_000, 250)
    assert controller_metrics(image, own=own._replace(active=True)).active_controller_count == 1


def test_fencing_unfencing_and_controlled_shutdown_move_the_broker_counts() -> None:
    image = cluster()
    unfenced = replayed(image, m.BrokerRegistrationChangeRecordV1(broker_id=i32(3), broker_epoch=i64(13),
                                                                  fenced=i8(-1)))
    metrics = controller_metrics(unfenced)
    assert (metrics.fenced_broker_count, metrics.active_broker_count) == (0, 3)
    # controlled shutdown: counted on its own, the broker still active while unfenced (Kafka's rule)
    shutting = replayed(unfenced, m.BrokerRegistrationChangeRecordV1(broker_id=i32(2), broker_epoch=i64(12),
                                                                     in_controlled_shutdown=i8(1)))
    metrics = controller_metrics(shutting)
    assert (metrics.fenced_broker_count, metrics.active_broker_count, metrics.controlled_shutdown_broker_count) \
        == (0, 3, 1)
    assert dict(metrics.broker_registration_states)[2] == BROKER_STATE_CONTROLLED_SHUTDOWN
    fenced = replayed(shutting, m.FenceBrokerRecordV0(id=i32(1), epoch=i64(11)))
    metrics = controller_metrics(fenced)
    assert (metrics.fenced_broker_count, metrics.active_broker_count) == (1, 2)
    gone = replayed(fenced, m.UnregisterBrokerRecordV0(broker_id=i32(1), broker_epoch=i64(11)))
    metrics = controller_metrics(gone)
    assert (metrics.fenced_broker_count, metrics.active_broker_count) == (0, 2)
    assert [b for b, _ in metrics.broker_registration_states] == [2, 3]


def test_broker_registration_state_order() -> None:
    image = replayed(bootstrapped(), broker(1, True, shutdown=True), broker(2, False, shutdown=True))
    brokers = image.cluster.brokers
    assert broker_registration_state(brokers[1]) == BROKER_STATE_FENCED  # fenced is checked first
    assert broker_registration_state(brokers[2]) == BROKER_STATE_CONTROLLED_SHUTDOWN
    assert broker_registration_state(None) == BROKER_STATE_UNREGISTERED


def test_partition_changes_move_offline_and_imbalance() -> None:
    image = cluster()
    # orders-2 gets its preferred leader back: neither offline nor imbalanced any more
    elected = replayed(image, m.PartitionChangeRecordV2(partition_id=i32(2), topic_id=ORDERS, leader=i32(3),
                                                        isr=(i32(3),), eligible_leader_replicas=()))
    metrics = controller_metrics(elected)
    assert (metrics.offline_partitions_count, metrics.preferred_replica_imbalance_count) == (0, 1)
    assert (metrics.partitions_with_elr_count, metrics.partitions_with_empty_isr_count) == (0, 0)
    # events-0 loses its leader
    offline = replayed(elected, m.PartitionChangeRecordV0(partition_id=i32(0), topic_id=EVENTS, leader=i32(-1)))
    metrics = controller_metrics(offline)
    assert (metrics.offline_partitions_count, metrics.preferred_replica_imbalance_count) == (1, 2)
    deleted = replayed(offline, m.RemoveTopicRecordV0(topic_id=ORDERS))
    metrics = controller_metrics(deleted)
    assert (metrics.global_topic_count, metrics.global_partition_count, metrics.offline_partitions_count) == (1, 1, 1)


def test_a_partition_without_replicas_has_no_preferred_leader() -> None:
    image = replayed(bootstrapped(), m.TopicRecordV0(name="orders", topic_id=ORDERS),
                     partition(ORDERS, 0, (), -1, isr=()))
    counts = topic_counts(image.topics.by_id[ORDERS])
    # Kafka: preferred replica -1 when there are none, so leader -1 has its preferred leader
    assert (counts.partitions, counts.offline, counts.imbalanced) == (1, 1, 0)


def test_the_cache_counts_what_the_function_counts_and_reuses_untouched_topics() -> None:
    cache = TopicCounts()
    image = cluster()
    assert controller_metrics(image, cache=cache) == controller_metrics(image)
    changed = replayed(image, m.PartitionChangeRecordV0(partition_id=i32(0), topic_id=EVENTS, leader=i32(-1)))
    assert changed.topics.by_id[ORDERS] is image.topics.by_id[ORDERS]  # the untouched topic is shared
    kept = cache._now[id(image.topics.by_id[ORDERS])]
    assert controller_metrics(changed, cache=cache) == controller_metrics(changed)
    assert cache._now[id(changed.topics.by_id[ORDERS])] is kept  # not counted again
    # back and forth: the two images' topics stay cached
    assert controller_metrics(image, cache=cache) == controller_metrics(image)


def test_kafka_names() -> None:
    named = kafka_metrics(controller_metrics(cluster(), node_id=1000))
    group = "kafka.controller:type=KafkaController,name="
    assert named[group + "FencedBrokerCount"] == 1 and named[group + "ActiveBrokerCount"] == 2
    assert named[group + "OfflinePartitionsCount"] == 1 and named[group + "PreferredReplicaImbalanceCount"] == 2
    assert named[group + "GlobalTopicCount"] == 2 and named[group + "GlobalPartitionCount"] == 4
    assert named[group + "ActiveControllerCount"] == 1
    assert named[group + "BrokerRegistrationState,broker=3"] == BROKER_STATE_FENCED
    assert named["metashell:type=KafkaController,name=PartitionsWithElrCount"] == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(-1, 4)), max_size=12))
def test_cached_counts_equal_a_full_count_after_any_leader_changes(changes: list[tuple[int, int, int]]) -> None:
    """Topics 0..2 of 4 partitions each; each step sets one partition's leader, the cache follows."""
    ids = [uuid.UUID(int=(1 << 64) + 10 + t) for t in range(3)]
    records: list = []
    for t, topic_id in enumerate(ids):
        records.append(m.TopicRecordV0(name=f"t{t}", topic_id=topic_id))
        records.extend(partition(topic_id, p, (1, 2, 3), 1) for p in range(4))
    image, cache = replayed(bootstrapped(), *records), TopicCounts()
    for t, p, leader in changes:
        image = replayed(image, m.PartitionChangeRecordV0(partition_id=i32(p), topic_id=ids[t], leader=i32(leader)))
        cached, full = controller_metrics(image, cache=cache), controller_metrics(image)
        assert cached == full
        leaders = [q.leader for topic in image.topics.by_id.values() for q in topic.partitions.values()]
        assert full.offline_partitions_count == sum(1 for x in leaders if x == -1)
        assert full.preferred_replica_imbalance_count == sum(1 for x in leaders if x != 1)


def test_the_shell_tree_shows_the_metrics_under_their_kafka_names() -> None:
    from metashell.tree.nodes import resolve
    from metashell.tree.root import build_tree

    root = build_tree(cluster())
    names = resolve(root, "/metrics").child_names()
    assert {"FencedBrokerCount", "OfflinePartitionsCount", "ActiveControllerCount", "BrokerRegistrationState",
            "PartitionsWithElrCount"} <= set(names)
    assert resolve(root, "/metrics/FencedBrokerCount").value() == 1
    assert resolve(root, "/metrics/OfflinePartitionsCount").value() == 1
    assert resolve(root, "/metrics/PreferredReplicaImbalanceCount").value() == 2
    assert resolve(root, "/metrics/ActiveControllerCount").value() == 1
    assert resolve(root, "/metrics/BrokerRegistrationState").child_names() == ["1", "2", "3"]
    assert resolve(root, "/metrics/BrokerRegistrationState/3").value() == BROKER_STATE_FENCED
