"""What goes into the Raft core and what comes out of it (Kafka's RaftMessage family).

The owner hands the core ``InboundRequest``s and ``InboundResponse``s and gets back a
``Ready``: the ``OutboundRequest``s and ``OutboundResponse``s to send, in order, and when to
poll again. Listeners (``RaftListener``) learn what is committed and who leads. Plain data,
no behaviour: every other module of the core may import this one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from engine.raft.raft_log import LogBatch
from engine.raft.voter_set import Address
from engine.storage.snapshot_writer import SnapshotId

BOOTSTRAP_NODE_ID = -1  # bootstrap servers have no known id: they are addressed as -1, -2, ...


class NotLeaderError(Exception):
    """An append for an epoch this replica does not lead (any more)."""


@dataclass(frozen=True, slots=True)
class Destination:
    node_id: int  # below 0 for a bootstrap server, whose id is not known yet
    address: Address | None


@dataclass(frozen=True, slots=True)
class OutboundRequest:
    correlation_id: int
    destination: Destination
    request: Any


@dataclass(frozen=True, slots=True)
class OutboundResponse:
    token: object  # whatever the edge passed with the request
    response: Any


@dataclass(frozen=True, slots=True)
class InboundRequest:
    token: object
    request: Any


@dataclass(frozen=True, slots=True)
class InboundResponse:
    correlation_id: int
    response: Any | None  # None when the request failed: ``error`` says why
    error: str | None = None


@dataclass
class Ready:
    messages: list = field(default_factory=list)  # OutboundRequest and OutboundResponse, in order
    next_poll_ms: int = 0


@dataclass(frozen=True, slots=True)
class LeaderAndEpoch:
    leader_id: int  # -1: unknown
    epoch: int


class RaftListener(Protocol):
    def handle_commit(self, batches: Sequence[LogBatch]) -> None:
        """Batches wholly below the high watermark, in order, each exactly once (control
        batches included: check ``batch.control``)."""

    def handle_load_snapshot(self, snapshot_id: SnapshotId, batches: Sequence[LogBatch]) -> None:
        """Replace all state with this snapshot; commits continue from its end offset."""

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        ...


@dataclass
class InFlight:
    """A request of ours awaiting its answer (Kafka's RequestManager keeps the same)."""

    api: str
    destination: Destination
    deadline_ms: int
    context: Any = None
