"""Who votes: replica keys, voter endpoints, the voter set and its history (KIP-853).

With kraft.version 0 the voters are static (``controller.quorum.voters``) and carry no
directory id. With kraft.version 1 they live in the log as VotersRecord control records
(and in snapshots); the history keeps each set with the offset it was written at, so a
follower that truncates its log also drops voter sets that were never committed.
"""

from __future__ import annotations

import uuid
from bisect import bisect_right
from dataclasses import dataclass, field

from engine.common.errors import ConfigError, MetadataError
from engine.common.server_config import parse_list
from engine.records.kio_codec import KRaftVersionFeature, VotersEndpoint, VotersRecord, VotersVoter, i16, i32, u16

Address = tuple[str, int]


@dataclass(frozen=True, slots=True, order=True)
class ReplicaKey:
    """A replica: node id plus, for kraft.version 1, the id of its metadata log directory."""

    node_id: int
    directory_id: uuid.UUID | None = None

    def __str__(self) -> str:
        from engine.common.kafka_uuid import uuid_to_kafka

        return f"{self.node_id}" if self.directory_id is None else f"{self.node_id}/{uuid_to_kafka(self.directory_id)}"


@dataclass(frozen=True, slots=True)
class VoterNode:
    key: ReplicaKey
    endpoints: tuple[tuple[str, Address], ...]  # (listener name, (host, port)), in listener order
    min_kraft_version: int = 0
    max_kraft_version: int = 1

    def endpoint(self, listener_name: str) -> Address | None:
        for name, address in self.endpoints:
            if name == listener_name:
                return address
        return None


@dataclass(frozen=True, slots=True)
class VoterSet:
    voters: tuple[VoterNode, ...] = ()  # sorted by node id

    @classmethod
    def of(cls, nodes) -> "VoterSet":
        nodes = sorted(nodes, key=lambda n: n.key.node_id)
        ids = [n.key.node_id for n in nodes]
        if len(set(ids)) != len(ids):
            raise ValueError(f"voter set names a node id twice: {ids}")
        return cls(tuple(nodes))

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(n.key.node_id for n in self.voters)

    @property
    def keys(self) -> tuple[ReplicaKey, ...]:
        return tuple(n.key for n in self.voters)

    @property
    def majority_size(self) -> int:
        return len(self.voters) // 2 + 1

    def node(self, node_id: int) -> VoterNode | None:
        for n in self.voters:
            if n.key.node_id == node_id:
                return n
        return None

    def is_voter(self, key: ReplicaKey) -> bool:
        """A voter with this id, and the same directory when the voter has one."""
        n = self.node(key.node_id)
        if n is None:
            return False
        # Kafka's rule: a voter with a directory id is that directory only; a static voter
        # (no directory id) is whoever has its id.
        return n.key.directory_id is None or n.key.directory_id == key.directory_id

    def is_only_voter(self, key: ReplicaKey) -> bool:
        return len(self.voters) == 1 and self.is_voter(key)

    def with_voter(self, node: VoterNode) -> "VoterSet":
        if self.node(node.key.node_id) is not None:
            raise ValueError(f"node {node.key.node_id} is already a voter")
        return VoterSet.of(self.voters + (node,))

    def without_voter(self, key: ReplicaKey) -> "VoterSet":
        if not self.is_voter(key):
            raise ValueError(f"{key} is not a voter")
        return VoterSet(tuple(n for n in self.voters if n.key.node_id != key.node_id))

    def with_endpoints(self, key: ReplicaKey, endpoints, min_kraft: int, max_kraft: int) -> "VoterSet":
        return VoterSet(tuple(VoterNode(n.key, tuple(endpoints), min_kraft, max_kraft)
                              if n.key.node_id == key.node_id else n for n in self.voters))

    def has_overlapping_majority(self, other: "VoterSet") -> bool:
        """KIP-853's safety rule, as Kafka's VoterSet checks it: at most one voter gone and at
        most one voter new (a replica key counts: a voter on a new disk is a new voter)."""
        mine, theirs = set(self.keys), set(other.keys)
        return len(mine - theirs) <= 1 and len(theirs - mine) <= 1

    # -- the VotersRecord form ----------------------------------------------------

    @classmethod
    def from_voters_record(cls, record: VotersRecord) -> "VoterSet":
        return cls.of(VoterNode(
            ReplicaKey(int(v.voter_id), v.voter_directory_id),
            tuple((e.name, (e.host, int(e.port))) for e in v.endpoints),
            int(v.k_raft_version_feature.min_supported_version),
            int(v.k_raft_version_feature.max_supported_version),
        ) for v in record.voters)

    def to_voters_record(self) -> VotersRecord:
        return VotersRecord(version=i16(0), voters=tuple(
            VotersVoter(
                voter_id=i32(n.key.node_id), voter_directory_id=n.key.directory_id,
                endpoints=tuple(VotersEndpoint(name=name, host=host, port=u16(port))
                                for name, (host, port) in n.endpoints),
                k_raft_version_feature=KRaftVersionFeature(min_supported_version=i16(n.min_kraft_version),
                                                           max_supported_version=i16(n.max_kraft_version)))
            for n in self.voters))


def parse_quorum_voters(text: str, listener_name: str) -> VoterSet:
    """``controller.quorum.voters``: ``1@host:9093,2@[::1]:9093`` (static, kraft.version 0)."""
    nodes = []
    for item in parse_list(text):
        node, at, address = item.partition("@")
        host, _, port = address.rpartition(":")
        if not at or not node.strip().isdigit() or not port.isdigit() or not host:
            raise ConfigError(f"bad controller.quorum.voters entry {item!r} (expected ID@HOST:PORT)")
        _check_port(int(port), item, "controller.quorum.voters")
        nodes.append(VoterNode(ReplicaKey(int(node)), ((listener_name, (host.strip("[]"), int(port))),)))
    try:
        return VoterSet.of(nodes)
    except ValueError as e:
        raise ConfigError(f"controller.quorum.voters: {e}") from None


def parse_bootstrap_servers(text: str) -> tuple[Address, ...]:
    """``controller.quorum.bootstrap.servers``: ``host:9093,host:9094``."""
    out = []
    for item in parse_list(text):
        host, _, port = item.rpartition(":")
        if not host or not port.isdigit():
            raise ConfigError(f"bad controller.quorum.bootstrap.servers entry {item!r} (expected HOST:PORT)")
        _check_port(int(port), item, "controller.quorum.bootstrap.servers")
        out.append((host.strip("[]"), int(port)))
    return tuple(out)


def _check_port(port: int, item: str, key: str) -> None:
    if not 0 < port <= 65535:
        raise ConfigError(f"bad {key} entry {item!r}: port {port} out of range")


class VoterSetChangeError(MetadataError):
    """A voter set in the log without an overlapping majority with the one before it: the log
    was not written by a correct leader, and following it could elect two leaders at once."""


def _names(voters: VoterSet) -> str:
    return "{" + ", ".join(str(k) for k in voters.keys) + "}"


@dataclass
class VoterSetHistory:
    """Voter sets by the offset of the VotersRecord that set them.

    ``static`` is the kraft.version 0 set, used while the log holds no VotersRecord.
    """

    static: VoterSet
    offsets: list[int] = field(default_factory=list)
    sets: list[VoterSet] = field(default_factory=list)

    def add(self, offset: int, voters: VoterSet) -> None:
        if self.offsets and offset <= self.offsets[-1]:
            raise ValueError(f"voter set at offset {offset} is not after {self.offsets[-1]}")
        # Kafka's VoterSetHistory.addAt: a set from the log must overlap the last one from the log.
        # The bootstrap checkpoint's (offset -1) comes from configuration and is not compared.
        if self.offsets and self.offsets[-1] >= 0 and not self.sets[-1].has_overlapping_majority(voters):
            raise VoterSetChangeError(
                f"the voter set {_names(voters)} at offset {offset} has no overlapping majority with "
                f"{_names(self.sets[-1])} at offset {self.offsets[-1]} (at most one voter may come and one go)")
        self.offsets.append(offset)
        self.sets.append(voters)

    def latest(self) -> VoterSet:
        return self.sets[-1] if self.sets else self.static

    def latest_offset(self) -> int:
        return self.offsets[-1] if self.offsets else -1

    def value_at(self, offset: int) -> VoterSet:
        """The set in force at ``offset`` (the newest written at or before it)."""
        i = bisect_right(self.offsets, offset)
        return self.sets[i - 1] if i else self.static

    def truncate_from(self, end_offset: int) -> None:
        """The log was cut to end at ``end_offset``: forget sets written at or after it."""
        i = bisect_right(self.offsets, end_offset - 1)
        del self.offsets[i:], self.sets[i:]

    def clear(self) -> None:
        self.offsets.clear()
        self.sets.clear()
