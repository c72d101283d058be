"""The partition table's rows as a sequence that decodes only the rows asked for (issue 26).

A snapshot opened lazily (engine.image.lazy_topics) has its topics' partitions still in the
file's bytes: building a million PartitionRows up front would decode all of them before the
first paint. ``PartitionView`` is the rows of an image in (topic, partition) order without
building them: the topics sorted by name and a running total of their partition counts place
row ``i`` in one topic, whose rows (panels.topic_rows, cached per topic object) are built when a
row of theirs is first read — the table reads only the lines on screen.

A topic not decoded yet is laid out by the PartitionRecords its part of the file holds
(lazy_topics.pending_partition_records): the same number unless the file repeats a partition.
Such a count places rows but is never reported: ``exact`` says whether every count is a
decoded one, and the table says "counting…" until it is. When a decoded topic turns out to
hold fewer rows than laid out, the layout is corrected before the row is answered.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from itertools import accumulate, compress
from operator import is_not, itemgetter
from typing import Iterator, overload

from engine.image.lazy_topics import pending_partition_records
from engine.image.metadata_image import MetadataImage, TopicImage
from metashell.dashboard import panels
from metashell.dashboard.model import PartitionRow


class PartitionView(Sequence):
    """Every partition row of ``image``, sorted by (topic, partition), built on demand."""

    def __init__(self, image: MetadataImage, counted: Mapping[int, tuple] | None = None,
                 previous: PartitionView | None = None) -> None:
        """``counted``: id(topic) -> (topic, partitions), counted elsewhere (metashell.dashboard.counting);
        ``previous``: the view of the frame before, whose layout is reused for the topics this
        image shares with it (a step: 10,000 topics are not sorted again)."""
        self.image = image
        self._counted = counted
        by_id = image.topics.by_id
        if previous is not None and previous._topics and previous.image.topics.by_name == image.topics.by_name:
            self._follow(previous, by_id)  # a step: the same topics, most of them the same objects
            return
        self._topics: list[TopicImage] = sorted(by_id.values(), key=_NAME)
        self._getter = itemgetter(*[topic.id for topic in self._topics]) if len(self._topics) > 1 else None
        self._counts: list[int] = []
        self._pending: list[bool] = []  # per topic: laid out by a count not confirmed yet
        for topic in self._topics:
            self._count(topic, counted)
        self._ends = list(accumulate(self._counts))  # the row index past each topic's last row
        self.exact = not any(self._pending)  # every count is a decoded topic's (else the total is not to be reported)

    def _count(self, topic: TopicImage, counted: Mapping[int, tuple] | None, at: int | None = None) -> None:
        laid_out = pending_partition_records(topic.partitions)
        if laid_out is None:
            count = len(topic.partitions)
        elif counted is not None and (entry := counted.get(id(topic))) is not None and entry[0] is topic:
            count, laid_out = entry[1], None
        else:
            count = laid_out
        if at is None:
            self._counts.append(count)
            self._pending.append(laid_out is not None)
        else:
            self._counts[at], self._pending[at] = count, laid_out is not None

    def _follow(self, previous: PartitionView, by_id: Mapping) -> None:
        """The layout of ``previous`` (same topic names), the topics a step replaced counted again:
        the lookups and the comparison run in C, so a step over 10,000 topics costs a few ms."""
        old = previous._topics
        getter = self._getter = previous._getter
        self._topics = list(getter(by_id)) if getter is not None else [by_id[old[0].id]]
        self._counts, self._pending = list(previous._counts), list(previous._pending)
        changed = list(compress(range(len(old)), map(is_not, old, self._topics)))
        if previous._counted is not self._counted:  # the background's counts came in: the pending topics too
            changed = sorted(set(changed).union(compress(range(len(old)), self._pending)))
        for at in changed:
            self._count(self._topics[at], self._counted, at)
        same = all(self._counts[at] == previous._counts[at] for at in changed)
        self._ends = previous._ends if same else list(accumulate(self._counts))  # (replaced, never changed in place)
        self.exact = not any(self._pending)

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    @overload
    def __getitem__(self, index: int) -> PartitionRow: ...

    @overload
    def __getitem__(self, index: slice) -> list[PartitionRow]: ...

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError(index)
        while True:
            at = bisect_right(self._ends, index)
            rows = self.topic_rows(at)
            first = self._ends[at] - self._counts[at]
            if len(rows) == self._counts[at]:
                self._pending[at] = False  # decoded now: its count is confirmed
                return rows[index - first]
            self._relayout(at, len(rows))  # laid out by a count the decoding did not confirm
            if index >= len(self):
                raise IndexError(index)

    def topic_rows(self, at: int) -> tuple[PartitionRow, ...]:
        topic = self._topics[at]
        return panels.topic_rows(self.image, topic)

    def _relayout(self, at: int, count: int) -> None:
        self._counts[at] = count
        self._pending[at] = False
        self._ends = list(accumulate(self._counts))

    def __iter__(self) -> Iterator[PartitionRow]:
        for at in range(len(self._topics)):
            rows = self.topic_rows(at)
            if len(rows) != self._counts[at]:
                self._relayout(at, len(rows))
            self._pending[at] = False
            yield from rows
        self.exact = True  # every topic was decoded on the way

    def __eq__(self, other: object) -> bool:
        # two views of one image are the same rows; a view and a list compare row by row
        if isinstance(other, PartitionView):
            return other.image is self.image and other.exact == self.exact
        if isinstance(other, list):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def _name(topic: TopicImage) -> str:
    return topic.name


_NAME = _name

__all__ = ["PartitionView"]
