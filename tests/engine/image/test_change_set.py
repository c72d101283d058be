"""The change set a delta produces equals what a brute-force comparison of the two images finds.

Every consumer (events, history tables, watch, the live shell, log, diff) reads the change set
instead of the records, so it must list exactly the subjects whose value differs, with the values
before and after, for any history: checked here against a flattening of whole images.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.image.change_set import DOMAINS, EMPTY_CHANGE_SET, Change, ChangeSet
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import LeaderChangeMessage, LeaderChangeVoter, i16, i32, i64
from engine.records.metadata_record_serde import control_record
from tests.engine.image.test_image_writer_property import TOPICS, _registration, _topic, records


def _flat(image: MetadataImage) -> dict[tuple[str, object], object]:
    """Every subject of an image by (domain, key), as the change set names them."""
    flat: dict[tuple[str, object], object] = {}
    flat.update((("features", k), v) for k, v in image.features.items())
    flat.update((("brokers", k), v) for k, v in image.cluster.brokers.items())
    flat.update((("controllers", k), v) for k, v in image.cluster.controllers.items())
    for topic in image.topics.by_id.values():
        flat[("topics", topic.id)] = topic.name
        flat.update((("partitions", (topic.id, pid)), reg) for pid, reg in topic.partitions.items())
    flat.update((("configs", (resource, k)), v) for resource, kv in image.configs.items() for k, v in kv.items())
    flat.update((("client_quotas", (entity, k)), v) for entity, kv in image.client_quotas.items()
                for k, v in kv.items())
    flat.update((("acls", k), v) for k, v in image.acls.items())
    flat.update((("scram", k), v) for k, v in image.scram.items())
    flat.update((("tokens", k), v) for k, v in image.delegation_tokens.items())
    producer_ids = image.producer_ids
    for domain, value in (("producer_ids", None if producer_ids.is_empty else producer_ids.next_producer_id),
                          ("zk_migration_state", image.features.zk_migration_state),
                          ("kraft_version", image.quorum.kraft_version), ("voters", image.quorum.voters)):
        if value is not None:
            flat[(domain, None)] = value
    return flat


def _brute(before: MetadataImage, after: MetadataImage) -> dict:
    old, new = _flat(before), _flat(after)
    return {key: (old.get(key), new.get(key)) for key in old.keys() | new.keys() if old.get(key) != new.get(key)}


def _listed(changes: ChangeSet) -> dict:
    listed = {(domain, key): (c.before, c.after) for domain, key, c in changes.subjects()}
    for domain in ("producer_ids", "zk_migration_state", "kraft_version", "voters"):
        change = getattr(changes, domain)
        if change is not None:
            listed[(domain, None)] = (change.before, change.after)
    return listed


def _replayed(history) -> MetadataImage:
    delta = MetadataDelta(MetadataImage())
    for record in history:
        delta.replay(record)
    return delta.apply()


@settings(max_examples=300, deadline=None)
@given(st.lists(records, max_size=25), st.lists(records, max_size=25))
def test_a_delta_lists_exactly_what_differs_between_its_images(first, second) -> None:
    before = _replayed(first)
    delta = MetadataDelta(before)
    for offset, record in enumerate(second, start=100):
        delta.replay(record, offset, 1, 1_000 + offset)
    changes = delta.changes()
    after = delta.apply()
    assert _listed(changes) == _brute(before, after)
    assert len(changes) == len(_brute(before, after)) and bool(changes) == bool(_brute(before, after))
    for _, _, change in changes.subjects():  # every change is placed at a record of the batch
        assert 100 <= change.offset < 100 + len(second) and change.timestamp_ms == 1_000 + change.offset


@settings(max_examples=200, deadline=None)
@given(st.lists(records, min_size=1, max_size=30))
def test_each_record_s_changes_are_what_it_alone_did(history) -> None:
    # the images are replayed afresh: an applied delta's image shares what the delta goes on changing
    delta = MetadataDelta(MetadataImage(), per_record=True)
    for offset, record in enumerate(history):
        delta.replay(record, offset, 1, offset)
        assert _listed(delta.record_changes()) == _brute(_replayed(history[:offset]), _replayed(history[:offset + 1]))


def test_the_offset_is_the_last_record_that_named_the_subject() -> None:
    delta = MetadataDelta(_replayed([_registration()]))
    delta.replay(m.UnfenceBrokerRecordV0(id=i32(1), epoch=i64(5)), 10, 1, 110)
    delta.replay(m.BrokerRegistrationChangeRecordV1(broker_id=i32(1), broker_epoch=i64(5), fenced=0,
                                                    in_controlled_shutdown=1), 11, 1, 111)
    change = delta.changes().brokers[1]
    assert (change.before.fenced, change.after.fenced, change.after.in_controlled_shutdown) == (True, False, True)
    assert (change.offset, change.timestamp_ms, change.kind) == (11, 111, "changed")


def test_a_record_that_changes_nothing_is_no_change() -> None:
    delta = MetadataDelta(_replayed([_registration()]))
    delta.replay(m.FenceBrokerRecordV0(id=i32(1), epoch=i64(5)), 3, 1, 3)  # fenced already
    delta.replay(m.FenceBrokerRecordV0(id=i32(7), epoch=i64(5)), 4, 1, 4)  # no such broker: skipped
    assert not delta.changes() and len(delta.changes()) == 0 and delta.skipped == 1


def test_a_deleted_topic_takes_its_partitions_and_configs_with_it() -> None:
    partition = m.PartitionRecordV0(partition_id=i32(0), topic_id=TOPICS[0], replicas=(i32(1),), isr=(i32(1),),
                                    removing_replicas=(), adding_replicas=(), leader=i32(1), leader_epoch=i32(0),
                                    partition_epoch=i32(0))
    config = m.ConfigRecordV0(resource_type=2, resource_name="topic-0", name="retention.ms", value="1")
    delta = MetadataDelta(_replayed([_topic(0), partition, config]))
    delta.replay(m.RemoveTopicRecordV0(topic_id=TOPICS[0]), 9, 1, 9)
    changes = delta.changes()
    assert changes.topics[TOPICS[0]] == Change("topic-0", None, 9, 9) and changes.topics[TOPICS[0]].deleted
    assert changes.partitions[(TOPICS[0], 0)].deleted and changes.partitions[(TOPICS[0], 0)].offset == 9
    assert changes.configs[((2, "topic-0"), "retention.ms")] == Change("1", None, 9, 9)
    assert changes.changed_topic_ids() == {TOPICS[0]}


def test_leader_changes_and_a_transaction_s_records_at_its_end() -> None:
    voters = tuple(LeaderChangeVoter(voter_id=i32(v)) for v in (1, 2, 3))
    leader = control_record(LeaderChangeMessage(version=i16(0), leader_id=i32(2), voters=voters,
                                                granting_voters=voters))
    delta = MetadataDelta(MetadataImage(), per_record=True)
    delta.replay(leader, 0, 3, 50)
    assert [c.leader_id for c in delta.record_changes().leader_changes] == [2]
    delta.replay(m.BeginTransactionRecordV0(name="t"), 1, 3, 51)
    delta.replay(_topic(1), 2, 3, 52)
    assert not delta.record_changes()  # pending: in no image yet
    delta.replay(m.EndTransactionRecordV0(), 3, 3, 53)
    assert delta.record_changes().topics == {TOPICS[1]: Change(None, "topic-1", 3, 53)}
    changes = delta.changes()
    assert [c.leader_id for c in changes.leader_changes] == [2] and changes.topics[TOPICS[1]].offset == 3


def test_an_aborted_transaction_changes_nothing() -> None:
    delta = MetadataDelta(MetadataImage(), per_record=True)
    for offset, record in enumerate([m.BeginTransactionRecordV0(name="t"), _topic(2), m.AbortTransactionRecordV0()]):
        delta.replay(record, offset, 1, offset)
    assert not delta.changes() and not delta.record_changes()


def test_domains_are_the_change_set_s_fields() -> None:
    assert set(DOMAINS) <= set(ChangeSet.__dataclass_fields__)


def test_a_batch_that_touches_nothing_has_the_shared_empty_change_set() -> None:
    delta = MetadataDelta(_replayed([_registration()]))
    delta.replay(m.NoOpRecordV0(), 7, 1, 7)
    assert delta.changes() is EMPTY_CHANGE_SET and not EMPTY_CHANGE_SET and len(EMPTY_CHANGE_SET) == 0
    voters = tuple(LeaderChangeVoter(voter_id=i32(v)) for v in (1, 2))
    delta.replay(control_record(LeaderChangeMessage(version=i16(0), leader_id=i32(1), voters=voters,
                                                    granting_voters=voters)), 8, 2, 8)
    changes = delta.changes()  # nothing keyed, but the quorum moved: not empty
    assert changes is not EMPTY_CHANGE_SET and changes and len(changes) == 1
    assert ChangeSet() == EMPTY_CHANGE_SET and not ChangeSet()  # an empty one made anew is as empty


@settings(max_examples=200, deadline=None)
@given(st.lists(records, max_size=25), st.lists(records, max_size=25), st.lists(st.booleans(), max_size=25))
def test_records_without_a_place_are_listed_too(first, second, placed) -> None:
    """A snapshot's records have no offset: the partitions they change are compared whole (no note
    per partition), mixed with records that have one; the change set is the same either way."""
    before = _replayed(first)
    delta = MetadataDelta(before)
    for n, record in enumerate(second):
        offset = 100 + n if n < len(placed) and placed[n] else -1
        delta.replay(record, offset, 1, 1_000 + offset if offset >= 0 else -1)
    changes = delta.changes()
    assert _listed(changes) == _brute(before, delta.apply())
    for _, _, change in changes.subjects():
        assert change.offset == -1 or 100 <= change.offset < 100 + len(second)


def test_per_record_changes_are_kept_only_when_asked_for() -> None:
    """A snapshot load keeps nothing per record; asking such a delta is a programming error, said."""
    delta = MetadataDelta(MetadataImage())
    delta.replay(_topic(0), 0, 1, 0)
    assert delta.changes().topics[TOPICS[0]].after == "topic-0"
    with pytest.raises(ValueError, match="per_record=True"):
        delta.record_changes()
