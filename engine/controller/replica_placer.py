"""Where a new partition's replicas go: Kafka's striped, rack-aware placement.

Facts from Kafka 4.1.2's StripedReplicaPlacer (read off the class and checked with a seeded
Random in jshell), written here in our own form:

- The candidates are the registered brokers not in controlled shutdown ("usable"); fenced
  ones count but are used only when nothing unfenced is left, and never lead.
- Racks are walked in name order (no rack first), each rack's brokers in id order, from random
  starting offsets; every partition starts one rack further on and one broker further within
  each rack, so leaders rotate over racks and brokers.
- A partition's first replica (its leader) is the next unfenced broker, found by walking the
  racks; the others take one broker from each rack in turn (an unfenced one while the rack
  has any left for this partition), skipping the leader's rack once, so replicas spread over
  as many racks as there are (replication factor ≤ racks: every replica in its own rack).
- After as many partitions as there are unfenced brokers, the rack order and each rack's
  brokers are shuffled, so the same sets are not repeated (not with a single unfenced broker).
- Refusals, in this order: a replication factor ≤ 0; no unfenced broker; more replicas than
  usable brokers.

The draws are java.util.Random's (engine.common.java_random), made in Kafka's order: each rack's
fenced then unfenced start offset, racks in the order Java's HashMap of rack names walks them,
then the rack offset; a reshuffle shuffles the rack names, then each rack (HashMap order again),
fenced then unfenced. So with a seed, the placements are Kafka's own, broker for broker
(tests/differential/test_diff_replica_placer.py asks Kafka's StripedReplicaPlacer). Given a
Python random.Random instead (a controller's), the placer seeds a Java generator from it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple

from engine.common.java_random import JavaRandom, hash_map_order
from engine.image.metadata_image import BrokerRegistration, MetadataImage


class PlacementError(ValueError):
    """The placement cannot be made (Kafka's InvalidReplicationFactorException); the message is Kafka's."""


class UsableBroker(NamedTuple):
    id: int
    rack: str | None
    fenced: bool


def usable_brokers(image: MetadataImage) -> list[UsableBroker]:
    """The brokers a replica may be placed on: registered, not in controlled shutdown, and (Kafka
    4.3+, KIP-1066) with a log directory not cordoned."""
    return [UsableBroker(b.id, b.rack, b.fenced) for _, b in sorted(image.cluster.brokers.items())
            if not b.in_controlled_shutdown and has_uncordoned_dirs(b)]


def has_uncordoned_dirs(broker: BrokerRegistration) -> bool:
    """Kafka's BrokerRegistration.hasUncordonedDirs: no directories or no cordoned list count as
    having room; else some directory must be left out of the cordoned ones."""
    if not broker.directories or broker.cordoned_directories is None:
        return True
    return bool(set(broker.directories) - set(broker.cordoned_directories))


def is_active(broker: BrokerRegistration | None) -> bool:
    """May be in a new partition's ISR (Kafka's ClusterControlManager.isActive)."""
    return broker is not None and not broker.fenced and not broker.in_controlled_shutdown


@dataclass(slots=True)
class _Brokers:
    """One rack's fenced or unfenced brokers: a rotating cursor per placement epoch."""

    ids: list[int] = field(default_factory=list)
    index: int = 0
    offset: int = 0
    epoch: int = 0

    def start(self, rng: JavaRandom) -> None:
        if self.ids:
            self.ids.sort()
            self.offset = rng.next_int(len(self.ids))

    def next(self, epoch: int) -> int:
        """The next broker for the partition of ``epoch``, or -1 when all were given to it."""
        if not self.ids:
            return -1
        if self.epoch != epoch:  # a new partition: start one broker further on
            self.epoch, self.index = epoch, 0
            self.offset = (self.offset + 1) % len(self.ids)
        if self.index >= len(self.ids):
            return -1
        broker = self.ids[(self.index + self.offset) % len(self.ids)]
        self.index += 1
        return broker


@dataclass(slots=True)
class _Rack:
    unfenced: _Brokers = field(default_factory=_Brokers)
    fenced: _Brokers = field(default_factory=_Brokers)

    def next(self, epoch: int) -> int:
        broker = self.unfenced.next(epoch)
        return broker if broker >= 0 else self.fenced.next(epoch)


def _java_order(name: str | None) -> tuple[bool, bytes]:
    return name is not None, (name or "").encode("utf-16-be", "surrogatepass")


class _Racks:
    """The state of one placement call: racks by name, a rack offset and the partition epoch."""

    def __init__(self, rng: JavaRandom, brokers: Iterable[UsableBroker]):
        self.rng = rng
        self.racks: dict[str | None, _Rack] = {}
        self.total = self.unfenced = 0
        for broker in brokers:
            rack = self.racks.setdefault(broker.rack, _Rack())
            (rack.fenced if broker.fenced else rack.unfenced).ids.append(broker.id)
            self.total += 1
            self.unfenced += 0 if broker.fenced else 1
        # Kafka walks its HashMap of racks to draw each rack's offsets: the draws land as there
        self.hash_order = hash_map_order(self.racks)
        for name in self.hash_order:
            self.racks[name].fenced.start(rng)
            self.racks[name].unfenced.start(rng)
        # no rack sorts first, as Kafka's OptionalStringComparator orders an empty Optional; names
        # by String.compareTo, UTF-16 unit by unit (a character past U+FFFF sorts below U+E000)
        self.names: list[str | None] = sorted(self.racks, key=_java_order)
        self.offset = rng.next_int(len(self.names)) if self.names else 0
        self.epoch = 0

    def check(self, replication_factor: int, cordoning: bool) -> None:
        if replication_factor <= 0:
            raise PlacementError(f"Invalid replication factor {replication_factor}: "
                                 "the replication factor must be positive.")
        if self.unfenced == 0:
            raise PlacementError("All brokers are currently fenced, or have all their log directories cordoned."
                                 if cordoning else "All brokers are currently fenced.")
        if replication_factor > self.total:
            # Kafka 4.3 (KIP-1066) names the other reason a broker may be missing
            also = " or some brokers have all their log directories cordoned" if cordoning else ""
            raise PlacementError(f"The target replication factor of {replication_factor} cannot be "
                                 f"reached because only {self.total} broker(s) are registered{also}.")

    def place(self, replication_factor: int) -> list[int]:
        if self.epoch == self.unfenced and self.unfenced > 1:
            self._shuffle()  # every unfenced broker has led once: vary the next round
            self.epoch = 0
        if self.offset == len(self.names):
            self.offset = 0
        first = self.offset
        while True:  # the leader: the first unfenced broker from the offset rack on
            leader = self.racks[self.names[first]].unfenced.next(self.epoch)
            if leader >= 0:
                break
            first = (first + 1) % len(self.names)
        replicas = [leader]
        index = self.offset
        for _ in range(1, replication_factor):
            broker = -1
            while broker < 0:
                if index == first:
                    first = -1  # the leader's rack gave this partition its leader: skip it once
                else:
                    broker = self.racks[self.names[index]].next(self.epoch)
                index = (index + 1) % len(self.names)
            replicas.append(broker)
        self.epoch += 1
        self.offset += 1
        return replicas

    def _shuffle(self) -> None:
        self.rng.shuffle(self.names)
        for name in self.hash_order:
            self.rng.shuffle(self.racks[name].fenced.ids)
            self.rng.shuffle(self.racks[name].unfenced.ids)


def place(rng: JavaRandom | random.Random, brokers: Iterable[UsableBroker], partitions: int,
          replication_factor: int, *, cordoning: bool = False) -> list[list[int]]:
    """Replica lists, leader first, for ``partitions`` new partitions; PlacementError (Kafka's
    message: 4.3's with ``cordoning``, else 4.1's) when they cannot be made. ``brokers`` in the
    order Kafka's cluster would offer them (it decides only the order of racks whose hashes
    share a HashMap bucket)."""
    if not isinstance(rng, JavaRandom):
        rng = JavaRandom(rng.getrandbits(64))
    racks = _Racks(rng, brokers)
    racks.check(replication_factor, cordoning)
    return [racks.place(replication_factor) for _ in range(partitions)]
