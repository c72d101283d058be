"""``find``'s walk (walk_paths) lists what ``walk`` lists, in its order; java_sorted is Java's order."""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import load_log_dir
from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i32
from metashell.tree.image_layout import java_name_order, java_sorted
from metashell.tree.nodes import EMPTY_NAME, encode_name, resolve, walk, walk_paths
from metashell.tree.root import build_tree

# names whose Java order differs from Python's (astral characters against the private-use area),
# that the tree encodes (%, space, /), the empty name, and names of digits
NAMES = ["a", "b", "10", "9", "", "%", "a b", "x/y", "\U0001F600", "\uFF5E", "\uE000", "<empty>", "Ω", "-1", "z"]


def _image() -> MetadataImage:
    delta = MetadataDelta(MetadataImage())
    for n, name in enumerate(NAMES):
        topic_id = uuid.UUID(int=n + 1)
        delta.replay(m.TopicRecordV0(name=name, topic_id=topic_id))
        for p in (0, 1, 2, 10, 11):
            delta.replay(m.PartitionRecordV0(partition_id=i32(p), topic_id=topic_id, replicas=(i32(1),), isr=(i32(1),),
                                             removing_replicas=(), adding_replicas=(), leader=i32(1),
                                             leader_epoch=i32(0), partition_epoch=i32(0)))
        delta.replay(m.ConfigRecordV0(resource_type=i8(2), resource_name=name, name="retention.ms", value="1"))
    return delta.apply()


def _walked(root, path: str, keep=None) -> list[str]:
    return [p for p, node in walk(resolve(root, path), path)
            if keep is None or keep(p.rsplit("/", 1)[-1], node.is_directory)]


def _listed(root, path: str, keep=None, chunk: int = 7) -> list[str]:
    return list(itertools.chain.from_iterable(walk_paths(resolve(root, path), path, keep, chunk)))


def test_walk_paths_lists_the_walk_in_its_order_whatever_the_filter() -> None:
    root = build_tree(_image())
    filters = [None, lambda name, is_dir: is_dir, lambda name, is_dir: not is_dir,
               lambda name, is_dir: name.startswith("1")]
    for path in ["/", "/image", "/image/topics/byName", "/topics", f"/image/topics/byName/{encode_name('%')}",
                 "/image/topics/byName/a/10"]:
        for keep in filters:
            assert _listed(root, path, keep) == _walked(root, path, keep), (path, keep)


def test_walk_paths_on_a_corpus_log_dir(corpus: Path) -> None:
    image, info = load_log_dir(corpus / "hiage__kafka-raft" / "kafka1")
    root = build_tree(image, info)
    assert _listed(root, "/", chunk=100) == _walked(root, "/")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(NAMES), st.text(max_size=4)), max_size=12))
def test_java_sorted_is_the_sort_by_java_name_order(names) -> None:
    shown = [encode_name(n) for n in names]
    assert java_sorted(iter(shown)) == sorted(shown, key=java_name_order)


def test_java_sorted_puts_the_empty_name_first() -> None:
    assert java_sorted(["b", EMPTY_NAME, "a"]) == [EMPTY_NAME, "a", "b"]


def test_java_sorted_orders_astral_characters_as_java_does() -> None:
    """UTF-16: a surrogate pair (U+D83D...) sorts before U+FF5E, unlike the code points."""
    assert java_sorted(["\uFF5E", "\U0001F600", "a"]) == ["a", "\U0001F600", "\uFF5E"]
