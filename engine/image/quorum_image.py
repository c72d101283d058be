"""The quorum as the metadata log tells it: its leader changes, kraft.version and voters (KIP-853).

Kafka keeps these in its Raft layer, not in the metadata image; ours keeps them beside the
domains, read from the log's control records, so that time travel shows who led when.
QuorumDelta replays the LeaderChange, KRaftVersion and KRaftVoters control records.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from itertools import islice
from typing import Any, ClassVar, Iterator, NamedTuple, Sequence

from engine.image.domain_delta import DomainDelta, ReplayJournal
from engine.records.metadata_record_serde import ControlRecord


class LeaderChange(NamedTuple):
    """A LeaderChangeMessage as it stands in the log."""

    offset: int
    epoch: int
    timestamp_ms: int
    leader_id: int
    voters: tuple[int, ...]
    granting_voters: tuple[int, ...]


# Images are values any thread may hold: two deltas appending to the same view at once must not
# both extend its backing list.
_APPEND_LOCK = threading.Lock()


class LeaderChanges(Sequence):
    """The leader changes of the log, oldest first: an immutable sequence that appends in O(1).

    Images share one backing list and each keeps how much of it is its own, so the next
    image costs one append, not a copy of the whole history (a log may hold thousands of
    elections, and the dashboard keeps many images). Appending to a view that is not the
    newest (a replay from an older image) reuses the next element when it is the same change,
    else starts a new list from its own prefix; nothing a view holds ever changes."""

    __slots__ = ("_items", "_length")

    def __init__(self, changes: Sequence[LeaderChange] = ()):
        self._items = list(changes)
        self._length = len(self._items)

    def appended(self, change: LeaderChange) -> "LeaderChanges":
        items, length = self._items, self._length
        with _APPEND_LOCK:
            if not length:
                items = [change]
            elif len(items) == length:
                items.append(change)
            elif items[length] != change:
                items = items[:length] + [change]
        view = LeaderChanges.__new__(LeaderChanges)
        view._items, view._length = items, length + 1
        return view

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self._items[:self._length][index])
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("leader change index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[LeaderChange]:
        return islice(self._items, self._length)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (LeaderChanges, tuple, list)):
            return NotImplemented
        return len(other) == self._length and all(a == b for a, b in zip(self, other))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"LeaderChanges({list(self)!r})"

    def __reduce__(self):
        return LeaderChanges, (tuple(self),)


NO_LEADER_CHANGES = LeaderChanges()


class Voter(NamedTuple):
    id: int
    directory_id: uuid.UUID | None
    endpoints: tuple[tuple[str, str, int], ...]  # (listener name, host, port)
    kraft_version_range: tuple[int, int]


@dataclass(frozen=True, slots=True)
class QuorumImage:
    """The quorum as the log tells it: leader changes, kraft.version, voters (KIP-853)."""

    leader_changes: LeaderChanges = NO_LEADER_CHANGES
    kraft_version: int | None = None  # None: no KRaftVersionRecord seen (kraft.version 0)
    voters: tuple[Voter, ...] | None = None  # None: static voters, not in the log
    EMPTY: ClassVar["QuorumImage"]

    @property
    def leader(self) -> LeaderChange | None:
        return self.leader_changes[-1] if self.leader_changes else None


QuorumImage.EMPTY = QuorumImage()


class QuorumDelta(DomainDelta):
    """Changes to the quorum. Change set: ``kraft_version`` and ``voters`` (one value each), and
    ``leader_changes``, the LeaderChange records appended."""

    DOMAINS = ("kraft_version", "voters", "leader_changes")
    __slots__ = ("image", "quorum")

    def __init__(self, image: QuorumImage, journal: ReplayJournal | None = None) -> None:
        super().__init__(journal)
        self.image = image
        self.quorum = image  # as the delta stands

    def replay_control(self, record: ControlRecord, offset: int, epoch: int, timestamp_ms: int) -> None:
        message, quorum = record.message, self.quorum
        if record.type_name == "LEADER_CHANGE":
            # noted for record_changes (the leader changes this record appended), not as a subject
            if self.journal.per_record:
                self.journal.named.append(("leader_changes", None, quorum.leader_changes))
            change = LeaderChange(offset, epoch, timestamp_ms, message.leader_id,
                                  tuple(v.voter_id for v in message.voters),
                                  tuple(v.voter_id for v in message.granting_voters))
            self.quorum = QuorumImage(quorum.leader_changes.appended(change), quorum.kraft_version, quorum.voters)
        elif record.type_name == "KRAFT_VERSION":
            self._note("kraft_version", None, quorum.kraft_version)
            self.quorum = QuorumImage(quorum.leader_changes, message.k_raft_version, quorum.voters)
        elif record.type_name == "KRAFT_VOTERS":
            self._note("voters", None, quorum.voters)
            voters = tuple(Voter(v.voter_id, v.voter_directory_id,
                                 tuple((e.name, e.host, e.port) for e in v.endpoints),
                                 (v.k_raft_version_feature.min_supported_version,
                                  v.k_raft_version_feature.max_supported_version))
                           for v in message.voters)
            self.quorum = QuorumImage(quorum.leader_changes, quorum.kraft_version, voters)

    def leader_changes_since(self, before: LeaderChanges) -> tuple[LeaderChange, ...]:
        """The leader changes appended to ``before`` (a view the delta's own list grew from)."""
        now = self.quorum.leader_changes
        return tuple(now[len(before):]) if now is not before else ()

    def value_in_image(self, domain: str, key: None) -> Any:
        return self.image.kraft_version if domain == "kraft_version" else self.image.voters

    def value_now(self, domain: str, key: None) -> Any:
        if domain == "leader_changes":
            return self.quorum.leader_changes
        return self.quorum.kraft_version if domain == "kraft_version" else self.quorum.voters

    def apply(self) -> QuorumImage:
        return self.quorum


__all__ = ["LeaderChange", "LeaderChanges", "NO_LEADER_CHANGES", "QuorumDelta", "QuorumImage", "Voter"]
