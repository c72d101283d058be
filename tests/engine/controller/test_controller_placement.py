"""The striped replica placer's properties, whatever the seed: distinct brokers, an unfenced
leader, one rack per replica when racks suffice, leaders rotating. Kafka's exact placements and
refusals, seed for seed, are compared live in tests/differential/test_diff_replica_placer.py."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from engine.common.java_random import JavaRandom
from engine.controller.replica_placer import PlacementError, UsableBroker, place

SIX_IN_THREE_RACKS = [UsableBroker(i, "abc"[i // 2], False) for i in range(6)]


def racks_of(brokers, replicas):
    rack = {b.id: b.rack for b in brokers}
    return [rack[r] for r in replicas]


def test_three_racks_three_replicas_one_per_rack_and_leaders_even():
    # every set spans the three racks, each broker leads 2 of 12
    placed = place(random.Random(1), SIX_IN_THREE_RACKS, 12, 3)
    assert all(sorted(racks_of(SIX_IN_THREE_RACKS, p)) == ["a", "b", "c"] for p in placed)
    assert Counter(p[0] for p in placed) == {b: 2 for b in range(6)}


def test_two_replicas_over_three_racks_never_share_a_rack():
    for seed in range(20):
        placed = place(random.Random(seed), SIX_IN_THREE_RACKS, 12, 2)
        assert all(len(set(racks_of(SIX_IN_THREE_RACKS, p))) == 2 for p in placed)


def test_without_racks_the_leaders_rotate_over_every_broker():
    # a round of four, each broker leading once, then a shuffled round
    brokers = [UsableBroker(i, None, False) for i in range(4)]
    placed = place(random.Random(2), brokers, 8, 3)
    assert [p[0] for p in placed[:4]] != [p[0] for p in placed[:1]] * 4
    assert Counter(p[0] for p in placed[:4]) == Counter(range(4))
    assert Counter(p[0] for p in placed) == {b: 2 for b in range(4)}
    # within a round each set is the next window of the sorted ring
    first = placed[0][0]
    assert placed[0] == [(first + k) % 4 for k in range(3)]


def test_one_broker_takes_every_partition():
    assert place(random.Random(3), [UsableBroker(7, None, False)], 3, 1) == [[7], [7], [7]]


def test_a_fenced_broker_follows_only_when_its_rack_has_no_unfenced_one_left():
    # Kafka, racks A {1, 2 fenced} and B {3, 4}, RF 3: [3, 1, 4] [1, 4, 2] [1, 3, 2] ...: 2 never
    # leads, and is taken only once 1 (rack A's only unfenced broker) is in the set
    brokers = [UsableBroker(1, "A", False), UsableBroker(2, "A", True),
               UsableBroker(3, "B", False), UsableBroker(4, "B", False)]
    for seed in range(30):
        for replicas in place(random.Random(seed), brokers, 8, 3):
            assert replicas[0] != 2
            if 2 in replicas:
                assert 1 in replicas


def test_refusals_name_the_reason_in_one_line():
    # Kafka's own wording, per version, is compared live in tests/differential/test_diff_replica_placer.py
    cases = [([UsableBroker(1, None, False)], 0), ([UsableBroker(1, None, True)], 1),
             ([UsableBroker(1, None, False), UsableBroker(2, None, True)], 3), ([], 1)]
    for brokers, factor in cases:
        with pytest.raises(PlacementError) as refused:
            place(random.Random(0), brokers, 1, factor)
        assert str(refused.value) and "\n" not in str(refused.value)


def test_a_controllers_python_random_seeds_a_java_generator():
    """Given a random.Random (as a controller holds), the placer draws a seed from it for a
    java.util.Random: the placements are those of a JavaRandom of that seed."""
    brokers = [UsableBroker(i, "abc"[i % 3], i == 4) for i in range(9)]
    seed = random.Random(7).getrandbits(64)
    assert place(random.Random(7), brokers, 12, 3) == place(JavaRandom(seed), brokers, 12, 3)


@st.composite
def clusters(draw):
    count = draw(st.integers(1, 12))
    rack_names = draw(st.lists(st.sampled_from([None, "r1", "r2", "r3", "r4"]), min_size=count, max_size=count))
    fenced = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    ids = draw(st.lists(st.integers(0, 1000), min_size=count, max_size=count, unique=True))
    if all(fenced):
        fenced[draw(st.integers(0, count - 1))] = False
    brokers = [UsableBroker(i, r, f) for i, r, f in zip(ids, rack_names, fenced)]
    factor = draw(st.integers(1, count))
    return brokers, factor, draw(st.integers(1, 40)), draw(st.integers(0, 2**32))


@settings(max_examples=300, deadline=None)
@given(clusters())
def test_every_placement_is_a_set_of_distinct_brokers_led_by_an_unfenced_one(cluster):
    brokers, factor, partitions, seed = cluster
    by_id = {b.id: b for b in brokers}
    placed = place(random.Random(seed), brokers, partitions, factor)
    assert len(placed) == partitions
    racks = {b.rack for b in brokers}
    for replicas in placed:
        assert len(replicas) == factor == len(set(replicas))
        assert set(replicas) <= set(by_id)
        assert not by_id[replicas[0]].fenced
        if len(racks) >= factor:  # as many racks as replicas: one rack each
            assert len({by_id[r].rack for r in replicas}) == factor
    # A fenced broker follows only once its rack's unfenced ones are all in the set: in the first
    # round (one partition per unfenced broker). After Kafka's reshuffle a rack's cursor may keep
    # an epoch of the round before and look used up, so Kafka itself breaks this (59 of 2,200
    # sets in a jshell run): not asked past the first round.
    unfenced = sum(not b.fenced for b in brokers)
    for replicas in placed[:unfenced]:
        for r in replicas:
            if by_id[r].fenced:
                assert {b.id for b in brokers if b.rack == by_id[r].rack and not b.fenced} <= set(replicas)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(0, 2**32))
def test_each_broker_leads_once_in_the_first_round_over_equal_racks(rack_count, per_rack, seed):
    # With one replica the leaders go round every rack and broker. Kafka is uneven with more
    # (2 racks of 2, two replicas: leaders 1, 2, 1, 2; 3 racks of 2, two replicas: 1, 3, 4, 1, 3, 4),
    # and past the first round the reshuffled rack order may repeat a rack (2 racks of one
    # broker, 4 partitions: uneven for 92 of 200 seeds in jshell).
    brokers = [UsableBroker(r * per_rack + i, f"rack{r}", False) for r in range(rack_count) for i in range(per_rack)]
    factor = 1
    placed = place(random.Random(seed), brokers, len(brokers), factor)
    assert Counter(p[0] for p in placed) == {b.id: 1 for b in brokers}
