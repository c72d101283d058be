"""The brokers panel's leaders and replicas per broker, kept from frame to frame (the total
moved by the topics a step changed): over a seeded random history visited as the dashboard
visits it (steps on and back, jumps), equal to a count afresh over every partition."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.image.metadata_image import MetadataImage
from metashell.dashboard import panels
from tests.topic_history import history, visits


def _afresh(image: MetadataImage) -> tuple[dict[int, int], dict[int, int]]:
    leads, hosts = Counter(), Counter()
    for topic in image.topics.by_id.values():
        for p in topic.partitions.values():
            leads[p.leader] += 1
            hosts.update(p.replicas)
    return dict(leads), dict(hosts)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 40))
def test_leaders_and_replicas_per_broker_equal_a_count_afresh_on_every_frame(seed: int, batches: int) -> None:
    images = history(seed, batches)
    for at in visits(seed, len(images), 3 * len(images)):
        assert panels.leadership_counts(images[at]) == _afresh(images[at]), at


def test_a_total_handed_out_does_not_move_with_the_next_frame() -> None:
    images = history(3, 20)
    shown = panels.leadership_counts(images[5])
    kept = (dict(shown[0]), dict(shown[1]))
    for image in images[6:]:
        panels.leadership_counts(image)
    assert shown == kept == _afresh(images[5])


def test_counts_made_elsewhere_are_seeded_and_followed() -> None:
    images = history(5, 30)
    counted = images[20]
    panels.seed_leadership({id(t): (t, panels.leadership_entries_of(t)) for t in counted.topics.by_id.values()})
    for image in [images[22], counted, *images[21:]]:
        assert panels.leadership_counts(image) == _afresh(image)
