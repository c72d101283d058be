"""The metadata image: the whole cluster state at one offset, immutable.

One ``MetadataImage``, shared by the controller, the brokers, the shell and the
dashboard, changed only by replaying records through a ``MetadataDelta``
(engine/image/metadata_delta.py), which yields the next image and reuses every part it
did not touch. Mappings are read-only views; nothing here is mutated after build.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from itertools import islice
from types import MappingProxyType
from typing import Any, Iterator, Mapping, NamedTuple, Sequence

from engine.image.partition_registration import PartitionRegistration

EMPTY_MAP: Mapping = MappingProxyType({})


def _empty() -> Mapping:
    return EMPTY_MAP

# ConfigRecord resource types (Kafka's ConfigResource.Type ids)
CONFIG_RESOURCE_TYPES = {2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}


class Endpoint(NamedTuple):
    name: str
    host: str
    port: int
    security_protocol: int


class FeatureRange(NamedTuple):
    name: str
    min_version: int
    max_version: int


class BrokerRegistration(NamedTuple):
    id: int
    epoch: int
    incarnation_id: uuid.UUID | None
    endpoints: tuple[Endpoint, ...]
    supported_features: tuple[FeatureRange, ...]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    is_migrating_zk_broker: bool = False
    directories: tuple[uuid.UUID | None, ...] = ()
    # log directories cordoned (KIP-1066, Kafka 4.3+): no new replica is placed on them.
    # None until the broker or controller says (a record before v4 of RegisterBrokerRecord).
    cordoned_directories: tuple[uuid.UUID | None, ...] | None = None

    @property
    def state(self) -> str:
        """active, fenced or controlled-shutdown: how an operator names it. Fenced wins: a
        broker that finished its controlled shutdown is fenced, and serves nothing."""
        if self.fenced:
            return "fenced"
        return "controlled-shutdown" if self.in_controlled_shutdown else "active"


class ControllerRegistration(NamedTuple):
    id: int
    incarnation_id: uuid.UUID | None
    zk_migration_ready: bool
    endpoints: tuple[Endpoint, ...]
    supported_features: tuple[FeatureRange, ...]


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration] = field(default_factory=_empty)
    # engine.image.topic_index's per-broker index of this topic, built on first use. A topic
    # untouched by a delta is the same object in the next image, so the index lives on.
    _index: Any = field(default=None, init=False, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class TopicsImage:
    by_id: Mapping[uuid.UUID, TopicImage] = field(default_factory=_empty)
    by_name: Mapping[str, uuid.UUID] = field(default_factory=_empty)

    def topic(self, name: str) -> TopicImage | None:
        topic_id = self.by_name.get(name)
        return None if topic_id is None else self.by_id[topic_id]


@dataclass(frozen=True, slots=True)
class ClusterImage:
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=_empty)
    controllers: Mapping[int, ControllerRegistration] = field(default_factory=_empty)


class LeaderChange(NamedTuple):
    """A LeaderChangeMessage as it stands in the log."""

    offset: int
    epoch: int
    timestamp_ms: int
    leader_id: int
    voters: tuple[int, ...]
    granting_voters: tuple[int, ...]


# Images are values any thread may hold: two deltas appending to the same view at once must not
# both extend its backing list.
_APPEND_LOCK = threading.Lock()


class LeaderChanges(Sequence):
    """The leader changes of the log, oldest first: an immutable sequence that appends in O(1).

    Images share one backing list and each keeps how much of it is its own, so the next
    image costs one append, not a copy of the whole history (a log may hold thousands of
    elections, and the dashboard keeps many images). Appending to a view that is not the
    newest (a replay from an older image) reuses the next element when it is the same change,
    else starts a new list from its own prefix; nothing a view holds ever changes."""

    __slots__ = ("_items", "_length")

    def __init__(self, changes: Sequence[LeaderChange] = ()):
        self._items = list(changes)
        self._length = len(self._items)

    def appended(self, change: LeaderChange) -> "LeaderChanges":
        items, length = self._items, self._length
        with _APPEND_LOCK:
            if not length:
                items = [change]
            elif len(items) == length:
                items.append(change)
            elif items[length] != change:
                items = items[:length] + [change]
        view = LeaderChanges.__new__(LeaderChanges)
        view._items, view._length = items, length + 1
        return view

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self._items[:self._length][index])
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("leader change index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[LeaderChange]:
        return islice(self._items, self._length)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (LeaderChanges, tuple, list)):
            return NotImplemented
        return len(other) == self._length and all(a == b for a, b in zip(self, other))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"LeaderChanges({list(self)!r})"

    def __reduce__(self):
        return LeaderChanges, (tuple(self),)


NO_LEADER_CHANGES = LeaderChanges()


class Voter(NamedTuple):
    id: int
    directory_id: uuid.UUID | None
    endpoints: tuple[tuple[str, str, int], ...]  # (listener name, host, port)
    kraft_version_range: tuple[int, int]


@dataclass(frozen=True, slots=True)
class QuorumImage:
    """The quorum as the log tells it: leader changes, kraft.version, voters (KIP-853)."""

    leader_changes: LeaderChanges = NO_LEADER_CHANGES
    kraft_version: int | None = None  # None: no KRaftVersionRecord seen (kraft.version 0)
    voters: tuple[Voter, ...] | None = None  # None: static voters, not in the log

    @property
    def leader(self) -> LeaderChange | None:
        return self.leader_changes[-1] if self.leader_changes else None


class Provenance(NamedTuple):
    """Where the image stands in the log."""

    last_offset: int = -1
    last_epoch: int = -1
    last_timestamp_ms: int = -1


@dataclass(frozen=True, slots=True)
class MetadataImage:
    provenance: Provenance = Provenance()
    features: Mapping[str, int] = field(default_factory=_empty)  # finalized feature levels, metadata.version included
    zk_migration_state: int | None = None
    cluster: ClusterImage = field(default_factory=ClusterImage)
    topics: TopicsImage = field(default_factory=TopicsImage)
    configs: Mapping[tuple[int, str], Mapping[str, str]] = field(default_factory=_empty)  # (resource type, name) -> key -> value
    client_quotas: Mapping[tuple[tuple[str, str | None], ...], Mapping[str, float]] = field(default_factory=_empty)
    acls: Mapping[uuid.UUID, Any] = field(default_factory=_empty)  # id -> AccessControlEntryRecord
    scram: Mapping[tuple[int, str], Any] = field(default_factory=_empty)  # (mechanism, user) -> UserScramCredentialRecord
    delegation_tokens: Mapping[str, Any] = field(default_factory=_empty)  # token id -> DelegationTokenRecord
    next_producer_id: int = -1
    quorum: QuorumImage = field(default_factory=QuorumImage)

    @property
    def metadata_version(self) -> int | None:
        return self.features.get("metadata.version")

    @property
    def partition_count(self) -> int:
        return sum(len(t.partitions) for t in self.topics.by_id.values())


EMPTY_IMAGE = MetadataImage()


def min_isr(image: MetadataImage, topic: str) -> int:
    """min.insync.replicas of a topic: its own config, else the cluster default, else Kafka's default of 1.

    Config resource types as Kafka numbers them: 2 a topic, 4 a broker (name "" for the cluster default)."""
    for resource in ((2, topic), (4, "")):
        value = image.configs.get(resource, {}).get("min.insync.replicas")
        if value is not None and value.isdigit():
            return int(value)
    return 1
