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
from itertools import accumulate
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
        by_id = image.topics.by_id
        if previous is not None and previous.image.topics.by_name == image.topics.by_name:
            self._topics = [by_id[topic.id] for topic in previous._topics]  # the same topics, same order
        else:
            previous = None
            self._topics = sorted(by_id.values(), key=_NAME)
        counted = counted or {}
        counts: list[int] = []
        pending: list[bool] = []
        for at, topic in enumerate(self._topics):
            if previous is not None and previous._topics[at] is topic and not previous._pending[at]:
                counts.append(previous._counts[at])
                pending.append(False)
                continue
            laid_out = pending_partition_records(topic.partitions)
            if laid_out is None:
                counts.append(len(topic.partitions))
            elif (entry := counted.get(id(topic))) is not None and entry[0] is topic:
                counts.append(entry[1])
                laid_out = None
            else:
                counts.append(laid_out)
            pending.append(laid_out is not None)
        self._counts = counts
        self._pending = pending  # per topic: laid out by a count not confirmed yet
        self._ends = list(accumulate(counts))  # the row index past each topic's last row
        self.exact = not any(pending)  # every count is a decoded topic's (else the total is not to be reported)

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
