"""The pieces /image's leaves are printed from (metashell/tree/kafka_text.py) against Kafka's own
classes (tests/kafka/harness/ImageLeafTextOp.java), for random values: ProvenanceNode's line
(Java's ISO zoned time of any epoch millisecond: negative ones, years past 9999 and before
year 1, the fraction without trailing zeros), VersionRange's text, Double.toString of the values
a quota holds, and names in the order Kafka's shell lists them (String.compareTo: by UTF-16 code
unit, so a character beyond U+FFFF sorts before U+FFFF itself)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings, strategies as st
from kafka_peer.harness import DIFF_EXAMPLES

from metashell.tree.kafka_text import java_order, provenance_text, quota_text, version_range

pytestmark = pytest.mark.kafka

LONG = st.integers(-(1 << 63), (1 << 63) - 1)
MILLIS = st.one_of(LONG, st.integers(-10**13, 10**14))  # any, and the centuries near ours
SHORT = st.integers(-(1 << 15), (1 << 15) - 1)
# quotas: whole numbers (rates in bytes), and a few significant digits at any scale; Java 17's
# Double.toString is not the shortest form for every double (JDK 19 made it so), Kafka's values are these
QUOTAS = st.one_of(st.integers(0, 1 << 53).map(float),
                   st.builds(lambda digits, scale: digits * 10.0 ** scale, st.integers(1, 999_999),
                             st.integers(-9, 12)))
NAMES = st.lists(st.text(st.characters(codec=None, exclude_categories=("Cs",)), max_size=6), max_size=8)


@settings(max_examples=DIFF_EXAMPLES, deadline=None)
@given(st.lists(st.tuples(LONG, st.integers(-(1 << 31), (1 << 31) - 1), MILLIS), min_size=1, max_size=8),
       st.lists(st.tuples(SHORT, SHORT), max_size=4), st.lists(QUOTAS, max_size=4), NAMES)
@example([(6, 23, 1739082759312), (-1, -1, -1), (0, 0, 0), (1, 1, 1739082759310), (2, 2, 253402300800000),
          (3, 3, -62135596800001), (4, 4, -(1 << 63))], [(0, 1), (1, 1), (3, 32767), (-1, 5)],
         [1048576.0, 25.0, 1e7, 0.001, 0.0001], ["10", "2", "b", "B", "\uffff", "\U0001F600", ""])
def test_leaf_pieces_are_kafkas(kafka_classes, provenances, ranges, quotas, names) -> None:
    kafkas = kafka_classes.call("ImageLeafText", provenances=provenances, ranges=ranges, doubles=quotas, names=names)
    assert [provenance_text(*p) for p in provenances] == kafkas["provenances"]
    assert [version_range(*r) for r in ranges] == kafkas["ranges"]
    assert [quota_text(q) for q in quotas] == kafkas["doubles"]
    assert sorted(names, key=java_order) == kafkas["names"]
