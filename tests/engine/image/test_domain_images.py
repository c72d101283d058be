"""The per-domain images and deltas (Kafka's metadata/image shape): each domain's EMPTY, the reuse of
every untouched image and sub-image by identity (time travel stays cheap, caches on topics live on),
the typed values the images hold, and a domain delta on its own, without a MetadataDelta."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.common.config_resource import (BROKER_DEFAULT, ConfigResource, ConfigResourceType, broker_resource,
                                           config_resource_type_name, topic_resource)
from engine.image.acls_image import AclsDelta, AclsImage, StandardAcl
from engine.image.client_quotas_image import ClientQuotaEntity, ClientQuotasImage
from engine.image.cluster_image import ClusterDelta, ClusterImage
from engine.image.configurations_image import ConfigurationsDelta, ConfigurationsImage
from engine.image.delegation_token_image import DelegationTokenData, DelegationTokenImage
from engine.image.features_image import FeaturesImage
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import EMPTY_IMAGE, MetadataImage
from engine.image.producer_ids_image import ProducerIdsImage
from engine.image.quorum_image import QuorumImage
from engine.image.scram_image import ScramCredentialData, ScramImage
from engine.image.topic_index import topic_index
from engine.image.topics_image import TopicsDelta, TopicsImage
from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i16, i32, i64
from tests.engine.image.test_image_writer_property import records
from tests.engine.image.test_metadata_delta import broker
from tests.strategies import record_strategy

ORDERS, AUDIT = uuid.UUID(int=0x71), uuid.UUID(int=0x72)
DOMAINS = ("features", "cluster", "topics", "configs", "client_quotas", "producer_ids", "acls", "scram",
           "delegation_tokens", "quorum")


def _replay(*history, image: MetadataImage = EMPTY_IMAGE) -> MetadataImage:
    delta = MetadataDelta(image)
    for record in history:
        delta.replay(record)
    return delta.apply()


def _partition(topic_id: uuid.UUID, pid: int) -> m.PartitionRecordV0:
    return m.PartitionRecordV0(partition_id=i32(pid), topic_id=topic_id, replicas=(i32(1),), isr=(i32(1),),
                               removing_replicas=(), adding_replicas=(), leader=i32(1), leader_epoch=i32(0),
                               partition_epoch=i32(0))


def _config(resource_type: int, name: str, key: str, value: str | None) -> m.ConfigRecordV0:
    return m.ConfigRecordV0(resource_type=i8(resource_type), resource_name=name, name=key, value=value)


def _quota(user: str, key: str, value: float, remove: bool = False) -> m.ClientQuotaRecordV0:
    entity = (m.ClientQuotaRecordV0EntityData(entity_type="user", entity_name=user),)
    return m.ClientQuotaRecordV0(entity=entity, key=key, value=value, remove=remove)


ACL = m.AccessControlEntryRecordV0(id=uuid.UUID(int=0xAC), resource_type=i8(2), resource_name="orders",
                                   pattern_type=i8(3), principal="User:alice", host="*", operation=i8(3),
                                   permission_type=i8(3))
SCRAM = m.UserScramCredentialRecordV0(name="alice", mechanism=i8(1), salt=b"salt", stored_key=b"stored",
                                      server_key=b"server", iterations=i32(4096))
TOKEN = m.DelegationTokenRecordV0(owner="User:alice", requester="User:bob", renewers=("User:carol",),
                                  issue_timestamp=i64(1), max_timestamp=i64(3), expiration_timestamp=i64(2),
                                  token_id="token-1")

# one record of every domain, so that an image holds something everywhere
EVERYTHING = (
    m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27)), broker(1), broker(2),
    m.TopicRecordV0(name="orders", topic_id=ORDERS), _partition(ORDERS, 0), _partition(ORDERS, 1),
    m.TopicRecordV0(name="audit", topic_id=AUDIT), _partition(AUDIT, 0),
    _config(2, "orders", "retention.ms", "1"), _config(2, "audit", "retention.ms", "2"), _config(4, "", "x", "y"),
    _quota("alice", "producer_byte_rate", 1024.0), _quota("bob", "producer_byte_rate", 2048.0),
    m.ProducerIdsRecordV0(broker_id=i32(1), broker_epoch=i64(10), next_producer_id=i64(1000)), ACL, SCRAM, TOKEN,
)


# -- EMPTY ---------------------------------------------------------------------------------------------


def test_every_domain_image_has_an_empty_one_and_the_empty_image_is_made_of_them() -> None:
    empties = {"features": FeaturesImage.EMPTY, "cluster": ClusterImage.EMPTY, "topics": TopicsImage.EMPTY,
               "configs": ConfigurationsImage.EMPTY, "client_quotas": ClientQuotasImage.EMPTY,
               "producer_ids": ProducerIdsImage.EMPTY, "acls": AclsImage.EMPTY, "scram": ScramImage.EMPTY,
               "delegation_tokens": DelegationTokenImage.EMPTY, "quorum": QuorumImage.EMPTY}
    assert set(empties) == set(DOMAINS) == {f.name for f in dataclasses.fields(MetadataImage)} - {"provenance"}
    for domain, empty in empties.items():
        assert getattr(MetadataImage(), domain) is empty and getattr(MetadataImage.EMPTY, domain) is empty
    assert FeaturesImage.EMPTY == {} and FeaturesImage.EMPTY.metadata_version is None
    assert ProducerIdsImage.EMPTY.is_empty and not ClusterImage.EMPTY.brokers and not TopicsImage.EMPTY.by_id
    assert MetadataDelta(EMPTY_IMAGE).apply() == EMPTY_IMAGE


# -- reuse by identity -----------------------------------------------------------------------------------


@pytest.mark.parametrize("record, changed", [
    (m.FeatureLevelRecordV0(name="group.version", feature_level=i16(1)), "features"),
    (m.UnfenceBrokerRecordV0(id=i32(2), epoch=i64(10)), "cluster"),
    (_partition(ORDERS, 2), "topics"),
    (_config(4, "1", "a", "b"), "configs"),
    (_quota("carol", "request_percentage", 5.0), "client_quotas"),
    (m.ProducerIdsRecordV0(broker_id=i32(1), broker_epoch=i64(10), next_producer_id=i64(2000)), "producer_ids"),
    (dataclasses.replace(ACL, id=uuid.UUID(int=0xAD), principal="User:bob"), "acls"),
    (m.RemoveUserScramCredentialRecordV0(name="alice", mechanism=i8(1)), "scram"),
    (m.RemoveDelegationTokenRecordV0(token_id="token-1"), "delegation_tokens"),
])
def test_a_record_of_one_domain_leaves_every_other_domain_the_same_object(record, changed) -> None:
    image = _replay(*EVERYTHING)
    after = _replay(record, image=image)
    assert getattr(after, changed) is not getattr(image, changed) and getattr(after, changed) != getattr(image, changed)
    for domain in DOMAINS:
        if domain != changed:
            assert getattr(after, domain) is getattr(image, domain), domain


def test_untouched_topics_config_resources_and_quota_entities_are_the_same_objects() -> None:
    image = _replay(*EVERYTHING)
    index = topic_index(image.topics.by_id[AUDIT])
    after = _replay(_partition(ORDERS, 5), _config(2, "orders", "cleanup.policy", "compact"),
                    _quota("alice", "request_percentage", 1.0), image=image)
    assert after.topics.by_id[AUDIT] is image.topics.by_id[AUDIT] and topic_index(after.topics.by_id[AUDIT]) is index
    assert after.topics.by_id[ORDERS] is not image.topics.by_id[ORDERS]
    assert after.configs[topic_resource("audit")] is image.configs[topic_resource("audit")]
    assert after.configs[BROKER_DEFAULT] is image.configs[BROKER_DEFAULT]
    assert after.configs[topic_resource("orders")] == {"retention.ms": "1", "cleanup.policy": "compact"}
    bob = ClientQuotaEntity((("user", "bob"),))
    assert after.client_quotas[bob] is image.client_quotas[bob]


def test_records_that_change_nothing_reuse_the_image_s_domains() -> None:
    image = _replay(*EVERYTHING)
    after = _replay(m.UnregisterBrokerRecordV0(broker_id=i32(9), broker_epoch=i64(1)),  # no such broker
                    m.PartitionChangeRecordV0(partition_id=i32(7), topic_id=ORDERS, isr=(i32(1),)),  # no such partition
                    m.ClearElrRecordV0(topic_name=""),  # no ELR anywhere
                    m.NoOpRecordV0(), image=image)
    assert all(getattr(after, domain) is getattr(image, domain) for domain in DOMAINS)


@settings(max_examples=150, deadline=None)
@given(st.lists(records, max_size=20), st.lists(records, max_size=8))
def test_a_domain_no_change_names_is_the_same_object(first, second) -> None:
    before = _replay(*first)
    delta = MetadataDelta(before)
    for record in second:
        delta.replay(record, 1, 1, 1)
    changes, after = delta.changes(), delta.apply()
    named = {domain for domain, _, _ in changes.subjects()}
    owners = {"features": {"features"}, "cluster": {"brokers", "controllers"}, "topics": {"topics", "partitions"},
              "configs": {"configs"}, "client_quotas": {"client_quotas"}, "acls": {"acls"}, "scram": {"scram"},
              "delegation_tokens": {"tokens"}}
    for domain, subjects in owners.items():
        if not subjects & named and getattr(after, domain) is not getattr(before, domain):
            assert getattr(after, domain) == getattr(before, domain), domain  # a net no-op: equal, never different
    for topic_id, topic in after.topics.by_id.items():
        if topic_id not in changes.changed_topic_ids() and topic_id in before.topics.by_id:
            assert topic.partitions == before.topics.by_id[topic_id].partitions


# -- typed values ----------------------------------------------------------------------------------------


def test_the_image_holds_typed_values_that_write_back_as_their_records() -> None:
    image = _replay(*EVERYTHING)
    acl = image.acls[ACL.id]
    assert acl == StandardAcl(2, "orders", 3, "User:alice", "*", 3, 3) and acl.to_record(ACL.id) == ACL
    credential = image.scram[(1, "alice")]
    assert credential == ScramCredentialData(b"salt", b"stored", b"server", 4096)
    assert credential.to_record(1, "alice") == SCRAM and image.scram.mechanisms() == {1: {"alice": credential}}
    token = image.delegation_tokens["token-1"]
    assert isinstance(token, DelegationTokenData) and token.renewers == ("User:carol",) and token.to_record() == TOKEN
    assert image.producer_ids.next_producer_id == 1000 and image.features.metadata_version == 27


def test_config_resources_are_typed_keys_equal_to_their_tuples() -> None:
    image = _replay(*EVERYTHING, _config(99, "odd", "k", "v"))
    resources = set(image.configs)
    assert resources == {(2, "orders"), (2, "audit"), (4, ""), (99, "odd")}
    orders = image.configs[(2, "orders")]
    assert orders.resource == topic_resource("orders") and orders.resource.type is ConfigResourceType.TOPIC
    assert image.configs[BROKER_DEFAULT].resource.is_default and image.configs.config_map(broker_resource(3)) == {}
    odd = next(r for r in resources if r.name == "odd")  # a type Kafka does not define: the int, never refused
    assert type(odd.type) is int and config_resource_type_name(odd.type) == "99"
    assert config_resource_type_name(4) == "BROKER" and config_resource_type_name(0) == "0"
    assert ConfigResourceType.for_id(99) is ConfigResourceType.UNKNOWN and ConfigResourceType.for_id(32).name == "GROUP"


def test_quota_entities_are_typed_keys_equal_to_their_tuples() -> None:
    image = _replay(*EVERYTHING)
    alice = next(e for e in image.client_quotas if e == (("user", "alice"),))
    assert isinstance(alice, ClientQuotaEntity) and alice.entries() == {"user": "alice"}
    assert image.client_quotas[(("user", "alice"),)] == {"producer_byte_rate": 1024.0}
    removed = _replay(_quota("alice", "producer_byte_rate", 0.0, remove=True), image=image)
    assert (("user", "alice"),) not in removed.client_quotas and len(removed.client_quotas) == 1


def test_images_are_immutable_and_compare_as_mappings() -> None:
    image = _replay(*EVERYTHING)
    with pytest.raises(AttributeError):
        image.acls.extra = 1  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        image.configs[BROKER_DEFAULT]["x"] = "z"  # type: ignore[index]
    assert image.acls != {} and AclsImage.EMPTY == {} and image.features == {"metadata.version": 27}
    assert image.configs != ConfigurationsImage.EMPTY and image.configs == _replay(*EVERYTHING).configs


def test_the_change_set_carries_the_typed_values() -> None:
    delta = MetadataDelta(_replay(*EVERYTHING))
    delta.replay(m.RemoveAccessControlEntryRecordV0(id=ACL.id), 5, 1, 5)
    delta.replay(dataclasses.replace(SCRAM, iterations=i32(8192)), 6, 1, 6)
    changes = delta.changes()
    assert changes.acls[ACL.id].before == StandardAcl.from_record(ACL) and changes.acls[ACL.id].deleted
    assert changes.scram[(1, "alice")].after.iterations == 8192 and changes.scram[(1, "alice")].offset == 6


@settings(max_examples=50, deadline=None)
@given(record_strategy(m.AccessControlEntryRecordV0), record_strategy(m.UserScramCredentialRecordV0),
       record_strategy(m.DelegationTokenRecordV0))
def test_typed_values_round_trip_any_record(acl, credential, token) -> None:
    assert StandardAcl.from_record(acl).to_record(acl.id) == acl
    assert ScramCredentialData.from_record(credential).to_record(credential.mechanism, credential.name) == credential
    assert DelegationTokenData.from_record(token).to_record() == token


# -- a domain delta on its own ---------------------------------------------------------------------------


def test_a_topics_delta_replays_on_its_own_and_says_what_it_changed() -> None:
    image = _replay(*EVERYTHING).topics
    delta = TopicsDelta(image)
    delta.replay_topic(m.TopicRecordV0(name="fresh", topic_id=uuid.UUID(int=0x73)))
    delta.replay_partition(_partition(ORDERS, 3))
    assert delta.replay_remove_topic(m.RemoveTopicRecordV0(topic_id=AUDIT)) == "audit"
    delta.replay_partition(_partition(uuid.UUID(int=0x99), 0))  # no such topic: skipped
    assert delta.journal.skipped == 1
    assert set(delta.changed_topics()) == {ORDERS, uuid.UUID(int=0x73)}
    assert delta.created_topic_ids() == {uuid.UUID(int=0x73)} and delta.deleted_topic_ids() == {AUDIT}
    assert list(delta.changed_topics()[ORDERS].partition_changes()) == [3]
    after = delta.apply()
    assert sorted(after.by_name) == ["fresh", "orders"] and sorted(after.by_id[ORDERS].partitions) == [0, 1, 3]
    assert image.by_name.keys() == {"orders", "audit"}  # the base image is untouched
    subjects = {(domain, key) for domain, key, _ in delta.changed_subjects()}
    assert subjects == {("topics", uuid.UUID(int=0x73)), ("partitions", (ORDERS, 3)), ("topics", AUDIT),
                        ("partitions", (AUDIT, 0))}


def test_a_cluster_delta_says_which_brokers_changed() -> None:
    image = _replay(*EVERYTHING).cluster
    delta = ClusterDelta(image)
    delta.replay_unfence_broker(m.UnfenceBrokerRecordV0(id=i32(1), epoch=i64(10)))
    delta.replay_unregister_broker(m.UnregisterBrokerRecordV0(broker_id=i32(2), broker_epoch=i64(10)))
    delta.replay_fence_broker(m.FenceBrokerRecordV0(id=i32(1), epoch=i64(3)))  # a stale epoch: skipped
    changed = delta.changed_brokers()
    assert set(changed) == {1, 2} and changed[2] is None and not changed[1].fenced and delta.journal.skipped == 1
    assert delta.broker(1).state == "active" and delta.broker(2) is None and image.brokers[1].fenced
    assert sorted(delta.apply().brokers) == [1] and delta.apply().controllers is image.controllers


def test_the_keyed_deltas_say_what_they_changed() -> None:
    image = _replay(*EVERYTHING)
    delta = MetadataDelta(image)
    for record in (m.RemoveAccessControlEntryRecordV0(id=ACL.id), _config(2, "orders", "retention.ms", None),
                   _config(2, "orders", "segment.ms", "5"), _quota("dave", "producer_byte_rate", 1.0)):
        delta.replay(record)
    after = delta.apply()
    acls = AclsDelta(image.acls)
    acls.replay_remove_access_control_entry(m.RemoveAccessControlEntryRecordV0(id=ACL.id))
    assert acls.changes() == {ACL.id: None} and acls.apply() == after.acls
    configs = ConfigurationsDelta(image.configs)
    configs.replay_config(_config(2, "orders", "retention.ms", None))
    configs.replay_config(_config(2, "orders", "segment.ms", "5"))
    (orders,) = configs.changes().values()
    assert orders.changes == {"retention.ms": None, "segment.ms": "5"} and orders.keys() == {"segment.ms"}
    assert configs.apply() == after.configs and after.configs[topic_resource("orders")] == {"segment.ms": "5"}
