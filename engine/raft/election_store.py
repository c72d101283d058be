"""Where a replica keeps its election state (epoch, leader, vote) across restarts.

The file store writes Kafka's ``quorum-state`` file (data_version 1 for kraft.version 1,
0 for static quorums) atomically and durably; the memory store is the simulator's,
durable by construction (each write is a completed fsync).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from engine.storage.quorum_state_file import QuorumStateData, read_quorum_state, write_quorum_state
from engine.raft.voter_set import ReplicaKey


@dataclass(frozen=True, slots=True)
class ElectionState:
    epoch: int
    leader_id: int = -1
    voted_key: ReplicaKey | None = None


class ElectionStore(Protocol):
    def read(self) -> ElectionState | None:
        ...

    def write(self, state: ElectionState) -> None:
        """Durable before it returns: a vote must be on disk before it is sent."""


class MemoryElectionStore:
    def __init__(self) -> None:
        self.state: ElectionState | None = None
        self.writes = 0

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        self.state = state
        self.writes += 1


class FileElectionStore:
    """``<metadata.log.dir>/__cluster_metadata-0/quorum-state``."""

    def __init__(self, path: Path, *, data_version: int = 1, static_voter_ids: tuple[int, ...] = ()):
        self.path = Path(path)
        self.data_version = data_version
        self.static_voter_ids = static_voter_ids

    def read(self) -> ElectionState | None:
        if not self.path.exists():
            return None
        data = read_quorum_state(self.path)
        voted = None
        if data.voted_id >= 0:
            voted = ReplicaKey(data.voted_id, data.voted_directory_id)
        return ElectionState(max(data.leader_epoch, 0), data.leader_id, voted)

    def write(self, state: ElectionState) -> None:
        voted_id = state.voted_key.node_id if state.voted_key else -1
        if self.data_version == 1:
            data = QuorumStateData(leader_id=state.leader_id, leader_epoch=state.epoch, voted_id=voted_id,
                                   voted_directory_id=state.voted_key.directory_id if state.voted_key else None,
                                   data_version=1)
        else:
            data = QuorumStateData(leader_id=state.leader_id, leader_epoch=state.epoch, voted_id=voted_id,
                                   current_voters=self.static_voter_ids, data_version=0)
        write_quorum_state(self.path, data)
