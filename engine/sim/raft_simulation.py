"""Deterministic simulation of a whole quorum: virtual time, a faulty network, crashes.

N voters and M observers run the real RaftClient in one process over MemoryRaftLog and
MemoryElectionStore. Messages cross a simulated network that delays, drops, duplicates
and reorders them (through random delays), and can be partitioned; every message is
encoded and decoded with kio on the way, as on a socket. Nodes crash (their unflushed
writes lost) and restart. Everything random comes from one seeded ``random.Random``, so
a seed replays exactly. After every event the invariants are checked (see
``check_invariants``); at the end the faults heal and the quorum must elect a leader and
commit a new record within a bounded virtual time (liveness).
"""

from __future__ import annotations

import heapq
import random
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from engine.records.kio_codec import encode_entity
from engine.records.bounds_check import decode_entity
from engine.raft.election_store import MemoryElectionStore
from engine.raft.memory_raft_log import MemoryRaftLog
from engine.raft.raft_client import (
    InboundRequest, InboundResponse, NotLeaderError, OutboundRequest, RaftClient,
)
from engine.raft.raft_config import RaftConfig
from engine.sim.state_machine import CommitRecord, InvariantViolation, SimStateMachine, data_record
from engine.raft.voter_set import ReplicaKey, VoterNode, VoterSet
from engine.storage.snapshot_writer import SnapshotId

CLUSTER_ID = "SimulatedClusterIdAAAA"
LISTENER = "CONTROLLER"
ADMIN = -100  # the simulated operator's address


@dataclass
class SimConfig:
    voters: int = 3
    observers: int = 1
    kraft_version: int = 1
    min_delay_ms: int = 1
    max_delay_ms: int = 25
    loss: float = 0.03
    duplicate: float = 0.02
    wire: bool = True  # encode every message with kio on its way
    fault_interval_ms: tuple[int, int] = (100, 1500)
    liveness_bound_ms: int = 30_000
    raft: dict[str, int] = field(default_factory=lambda: {"append_linger_ms": 5})


def address_of(node_id: int) -> tuple[str, int]:
    return f"node{node_id}", 9093


@dataclass
class SimNode:
    node_id: int
    key: ReplicaKey
    log: MemoryRaftLog
    store: MemoryElectionStore
    client: RaftClient | None = None
    machine: SimStateMachine | None = None
    incarnation: int = 0
    wake_at: int | None = None
    last_hw: int = -1
    max_epoch: int = 0
    checked_to: int = 0  # its log was checked against the commits below this offset
    _traced: object = None


class Simulation:
    def __init__(self, seed: int, config: SimConfig | None = None, *, trace: Callable[[str], None] | None = None):
        self.seed = seed
        self.cfg = config or SimConfig()
        self.rng = random.Random(seed)
        self.now_ms = 0
        self.queue: list = []
        self._seq = 0
        self.commits = CommitRecord()
        self.leaders: dict[int, int] = {}  # epoch -> leader id
        self.blocked: set[tuple[int, int]] = set()
        self.loss, self.duplicate = self.cfg.loss, self.cfg.duplicate
        self.trace = trace
        self.events = 0
        self._events_now = 0
        self.appended = 0
        ids = list(range(1, self.cfg.voters + self.cfg.observers + 1))
        self.nodes = {i: SimNode(i, ReplicaKey(i, uuid.UUID(int=self.rng.getrandbits(128))), MemoryRaftLog(),
                                 MemoryElectionStore()) for i in ids}
        voter_set = VoterSet.of(VoterNode(self.nodes[i].key if self.cfg.kraft_version else ReplicaKey(i),
                                          ((LISTENER, address_of(i)),)) for i in ids[:self.cfg.voters])
        self.initial_voters = voter_set
        static = voter_set if self.cfg.kraft_version == 0 else VoterSet()
        self.raft_config = RaftConfig(static_voters=static, listener_name=LISTENER,
                                      bootstrap_servers=tuple(address_of(i) for i in ids[:self.cfg.voters]),
                                      **self.cfg.raft)
        self.node_configs: dict[int, RaftConfig] = {}
        for node in self.nodes.values():
            if self.cfg.kraft_version == 1:
                self._bootstrap_checkpoint(node, voter_set)
            self.start(node.node_id)

    # -- nodes --------------------------------------------------------------------------

    def _bootstrap_checkpoint(self, node: SimNode, voters: VoterSet) -> None:
        from engine.raft.kraft_control_state import KRaftControlState

        control = KRaftControlState(VoterSet())
        control.history.add(0, voters)
        node.log.create_snapshot(SnapshotId(0, 0), [], kraft_control=control.control_records_at(0),
                                 last_contained_log_timestamp_ms=0, now_ms=0)

    def replace_disk(self, node_id: int, *, auto_join: bool = True) -> ReplicaKey:
        """A failed disk swapped for an empty one: a new directory id, nothing on it but
        what ``storage format --no-initial-controllers`` writes (nothing, in memory)."""
        self.crash(node_id)
        node = self.nodes[node_id]
        node.key = ReplicaKey(node_id, uuid.UUID(int=self.rng.getrandbits(128)))
        node.log, node.store = MemoryRaftLog(), MemoryElectionStore()
        node.max_epoch = 0
        if auto_join:
            self.node_configs[node_id] = replace(self.raft_config, auto_join_enable=True)
        self.note(f"node {node_id}: disk replaced, directory {node.key}")
        return node.key

    def start(self, node_id: int) -> None:
        node = self.nodes[node_id]
        node.incarnation += 1
        node.machine = self.make_machine(node_id)
        config = self.node_configs.get(node_id, self.raft_config)
        node.client = RaftClient(config=config, cluster_id=CLUSTER_ID, local=node.key,
                                 endpoints=((LISTENER, address_of(node_id)),), log=node.log, store=node.store,
                                 rng=random.Random(self.rng.getrandbits(64)), now_ms=self.now_ms)
        node.client.register(node.machine)
        node.last_hw = -1
        self._schedule_wake(node, self.now_ms)

    def make_machine(self, node_id: int) -> SimStateMachine:
        """A node's state machine, the first listener of its RaftClient (a subclass may give one
        whose snapshots hold other records, as the controller simulation's do)."""
        return SimStateMachine(node_id, self.commits)

    def crash(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if node.client is None:
            return
        self.note(f"node {node_id}: crash (log end {node.log.end_offset}, flushed {node.log.flushed_end_offset})")
        node.client = None
        node.machine = None
        node.checked_to = 0
        node.log.crash()
        node.wake_at = None

    def alive(self) -> list[SimNode]:
        return [n for n in self.nodes.values() if n.client is not None]

    def leader(self) -> SimNode | None:
        leaders = [n for n in self.alive() if n.client.quorum.is_leader()]
        return max(leaders, key=lambda n: n.client.epoch) if leaders else None

    # -- the event queue ------------------------------------------------------------------

    def _push(self, at_ms: int, kind: str, payload: Any) -> None:
        self._seq += 1
        heapq.heappush(self.queue, (at_ms, self._seq, kind, payload))

    def _schedule_wake(self, node: SimNode, at_ms: int) -> None:
        if node.wake_at is None or at_ms < node.wake_at:
            node.wake_at = at_ms
            self._push(at_ms, "wake", (node.node_id, node.incarnation))

    def step(self) -> bool:
        if not self.queue:
            return False
        at_ms, _, kind, payload = heapq.heappop(self.queue)
        if at_ms > self.now_ms:
            self.now_ms, self._events_now = at_ms, 0
        self._events_now += 1
        if self._events_now > 50_000:
            raise InvariantViolation(f"livelock: 50000 events without virtual time passing at {self.now_ms} ms")
        self.events += 1
        if kind == "wake":
            node = self.nodes[payload[0]]
            if node.client is not None and node.incarnation == payload[1] and node.wake_at == at_ms:
                node.wake_at = None
                self._poll(node)
        elif kind == "deliver":
            self._deliver(*payload)
        elif kind == "fault":
            payload()
        self.check_invariants()
        if self.trace is not None:
            self._trace_roles()
        return True

    def note(self, text: str) -> None:
        if self.trace is not None:
            self.trace(f"t={self.now_ms:>7} ms  {text}")

    def _trace_roles(self) -> None:
        for node in self.nodes.values():
            view = None if node.client is None else (node.client.role, node.client.epoch, node.client.quorum.leader_id)
            if view != getattr(node, "_traced", None):
                node._traced = view
                if view is None:
                    self.note(f"node {node.node_id}: down")
                else:
                    leader = f", leader {view[2]}" if view[2] >= 0 else ""
                    self.note(f"node {node.node_id}: {view[0]} in epoch {view[1]}{leader}")

    def _poll(self, node: SimNode) -> None:
        ready = node.client.poll(self.now_ms)
        for message in ready.messages:
            self._route(node, message)
        self._schedule_wake(node, ready.next_poll_ms)

    # -- the network ----------------------------------------------------------------------

    def _route(self, node: SimNode, message: Any) -> None:
        if isinstance(message, OutboundRequest):
            target = _node_at(message.destination.address)
            self._send(node.node_id, target, ("request", (node.node_id, node.incarnation, message.correlation_id),
                                              message.request))
        else:
            source, incarnation, correlation_id = message.token
            self._send(node.node_id, source, ("response", (incarnation, correlation_id), message.response))

    def _send(self, source: int, target: int, envelope: tuple) -> None:
        if (source, target) in self.blocked or (target, source) in self.blocked:
            return
        if self.rng.random() < self.loss:
            return
        copies = 2 if self.rng.random() < self.duplicate else 1
        kind, meta, message = envelope
        if self.cfg.wire:
            data = encode_entity(message)
            message = decode_entity(type(message), data)[0]
        for _ in range(copies):
            delay = self.rng.randint(self.cfg.min_delay_ms, self.cfg.max_delay_ms)
            self._push(self.now_ms + delay, "deliver", (source, target, kind, meta, message))

    def _deliver(self, source: int, target: int, kind: str, meta: tuple, message: Any) -> None:
        if (source, target) in self.blocked or (target, source) in self.blocked:
            return
        if target == ADMIN:
            return
        node = self.nodes.get(target)
        if node is None or node.client is None:
            return
        if kind == "request":
            node.client.receive(self.now_ms, InboundRequest(meta, message))
        else:
            incarnation, correlation_id = meta
            if incarnation != node.incarnation:
                return
            node.client.receive(self.now_ms, InboundResponse(correlation_id, message))
        self._poll(node)

    def admin_request(self, request: Any) -> None:
        """Send a request as an operator's tool would, to whoever leads now."""
        leader = self.leader()
        if leader is not None:
            self._send(ADMIN, leader.node_id, ("request", (ADMIN, 0, 0), request))

    # -- operations the schedule uses -------------------------------------------------------

    def append(self, count: int = 1) -> int | None:
        leader = self.leader()
        if leader is None:
            return None
        records = []
        for _ in range(count):
            self.appended += 1
            records.append(data_record(f"{self.seed}-{self.appended}"))
        try:
            offset = leader.client.schedule_append(leader.client.epoch, records, self.now_ms)
        except NotLeaderError:
            return None
        self._schedule_wake(leader, self.now_ms)
        return offset

    def snapshot(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if node.client is None or node.machine.next_offset <= (node.client.high_watermark or 0) * 0:
            return
        end = node.machine.next_offset
        latest = node.log.latest_snapshot_id()
        if end <= (latest.end_offset if latest else 0) or end > (node.client.high_watermark or 0):
            return
        node.client.create_snapshot(end, node.machine.snapshot_records(),
                                    last_contained_log_timestamp_ms=node.machine.last_timestamp_ms,
                                    now_ms=self.now_ms)

    def partition(self, group: set[int]) -> None:
        self.note(f"partition {sorted(group)} | {sorted(set(self.nodes) - group)}")
        for a in group:
            for b in set(self.nodes) - group:
                self.blocked.add((a, b))

    def heal(self) -> None:
        if self.blocked:
            self.note("heal the network")
        self.blocked.clear()

    def run_until(self, predicate: Callable[[], bool], limit_ms: int) -> bool:
        deadline = self.now_ms + limit_ms
        while not predicate():
            if not self.queue or self.queue[0][0] > deadline:
                self.now_ms = max(self.now_ms, min(deadline, self.queue[0][0] if self.queue else deadline))
                return predicate()
            self.step()
        return True

    # -- invariants -------------------------------------------------------------------------

    def check_invariants(self) -> None:
        for node in self.alive():
            client = node.client
            epoch = client.epoch
            if epoch < node.max_epoch:
                raise InvariantViolation(f"node {node.node_id}'s epoch went back from {node.max_epoch} to {epoch}")
            node.max_epoch = epoch
            if client.quorum.is_leader():
                other = self.leaders.setdefault(epoch, node.node_id)
                if other != node.node_id:
                    raise InvariantViolation(f"two leaders in epoch {epoch}: nodes {other} and {node.node_id}")
            hw = client.high_watermark if client.high_watermark is not None else -1
            if hw < node.last_hw:
                raise InvariantViolation(f"node {node.node_id}'s high watermark went back from "
                                         f"{node.last_hw} to {hw}")
            node.last_hw = hw
            if hw > client.log.end_offset:
                raise InvariantViolation(f"node {node.node_id}'s high watermark {hw} is past its log end "
                                         f"{client.log.end_offset}")
        if self.events % 100 == 0:
            self.check_logs_below_high_watermarks()

    def check_logs_below_high_watermarks(self) -> None:
        """Every live replica's log below its high watermark holds what was committed there."""
        from engine.sim.state_machine import log_item

        for node in self.alive():
            hw = node.client.high_watermark or 0
            start = max(node.log.start_offset, node.checked_to)
            if start >= hw:
                continue
            for batch in node.log.batches(start, hw):
                for i, record in enumerate(batch.records):
                    offset = batch.base_offset + i
                    known = self.commits.items.get(offset)
                    if offset < hw and known is not None and known != log_item(batch, record):
                        raise InvariantViolation(f"node {node.node_id}'s log holds {log_item(batch, record)!r} at "
                                                 f"offset {offset}, below its high watermark {hw}, where "
                                                 f"{known!r} was committed")
            node.checked_to = hw


def _node_at(address: tuple[str, int] | None) -> int:
    if address is None or not address[0].startswith("node"):
        return -1
    return int(address[0][4:])


__all__ = ["InvariantViolation", "SimConfig", "Simulation"]
