"""What a leader tracks: each replica's progress, the high watermark, quorum liveness.

The high watermark is the offset a majority of the *current* voters (the latest voter
set in the log, committed or not: KIP-853) have durably reached. It moves only once
it covers an entry of the leader's own epoch (its LeaderChangeMessage), and never
backwards, also when the voter set changes under it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.raft.voter_set import ReplicaKey, VoterSet


@dataclass
class ReplicaProgress:
    key: ReplicaKey
    end_offset: int = -1  # the offset it asked for next: all below it is on its disk
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1
    leader_end_at_last_fetch: int = -1
    sent_high_watermark: int = -1  # the last one a fetch response told it


@dataclass
class PendingVoterChange:
    kind: str  # "add", "remove", "update"
    key: ReplicaKey
    token: object | None  # the request to answer once the change commits
    offset: int = -1  # where its VotersRecord went, once appended
    deadline_ms: int = 0
    response: object | None = None  # the success response, sent at commit
    node: object | None = None  # add: the VoterNode to add once it has caught up
    ack_when_committed: bool = True


@dataclass
class LeaderState:
    local: ReplicaKey
    epoch: int
    epoch_start_offset: int
    voters: VoterSet
    granting: frozenset[int]
    now_ms: int
    check_quorum_timeout_ms: int
    high_watermark: int | None = None
    progress: dict[int, ReplicaProgress] = field(default_factory=dict)
    observers: dict[ReplicaKey, ReplicaProgress] = field(default_factory=dict)
    unacked_voters: set[int] = field(default_factory=set)  # still to learn of us: BeginQuorumEpoch
    pending_change: PendingVoterChange | None = None
    role = "leader"

    def __post_init__(self) -> None:
        self.set_voters(self.voters)
        self.unacked_voters = set(self.voters.ids) - {self.local.node_id}
        self.check_quorum_deadline_ms = self.now_ms + self.check_quorum_timeout_ms

    # -- voters -------------------------------------------------------------------

    def set_voters(self, voters: VoterSet) -> None:
        """A new voter set (a VotersRecord appended or truncated): keep what we know of each."""
        old = self.progress
        self.voters = voters
        self.progress = {}
        for key in voters.keys:
            progress = old.get(key.node_id) or self.observers.pop(key, None) or ReplicaProgress(key)
            progress.key = key
            self.progress[key.node_id] = progress
        for node_id, progress in old.items():
            if node_id not in self.progress and node_id != self.local.node_id:
                self.observers[progress.key] = progress  # a removed voter may keep fetching
        self.unacked_voters &= set(voters.ids)

    def is_voter(self, key: ReplicaKey) -> bool:
        return self.voters.is_voter(key)

    # -- progress and the high watermark ------------------------------------------

    def update_local(self, flushed_end_offset: int, now_ms: int) -> bool:
        """The leader's own durable end offset; returns whether the high watermark moved."""
        progress = self.progress.get(self.local.node_id)
        if progress is not None:
            progress.end_offset = flushed_end_offset
            progress.last_fetch_ms = progress.last_caught_up_ms = now_ms
        return self._advance_high_watermark()

    def update_replica(self, key: ReplicaKey, fetch_offset: int, now_ms: int, leader_end_offset: int) -> bool:
        """A Fetch from ``key`` at ``fetch_offset``; returns whether the high watermark moved."""
        progress = self.progress.get(key.node_id) if self.voters.is_voter(key) else None
        if progress is None:
            progress = self.observers.setdefault(key, ReplicaProgress(key))
        else:
            self.unacked_voters.discard(key.node_id)
        if fetch_offset >= leader_end_offset:
            progress.last_caught_up_ms = now_ms
        elif fetch_offset >= progress.leader_end_at_last_fetch >= 0:
            progress.last_caught_up_ms = max(progress.last_caught_up_ms, progress.last_fetch_ms)
        progress.end_offset = fetch_offset  # may drop if the follower truncated: the HW never does
        progress.last_fetch_ms = now_ms
        progress.leader_end_at_last_fetch = leader_end_offset
        return self._advance_high_watermark()

    def _advance_high_watermark(self) -> bool:
        offsets = sorted((p.end_offset for p in self.progress.values()), reverse=True)
        if not offsets or len(offsets) < self.voters.majority_size:
            return False
        candidate = offsets[self.voters.majority_size - 1]
        # Only an entry of our own epoch may commit (the Raft rule; the LeaderChangeMessage is first).
        if candidate <= self.epoch_start_offset:
            return False
        if self.high_watermark is not None and candidate <= self.high_watermark:
            return False
        self.high_watermark = candidate
        return True

    def note_contact(self, key: ReplicaKey, now_ms: int) -> None:
        """A voter was heard from without a Fetch (FetchSnapshot): it counts for check-quorum."""
        progress = self.progress_of(key)
        if progress is not None:
            progress.last_fetch_ms = now_ms

    def progress_of(self, key: ReplicaKey) -> ReplicaProgress | None:
        if self.voters.is_voter(key):
            return self.progress.get(key.node_id)
        return self.observers.get(key)

    def caught_up(self, key: ReplicaKey, now_ms: int, max_lag_ms: int) -> bool:
        progress = self.observers.get(key) or self.progress.get(key.node_id)
        return progress is not None and progress.last_caught_up_ms >= 0 and \
            now_ms - progress.last_caught_up_ms <= max_lag_ms

    # -- quorum liveness ---------------------------------------------------------------

    def check_quorum(self, now_ms: int) -> bool:
        """False once no majority of voters has fetched within the check period (Kafka's
        check-quorum: the timer restarts whenever a majority has been heard from), so a
        partitioned leader steps down instead of serving a stale view."""
        times = sorted((now_ms if p.key.node_id == self.local.node_id else max(p.last_fetch_ms, self.now_ms)
                        for p in self.progress.values()), reverse=True)
        majority = self.voters.majority_size
        if len(times) < majority:
            return True  # a leader outside the voter set resigns by another rule
        self.check_quorum_deadline_ms = times[majority - 1] + self.check_quorum_timeout_ms
        return now_ms < self.check_quorum_deadline_ms

    def successors(self) -> tuple[ReplicaKey, ...]:
        """Other voters, most caught-up first: whom to suggest when resigning."""
        others = [p for p in self.progress.values() if p.key.node_id != self.local.node_id]
        others.sort(key=lambda p: (-p.end_offset, p.key.node_id))
        return tuple(p.key for p in others)
