"""Our striped replica placer against Kafka's own StripedReplicaPlacer, seed for seed: the same
java.util.Random seed must give the same replica lists, leader first, or the same refusal.

Clusters are random: ids, racks (none, a few names, names whose String hashes collide so that
Java's HashMap order depends on insertion order, names past the Basic Multilingual Plane that
Java orders by UTF-16 unit), fenced brokers, brokers in controlled shutdown and (Kafka 4.3+)
brokers with every log directory cordoned: Kafka's ClusterControlManager.usableBrokers leaves
those out before the placer sees the cluster; ours is usable_brokers over an image, checked
against that rule (stated here, not asked of Kafka: its heartbeat manager is not driven).
"""

from __future__ import annotations

import re
import uuid

import pytest
from hypothesis import example, given, settings, strategies as st
from kafka_peer.harness import DIFF_EXAMPLES, KafkaRefused

from engine.common.java_random import JavaRandom
from engine.controller.replica_placer import PlacementError, UsableBroker, place, usable_brokers
from engine.image.broker_registration import BrokerRegistration
from engine.image.cluster_image import ClusterImage
from engine.image.metadata_image import MetadataImage

pytestmark = pytest.mark.kafka

# "Aa" and "BB" share a String.hashCode; "\U0001F600" sorts below "\uFFFD" in Java (UTF-16 units)
# and above it in Python (code points)
RACKS = [None, "a", "b", "c", "r1", "r2", "rack-10", "Aa", "BB", "\uFFFD", "\U0001F600"]


@st.composite
def clusters(draw):
    count = draw(st.integers(0, 14))
    ids = draw(st.lists(st.integers(0, 2000), min_size=count, max_size=count, unique=True))
    racks = draw(st.lists(st.sampled_from(RACKS), min_size=count, max_size=count))
    fenced = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    rare = st.integers(0, 5).map(lambda n: n == 0)
    shutdown = draw(st.lists(rare, min_size=count, max_size=count))
    cordoned = draw(st.lists(rare, min_size=count, max_size=count))
    return [(i, r, f, s, c) for i, r, f, s, c in zip(ids, racks, fenced, shutdown, cordoned)]


DIRS = (uuid.UUID(int=1), uuid.UUID(int=2))


def _image(cluster) -> MetadataImage:
    # a cordoned broker has both its directories cordoned; the others one of two, or none listed
    brokers = {i: BrokerRegistration(i, 1, None, (), (), rack, fenced, shutdown, directories=DIRS,
                                     cordoned_directories=DIRS if cordoned else DIRS[:i % 2])
               for i, rack, fenced, shutdown, cordoned in cluster}
    return MetadataImage(cluster=ClusterImage(brokers=brokers))


def _cordoning(kafka_classes) -> bool:
    """Whether this Kafka knows cordoned log directories (KIP-1066, 4.3)."""
    return tuple(int(p) for p in kafka_classes.version.split(".")[:2]) >= (4, 3)


def _kafkas(kafka_classes, seed, brokers, partitions, factor):
    try:
        return kafka_classes.call("StripedPlacement", seed=seed, brokers=[list(b) for b in brokers],
                                  partitions=partitions, replicas=factor)
    except KafkaRefused as refused:
        # "org.apache.kafka.common.errors.InvalidReplicationFactorException: <message>"
        match = re.fullmatch(r"org\.apache\.kafka\.common\.errors\.InvalidReplicationFactorException: (.*)",
                             refused.kafka_error, re.S)
        assert match, refused.kafka_error
        return ("refused", match.group(1))


def _ours(seed, brokers, partitions, factor, cordoning):
    try:
        return place(JavaRandom(seed), brokers, partitions, factor, cordoning=cordoning)
    except PlacementError as refused:
        return ("refused", str(refused))


@settings(max_examples=DIFF_EXAMPLES, deadline=None)
@given(clusters(), st.integers(-(2**63), 2**63 - 1), st.integers(0, 30), st.integers(-2, 8), st.randoms())
@example([(0, "Aa", False, False, False), (1, "BB", False, False, False), (2, "BB", False, False, False)], 1, 6, 2, None)
# Java sorts rack names by UTF-16 unit (found by this test: ours sorted by code point)
@example([(5, "\uFFFD", False, False, False), (6, "\U0001F600", False, False, False), (7, None, True, False, False)],
         3, 4, 2, None)
# Kafka 4.3's refusals name cordoned directories too (found by this test)
@example([(1, None, True, False, False), (2, None, True, False, False)], 0, 1, 3, None)
@example([(1, "a", False, True, False), (2, "b", False, False, False)], 0, 1, 2, None)
@example([(1, "a", False, False, True), (2, "b", False, False, False), (3, "b", False, False, False)], 9, 3, 2, None)
def test_placements_are_kafkas_seed_for_seed(kafka_classes, cluster, seed, partitions, factor, shuffler):
    if shuffler is not None:  # the order the cluster is offered in decides HashMap collisions' order
        shuffler.shuffle(cluster)
    cordoning = _cordoning(kafka_classes)
    if not cordoning:  # before 4.3 no directory is ever cordoned
        cluster = [(i, rack, fenced, shutdown, False) for i, rack, fenced, shutdown, _ in cluster]
    ours_usable = usable_brokers(_image(cluster))
    # Kafka's usableBrokers: not in controlled shutdown, some directory not cordoned; fenced flagged
    offered = [UsableBroker(i, rack, fenced) for i, rack, fenced, shutdown, cordoned in cluster
               if not shutdown and not cordoned]
    assert sorted(ours_usable) == sorted(offered)
    assert _ours(seed, offered, partitions, factor, cordoning) == \
        _kafkas(kafka_classes, seed, offered, partitions, factor)


@settings(max_examples=DIFF_EXAMPLES, deadline=None)
@given(st.integers(-(2**63), 2**63 - 1),
       st.lists(st.one_of(st.integers(1, 16), st.integers(1, 2**31 - 1), st.sampled_from([2**30 + 1, 2**31 - 1])),
                max_size=12),
       st.integers(0, 40))
def test_the_generator_draws_javas_numbers_at_any_bound(kafka_classes, seed, bounds, shuffled):
    """The placer's bounds are small, where nextInt almost never rejects a draw; large bounds
    (2**30 + 1 rejects about half) check that rejection is Java's."""
    rng = JavaRandom(seed)
    draws = [rng.next_int(bound) for bound in bounds]
    items = list(range(shuffled))
    rng.shuffle(items)
    assert [draws, items] == kafka_classes.call("JavaRandomDraws", seed=seed, bounds=bounds, shuffle=shuffled)
