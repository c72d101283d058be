"""Sums over an image's topics kept from image to image (engine.image.topic_sums), and the topics
image a delta applies (its maps copied through the dict's own copy): over a seeded random history
of topics created, changed, removed and made anew, visited in a random order (steps forward and
back, jumps), every kept total equals a count afresh, and every applied image equals, field for
field and in order, what copying every entry anew makes."""

from __future__ import annotations

import random
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.controller.controller_metrics import TopicCounts, controller_metrics, sum_counts, topic_counts
from engine.image.topic_sums import TopicSums
from engine.image.topics_image import TopicsDelta, TopicsImage
from tests.topic_history import batch as _batch, history as _history, visits as _visits

@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 40))
def test_kept_partition_counts_equal_a_count_afresh_wherever_the_dashboard_goes(seed: int, batches: int) -> None:
    images = _history(seed, batches)
    cache = TopicCounts()
    for at in _visits(seed, len(images), 3 * len(images)):
        image = images[at]
        assert cache.total(image) == sum_counts(map(topic_counts, image.topics.by_id.values())), at
        assert controller_metrics(image, cache=cache) == controller_metrics(image)


def test_counts_made_elsewhere_are_taken_and_the_total_follows_from_them() -> None:
    images = _history(7, 30)
    first = images[10]
    seeded = TopicCounts.seeded({id(t): (t, topic_counts(t)) for t in first.topics.by_id.values()})
    for image in [images[12], first, *images[10:]]:  # counted for one frame, asked first for another
        assert seeded.total(image) == TopicCounts().total(image)


def test_a_step_counts_only_the_topics_it_changed() -> None:
    images = _history(11, 30)
    counted: list = []
    sums = TopicSums(lambda topic: counted.append(topic) or len(topic.partitions),
                     lambda total, value, sign: total + sign * value, int)
    sums.total(images[0].topics.by_id)
    for before, after in zip(images, images[1:]):
        counted.clear()
        assert sums.total(after.topics.by_id) == sum(len(t.partitions) for t in after.topics.by_id.values())
        shared = {id(t) for t in before.topics.by_id.values()}
        assert {id(t) for t in counted} == {id(t) for t in after.topics.by_id.values()} - shared
    counted.clear()
    sums.total(images[-2].topics.by_id)  # one step back: the topics left are still kept
    assert counted == []


def _copy_everything(delta: TopicsDelta) -> TopicsImage:
    """The reference, built another way than TopicsDelta.apply: both maps rebuilt from scratch,
    the untouched topics first in their order, then the delta's topics in its order."""
    changed = delta._topics
    if not changed:
        return delta.image
    by_id = {tid: t for tid, t in delta.image.by_id.items() if tid not in changed}
    by_name = {name: tid for name, tid in delta.image.by_name.items() if tid not in changed}
    for topic_id, topic in changed.items():
        if topic is not None:
            by_id[topic_id] = topic.apply()
            by_name[topic.image.name] = topic_id
    return TopicsImage(MappingProxyType(by_id), MappingProxyType(by_name))


_REPLAY = {"TopicRecord": TopicsDelta.replay_topic, "PartitionRecord": TopicsDelta.replay_partition,
           "PartitionChangeRecord": TopicsDelta.replay_partition_change,
           "RemoveTopicRecord": TopicsDelta.replay_remove_topic}


@pytest.mark.parametrize("seed", range(5))
def test_an_applied_topics_image_equals_copying_every_entry_field_for_field_and_in_order(seed: int) -> None:
    rng, image = random.Random(seed), TopicsImage.EMPTY
    for _ in range(60):
        held = list(image.by_id.items()), list(image.by_name.items())
        delta = TopicsDelta(image)
        for record in _batch(rng):
            _REPLAY[record.record_name](delta, record)
        applied, reference = delta.apply(), _copy_everything(delta)
        assert applied == reference
        assert list(applied.by_id.items()) == list(reference.by_id.items())  # the same objects, in order
        assert list(applied.by_name.items()) == list(reference.by_name.items())
        assert type(applied.by_id) is MappingProxyType and type(applied.by_name) is MappingProxyType
        assert (list(image.by_id.items()), list(image.by_name.items())) == held  # the old image as it was
        image = applied
