"""The images a MetadataHistory keeps, so that the image after any entry is a short replay away.

Checkpoints: the starting image (index -1), one every ``spacing`` records (at a batch end;
CHECKPOINT_RECORDS at first, doubled whenever those checkpoints together add more than
CHECKPOINT_BUDGET mapping entries: a long log of a big cluster stays in memory), the batch
ends whose image costs little while an observer watches (stepping batch by batch then
replays nothing), and the last entry's (the *tail*, dropped once a later pass ends
elsewhere). Beside them, the few images asked for last (RECENT_IMAGES): stepping replays
from the one shown, not from a checkpoint.

Indexes are entry indexes of the history's entries; the window (history_window) renumbers
them when it drops the oldest entries, and ``drop_through`` follows.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import OrderedDict
from typing import NamedTuple, Sequence

from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.storage.log_reader import LogEntry

CHECKPOINT_RECORDS = 1000  # at most about this many records replayed per question ...
CHECKPOINT_BUDGET = 4_000_000  # ... while those checkpoints add fewer mapping entries than this (else
# every other one goes and the spacing doubles: a long log of a big cluster stays in memory)
CHEAP_BATCH_IMAGE = 2048  # mapping entries a batch-end image may add and still be kept ...
BATCH_IMAGE_BUDGET = 1_000_000  # ... and all of them together
RECENT_IMAGES = 8  # images built last, so stepping replays from the one shown, not a checkpoint


class ReplayState(NamedTuple):
    image: MetadataImage
    open_transaction: tuple | None  # records of a metadata transaction open at this point
    skipped: int  # records replay passed over since the history's start


class HistoryCheckpoints:
    """The states kept at entry indexes, from the starting one (-1) on."""

    def __init__(self, start: ReplayState) -> None:
        self._states: dict[int, ReplayState] = {-1: start}
        self._indexes: list[int] = [-1]
        self._recent: OrderedDict[int, ReplayState] = OrderedDict()
        self.spacing = CHECKPOINT_RECORDS  # records between spaced checkpoints (doubles past CHECKPOINT_BUDGET)
        self._since = 0  # records replayed since the last spaced or kept checkpoint (at the last pass's end)
        self._spaced: dict[int, int] = {}  # index -> cost of the checkpoints kept for the spacing
        self._kept: dict[int, int] = {}  # index -> cost of the cheap batch-end checkpoints (an observer's)
        self._kept_cost = 0  # their sum, against BATCH_IMAGE_BUDGET
        self._tail: int | None = None  # a checkpoint kept only as the last entry's (dropped once passed)

    @property
    def indexes(self) -> tuple[int, ...]:
        """The entry indexes whose state is kept, in order (-1: the starting image)."""
        return tuple(self._indexes)

    @property
    def since(self) -> int:
        """Records replayed since the last spaced or kept checkpoint, as the last pass ended."""
        return self._since

    @property
    def start(self) -> ReplayState:
        return self._states[-1]

    @property
    def latest(self) -> ReplayState:
        """The state of the last checkpoint (after a pass: the last entry's)."""
        return self._states[self._indexes[-1]]

    # -- the single pass ------------------------------------------------------------------

    def batch_end(self, index: int, state: ReplayState, cost: int, since: int, observed: bool) -> bool:
        """A batch ends at ``index``, ``since`` records after the last checkpoint, its image adding
        ``cost`` mapping entries: keep it when the spacing is reached, or, for an ``observed``
        pass, when it costs little. True when kept."""
        if since >= self.spacing:
            self._add(index, state)
            self._spaced[index] = cost
            self._thin()
            return True
        if observed and cost <= CHEAP_BATCH_IMAGE and self._kept_cost + cost <= BATCH_IMAGE_BUDGET:
            self._kept_cost += cost  # a batch end that costs little: stepping batch by batch replays nothing
            self._kept[index] = cost
            self._add(index, state)
            return True
        return False

    def pass_ended(self, last: int, since: int) -> bool:
        """A pass ended at entry ``last``, ``since`` records after the last spaced or kept
        checkpoint: the previous tail goes once passed. True when ``last`` needs a state of its
        own (``keep_tail``)."""
        self._since = since
        tail = self._tail
        if tail is not None and tail != last and tail in self._states:  # passed: the next end is the tail
            del self._states[tail], self._indexes[bisect_left(self._indexes, tail)]
            self._recent.pop(tail, None)
            self._tail = None
        return last not in self._states

    def keep_tail(self, index: int, state: ReplayState) -> None:
        """The latest image: the one asked for most."""
        self._add(index, state)
        self._tail = index

    def _add(self, index: int, state: ReplayState) -> None:
        self._states[index] = state
        self._indexes.append(index)

    def _thin(self) -> None:
        """Past CHECKPOINT_BUDGET: drop every other spaced checkpoint and double the spacing."""
        while sum(self._spaced.values()) > CHECKPOINT_BUDGET and len(self._spaced) > 1:
            for index in sorted(self._spaced)[::2]:
                del self._spaced[index], self._states[index]
            self._indexes = sorted(self._states)
            self.spacing *= 2

    # -- questions ------------------------------------------------------------------------

    def state_at(self, index: int, entries: Sequence[LogEntry]) -> ReplayState:
        """The state once ``entries[index]`` is applied (-1: the start): kept, or replayed from the
        nearest kept or recent state before it (and remembered as recent)."""
        state = self._states.get(index) or self._recent.get(index)
        if state is not None:
            self._recent.pop(index, None)
            self._recent[index] = state
            return state
        base = self._indexes[bisect_right(self._indexes, index) - 1]
        base = max([base, *(r for r in self._recent if base < r < index)])
        base_state = self._states.get(base) or self._recent[base]
        delta = MetadataDelta(base_state.image, base_state.open_transaction)
        for entry in entries[base + 1:index + 1]:
            delta.replay(entry.record, entry.offset, entry.leader_epoch, entry.timestamp_ms)
        state = self._recent[index] = ReplayState(delta.apply(), delta.open_transaction,
                                                  base_state.skipped + delta.skipped)
        if len(self._recent) > RECENT_IMAGES:
            self._recent.popitem(last=False)
        return state

    # -- the window ----------------------------------------------------------------------------

    def drop_through(self, cut: int) -> None:
        """The entries up to ``cut`` (a checkpoint) are dropped: its state becomes the start
        (-1), and every later index moves down by ``cut + 1``."""
        k = cut + 1
        self._states = {i - k: s for i, s in self._states.items() if i >= cut}  # cut becomes -1
        self._indexes = sorted(self._states)
        self._recent = OrderedDict((i - k, s) for i, s in self._recent.items() if i > cut)
        self._spaced = {i - k: c for i, c in self._spaced.items() if i > cut}
        self._kept_cost -= sum(c for i, c in self._kept.items() if i <= cut)
        self._kept = {i - k: c for i, c in self._kept.items() if i > cut}
        self._tail = None if self._tail is None or self._tail <= cut else self._tail - k


def image_cost(before: MetadataImage, after: MetadataImage, delta: MetadataDelta) -> int:
    """About how many mapping entries ``after`` holds that ``before`` did not share."""
    cost = 0
    if after.topics is not before.topics:
        by_id = after.topics.by_id
        cost += 2 * len(by_id)
        for topic_id in delta.changed_topic_ids():
            topic = by_id.get(topic_id)
            if topic is not None:
                cost += len(topic.partitions)
    if after.cluster is not before.cluster:
        cost += len(after.cluster.brokers)
    if after.configs is not before.configs:
        cost += len(after.configs)
    return cost
