"""The striped replica placer: facts read off Kafka 4.1.2's StripedReplicaPlacer (run with a
seeded Random in jshell), kept as properties; Kafka's exact random draws are not sought."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from engine.controller.replica_placer import PlacementError, UsableBroker, place

SIX_IN_THREE_RACKS = [UsableBroker(i, "abc"[i // 2], False) for i in range(6)]


class JavaRandom:
    """java.util.Random's generator with the two calls the placer makes (randrange = nextInt,
    shuffle = Collections.shuffle): with it our placer gives Kafka's own placements."""

    def __init__(self, seed: int):
        self.seed = (seed ^ 0x5DEECE66D) & ((1 << 48) - 1)

    def _next31(self) -> int:
        self.seed = (self.seed * 0x5DEECE66D + 0xB) & ((1 << 48) - 1)
        return self.seed >> 17

    def randrange(self, bound: int) -> int:
        r = self._next31()
        if bound & (bound - 1) == 0:
            return (bound * r) >> 31
        u = r
        while True:
            r = u % bound
            if u - r + bound - 1 < (1 << 31):  # Java's int overflow test
                return r
            u = self._next31()

    def shuffle(self, items: list) -> None:
        for i in range(len(items), 1, -1):
            j = self.randrange(i)
            items[i - 1], items[j] = items[j], items[i - 1]


def brokers_of(racks: dict, fenced=()) -> list[UsableBroker]:
    """Brokers by rack, racks in the order Java's HashMap walks them (for Kafka's random draws)."""
    return [UsableBroker(b, rack, b in fenced) for rack, ids in racks.items() for b in ids]


# (racks in Java's HashMap order, fenced, seed, partitions, replicas) -> what Kafka 4.1.2 placed
KAFKA_PLACEMENTS = [
    ({"a": [0, 1], "b": [2, 3], "c": [4, 5]}, (), 1, 12, 3,
     "[1, 2, 4] [3, 5, 0] [4, 1, 2] [0, 3, 5] [2, 4, 1] [5, 0, 3] [2, 0, 4] [1, 5, 3] [4, 2, 0] [3, 1, 5] [0, 4, 2] [5, 3, 1]"),
    ({"a": [0, 1], "b": [2, 3], "c": [4, 5]}, (), 1, 12, 2,
     "[1, 2] [3, 5] [4, 0] [1, 2] [3, 5] [4, 0] [2, 0] [1, 5] [4, 3] [2, 0] [1, 5] [4, 3]"),
    ({None: [0, 1, 2, 3]}, (), 2, 8, 3, "[2, 3, 0] [3, 0, 1] [0, 1, 2] [1, 2, 3] [1, 3, 2] [3, 2, 0] [2, 0, 1] [0, 1, 3]"),
    ({"A": [1, 2], "B": [3, 4]}, (2,), 0, 4, 3, "[3, 1, 4] [1, 4, 2] [3, 1, 4] [1, 3, 2]"),
    ({"A": [1, 2], "B": [3, 4]}, (2,), 1, 4, 3, "[1, 3, 2] [4, 1, 3] [1, 3, 2] [1, 3, 2]"),
    ({None: [2], "x": [1], "y": [3]}, (), 3, 6, 2, "[1, 3] [3, 2] [2, 1] [1, 2] [2, 1] [3, 1]"),
    ({"a": [0, 1], "b": [2, 3]}, (), 0, 8, 2, "[1, 3] [2, 0] [1, 3] [2, 0] [1, 2] [3, 0] [1, 2] [3, 0]"),
    ({"r2": [2, 5, 8], "r0": [0, 3, 6], "r1": [1, 4, 7]}, (4,), 42, 20, 3,
     "[0, 1, 8] [7, 2, 3] [5, 6, 1] [0, 7, 8] [1, 2, 3] [5, 6, 7] [0, 1, 8] [7, 2, 3] [7, 5, 6] [8, 0, 1] "
     "[3, 7, 2] [1, 5, 6] [8, 0, 7] [3, 1, 2] [7, 5, 6] [8, 0, 1] [7, 2, 3] [5, 0, 1] [6, 7, 8] [1, 2, 3]"),
    ({None: [10, 11, 12, 13, 14]}, (12,), 7, 12, 2,
     "[13, 14] [14, 10] [10, 11] [11, 13] [11, 10] [10, 13] [13, 14] [14, 11] [11, 10] [10, 13] [13, 14] [14, 11]"),
]


@pytest.mark.parametrize("racks, fenced, seed, partitions, factor, kafka", KAFKA_PLACEMENTS)
def test_with_javas_random_the_placements_are_kafkas(racks, fenced, seed, partitions, factor, kafka):
    placed = place(JavaRandom(seed), brokers_of(racks, fenced), partitions, factor)  # type: ignore[arg-type]
    assert " ".join(str(p) for p in placed) == kafka


def racks_of(brokers, replicas):
    rack = {b.id: b.rack for b in brokers}
    return [rack[r] for r in replicas]


def test_three_racks_three_replicas_one_per_rack_and_leaders_even():
    # Kafka: [1, 2, 4] [3, 5, 0] [4, 1, 2] [0, 3, 5] ... every set spans the three racks, each
    # broker leads 2 of 12
    placed = place(random.Random(1), SIX_IN_THREE_RACKS, 12, 3)
    assert all(sorted(racks_of(SIX_IN_THREE_RACKS, p)) == ["a", "b", "c"] for p in placed)
    assert Counter(p[0] for p in placed) == {b: 2 for b in range(6)}


def test_two_replicas_over_three_racks_never_share_a_rack():
    for seed in range(20):
        placed = place(random.Random(seed), SIX_IN_THREE_RACKS, 12, 2)
        assert all(len(set(racks_of(SIX_IN_THREE_RACKS, p))) == 2 for p in placed)


def test_without_racks_the_leaders_rotate_over_every_broker():
    # Kafka: [2, 3, 0] [3, 0, 1] [0, 1, 2] [1, 2, 3] then a shuffled round
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


@pytest.mark.parametrize("brokers, factor, message", [
    ([UsableBroker(1, None, False)], 0, "Invalid replication factor 0: the replication factor must be positive."),
    ([UsableBroker(1, None, False)], -3, "Invalid replication factor -3: the replication factor must be positive."),
    ([UsableBroker(1, None, True), UsableBroker(2, None, True)], 1, "All brokers are currently fenced."),
    # Kafka checks for an unfenced broker before the count: all fenced and too few says fenced
    ([UsableBroker(1, None, True), UsableBroker(2, None, True)], 3, "All brokers are currently fenced."),
    ([UsableBroker(1, None, False), UsableBroker(2, None, True)], 3,
     "The target replication factor of 3 cannot be reached because only 2 broker(s) are registered."),
    ([], 1, "All brokers are currently fenced."),
])
def test_refusals_carry_kafkas_messages(brokers, factor, message):
    with pytest.raises(PlacementError) as refused:
        place(random.Random(0), brokers, 1, factor)
    assert str(refused.value) == message


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
