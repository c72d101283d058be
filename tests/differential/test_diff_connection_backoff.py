"""engine.net.connect.kafka_backoff against Kafka's own ExponentialBackoff: the formula of the
reconnect backoff (reconnect.backoff.ms / .max.ms) and of the connection setup timeout
(socket.connection.setup.timeout.ms / .max.ms) that ClusterConnectionStates applies per attempt.

Without jitter every value must be Kafka's to the millisecond (the exponent capped where the term
reaches the max, truncation to whole ms, a constant max when it is not above the initial value).
With Kafka's jitter of 0.2, Kafka draws from ThreadLocalRandom, which no seed reaches: its
smallest and largest of 200 draws must lie within what ours gives at the jitter's two ends.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import example, given, settings, strategies as st
from kafka_peer.harness import DIFF_EXAMPLES

from engine.net.connect import kafka_backoff

pytestmark = pytest.mark.kafka

CASE = st.tuples(st.integers(0, 100_000), st.integers(0, 200_000), st.integers(0, 40))


class EdgeRandom(random.Random):
    """A jitter factor at one end of its range."""

    def __init__(self, end: int):
        super().__init__(0)
        self.end = end

    def uniform(self, a: float, b: float) -> float:
        return (a, b)[self.end]


@settings(max_examples=max(1, DIFF_EXAMPLES // 100), deadline=None)
@given(st.lists(CASE, min_size=100, max_size=100))
@example([(10_000, 30_000, n) for n in range(5)] + [(50, 1_000, n) for n in range(8)] + [(100, 100, 3), (100, 50, 2),
                                                                                         (0, 10, 3), (1, 3, 1)])
def test_without_jitter_every_value_is_kafkas(kafka_classes, cases) -> None:
    theirs = kafka_classes.call("ExponentialBackoff", cases=[[i, m, n, 0] for i, m, n in cases])
    ours = [kafka_backoff(n, i, m, random.Random(0), jitter=0) for i, m, n in cases]
    assert ours == theirs


def test_with_kafkas_jitter_its_draws_lie_within_ours(kafka_classes) -> None:
    cases = [(10_000, 30_000, n) for n in range(4)] + [(50, 1_000, n) for n in range(7)]
    theirs = kafka_classes.call("ExponentialBackoff", cases=[[i, m, n, 0.2] for i, m, n in cases])
    for (initial, top, attempts), (low, high) in zip(cases, theirs):
        ours_low = kafka_backoff(attempts, initial, top, EdgeRandom(0))
        ours_high = kafka_backoff(attempts, initial, top, EdgeRandom(1))
        assert ours_low <= low <= high <= ours_high, (initial, top, attempts)
        assert ours_high <= top
