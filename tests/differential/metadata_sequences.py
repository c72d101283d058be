"""Valid metadata logs for the image-replay differential (test_diff_image_replay.py).

``metadata_logs()`` draws a log as a controller of that metadata.version could have written
it: metadata.version first, then brokers that register, fence, unfence, shut down and leave;
controllers; topics made, grown, changed (leaders, ISR, reassignments, directories, ELR),
deleted and made again under the same name; configs set and deleted (a null value), client
quotas, producer id blocks, ACLs, SCRAM credentials, delegation tokens, feature levels and
upgrades of metadata.version, and metadata transactions that end or abort. A ``LogModel``
follows what the records said so far, so each record refers to what exists (Kafka's replay
throws on, say, a change to a partition that is not there: that is not what is under test).

The log comes as commits of batches of records. Record versions follow the metadata.version
as Kafka's MetadataVersion picks them (engine.image.metadata_version.record_versions). The
logs do not depend on the Kafka at hand (so that a failing one can be kept as an ``@example``):
``KafkaKnows.fits`` tells whether a log uses only levels and record versions that Kafka knows.

An AbortTransactionRecord always ends its commit: Kafka's MetadataBatchLoader discards an
aborted transaction only when nothing follows the abort before its next flush (records after
it in the same commit are replayed into the delta that still holds the aborted ones), and its
controller writes the abort in an activation batch of its own; ours drops the transaction at
the marker whatever follows.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any, Callable

from hypothesis import strategies as st

from engine.common.directory_id import LOST, UNASSIGNED
from engine.image.metadata_version import BY_LEVEL, default_feature_levels
from engine.records import metadata_records as m
from metadata_model import (
    ELR_FEATURE, LEVELS, MV_CONTROLLERS, MV_ELR, MV_SCRAM, MV_TOKENS, MV_TRANSACTIONS, Draw, KafkaKnows, LogModel,
    Partition, boolean, integer, many, pick, record, some, subset,
)

__all__ = ["KafkaKnows", "metadata_logs", "record"]

# other features and the metadata.version each needs (Kafka's Feature enum's bootstrap levels)
_FEATURES = {"group.version": (22, (1,)), "transaction.version": (24, (1, 2)), ELR_FEATURE: (MV_ELR, (1,)),
             "share.version": (28, (1,)), "streams.version": (29, (1,))}
_TOPIC_NAMES = ("orders", "payments", "a", "b.c")
_CONFIG_KEYS = ("retention.ms", "cleanup.policy", "min.insync.replicas", "segment.bytes")
_BROKERS = range(5)
# log directories: Kafka sorts a broker's as signed numbers, so one has its top bit set; None is MIGRATING
_DIRS = (*(uuid.UUID(int=(7 << 64) + n) for n in range(3)), uuid.UUID(int=(1 << 127) + 9), UNASSIGNED, LOST, None)


def _dirs(draw: Draw, count: int) -> tuple:
    return tuple(many(draw, _DIRS, count, count))


# -- brokers and controllers -----------------------------------------------------------------

def register_broker(draw: Draw, log: LogModel) -> list:
    broker_id = pick(draw, _BROKERS)
    epoch = log.fresh() * 10
    version = log.versions.register_broker
    endpoint, feature = (getattr(m, f"RegisterBrokerRecordV{version}Broker{kind}") for kind in ("Endpoint", "Feature"))
    listeners = some(draw, ("PLAINTEXT", "SSL", "INTERNAL"), 1, 3)
    fields = dict(
        broker_id=broker_id, incarnation_id=uuid.UUID(int=(5 << 64) + log.fresh()), broker_epoch=epoch,
        end_points=tuple(endpoint(name=n, host=f"b{broker_id}", port=9092 + i, security_protocol=i % 2)
                         for i, n in enumerate(listeners)),
        features=tuple(feature(name=n, min_supported_version=lo, max_supported_version=hi) for n, lo, hi in
                       some(draw, (("metadata.version", 7, log.level), ("group.version", 0, 1),
                                                      ("kraft.version", 0, 1)), 0, 3)),
        rack=pick(draw, (None, "rack-a", "")), fenced=boolean(draw), in_controlled_shutdown=False)
    if version >= 2:
        fields["is_migrating_zk_broker"] = False
    if version >= 3:
        fields["log_dirs"] = tuple(some(draw, _DIRS[:4], 1, 3))
    if version >= 4:
        fields["cordoned_log_dirs"] = pick(draw, (None, (), fields["log_dirs"][:1]))
    log.brokers[broker_id] = {"epoch": epoch, "fenced": fields["fenced"], "dirs": fields.get("log_dirs", ())}
    return [record("RegisterBrokerRecord", version, **fields)]


def change_broker(draw: Draw, log: LogModel) -> list:
    """Fence, unfence, controlled shutdown or new log directories: BrokerRegistrationChangeRecord
    as controllers write it, or the older Fence/UnfenceBrokerRecord Kafka still replays."""
    if not log.brokers:
        return register_broker(draw, log)
    broker_id = pick(draw, sorted(log.brokers))
    broker = log.brokers[broker_id]
    if integer(draw, 0, 4) == 0:
        broker["fenced"] = not broker["fenced"]
        name = "FenceBrokerRecord" if broker["fenced"] else "UnfenceBrokerRecord"
        return [record(name, id=broker_id, epoch=broker["epoch"])]
    version = log.versions.broker_registration_change
    fields: dict[str, Any] = dict(broker_id=broker_id, broker_epoch=broker["epoch"],
                                  fenced=pick(draw, (-1, 0, 1)))
    if version >= 1:
        fields["in_controlled_shutdown"] = pick(draw, (0, 0, 1))
    if version >= 2:
        fields["log_dirs"] = pick(draw, ((), _DIRS[1:3]))
    if version >= 3:
        fields["cordoned_log_dirs"] = pick(draw, (None, (), _DIRS[1:2]))
    return [record("BrokerRegistrationChangeRecord", version, **fields)]


def unregister_broker(draw: Draw, log: LogModel) -> list:
    if not log.brokers:
        return []
    broker_id = pick(draw, sorted(log.brokers))
    return [record("UnregisterBrokerRecord", broker_id=broker_id, broker_epoch=log.brokers.pop(broker_id)["epoch"])]


def controller(draw: Draw, log: LogModel) -> list:
    if log.level < MV_CONTROLLERS:
        return []
    controller_id = pick(draw, (3000, 3001, 3002))
    if controller_id in log.controllers and boolean(draw):
        log.controllers.discard(controller_id)
        return [record("UnregisterControllerRecord", controller_id=controller_id)]
    log.controllers.add(controller_id)
    return [record("RegisterControllerRecord", controller_id=controller_id,
                   incarnation_id=uuid.UUID(int=(6 << 64) + log.fresh()), zk_migration_ready=False,
                   end_points=(m.RegisterControllerRecordV0ControllerEndpoint(
                       name="CONTROLLER", host=f"c{controller_id}", port=9093, security_protocol=0),),
                   features=(m.RegisterControllerRecordV0ControllerFeature(
                       name="metadata.version", min_supported_version=7, max_supported_version=log.level),))]


# -- topics and partitions --------------------------------------------------------------------

def _partition_record(draw: Draw, log: LogModel, topic_id: uuid.UUID, partition_id: int) -> Any:
    replicas = some(draw, _BROKERS, 1, 3)
    isr = subset(draw, replicas, 1)
    leader = pick(draw, isr + [-1])
    version = log.versions.partition
    fields: dict[str, Any] = dict(partition_id=partition_id, topic_id=topic_id, replicas=tuple(replicas),
                                  isr=tuple(isr), removing_replicas=(), adding_replicas=(), leader=leader,
                                  leader_recovery_state=0, leader_epoch=pick(draw, (0, 0, 3)),
                                  partition_epoch=pick(draw, (0, 0, 5)))
    if version >= 1:
        fields["directories"] = _dirs(draw, len(replicas))
    if version >= 2 and log.elr_enabled:  # a snapshot's PartitionRecord carries the ELRs too
        outside = [b for b in replicas if b not in isr]
        fields["eligible_leader_replicas"] = pick(draw, (None, (), tuple(outside)))
        fields["last_known_elr"] = pick(draw, (None, (), tuple(outside[:1])))
    log.partitions[topic_id][partition_id] = Partition(replicas, isr, leader)
    return record("PartitionRecord", version, **fields)


def create_topic(draw: Draw, log: LogModel) -> list:
    free = [n for n in _TOPIC_NAMES if n not in log.topics]
    if not free:
        return delete_topic(draw, log)
    name = pick(draw, free)
    topic_id = log.topics[name] = uuid.UUID(int=(1 << 64) + log.fresh())
    log.partitions[topic_id] = {}
    records = [record("TopicRecord", name=name, topic_id=topic_id)]
    records += [_partition_record(draw, log, topic_id, p) for p in range(integer(draw, 0, 3))]
    if boolean(draw):
        records += [_config(log, (2, name), pick(draw, _CONFIG_KEYS), "1")]
    return records


def add_partition(draw: Draw, log: LogModel) -> list:
    if not log.topics:
        return create_topic(draw, log)
    topic_id = log.topics[pick(draw, sorted(log.topics))]
    return [_partition_record(draw, log, topic_id, len(log.partitions[topic_id]))]


def delete_topic(draw: Draw, log: LogModel) -> list:
    """RemoveTopicRecord. Not for a topic given configs in the delta Kafka's loader is building:
    Kafka's ConfigurationsDelta.replay(RemoveTopicRecord) deletes only the configs of the delta's
    base image, so those configs outlive the topic (and pass to one made again under its name).
    Ours delete them; test_kafka_keeps_configs_given_in_the_delta_of_the_deletion pins the
    difference. The deletion waits for a new commit here (inside a transaction, there is none)."""
    if not log.topics:
        return []
    name = pick(draw, sorted(log.topics))
    if name in log.fresh_configs:
        if log.transaction is not None:
            return []
        log.new_commit = True
        log.fresh_configs.clear()
    topic_id = log.topics.pop(name)
    del log.partitions[topic_id]
    log.configs.pop((2, name), None)  # RemoveTopicRecord takes the topic's configs with it
    return [record("RemoveTopicRecord", topic_id=topic_id)]


def change_partition(draw: Draw, log: LogModel) -> list:
    """One PartitionChangeRecord: some of a new leader, ISR, reassignment, directories, recovery
    state and ELR, each consistent with the others."""
    candidates = [(t, p) for t, parts in log.partitions.items() for p in parts]
    if not candidates:
        return add_partition(draw, log)
    topic_id, partition_id = pick(draw, sorted(candidates))
    part = log.partitions[topic_id][partition_id]
    version = log.versions.partition_change
    fields: dict[str, Any] = dict(partition_id=partition_id, topic_id=topic_id)
    kinds = some(draw, ("leader", "isr", "reassign", "dirs", "recovery", "elr"), 1, 3)
    if "reassign" in kinds:
        target = some(draw, _BROKERS, 1, 3)
        adding = [b for b in target if b not in part.replicas]
        removing = [b for b in part.replicas if b not in target] if adding else []
        replicas = part.replicas + adding if adding else target
        fields.update(replicas=tuple(replicas), adding_replicas=tuple(adding), removing_replicas=tuple(removing))
        part.replicas = replicas
        if version >= 1:  # a controller names the directories of new replicas (before 3.7, all MIGRATING)
            fields["directories"] = _dirs(draw, len(replicas))
        kinds.append("isr")
    elif "dirs" in kinds and version >= 1:
        fields["directories"] = _dirs(draw, len(part.replicas))
    if "isr" in kinds or "leader" in kinds:
        isr = [b for b in (subset(draw, part.replicas, 1) if "isr" in kinds else part.isr) if b in part.replicas]
        leader = pick(draw, isr + [-1]) if "leader" in kinds or part.leader not in isr + [-1] \
            else part.leader
        if "isr" in kinds:
            fields["isr"] = tuple(isr)
        if leader != part.leader or "leader" in kinds:
            fields["leader"] = leader
        part.isr, part.leader = isr, leader
    if "recovery" in kinds:
        fields["leader_recovery_state"] = pick(draw, (0, 1))
    if log.elr_enabled and version >= 2 and ("elr" in kinds or "isr" in kinds and boolean(draw)):
        outside = [b for b in part.replicas if b not in part.isr]
        fields["eligible_leader_replicas"] = tuple(subset(draw, outside))
        fields["last_known_elr"] = tuple(subset(draw, outside))
    return [record("PartitionChangeRecord", version, **fields)]


def clear_elr(draw: Draw, log: LogModel) -> list:
    if not log.elr_enabled:
        return []
    return [record("ClearElrRecord", topic_name=pick(draw, ["", *sorted(log.topics)]))]


# -- configs, quotas, producer ids, security ----------------------------------------------------

def _config(log: LogModel, resource: tuple[int, str], key: str, value: str | None) -> Any:
    keys = log.configs.setdefault(resource, set())
    if resource[0] == 2:
        log.fresh_configs.add(resource[1])
    (keys.add if value is not None else keys.discard)(key)
    return record("ConfigRecord", resource_type=resource[0], resource_name=resource[1], name=key, value=value)


def config(draw: Draw, log: LogModel) -> list:
    resources = [(4, ""), (4, "1"), (16, "metrics-a")] + [(2, name) for name in log.topics]
    resource = pick(draw, resources)
    key = pick(draw, _CONFIG_KEYS)
    value = pick(draw, (None, "1", "86400000", "compact", ""))
    return [_config(log, resource, key, value)]


_QUOTA_ENTITIES = ((("user", "alice"),), (("user", None),), (("client-id", "app"),),
                   (("user", "alice"), ("client-id", "app")), (("client-id", "app"), ("user", "alice")),
                   (("client-id", "app"), ("user", "bob")),
                   (("ip", "10.0.0.1"),), (("ip", None),))


def client_quota(draw: Draw, log: LogModel) -> list:
    entity = pick(draw, _QUOTA_ENTITIES)
    is_ip = entity[0][0] == "ip"
    key = "connection_creation_rate" if is_ip else pick(draw, 
        ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"))
    return [record("ClientQuotaRecord", key=key, remove=integer(draw, 0, 3) == 0,
                   value=pick(draw, (1024.0, 0.5, 1e9, 3.0)),
                   entity=tuple(m.ClientQuotaRecordV0EntityData(entity_type=t, entity_name=n) for t, n in entity))]


def producer_ids(draw: Draw, log: LogModel) -> list:
    log.next_producer_id += 1000
    return [record("ProducerIdsRecord", broker_id=pick(draw, _BROKERS), broker_epoch=10,
                   next_producer_id=log.next_producer_id)]


def acl(draw: Draw, log: LogModel) -> list:
    if log.acls and integer(draw, 0, 2) == 0:
        acl_id = log.acls.pop(integer(draw, 0, len(log.acls) - 1))
        return [record("RemoveAccessControlEntryRecord", id=acl_id)]
    acl_id = uuid.UUID(int=(2 << 64) + log.fresh())
    log.acls.append(acl_id)
    return [record("AccessControlEntryRecord", id=acl_id, resource_type=pick(draw, (2, 3, 4, 5)),
                   resource_name=pick(draw, ("orders", "kafka-cluster", "*", "app-")),
                   pattern_type=pick(draw, (3, 4)),
                   principal=pick(draw, ("User:alice", "User:*", "User:bob")),
                   host=pick(draw, ("*", "10.0.0.1")), operation=integer(draw, 2, 12),
                   permission_type=pick(draw, (2, 3)))]


def scram(draw: Draw, log: LogModel) -> list:
    if log.level < MV_SCRAM:
        return []
    if log.scram and integer(draw, 0, 2) == 0:
        mechanism, name = log.scram.pop(integer(draw, 0, len(log.scram) - 1))
        return [record("RemoveUserScramCredentialRecord", name=name, mechanism=mechanism)]
    key = (pick(draw, (1, 2)), pick(draw, ("alice", "bob")))
    if key not in log.scram:
        log.scram.append(key)
    n = log.fresh()
    return [record("UserScramCredentialRecord", name=key[1], mechanism=key[0], salt=bytes([n]) * 8,
                   stored_key=bytes([n, 1]) * 16, server_key=bytes([n, 2]) * 16,
                   iterations=pick(draw, (4096, 8192)))]


def delegation_token(draw: Draw, log: LogModel) -> list:
    if log.level < MV_TOKENS:
        return []
    if log.tokens and integer(draw, 0, 2) == 0:
        return [record("RemoveDelegationTokenRecord", token_id=log.tokens.pop(0))]
    renewal = bool(log.tokens) and boolean(draw)
    token_id = log.tokens[-1] if renewal else f"token-{log.fresh()}"
    if not renewal:
        log.tokens.append(token_id)
    issued = 1_700_000_000_000
    return [record("DelegationTokenRecord", owner="User:alice", requester="User:alice",
                   renewers=tuple(some(draw, ("User:bob", "User:carol"), 0, 2)),
                   issue_timestamp=issued, max_timestamp=issued + 7 * 86_400_000,
                   expiration_timestamp=issued + integer(draw, 1, 7) * 86_400_000, token_id=token_id)]


# -- features and transactions ------------------------------------------------------------------

def feature(draw: Draw, log: LogModel) -> list:
    """A feature's level set or cleared (0), or metadata.version upgraded. Turning ELR off
    clears every ELR, as Kafka's controller does in the same batch."""
    higher = [level for level in LEVELS if level > log.level]
    allowed = [name for name, (mv, _) in _FEATURES.items() if log.level >= mv]
    if higher and (not allowed or integer(draw, 0, 3) == 0):
        log.level = pick(draw, higher[:3])  # an upgrade by a few levels, as releases go
        return [record("FeatureLevelRecord", name="metadata.version", feature_level=log.level)]
    if not allowed:
        return []
    name = pick(draw, allowed)
    level = pick(draw, (0, *_FEATURES[name][1]))
    records = [record("FeatureLevelRecord", name=name, feature_level=level)]
    if level:
        log.features[name] = level
    else:
        log.features.pop(name, None)
        if name == ELR_FEATURE:
            records.append(record("ClearElrRecord", topic_name=""))
    return records


def begin_transaction(draw: Draw, log: LogModel) -> list:
    if log.level < MV_TRANSACTIONS or log.transaction is not None:
        return []
    log.fresh_configs.clear()  # Kafka's loader publishes what came before a BeginTransactionRecord
    log.transaction = copy.deepcopy(log)
    return [record("BeginTransactionRecord", name=pick(draw, ("", "create topics")))]


def end_transaction(draw: Draw, log: LogModel) -> list:
    """Commit or abort the open transaction; an abort puts the model back as it was at the Begin."""
    saved = log.transaction
    if saved is None:
        return []
    log.transaction = None
    if boolean(draw):
        return [record("EndTransactionRecord")]
    counter = log.counter  # ids stay fresh across the abort
    log.__dict__.update(saved.__dict__)
    log.counter = counter
    return [record("AbortTransactionRecord", reason=pick(draw, (None, "controller failover")))]


def no_op(draw: Draw, log: LogModel) -> list:
    """A NoOpRecord, or at a 3.x level the ZooKeeper migration state such a log may hold (Kafka 4
    replays and writes no such state)."""
    if 8 <= log.level <= 21 and boolean(draw):
        return [record("ZkMigrationStateRecord", zk_migration_state=pick(draw, (0, 1, 2, 3)))]
    return [record("NoOpRecord")]


STEPS: tuple[tuple[Callable[[Draw, LogModel], list], int], ...] = (
    (register_broker, 3), (change_broker, 3), (unregister_broker, 1), (controller, 1), (create_topic, 4),
    (add_partition, 1), (change_partition, 6), (delete_topic, 2), (clear_elr, 1), (config, 3),
    (client_quota, 2), (producer_ids, 1), (acl, 2), (scram, 1), (delegation_token, 1), (feature, 2),
    (begin_transaction, 2), (end_transaction, 3), (no_op, 1),
)
_WEIGHTED = tuple(step for step, weight in STEPS for _ in range(weight))


@st.composite
def _step(draw: Draw, log: LogModel) -> list:
    """One step's records (a strategy of its own, so that Hypothesis shrinks by whole steps)."""
    return pick(draw, _WEIGHTED)(draw, log)


@st.composite
def metadata_logs(draw: Draw, max_steps: int = 24) -> list[list[list[Any]]]:
    """A valid metadata log as commits of batches of records."""
    # half the logs at a level with ELR (KIP-966, 4.0-IV1 on), where the newest records are
    log = LogModel(pick(draw, LEVELS if boolean(draw) else [level for level in LEVELS if level >= MV_ELR]))
    # as a cluster formatted at that level starts: metadata.version, then its default features
    log.features = default_feature_levels(BY_LEVEL[log.level]) if integer(draw, 0, 3) else {}
    commits: list[list[list[Any]]] = [[[record("FeatureLevelRecord", name=name, feature_level=level) for name, level
                                        in [("metadata.version", log.level), *sorted(log.features.items())]]]]
    for _ in range(integer(draw, 0, max_steps)):
        # where the step's records go: the open batch, a new batch, or a new commit
        where = integer(draw, 0, 2)
        if where == 2 and log.transaction is None:
            log.fresh_configs.clear()  # Kafka's loader publishes at the end of a commit
        records = draw(_step(log))
        if not records:
            if where == 2:
                commits.append([[]])  # a commit of nothing: Kafka's loader publishes all the same
            continue
        if where == 2 or log.new_commit:
            log.new_commit = False
            commits.append([records])
        elif where == 1:
            commits[-1].append(records)
        else:
            commits[-1][-1].extend(records)
        if records[-1].record_name == "AbortTransactionRecord":
            commits.append([[]])  # see the module's docstring
    return commits
