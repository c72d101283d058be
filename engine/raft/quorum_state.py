"""A replica's role in the quorum, and the only place that changes it.

Roles (Kafka's EpochState family, KIP-595 + KIP-996): unattached (possibly having
voted: the "voted" state), prospective (asking for pre-votes), candidate, follower,
leader, resigned. Each transition persists the election state (epoch, leader, vote)
*before* the role changes, and refuses illegal moves naming both roles: an epoch
never goes back, a vote is never given twice in one epoch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.raft.election_store import ElectionState, ElectionStore
from engine.raft.leader_state import LeaderState
from engine.raft.voter_set import Address, ReplicaKey, VoterSet


class IllegalTransition(RuntimeError):
    pass


# Epochs are int32 on the wire and in every batch header. Kafka 4.1.2 adds one without a check
# (QuorumState.transitionToCandidate), so past this a Java node wraps to a negative epoch; we
# never run for an epoch past it (raft_polls stops the election before the candidate).
MAX_EPOCH = 2**31 - 1


@dataclass
class UnattachedState:
    epoch: int
    election_deadline_ms: int
    voted_key: ReplicaKey | None = None
    name = "unattached"

    @property
    def role(self) -> str:
        return "voted" if self.voted_key is not None else "unattached"


class NomineeState:
    """What a prospective and a candidate share: an election of their own (Kafka's EpochElection).

    ``granted`` and ``rejected`` hold node ids; only the voters of the set passed in count.
    """

    granted: set[int]
    rejected: set[int]

    def is_vote_granted(self, voters: VoterSet) -> bool:
        return len(self.granted & set(voters.ids)) >= voters.majority_size

    def is_vote_rejected(self, voters: VoterSet) -> bool:
        """Lost: the votes granted plus those not answered yet can no longer make a majority."""
        ids = set(voters.ids)
        granted = self.granted & ids
        unanswered = ids - granted - self.rejected
        return len(granted) + len(unanswered) < voters.majority_size


@dataclass
class ProspectiveState(NomineeState):
    """Asking for pre-votes in its current ``epoch``; a majority makes it a candidate in
    ``epoch + 1``. Nothing persisted changes (KIP-996)."""

    epoch: int
    election_deadline_ms: int
    voted_key: ReplicaKey | None = None
    leader_id: int = -1  # the leader we followed, to go back to if the pre-vote fails
    leader_address: Address | None = None
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    asked_us: set[int] = field(default_factory=set)  # voters that asked us for a pre-vote meanwhile
    role = "prospective"


@dataclass
class CandidateState(NomineeState):
    epoch: int
    election_deadline_ms: int
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    backoff_until_ms: int | None = None  # set once the election is lost: wait, then try again
    role = "candidate"


@dataclass
class FollowerState:
    epoch: int
    leader_id: int
    leader_address: Address | None
    fetch_deadline_ms: int
    voted_key: ReplicaKey | None = None
    last_fetch_ok_ms: int | None = None  # for pre-vote: have we heard from the leader lately?
    snapshot_download: tuple[tuple[int, int], int] | None = None  # ((end_offset, epoch), position)
    role = "follower"


@dataclass
class ResignedState:
    epoch: int
    election_deadline_ms: int
    preferred_successors: tuple[ReplicaKey, ...]
    unacked: set[int] = field(default_factory=set)
    role = "resigned"


EpochState = UnattachedState | ProspectiveState | CandidateState | FollowerState | LeaderState | ResignedState


class QuorumState:
    """Holds the current EpochState; every transition goes through here."""

    def __init__(self, local: ReplicaKey, store: ElectionStore):
        self.local = local
        self.store = store
        self._persisted: ElectionState | None = None
        self.state: EpochState = UnattachedState(0, 0)

    def initialize(self, now_ms: int, election_timeout_ms: int, log_epoch: int = 0) -> ElectionState:
        """Start in the persisted epoch, or in ``log_epoch`` (the epoch of the log's last entry or
        snapshot) when that is ahead: a node started from a snapshot at epoch 1 without a
        quorum-state file must not campaign in epoch 1, which voters refuse as no later than the
        candidate's own log. Kafka's QuorumState.initialize starts unattached there, with no
        leader and no vote, and writes it down."""
        stored = self.store.read() or ElectionState(0)
        self._persisted = stored
        if stored.epoch < log_epoch:
            stored = ElectionState(log_epoch)
            self._persist(stored)
        voted = stored.voted_key
        # A restarted leader or follower starts unattached in its epoch; the vote it gave stays.
        self.state = UnattachedState(stored.epoch, now_ms + election_timeout_ms, voted)
        return stored

    def resume_following(self, leader_id: int, address: Address | None, deadline_ms: int) -> None:
        """At startup, follow again the leader the election state names (as Kafka's
        initialize does): nothing changes on disk, the epoch and the vote stay."""
        persisted = self._persisted
        if persisted is None or persisted.leader_id != leader_id or leader_id == self.local.node_id:
            raise IllegalTransition(f"cannot resume following {leader_id}")
        self.state = FollowerState(self.epoch, leader_id, address, deadline_ms, self.voted_key)

    # -- queries ------------------------------------------------------------------

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def leader_id(self) -> int:
        if isinstance(self.state, LeaderState):
            return self.local.node_id
        if isinstance(self.state, FollowerState):
            return self.state.leader_id
        return -1

    @property
    def voted_key(self) -> ReplicaKey | None:
        """The vote given in the current epoch: the persisted state is the truth."""
        p = self._persisted
        return p.voted_key if p is not None and p.epoch == self.epoch else None

    @property
    def role(self) -> str:
        return self.state.role

    def is_leader(self) -> bool:
        return isinstance(self.state, LeaderState)

    # -- persistence --------------------------------------------------------------

    def _persist(self, election: ElectionState) -> None:
        if self._persisted is not None and election.epoch < self._persisted.epoch:
            raise IllegalTransition(f"epoch would go back from {self._persisted.epoch} to {election.epoch}")
        if election != self._persisted:
            self.store.write(election)
            self._persisted = election

    def _check_epoch(self, epoch: int, target: str, *, allow_same: bool) -> None:
        if epoch < self.epoch or (epoch == self.epoch and not allow_same):
            raise IllegalTransition(f"{self.role} in epoch {self.epoch} cannot become {target} in epoch {epoch}")

    # -- transitions --------------------------------------------------------------

    def to_unattached(self, epoch: int, deadline_ms: int) -> None:
        """A higher epoch with no known leader (or a failed election in ours)."""
        self._check_epoch(epoch, "unattached", allow_same=not self.is_leader())
        voted = self.voted_key if epoch == self.epoch else None
        self._persist(ElectionState(epoch, -1, voted))
        self.state = UnattachedState(epoch, deadline_ms, voted)

    def to_voted(self, epoch: int, candidate: ReplicaKey, deadline_ms: int) -> None:
        self._check_epoch(epoch, "voted", allow_same=True)
        if epoch == self.epoch:
            if not isinstance(self.state, (UnattachedState, ProspectiveState)):
                raise IllegalTransition(f"{self.role} in epoch {epoch} cannot vote in its own epoch")
            if self.voted_key is not None and self.voted_key != candidate:
                raise IllegalTransition(f"already voted for {self.voted_key} in epoch {epoch}")
        self._persist(ElectionState(epoch, -1, candidate))
        self.state = UnattachedState(epoch, deadline_ms, candidate)

    def to_prospective(self, deadline_ms: int) -> None:
        if self.is_leader():
            raise IllegalTransition(f"leader in epoch {self.epoch} cannot become prospective")
        s = self.state
        leader_id = s.leader_id if isinstance(s, FollowerState) else getattr(s, "leader_id", -1)
        address = s.leader_address if isinstance(s, (FollowerState, ProspectiveState)) else None
        self.state = ProspectiveState(self.epoch, deadline_ms, self.voted_key, leader_id, address)

    def to_candidate(self, deadline_ms: int) -> None:
        if not isinstance(self.state, ProspectiveState):
            raise IllegalTransition(f"{self.role} in epoch {self.epoch} cannot become candidate")
        epoch = self.epoch + 1
        if epoch > MAX_EPOCH:
            raise IllegalTransition(f"{self.role} in epoch {self.epoch} cannot run for an epoch past {MAX_EPOCH}")
        self._persist(ElectionState(epoch, -1, self.local))
        self.state = CandidateState(epoch, deadline_ms, {self.local.node_id})

    def to_leader(self, leader_state: LeaderState) -> None:
        if not isinstance(self.state, CandidateState) or leader_state.epoch != self.epoch:
            raise IllegalTransition(f"{self.role} in epoch {self.epoch} cannot become leader")
        self._persist(ElectionState(self.epoch, self.local.node_id, self.local))
        self.state = leader_state

    def to_follower(self, epoch: int, leader_id: int, address: Address | None, deadline_ms: int) -> None:
        same_epoch = epoch == self.epoch
        if same_epoch and (self.is_leader() or isinstance(self.state, ResignedState)
                           or isinstance(self.state, CandidateState) and leader_id == self.local.node_id):
            raise IllegalTransition(f"{self.role} in epoch {epoch} cannot follow {leader_id} in its own epoch")
        if same_epoch and isinstance(self.state, FollowerState) and self.state.leader_id != leader_id:
            raise IllegalTransition(f"follower of {self.state.leader_id} in epoch {epoch} "
                                    f"cannot follow {leader_id} in the same epoch")
        self._check_epoch(epoch, "follower", allow_same=True)
        voted = self.voted_key if same_epoch else None
        self._persist(ElectionState(epoch, leader_id, voted))
        self.state = FollowerState(epoch, leader_id, address, deadline_ms, voted)

    def to_resigned(self, deadline_ms: int, successors: tuple[ReplicaKey, ...], unacked: set[int]) -> None:
        if not self.is_leader():
            raise IllegalTransition(f"{self.role} in epoch {self.epoch} cannot resign")
        self.state = ResignedState(self.epoch, deadline_ms, successors, unacked)
