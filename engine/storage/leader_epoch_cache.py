"""Leader epochs of the log: where each epoch starts (Kafka's LeaderEpochFileCache), in memory.

The Raft layer asks it for the end offset of an epoch to find where a follower's
log diverges from the leader's. ``MetadataLog`` keeps it in step with the log and
persists it as ``leader-epoch-checkpoint``.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


@dataclass
class LeaderEpochCache:
    entries: list[tuple[int, int]] = field(default_factory=list)  # (epoch, start offset), both increasing

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; returns whether anything changed.

        An epoch older than the latest is ignored (it is already covered); an entry the
        new one supersedes — same or later start offset — is dropped.
        """
        if epoch < self.latest_epoch or (self.entries and epoch == self.latest_epoch):
            return False
        while self.entries and self.entries[-1][1] >= start_offset:
            self.entries.pop()
        self.entries.append((epoch, start_offset))
        return True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(largest epoch <= ``epoch``, the offset where the epoch after it starts).

        For the latest epoch the end is the log end offset; for an epoch older than
        every entry, (UNDEFINED_EPOCH, UNDEFINED_OFFSET).
        """
        if not self.entries or epoch < self.entries[0][0]:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        index = bisect_right([e for e, _ in self.entries], epoch) - 1
        found_epoch = self.entries[index][0]
        if index == len(self.entries) - 1:
            return found_epoch, log_end_offset
        return found_epoch, self.entries[index + 1][1]

    def truncate_from_end(self, end_offset: int) -> bool:
        """Forget epochs that start at or after ``end_offset`` (the log was cut there)."""
        before = len(self.entries)
        self.entries = [(e, o) for e, o in self.entries if o < end_offset]
        return len(self.entries) != before

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log now starts at ``start_offset``: drop epochs wholly before it, clamp the first."""
        kept = [(e, o) for e, o in self.entries if o >= start_offset]
        earlier = [(e, o) for e, o in self.entries if o < start_offset]
        if earlier and (not kept or kept[0][1] > start_offset):
            kept.insert(0, (earlier[-1][0], start_offset))
        changed = kept != self.entries
        self.entries = kept
        return changed
