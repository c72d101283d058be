"""What ``kraftd cluster workload`` does next: admin requests drawn from a seeded random source.

Pure: a ``ClusterShape`` (read off a Metadata answer, as Kafka's admin client learns the cluster)
and a ``random.Random`` in, an ``Action`` out: the kio requests to send, in order, and the words
of the line to print. Sending and printing are engine.cluster.workload's.

Only topics named with the workload's prefix are ever changed or deleted: an operator's own
topics on the same cluster stay as they are. The actions, as an operator makes them:

- ``create``: a topic of 1-6 partitions, replication factor min(3, brokers);
- ``config``: one topic config set (IncrementalAlterConfigs SET) to a value that differs;
- ``leader``: a partition's replicas reordered so another replica is the preferred leader, then a
  preferred election (AlterPartitionReassignments with the same set, then ElectLeaders), which
  is how ``kafka-reassign-partitions`` and ``kafka-leader-election`` move a leader;
- ``reassign``: a partition moved to a different replica set of the same size (with three
  brokers or fewer every broker holds every replica: it is a leader move instead);
- ``partitions``: one or two partitions added (CreatePartitions), up to ``MAX_PARTITIONS``;
- ``delete``: the oldest workload topic, once ``max_topics`` exist, so the cluster stays small.
"""

from __future__ import annotations

import dataclasses
import datetime
import random
from dataclasses import dataclass, field
from typing import Any

from engine.common.config_resource import ConfigResourceType
from engine.records.kio_codec import ErrorCode, i8, i16, i32, protocol_module

DEFAULT_PREFIX = "workload-"
MAX_PARTITIONS = 12  # partitions of one workload topic, at most
TIMEOUT = datetime.timedelta(seconds=30)  # what the requests tell the controller (Kafka's request.timeout.ms)
PREFERRED = 0  # ElectLeaders election type
RECENT_STEPS = 5  # a partition moved is not moved again within this many moves

# topic configs the workload sets, with the values it picks from (all valid for Kafka)
CONFIG_VALUES: dict[str, tuple[str, ...]] = {
    "retention.ms": ("3600000", "86400000", "604800000", "-1"),
    "cleanup.policy": ("delete", "compact", "compact,delete"),
    "max.message.bytes": ("1048588", "2097152", "524288"),
    "segment.bytes": ("104857600", "1073741824", "536870912"),
    "min.insync.replicas": ("1", "2"),
}

_MD = protocol_module("metadata", 12, "request")
_CT = protocol_module("create_topics", 7, "request")
_DT = protocol_module("delete_topics", 6, "request")
_CP = protocol_module("create_partitions", 3, "request")
_RA = protocol_module("alter_partition_reassignments", 0, "request")
_EL = protocol_module("elect_leaders", 2, "request")
_IAC = protocol_module("incremental_alter_configs", 1, "request")


# ------------------------------------------------------------------ what the cluster looks like
@dataclass(frozen=True)
class PartitionShape:
    index: int
    leader: int
    replicas: tuple[int, ...]


@dataclass(frozen=True)
class ClusterShape:
    """Brokers and topics as a broker's Metadata answer (v12, every topic) tells them."""
    brokers: tuple[int, ...]
    topics: dict[str, tuple[PartitionShape, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, response: Any) -> "ClusterShape":
        topics = {t.name: tuple(sorted((PartitionShape(int(p.partition_index), int(p.leader_id),
                                                        tuple(int(r) for r in p.replica_nodes))
                                        for p in t.partitions), key=lambda p: p.index))
                  for t in response.topics if t.error_code == ErrorCode.none and t.name}
        return cls(tuple(sorted(int(b.node_id) for b in response.brokers)), topics)


def metadata_request() -> Any:
    """Every topic, never auto-created: what Kafka's admin client asks to describe the cluster."""
    return _MD.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                               include_topic_authorized_operations=False)


# ------------------------------------------------------------------ actions
@dataclass(frozen=True)
class Action:
    """One step: ``requests`` sent in order (the next only if the one before succeeded), and the
    line's words: ``kind`` (create, config, ...), ``target`` (topic or topic-partition), ``detail``."""
    kind: str
    target: str
    detail: str
    requests: tuple[Any, ...]


def _topic_number(name: str, prefix: str) -> int:
    tail = name[len(prefix):]
    return int(tail) if tail.isdigit() else -1


class Planner:
    """Draws actions; the same seed and the same shapes give the same actions."""

    def __init__(self, rng: random.Random, *, prefix: str = DEFAULT_PREFIX, max_topics: int = 6):
        self.rng = rng
        self.prefix = prefix
        self.max_topics = max_topics
        self.last_number = 0  # a broker's Metadata may not show the topic created a moment ago yet
        # partitions moved in the last steps, left alone for a while: a broker's Metadata a moment
        # old would make a leader move undo a reassignment just asked for
        self.recent: list[tuple[str, int]] = []

    def ours(self, shape: ClusterShape) -> list[str]:
        """The workload's topics, oldest (lowest number) first."""
        return sorted((n for n in shape.topics if n.startswith(self.prefix)),
                      key=lambda n: (_topic_number(n, self.prefix), n))

    def next_action(self, shape: ClusterShape) -> Action | None:
        """None when nothing can be done (no broker is registered)."""
        if not shape.brokers:
            return None
        topics = self.ours(shape)
        if len(topics) < min(2, self.max_topics):
            return self.create(shape)  # something to watch first
        choices: list[tuple[float, str]] = [(3, "config"), (2, "leader"), (2, "reassign"), (1, "partitions")]
        choices.append((2, "create") if len(topics) < self.max_topics else (2, "delete"))
        kind = self.rng.choices([k for _, k in choices], weights=[w for w, _ in choices])[0]
        action = getattr(self, kind)(shape)
        return action if action is not None else self.config(shape)

    def create(self, shape: ClusterShape) -> Action:
        numbers = [_topic_number(n, self.prefix) for n in shape.topics if n.startswith(self.prefix)]
        self.last_number = max(self.last_number, *numbers, 0) + 1
        name = f"{self.prefix}{self.last_number}"
        partitions = self.rng.randint(1, 6)
        rf = min(3, len(shape.brokers))
        request = _CT.CreateTopicsRequest(topics=(_CT.CreatableTopic(
            name=name, num_partitions=i32(partitions), replication_factor=i16(rf), assignments=(), configs=()),),
            timeout=TIMEOUT, validate_only=False)
        return Action("create", name, f"{_partitions(partitions)}, replication factor {rf}", (request,))

    def delete(self, shape: ClusterShape) -> Action | None:
        topics = self.ours(shape)
        if not topics:
            return None
        name = topics[0]
        request = _DT.DeleteTopicsRequest(topics=(_DT.DeleteTopicState(name=name, topic_id=None),), timeout=TIMEOUT)
        return Action("delete", name, _partitions(len(shape.topics[name])), (request,))

    def config(self, shape: ClusterShape) -> Action | None:
        topics = self.ours(shape)
        if not topics:
            return self.create(shape)
        name = self.rng.choice(topics)
        key = self.rng.choice(sorted(CONFIG_VALUES))
        values = CONFIG_VALUES[key]
        if key == "min.insync.replicas":  # never above the replication factor: the topic would refuse writes
            rf = min((len(p.replicas) for p in shape.topics[name]), default=1)
            values = tuple(v for v in values if int(v) <= rf)
        value = self.rng.choice(values)
        request = _IAC.IncrementalAlterConfigsRequest(resources=(_IAC.AlterConfigsResource(
            resource_type=i8(ConfigResourceType.TOPIC.value), resource_name=name,
            configs=(_IAC.AlterableConfig(name=key, config_operation=i8(0), value=value),)),), validate_only=False)
        return Action("config", name, f"{key}={value}", (request,))

    def _partition(self, shape: ClusterShape, *, min_replicas: int) -> tuple[str, PartitionShape] | None:
        """A partition of a workload topic, not among the last moved ones, with no reassignment
        under way: Metadata lists a reassigning partition's adding and removing replicas too, so
        it has more replicas than its topic's others (reordering those would make them all the
        target)."""
        candidates = []
        for name in self.ours(shape):
            partitions = shape.topics[name]
            rf = min((len(p.replicas) for p in partitions), default=0)
            candidates += [(name, p) for p in partitions
                           if len(p.replicas) == rf >= min_replicas and (name, p.index) not in self.recent]
        if not candidates:
            return None
        name, partition = self.rng.choice(candidates)
        self.recent = [*self.recent, (name, partition.index)][-RECENT_STEPS:]
        return name, partition

    def leader(self, shape: ClusterShape) -> Action | None:
        picked = self._partition(shape, min_replicas=2)
        if picked is None:
            return None
        name, partition = picked
        others = [r for r in partition.replicas if r != partition.leader] or list(partition.replicas[1:])
        new_leader = self.rng.choice(others)
        order = (new_leader, *(r for r in partition.replicas if r != new_leader))
        election = _EL.ElectLeadersRequest(election_type=i8(PREFERRED), topic_partitions=(
            _EL.TopicPartitions(topic=name, partitions=(i32(partition.index),)),), timeout=TIMEOUT)
        return Action("leader", f"{name}-{partition.index}", f"{_leader(partition.leader)} -> {new_leader}",
                      (_reassign(name, partition.index, order), election))

    def reassign(self, shape: ClusterShape) -> Action | None:
        if len(shape.brokers) <= 3:  # its topics have min(3, brokers) replicas: each broker holds all, only the order can change
            return self.leader(shape)
        picked = self._partition(shape, min_replicas=1)
        if picked is None:
            return None
        name, partition = picked
        size = min(len(partition.replicas), len(shape.brokers))
        if len(shape.brokers) <= size:
            return self.leader(shape)
        target = tuple(self.rng.sample(shape.brokers, size))
        while set(target) == set(partition.replicas):
            target = tuple(self.rng.sample(shape.brokers, size))
        return Action("reassign", f"{name}-{partition.index}",
                      f"replicas {_ids(partition.replicas)} -> {_ids(target)}",
                      (_reassign(name, partition.index, target),))

    def partitions(self, shape: ClusterShape) -> Action | None:
        growable = [n for n in self.ours(shape) if len(shape.topics[n]) < MAX_PARTITIONS]
        if not growable:
            return None
        name = self.rng.choice(growable)
        now = len(shape.topics[name])
        count = min(MAX_PARTITIONS, now + self.rng.randint(1, 2))
        request = _CP.CreatePartitionsRequest(topics=(_CP.CreatePartitionsTopic(
            name=name, count=i32(count), assignments=None),), timeout=TIMEOUT, validate_only=False)
        return Action("partitions", name, f"{now} -> {_partitions(count)}", (request,))


def _reassign(name: str, index: int, replicas: tuple[int, ...]) -> Any:
    return _RA.AlterPartitionReassignmentsRequest(timeout=TIMEOUT, topics=(_RA.ReassignableTopic(
        name=name, partitions=(_RA.ReassignablePartition(partition_index=i32(index),
                                                         replicas=tuple(i32(r) for r in replicas)),)),))


def _partitions(count: int) -> str:
    return f"{count} partition{'' if count == 1 else 's'}"


def _ids(replicas: tuple[int, ...]) -> str:
    return "[" + ",".join(map(str, replicas)) + "]"


def _leader(broker_id: int) -> str:
    return "none" if broker_id < 0 else str(broker_id)


# ------------------------------------------------------------------ what came back
def refusals(response: Any) -> list[str]:
    """Every error in an admin answer, in Kafka's spelling with its message
    (``NOT_CONTROLLER: ...``); ELECTION_NOT_NEEDED is no refusal (the leader is already there)."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, tuple):
            for item in value:
                walk(item)
        elif dataclasses.is_dataclass(value):
            code = getattr(value, "error_code", None)
            if code is not None and code not in (ErrorCode.none, ErrorCode.election_not_needed):
                message = getattr(value, "error_message", None)
                found.append(ErrorCode(code).name.upper() + (f": {message}" if message else ""))
            for f in dataclasses.fields(value):
                if f.name not in ("error_code", "error_message"):
                    walk(getattr(value, f.name))

    walk(response)
    return list(dict.fromkeys(found))


__all__ = ["Action", "CONFIG_VALUES", "ClusterShape", "DEFAULT_PREFIX", "MAX_PARTITIONS", "PartitionShape",
           "Planner", "metadata_request", "refusals"]
