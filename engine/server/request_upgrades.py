"""Older versions of a request, read as the newest one a controller command takes.

Most versions convert field by field (``convert_message``). These do not, because a field was
renamed or reshaped between versions; each gets the newest fields built from its own, as
Kafka's request classes read old versions:

- DeleteTopics v1-v5: ``topic_names`` became ``topics`` (name and id) in v6.
- AlterPartition v2: ``new_isr`` became ``new_isr_with_epochs`` in v3 (broker epoch -1: unknown,
  which the controller does not check, as Kafka).
- ElectLeaders v0: no ``election_type``: a preferred election.
- UpdateFeatures v0: ``allow_downgrade`` became ``upgrade_type`` in v1 (SAFE_DOWNGRADE when
  allowed, else UPGRADE, as Kafka's UpdateFeaturesRequest reads v0).
- DescribeCluster v0-v1: no ``include_fenced_brokers`` (v2): fenced brokers are not asked for.
- CreateDelegationToken v1-v2: no owner (v3): the token is the requester's own.

An array sent as null (length -1) where the schema has no null reads as empty here: the
command then answers what it answers to none, instead of the upgrade failing on it.
"""

from __future__ import annotations

from typing import Any, Callable

from engine.common.api_keys import ApiKeys
from engine.records.kio_codec import i8, i32, i64, protocol_module

UPGRADE, SAFE_DOWNGRADE = 1, 2


def _delete_topics(request: Any) -> dict[str, Any]:
    v6 = protocol_module("delete_topics", 6, "request")
    return {"topics": tuple(v6.DeleteTopicState(name=name, topic_id=None) for name in request.topic_names or ())}


def _alter_partition(request: Any) -> dict[str, Any]:
    v3 = protocol_module("alter_partition", 3, "request")
    return {"topics": tuple(v3.TopicData(topic_id=topic.topic_id, partitions=tuple(v3.PartitionData(
        partition_index=p.partition_index, leader_epoch=p.leader_epoch,
        new_isr_with_epochs=tuple(v3.BrokerState(broker_id=i32(b), broker_epoch=i64(-1)) for b in p.new_isr or ()),
        leader_recovery_state=p.leader_recovery_state, partition_epoch=p.partition_epoch)
        for p in topic.partitions or ())) for topic in request.topics or ())}


def _elect_leaders(request: Any) -> dict[str, Any]:
    return {"election_type": i8(0)}


def _update_features(request: Any) -> dict[str, Any]:
    v1 = protocol_module("update_features", 1, "request")
    return {"feature_updates": tuple(v1.FeatureUpdateKey(
        feature=u.feature, max_version_level=u.max_version_level,
        upgrade_type=i8(SAFE_DOWNGRADE if u.allow_downgrade else UPGRADE)) for u in request.feature_updates or ())}


def _describe_cluster(request: Any) -> dict[str, Any]:
    return {"include_fenced_brokers": False}


def _create_delegation_token(request: Any) -> dict[str, Any]:
    return {"owner_principal_type": None, "owner_principal_name": None}


# api key -> (the versions it applies below, fields of the newest built from an older request)
UPGRADES: dict[int, tuple[int, Callable[[Any], dict[str, Any]]]] = {
    ApiKeys.DELETE_TOPICS: (6, _delete_topics),
    ApiKeys.ALTER_PARTITION: (3, _alter_partition),
    ApiKeys.ELECT_LEADERS: (1, _elect_leaders),
    ApiKeys.UPDATE_FEATURES: (1, _update_features),
    ApiKeys.DESCRIBE_CLUSTER: (2, _describe_cluster),
    ApiKeys.CREATE_DELEGATION_TOKEN: (3, _create_delegation_token),
}


def upgrade_fields(api_key: int, version: int, request: Any) -> dict[str, Any] | None:
    """The newest version's fields an older ``request`` cannot give by name, or None."""
    upgrade = UPGRADES.get(api_key)
    if upgrade is None or version >= upgrade[0]:
        return None
    return upgrade[1](request)
