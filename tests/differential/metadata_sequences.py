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
from dataclasses import dataclass, field
from typing import Any, Callable

from hypothesis import strategies as st

from engine.common.directory_id import LOST, UNASSIGNED
from engine.image.metadata_version import BY_LEVEL, record_versions
from engine.records import metadata_records as m

_CLASSES = {(cls.record_name, cls.__version__): cls for cls in m.RECORD_CLASSES.values()}
_API_KEYS = {cls.record_name: cls.api_key for cls in m.RECORD_CLASSES.values()}
ELR_FEATURE = "eligible.leader.replicas.version"
MV_SCRAM, MV_TRANSACTIONS, MV_TOKENS, MV_CONTROLLERS, MV_DIRS, MV_ELR, MV_CORDONED = 11, 13, 14, 15, 17, 23, 30
# other features and the metadata.version each needs (Kafka's Feature enum's bootstrap levels)
_FEATURES = {"group.version": (22, (1,)), "transaction.version": (24, (1, 2)), ELR_FEATURE: (MV_ELR, (1,)),
             "share.version": (28, (1,)), "streams.version": (29, (1,))}
_TOPIC_NAMES = ("orders", "payments", "a", "b.c")
_CONFIG_KEYS = ("retention.ms", "cleanup.policy", "min.insync.replicas", "segment.bytes")
_BROKERS = range(5)
# log directories: Kafka sorts a broker's as signed numbers, so one has its top bit set; None is MIGRATING
_DIRS = (*(uuid.UUID(int=(7 << 64) + n) for n in range(3)), uuid.UUID(int=(1 << 127) + 9), UNASSIGNED, LOST, None)


# the levels drawn: 3.3-IV3 up to the newest production level of the newest Kafka we test
LEVELS = tuple(level for level in BY_LEVEL if level <= 33)


@dataclass(frozen=True)
class KafkaKnows:
    """What the Kafka under test knows: its production metadata.version levels (a pre-release
    level of an older Kafka is not the released one) and the highest version of each record."""

    latest_level: int
    record_versions: dict[int, int]  # api key -> highest version

    @classmethod
    def ask(cls, kafka_classes: Any) -> "KafkaKnows":
        told = kafka_classes.call("ImageReplay", describe=True)
        return cls(told["latest_production"], {int(k): v for k, v in told["records"].items()})

    def fits(self, commits: list[list[list[Any]]]) -> bool:
        """Whether every record of the log is one this Kafka reads, at a level it has released."""
        for commit in commits:
            for batch in commit:
                for rec in batch:
                    if self.record_versions.get(rec.api_key, -1) < rec.__version__:
                        return False
                    if rec.record_name == "FeatureLevelRecord" and rec.name == "metadata.version" \
                            and rec.feature_level > self.latest_level:
                        return False
        return True


def record(type_name: str, version: int = 0, /, **fields: Any) -> Any:
    """A metadata record by Kafka's type name and version."""
    return _CLASSES[(type_name, version)](**fields)


@dataclass
class Partition:
    replicas: list[int]
    isr: list[int]
    leader: int


@dataclass
class LogModel:
    """What the log has said so far, as far as the next valid record depends on it."""

    level: int
    features: dict[str, int] = field(default_factory=dict)
    brokers: dict[int, dict] = field(default_factory=dict)  # id -> epoch, fenced
    controllers: set[int] = field(default_factory=set)
    topics: dict[str, uuid.UUID] = field(default_factory=dict)
    partitions: dict[uuid.UUID, dict[int, Partition]] = field(default_factory=dict)
    configs: dict[tuple[int, str], set[str]] = field(default_factory=dict)
    acls: list[uuid.UUID] = field(default_factory=list)
    scram: list[tuple[int, str]] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    next_producer_id: int = 0
    counter: int = 0  # for ids never seen before
    transaction: "LogModel | None" = None  # the model as it was at BeginTransactionRecord
    # topics given configs since Kafka's loader last published an image (see delete_topic)
    fresh_configs: set[str] = field(default_factory=set)
    new_commit: bool = False  # the next records must begin a commit

    def fresh(self) -> int:
        self.counter += 1
        return self.counter

    @property
    def versions(self) -> Any:
        return record_versions(self.level)

    @property
    def elr_enabled(self) -> bool:
        return self.features.get(ELR_FEATURE, 0) > 0


Draw = Callable[[st.SearchStrategy], Any]
# Hypothesis builds and checks a strategy each time one is made: the draws below share a few
# integer strategies instead (a pick is an index, which shrinks to the first item)
_INTEGERS: dict[tuple[int, int], st.SearchStrategy[int]] = {}


def _int(draw: Draw, low: int, high: int) -> int:
    strategy = _INTEGERS.get((low, high))
    if strategy is None:
        strategy = _INTEGERS[(low, high)] = st.integers(low, high)
    return draw(strategy)


def _bool(draw: Draw) -> bool:
    return _int(draw, 0, 1) == 1


def _pick(draw: Draw, items: Any) -> Any:
    return items[_int(draw, 0, len(items) - 1)]


def _some(draw: Draw, items: Any, min_size: int, max_size: int) -> list:
    """Distinct items, in the order drawn."""
    pool = list(items)
    return [pool.pop(_int(draw, 0, len(pool) - 1)) for _ in range(_int(draw, min_size, min(max_size, len(pool))))]


def _many(draw: Draw, items: Any, min_size: int, max_size: int) -> list:
    return [_pick(draw, items) for _ in range(_int(draw, min_size, max_size))]


def _subset(draw: Draw, items: list[int], min_size: int = 0) -> list[int]:
    if not items:
        return []
    return _some(draw, items, min_size, len(items))


def _dirs(draw: Draw, count: int) -> tuple:
    return tuple(_many(draw, _DIRS, count, count))


# -- brokers and controllers -----------------------------------------------------------------

def register_broker(draw: Draw, log: LogModel) -> list:
    broker_id = _pick(draw, _BROKERS)
    epoch = log.fresh() * 10
    version = log.versions.register_broker
    cls = _CLASSES[("RegisterBrokerRecord", version)]
    endpoint, feature = (getattr(m, f"RegisterBrokerRecordV{version}Broker{kind}") for kind in ("Endpoint", "Feature"))
    listeners = _some(draw, ("PLAINTEXT", "SSL", "INTERNAL"), 1, 3)
    fields = dict(
        broker_id=broker_id, incarnation_id=uuid.UUID(int=(5 << 64) + log.fresh()), broker_epoch=epoch,
        end_points=tuple(endpoint(name=n, host=f"b{broker_id}", port=9092 + i, security_protocol=i % 2)
                         for i, n in enumerate(listeners)),
        features=tuple(feature(name=n, min_supported_version=lo, max_supported_version=hi) for n, lo, hi in
                       _some(draw, (("metadata.version", 7, log.level), ("group.version", 0, 1),
                                                      ("kraft.version", 0, 1)), 0, 3)),
        rack=_pick(draw, (None, "rack-a", "")), fenced=_bool(draw), in_controlled_shutdown=False)
    if version >= 2:
        fields["is_migrating_zk_broker"] = False
    if version >= 3:
        fields["log_dirs"] = tuple(_some(draw, _DIRS[:4], 1, 3))
    if version >= 4:
        fields["cordoned_log_dirs"] = _pick(draw, (None, (), fields["log_dirs"][:1]))
    log.brokers[broker_id] = {"epoch": epoch, "fenced": fields["fenced"], "dirs": fields.get("log_dirs", ())}
    return [cls(**fields)]


def change_broker(draw: Draw, log: LogModel) -> list:
    """Fence, unfence, controlled shutdown or new log directories: BrokerRegistrationChangeRecord
    as controllers write it, or the older Fence/UnfenceBrokerRecord Kafka still replays."""
    if not log.brokers:
        return register_broker(draw, log)
    broker_id = _pick(draw, sorted(log.brokers))
    broker = log.brokers[broker_id]
    if _int(draw, 0, 4) == 0:
        broker["fenced"] = not broker["fenced"]
        name = "FenceBrokerRecord" if broker["fenced"] else "UnfenceBrokerRecord"
        return [record(name, id=broker_id, epoch=broker["epoch"])]
    version = log.versions.broker_registration_change
    fields: dict[str, Any] = dict(broker_id=broker_id, broker_epoch=broker["epoch"],
                                  fenced=_pick(draw, (-1, 0, 1)))
    if version >= 1:
        fields["in_controlled_shutdown"] = _pick(draw, (0, 0, 1))
    if version >= 2:
        fields["log_dirs"] = _pick(draw, ((), _DIRS[1:3]))
    if version >= 3:
        fields["cordoned_log_dirs"] = _pick(draw, (None, (), _DIRS[1:2]))
    return [record("BrokerRegistrationChangeRecord", version, **fields)]


def unregister_broker(draw: Draw, log: LogModel) -> list:
    if not log.brokers:
        return []
    broker_id = _pick(draw, sorted(log.brokers))
    return [record("UnregisterBrokerRecord", broker_id=broker_id, broker_epoch=log.brokers.pop(broker_id)["epoch"])]


def controller(draw: Draw, log: LogModel) -> list:
    if log.level < MV_CONTROLLERS:
        return []
    controller_id = _pick(draw, (3000, 3001, 3002))
    if controller_id in log.controllers and _bool(draw):
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
    replicas = _some(draw, _BROKERS, 1, 3)
    isr = _subset(draw, replicas, 1)
    leader = _pick(draw, isr + [-1])
    version = log.versions.partition
    fields: dict[str, Any] = dict(partition_id=partition_id, topic_id=topic_id, replicas=tuple(replicas),
                                  isr=tuple(isr), removing_replicas=(), adding_replicas=(), leader=leader,
                                  leader_recovery_state=0, leader_epoch=_pick(draw, (0, 0, 3)),
                                  partition_epoch=_pick(draw, (0, 0, 5)))
    if version >= 1:
        fields["directories"] = _dirs(draw, len(replicas))
    if version >= 2 and log.elr_enabled:
        fields["eligible_leader_replicas"] = _pick(draw, (None, ()))
    log.partitions[topic_id][partition_id] = Partition(replicas, isr, leader)
    return record("PartitionRecord", version, **fields)


def create_topic(draw: Draw, log: LogModel) -> list:
    free = [n for n in _TOPIC_NAMES if n not in log.topics]
    if not free:
        return delete_topic(draw, log)
    name = _pick(draw, free)
    topic_id = log.topics[name] = uuid.UUID(int=(1 << 64) + log.fresh())
    log.partitions[topic_id] = {}
    records = [record("TopicRecord", name=name, topic_id=topic_id)]
    records += [_partition_record(draw, log, topic_id, p) for p in range(_int(draw, 0, 3))]
    if _bool(draw):
        records += [_config(log, (2, name), _pick(draw, _CONFIG_KEYS), "1")]
    return records


def add_partition(draw: Draw, log: LogModel) -> list:
    if not log.topics:
        return create_topic(draw, log)
    topic_id = log.topics[_pick(draw, sorted(log.topics))]
    return [_partition_record(draw, log, topic_id, len(log.partitions[topic_id]))]


def delete_topic(draw: Draw, log: LogModel) -> list:
    """RemoveTopicRecord. Not for a topic given configs in the delta Kafka's loader is building:
    Kafka's ConfigurationsDelta.replay(RemoveTopicRecord) deletes only the configs of the delta's
    base image, so those configs outlive the topic (and pass to one made again under its name).
    Ours delete them; test_kafka_keeps_configs_given_in_the_delta_of_the_deletion pins the
    difference. The deletion waits for a new commit here (inside a transaction, there is none)."""
    if not log.topics:
        return []
    name = _pick(draw, sorted(log.topics))
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
    topic_id, partition_id = _pick(draw, sorted(candidates))
    part = log.partitions[topic_id][partition_id]
    version = log.versions.partition_change
    fields: dict[str, Any] = dict(partition_id=partition_id, topic_id=topic_id)
    kinds = _some(draw, ("leader", "isr", "reassign", "dirs", "recovery", "elr"), 1, 3)
    if "reassign" in kinds:
        target = _some(draw, _BROKERS, 1, 3)
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
        isr = [b for b in (_subset(draw, part.replicas, 1) if "isr" in kinds else part.isr) if b in part.replicas]
        leader = _pick(draw, isr + [-1]) if "leader" in kinds or part.leader not in isr + [-1] \
            else part.leader
        if "isr" in kinds:
            fields["isr"] = tuple(isr)
        if leader != part.leader or "leader" in kinds:
            fields["leader"] = leader
        part.isr, part.leader = isr, leader
    if "recovery" in kinds:
        fields["leader_recovery_state"] = _pick(draw, (0, 1))
    if "elr" in kinds and version >= 2 and log.elr_enabled:
        outside = [b for b in part.replicas if b not in part.isr]
        fields["eligible_leader_replicas"] = tuple(_subset(draw, outside))
        fields["last_known_elr"] = tuple(_subset(draw, outside))
    return [record("PartitionChangeRecord", version, **fields)]


def clear_elr(draw: Draw, log: LogModel) -> list:
    if not log.elr_enabled:
        return []
    return [record("ClearElrRecord", topic_name=_pick(draw, ["", *sorted(log.topics)]))]


# -- configs, quotas, producer ids, security ----------------------------------------------------

def _config(log: LogModel, resource: tuple[int, str], key: str, value: str | None) -> Any:
    keys = log.configs.setdefault(resource, set())
    if resource[0] == 2:
        log.fresh_configs.add(resource[1])
    (keys.add if value is not None else keys.discard)(key)
    return record("ConfigRecord", resource_type=resource[0], resource_name=resource[1], name=key, value=value)


def config(draw: Draw, log: LogModel) -> list:
    resources = [(4, ""), (4, "1"), (16, "metrics-a")] + [(2, name) for name in log.topics]
    resource = _pick(draw, resources)
    key = _pick(draw, _CONFIG_KEYS)
    value = _pick(draw, (None, "1", "86400000", "compact", ""))
    return [_config(log, resource, key, value)]


_QUOTA_ENTITIES = ((("user", "alice"),), (("user", None),), (("client-id", "app"),),
                   (("user", "alice"), ("client-id", "app")), (("client-id", "app"), ("user", "bob")),
                   (("ip", "10.0.0.1"),), (("ip", None),))


def client_quota(draw: Draw, log: LogModel) -> list:
    entity = _pick(draw, _QUOTA_ENTITIES)
    is_ip = entity[0][0] == "ip"
    key = "connection_creation_rate" if is_ip else _pick(draw, 
        ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"))
    return [record("ClientQuotaRecord", key=key, remove=_int(draw, 0, 3) == 0,
                   value=_pick(draw, (1024.0, 0.5, 1e9, 3.0)),
                   entity=tuple(m.ClientQuotaRecordV0EntityData(entity_type=t, entity_name=n) for t, n in entity))]


def producer_ids(draw: Draw, log: LogModel) -> list:
    log.next_producer_id += 1000
    return [record("ProducerIdsRecord", broker_id=_pick(draw, _BROKERS), broker_epoch=10,
                   next_producer_id=log.next_producer_id)]


def acl(draw: Draw, log: LogModel) -> list:
    if log.acls and _int(draw, 0, 2) == 0:
        acl_id = log.acls.pop(_int(draw, 0, len(log.acls) - 1))
        return [record("RemoveAccessControlEntryRecord", id=acl_id)]
    acl_id = uuid.UUID(int=(2 << 64) + log.fresh())
    log.acls.append(acl_id)
    return [record("AccessControlEntryRecord", id=acl_id, resource_type=_pick(draw, (2, 3, 4, 5)),
                   resource_name=_pick(draw, ("orders", "kafka-cluster", "*", "app-")),
                   pattern_type=_pick(draw, (3, 4)),
                   principal=_pick(draw, ("User:alice", "User:*", "User:bob")),
                   host=_pick(draw, ("*", "10.0.0.1")), operation=_int(draw, 2, 12),
                   permission_type=_pick(draw, (2, 3)))]


def scram(draw: Draw, log: LogModel) -> list:
    if log.level < MV_SCRAM:
        return []
    if log.scram and _int(draw, 0, 2) == 0:
        mechanism, name = log.scram.pop(_int(draw, 0, len(log.scram) - 1))
        return [record("RemoveUserScramCredentialRecord", name=name, mechanism=mechanism)]
    key = (_pick(draw, (1, 2)), _pick(draw, ("alice", "bob")))
    if key not in log.scram:
        log.scram.append(key)
    n = log.fresh()
    return [record("UserScramCredentialRecord", name=key[1], mechanism=key[0], salt=bytes([n]) * 8,
                   stored_key=bytes([n, 1]) * 16, server_key=bytes([n, 2]) * 16,
                   iterations=_pick(draw, (4096, 8192)))]


def delegation_token(draw: Draw, log: LogModel) -> list:
    if log.level < MV_TOKENS:
        return []
    if log.tokens and _int(draw, 0, 2) == 0:
        return [record("RemoveDelegationTokenRecord", token_id=log.tokens.pop(0))]
    renewal = bool(log.tokens) and _bool(draw)
    token_id = log.tokens[-1] if renewal else f"token-{log.fresh()}"
    if not renewal:
        log.tokens.append(token_id)
    issued = 1_700_000_000_000
    return [record("DelegationTokenRecord", owner="User:alice", requester="User:alice",
                   renewers=tuple(_some(draw, ("User:bob", "User:carol"), 0, 2)),
                   issue_timestamp=issued, max_timestamp=issued + 7 * 86_400_000,
                   expiration_timestamp=issued + _int(draw, 1, 7) * 86_400_000, token_id=token_id)]


# -- features and transactions ------------------------------------------------------------------

def feature(draw: Draw, log: LogModel) -> list:
    """A feature's level set or cleared (0), or metadata.version upgraded. Turning ELR off
    clears every ELR, as Kafka's controller does in the same batch."""
    higher = [level for level in LEVELS if level > log.level]
    allowed = [name for name, (mv, _) in _FEATURES.items() if log.level >= mv]
    if higher and (not allowed or _int(draw, 0, 3) == 0):
        log.level = _pick(draw, higher[:3])  # an upgrade by a few levels, as releases go
        return [record("FeatureLevelRecord", name="metadata.version", feature_level=log.level)]
    if not allowed:
        return []
    name = _pick(draw, allowed)
    level = _pick(draw, (0, *_FEATURES[name][1]))
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
    return [record("BeginTransactionRecord", name=_pick(draw, ("", "create topics")))]


def end_transaction(draw: Draw, log: LogModel) -> list:
    """Commit or abort the open transaction; an abort puts the model back as it was at the Begin."""
    saved = log.transaction
    if saved is None:
        return []
    log.transaction = None
    if _bool(draw):
        return [record("EndTransactionRecord")]
    counter = log.counter  # ids stay fresh across the abort
    log.__dict__.update(saved.__dict__)
    log.counter = counter
    return [record("AbortTransactionRecord", reason=_pick(draw, (None, "controller failover")))]


def no_op(draw: Draw, log: LogModel) -> list:
    return [record("NoOpRecord")]


STEPS: tuple[tuple[Callable[[Draw, LogModel], list], int], ...] = (
    (register_broker, 3), (change_broker, 3), (unregister_broker, 1), (controller, 1), (create_topic, 4),
    (add_partition, 1), (change_partition, 6), (delete_topic, 2), (clear_elr, 1), (config, 3),
    (client_quota, 2), (producer_ids, 1), (acl, 2), (scram, 1), (delegation_token, 1), (feature, 2),
    (begin_transaction, 1), (end_transaction, 2), (no_op, 1),
)
_WEIGHTED = tuple(step for step, weight in STEPS for _ in range(weight))


@st.composite
def _step(draw: Draw, log: LogModel) -> list:
    """One step's records (a strategy of its own, so that Hypothesis shrinks by whole steps)."""
    return _pick(draw, _WEIGHTED)(draw, log)


@st.composite
def metadata_logs(draw: Draw, max_steps: int = 24) -> list[list[list[Any]]]:
    """A valid metadata log as commits of batches of records."""
    log = LogModel(_pick(draw, LEVELS))
    commits: list[list[list[Any]]] = [[[record("FeatureLevelRecord", name="metadata.version",
                                               feature_level=log.level)]]]
    for _ in range(_int(draw, 0, max_steps)):
        # where the step's records go: the open batch, a new batch, or a new commit
        where = _int(draw, 0, 2)
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
