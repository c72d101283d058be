"""The Kafka-classes harness itself: it answers with the version it was compiled against, says
what Kafka threw, and a request for an op nobody wrote fails in words."""

from __future__ import annotations

import pytest

from kafka_peer.harness import KafkaRefused

pytestmark = pytest.mark.kafka


def test_the_classes_are_the_versions_asked_for(kafka_classes) -> None:
    assert kafka_classes.call("Version") == kafka_classes.version


def test_an_unknown_op_is_refused_in_words_and_the_harness_keeps_serving(kafka_classes) -> None:
    with pytest.raises(KafkaRefused, match="NoSuchOp"):
        kafka_classes.call("NoSuch")
    with pytest.raises(KafkaRefused, match="no op named"):
        kafka_classes.call("../etc")
    assert kafka_classes.call("Version") == kafka_classes.version
