"""Deterministic simulation of a controller quorum: ``kraftd sim controller``.

Three controllers run the real RaftClient (over ``engine.sim.raft_simulation``: virtual time, a
faulty kio-encoded network, crashes, partitions) and, on each node, the real metadata
listener and QuorumController wired as ``engine.server.controller_server`` wires them: the
listener registered first (the controller reads its committed image), the controller polled
after every Raft poll and on a timer, its appends made under its active epoch, a refused
append making it step down, its released answers sent back to whoever asked. Simulated brokers
and clients (``engine.sim.simulated_brokers``) talk to them over the same network.

Checked after every committed batch of every node, and after every event on the active
controller's speculative image (``InvariantViolation``, one line):

- ISR within replicas; the leader in the ISR or none; ELR apart from the ISR and within the
  replicas; leader and partition epochs never go back (per node incarnation, per partition);
- no fenced (or unregistered) broker leads;
- acknowledged writes are never lost by an election (``AckModel``): a write acknowledged
  with |ISR| >= min.insync.replicas is held by that ISR (each member in its broker epoch),
  joined by replicas the leader adds to the ISR later; every newly elected leader holds them;
- an answered write's records are committed on the answering node (a created topic's id is
  in its committed image, a deleted one is gone);
- a controller taking over has a committed image equal to a fresh replay of its log
  (snapshot and batches): what it acts on is what the log says.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from engine.common.api_keys import ApiKeys
from engine.controller import commands as controller_commands
from engine.controller.controller_config import ControllerConfig
from engine.controller.controller_result import ControllerResult
from engine.controller.quorum_controller import Append, ControllerOutput, QuorumController
from engine.image.image_writer import image_records
from engine.image.metadata_image import MetadataImage, min_isr
from engine.image.partition_registration import LEADER_RECOVERY_RECOVERING
from engine.image.metadata_version import BY_NAME, feature_levels_for
from engine.raft.raft_client import NotLeaderError
from engine.sim.state_machine import InvariantViolation, SimStateMachine
from engine.sim.raft_simulation import CLUSTER_ID, SimConfig, SimNode, Simulation
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i16
from engine.server.metadata_listener import MetadataListener
from engine.server.snapshot_policy import SnapshotLimits, SnapshotPolicy
from engine.sim.simulated_brokers import (
    SimBroker, SimClient, api_key_of, is_not_controller, make_peers)

RELEASE = "4.1-IV1"  # metadata.version 27: ELR on (eligible.leader.replicas.version=1)
TICK_MS = 100  # how often the active controllers are polled for their periodic tasks
_QUIET = logging.getLogger("engine.sim.controller")


def sim_controller_config() -> ControllerConfig:
    """Kafka's defaults with the broker timings scaled down: virtual time is precious."""
    return ControllerConfig(cluster_id=CLUSTER_ID, broker_heartbeat_interval_ms=250, broker_session_timeout_ms=1500)


def bootstrap_records() -> list:
    return [m.FeatureLevelRecordV0(name=name, feature_level=i16(level))
            for name, level in feature_levels_for(BY_NAME[RELEASE])]


def _quiet_policy() -> SnapshotPolicy:
    return SnapshotPolicy(SnapshotLimits(max_bytes=1 << 62, max_interval_ms=0), 0)


# a negative control: (context, a result's records) -> the records a buggy controller writes
RecordEdit = Callable[[Any, list], list]


def _edited(handle: Callable, edit: RecordEdit) -> Callable:
    def buggy(ctx: Any, *request: Any) -> Any:
        result = handle(ctx, *request)
        if result is None or not result.records:
            return result
        return ControllerResult(edit(ctx, list(result.records)), result.response, result.atomic)
    return buggy


# -- the invariants on one image --------------------------------------------------------------

@dataclass
class ImageMarks:
    """What was checked of one image lineage: epochs per partition, the objects seen."""

    epochs: dict[tuple[uuid.UUID, int], tuple[int, int]] = field(default_factory=dict)
    topics: dict[uuid.UUID, Any] = field(default_factory=dict)
    brokers: Any = None


def check_image(where: str, image: MetadataImage, marks: ImageMarks,
                ever_replicas: dict[tuple[uuid.UUID, int], set[int]]) -> None:
    brokers = image.cluster.brokers
    brokers_changed = brokers is not marks.brokers
    marks.brokers = brokers
    for topic_id, topic in image.topics.by_id.items():
        if marks.topics.get(topic_id) is topic and not brokers_changed:
            continue
        marks.topics[topic_id] = topic
        for pid, p in topic.partitions.items():
            name = f"{where}: {topic.name}-{pid}"
            replicas = set(p.replicas)
            if not set(p.isr) <= replicas:
                raise InvariantViolation(f"{name}: ISR {list(p.isr)} is not within replicas {list(p.replicas)}")
            if p.leader != -1 and p.leader not in p.isr:
                raise InvariantViolation(f"{name}: leader {p.leader} is not in ISR {list(p.isr)}")
            if set(p.elr) & set(p.isr):
                raise InvariantViolation(f"{name}: ELR {list(p.elr)} overlaps ISR {list(p.isr)}")
            # Kafka 4.1.2's builder keeps ELR members a reassignment removed from the replicas
            # (it filters the ELR by the target ISR and unclean shutdowns only), so the check is
            # against every replica the partition has had, anywhere
            ever = ever_replicas.setdefault((topic_id, pid), set())
            ever.update(replicas)
            if not set(p.elr) <= ever:
                raise InvariantViolation(f"{name}: ELR {list(p.elr)} is not within replicas {list(p.replicas)} "
                                         f"(nor any it had)")
            if p.leader != -1:
                leader = brokers.get(p.leader)
                if leader is None or leader.fenced:
                    state = "unregistered" if leader is None else "fenced"
                    raise InvariantViolation(f"{name}: {state} broker {p.leader} leads (epoch {p.leader_epoch})")
            seen = marks.epochs.get((topic_id, pid))
            if seen is not None and (p.leader_epoch < seen[0] or p.partition_epoch < seen[1]):
                raise InvariantViolation(f"{name}: epochs went back from leader {seen[0]} / partition {seen[1]} "
                                         f"to {p.leader_epoch} / {p.partition_epoch}")
            marks.epochs[(topic_id, pid)] = (p.leader_epoch, p.partition_epoch)


class AckModel:
    """Who holds every acknowledged write, per partition: (broker id, broker epoch) pairs.

    Holders are the ISR at each acknowledgement (intersected over the writes), joined by the
    replicas a leader's AlterPartition added to the ISR (caught up) and by a broker's next
    incarnation after a clean shutdown; a newly elected leader must be one, or the election
    must be marked unclean (RECOVERING)."""

    def __init__(self) -> None:
        self.holders: dict[tuple[uuid.UUID, int], frozenset | None] = {}  # None: nothing acknowledged yet
        self.clean_restarts: dict[uuid.UUID, int] = {}  # incarnation -> the epoch it shut down cleanly
        self.acked = 0
        self.unclean = 0  # elections into RECOVERING (Kafka's last-known-leader recovery)
        # (topic id, partition, replica, its broker epoch): ISR expansions partition leaders asked
        self.expansions: set[tuple[uuid.UUID, int, int, int]] = set()

    def ack(self, key: tuple[uuid.UUID, int], isr_members: frozenset) -> None:
        held = self.holders.get(key)
        self.holders[key] = isr_members if held is None else held & isr_members
        self.acked += 1

    def advance(self, before: MetadataImage, after: MetadataImage) -> None:
        """The committed state moved from ``before`` to ``after`` (one batch): elections are
        checked, replicas joining the ISR become holders, clean restarts keep what they held."""
        for broker_id, reg in after.cluster.brokers.items():
            old = before.cluster.brokers.get(broker_id)
            if (old is None or old.epoch != reg.epoch) and reg.incarnation_id in self.clean_restarts:
                previous = (broker_id, self.clean_restarts[reg.incarnation_id])
                for key, held in self.holders.items():
                    if held is not None and previous in held:
                        self.holders[key] = held | {(broker_id, reg.epoch)}
        for topic_id, topic in after.topics.by_id.items():
            old_topic = before.topics.by_id.get(topic_id)
            if old_topic is topic:
                continue
            for pid, p in topic.partitions.items():
                q = old_topic.partitions.get(pid) if old_topic is not None else None
                if q is p:
                    continue
                key = (topic_id, pid)
                held = self.holders.get(key)
                if q is None or held is None:
                    self.holders.setdefault(key, None)
                    continue
                epochs = {b: r.epoch for b, r in after.cluster.brokers.items()}
                # replicas a leader asked to add (caught up, so holding every write) hold them now,
                # even when the same change elects one of them (a reassignment completing)
                joined = {(r, epochs.get(r)) for r in p.isr if r not in q.isr}
                caught_up = {(r, e) for r, e in joined if (topic_id, pid, r, e) in self.expansions}
                if caught_up:
                    held = self.holders[key] = held | caught_up
                leader = (p.leader, epochs.get(p.leader))
                if p.leader >= 0 and p.leader != q.leader and leader not in held:
                    if p.leader_recovery_state == LEADER_RECOVERY_RECOVERING:
                        # Kafka's balanced recovery: the last known leader, elected uncleanly and
                        # marked so; what it lacks is lost by design, it starts the history anew
                        self.holders[key] = frozenset((leader,))
                        self.unclean += 1
                        continue
                    raise InvariantViolation(
                        f"{topic.name}-{pid}: broker {p.leader} (epoch {epochs.get(p.leader)}) was elected leader "
                        f"in leader epoch {p.leader_epoch} without the acknowledged writes, held by "
                        f"{sorted(held)}")
        for key in [k for k in self.holders if k[0] not in after.topics.by_id]:
            del self.holders[key]


# -- one node's listeners -------------------------------------------------------------------

class _CommitCheck(SimStateMachine):
    """The Raft simulator's cross-replica check of committed items; a snapshot carries no chain
    value here (it holds metadata records), so loading one takes the chain computed there."""

    def handle_load_snapshot(self, snapshot_id: Any, batches: Any) -> None:
        self.chain = self.commits.chains.get(snapshot_id.end_offset, 0)
        self.next_offset = snapshot_id.end_offset


class _NodeListener(MetadataListener):
    """The node's committed image, handed on batch by batch so every state is checked."""

    def __init__(self, sim: "ControllerSimulation", node_id: int):
        super().__init__(_QUIET, f"node {node_id}:", _quiet_policy(), lambda: sim.now_ms, lambda *_: None)
        self.sim, self.node_id = sim, node_id

    def handle_commit(self, batches: Any) -> None:
        for batch in batches:
            super().handle_commit([batch])
            self.sim.committed(self.node_id, self.image)

    def handle_load_snapshot(self, snapshot_id: Any, batches: Any) -> None:
        super().handle_load_snapshot(snapshot_id, batches)
        self.sim.committed(self.node_id, self.image)


@dataclass
class _Ask:
    source: int
    correlation_id: int
    api_key: int
    last_offset: int | None = None


class ControllerSimulation(Simulation):
    def __init__(self, seed: int, config: SimConfig | None = None, *, trace: Callable[[str], None] | None = None,
                 bug: RecordEdit | None = None, controller_config: ControllerConfig | None = None):
        self.bug = bug  # a negative control: every result's records go through it
        self.controller_config = controller_config or sim_controller_config()
        self.cluster_id = CLUSTER_ID
        self.listeners: dict[int, _NodeListener] = {}
        self.controllers: dict[int, QuorumController] = {}
        self.marks: dict[Any, ImageMarks] = {}
        self.ever_replicas: dict[tuple[uuid.UUID, int], set[int]] = {}  # every replica a partition had
        self.last_append_ms: dict[int, int] = {}
        self.truth = MetadataImage()  # the most advanced committed image anywhere
        self.history: deque[MetadataImage] = deque(maxlen=24)  # what brokers' views are drawn from
        self.model = AckModel()
        self.answers = 0
        self.failovers = 0
        self._commands, self._periodic = self._controller_table()
        super().__init__(seed, config or SimConfig(observers=0), trace=trace)
        self.brokers, self.clients = make_peers(self)
        self.peers: dict[int, SimBroker | SimClient] = {**self.brokers, **self.clients}
        self.call_at(TICK_MS, self._tick)

    def _controller_table(self) -> tuple[dict, list]:
        commands, periodic = controller_commands.all_commands(), controller_commands.all_periodic()
        if self.bug is None:
            return commands, periodic
        return ({k: replace(c, handle=_edited(c.handle, self.bug)) for k, c in commands.items()},
                [_edited(task, self.bug) for task in periodic])

    # -- nodes: the wiring of engine.server.controller_server ------------------------------------

    def start(self, node_id: int) -> None:
        super().start(node_id)
        node = self.nodes[node_id]
        listener = _NodeListener(self, node_id)
        self.marks.pop(node_id, None)
        self.listeners[node_id] = listener
        controller_config = replace(self.controller_config, node_id=node_id)
        soft = controller_commands.new_soft_state(controller_config, random.Random(self.rng.getrandbits(64)))
        self.controllers[node_id] = QuorumController(
            controller_config, lambda: listener.image, bootstrap_records(), self._commands, self._periodic, soft,
            controller_commands.activation_hooks())
        node.client.register(listener)  # before the controller: its committed image is current
        node.client.register(self.controllers[node_id])

    def make_machine(self, node_id: int) -> "_CommitCheck":
        # the base's state machine expects its own snapshots: ours hold metadata records
        return _CommitCheck(node_id, self.commits)

    def _poll(self, node: SimNode) -> None:
        super()._poll(node)
        self._pump(node)

    def _pump(self, node: SimNode) -> None:
        controller = self.controllers[node.node_id]
        was_active = controller.is_active
        out = controller.poll(self.now_ms, self._next_offset(node))
        if controller.is_active and not was_active:
            self.failovers += 1
            self.note(f"node {node.node_id}: controller active in epoch {controller.active_epoch}")
            self._check_fresh_replay(node)
        self._apply(node, out)

    def _next_offset(self, node: SimNode) -> int:
        return node.client.log.end_offset + len(node.client.pending_records)

    def _apply(self, node: SimNode, out: ControllerOutput) -> None:
        controller, client = self.controllers[node.node_id], node.client
        for append in out.appends:
            try:
                if controller.active_epoch is None:
                    raise NotLeaderError("the controller is not active")
                if append.atomic:
                    client.append_now(controller.active_epoch, list(append.records), self.now_ms)
                else:
                    client.schedule_append(controller.active_epoch, list(append.records), self.now_ms)
                self.last_append_ms[node.node_id] = self.now_ms
            except NotLeaderError:
                self.note(f"node {node.node_id}: an append was refused; the controller steps down")
                out.responses.extend(controller.append_failed().responses)
                break
        if out.appends:
            self._schedule_wake(node, self.now_ms)
        for ask, response in out.responses:
            self._answer(node, ask, response)

    def _tick(self) -> None:
        """The node's timer: active controllers run their periodic tasks, and an idle leader
        appends a NoOpRecord (KIP-835) so the committed offset keeps moving."""
        idle_ms = self.controller_config.max_idle_interval_ms
        for node in self.alive():
            controller = self.controllers[node.node_id]
            if not controller.is_active:
                continue
            self._pump(node)
            if controller.is_active and self.now_ms - self.last_append_ms.get(node.node_id, 0) >= idle_ms:
                self._apply(node, ControllerOutput(appends=[_noop()]))
        self.call_at(self.now_ms + TICK_MS, self._tick)

    def call_at(self, at_ms: int, action: Callable[[], None]) -> None:
        self._push(at_ms, "fault", action)

    # -- controller requests over the network ----------------------------------------------------

    def send_controller_request(self, source: int, target: int, correlation_id: int, request: Any) -> None:
        self._send(source, target, ("ctl_request", (source, correlation_id), request))

    def _deliver(self, source: int, target: int, kind: str, meta: tuple, message: Any) -> None:
        if kind not in ("ctl_request", "ctl_response"):
            super()._deliver(source, target, kind, meta, message)
            return
        if (source, target) in self.blocked or (target, source) in self.blocked:
            return
        if kind == "ctl_response":
            self.peers[target].receive(source, meta[0], message)
            return
        node = self.nodes.get(target)
        if node is None or node.client is None:
            return
        ask = _Ask(meta[0], meta[1], api_key_of(message))
        next_offset = self._next_offset(node)
        out = self.controllers[target].submit(self.now_ms, next_offset, ask.api_key, message, ask)
        written = sum(len(a.records) for a in out.appends)
        if written:
            ask.last_offset = next_offset + written - 1
        self._apply(node, out)

    def _answer(self, node: SimNode, ask: Any, response: Any) -> None:
        if not isinstance(ask, _Ask):
            return
        self.answers += 1
        listener = self.listeners[node.node_id]
        if ask.last_offset is not None and not is_not_controller(response):
            if listener.last_committed_offset < ask.last_offset:
                raise InvariantViolation(f"node {node.node_id} answered api {ask.api_key} before its records "
                                         f"(to offset {ask.last_offset}) were committed (to "
                                         f"{listener.last_committed_offset})")
        committed = listener.image.topics.by_id
        if ask.api_key == ApiKeys.CREATE_TOPICS:
            for topic in response.topics:
                if topic.error_code == ErrorCode.none and topic.topic_id not in committed:
                    raise InvariantViolation(f"node {node.node_id} acknowledged topic {topic.name} "
                                             f"({topic.topic_id}), not in its committed image")
        elif ask.api_key == ApiKeys.DELETE_TOPICS:
            for topic in response.responses:
                if topic.error_code == ErrorCode.none and topic.topic_id in committed:
                    raise InvariantViolation(f"node {node.node_id} acknowledged the deletion of {topic.name}, "
                                             f"still in its committed image")
        self._send(node.node_id, ask.source, ("ctl_response", (ask.correlation_id,), response))

    # -- brokers' views and acknowledged writes ------------------------------------------------

    def view(self, current: MetadataImage) -> MetadataImage:
        """A committed image for a broker, lagging by a random amount, never behind ``current``."""
        if not self.history:
            return current
        lag = self.rng.choice((0, 0, 0, 1, 2, 4, 8, 16))
        image = self.history[max(0, len(self.history) - 1 - lag)]
        return image if image.provenance.last_offset > current.provenance.last_offset else current

    def produce(self) -> bool:
        """A leader acknowledges a write (acks=all): every ISR member's process is up in the
        epoch the ISR knows (each fetched it), and the ISR is at least min.insync.replicas."""
        truth = self.truth
        partitions = [(t, pid, p) for t in truth.topics.by_id.values() for pid, p in t.partitions.items()
                      if p.leader >= 0]
        if not partitions:
            return False
        topic, pid, p = self.rng.choice(partitions)
        members = []
        for r in p.isr:
            reg = truth.cluster.brokers.get(r)
            if reg is None or reg.fenced or not self.brokers[r].alive_as(reg.epoch):
                return False
            members.append((r, reg.epoch))
        if len(members) < min_isr(truth, topic.name):
            return False
        self.model.ack((topic.id, pid), frozenset(members))
        return True

    def start_broker(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        broker.start()
        if broker.previous_epoch >= 0:
            self.model.clean_restarts[broker.incarnation] = broker.previous_epoch

    # -- invariants ------------------------------------------------------------------------------

    def committed(self, node_id: int, image: MetadataImage) -> None:
        node = self.nodes[node_id]
        marks = self.marks.setdefault(node_id, ImageMarks())
        check_image(f"node {node_id} (incarnation {node.incarnation}) committed", image, marks, self.ever_replicas)
        if image.provenance.last_offset > self.truth.provenance.last_offset:
            self.model.advance(self.truth, image)
            self.truth = image
            self.history.append(image)

    def check_invariants(self) -> None:
        super().check_invariants()
        for node in self.alive():
            controller = self.controllers[node.node_id]
            if controller.is_active:
                key = (node.node_id, node.incarnation, controller.active_epoch)
                check_image(f"node {node.node_id}'s active controller (epoch {controller.active_epoch})",
                            controller.image, self.marks.setdefault(key, ImageMarks()), self.ever_replicas)

    def _check_fresh_replay(self, node: SimNode) -> None:
        """The committed image a new active controller acts on equals its log replayed afresh."""
        listener = self.listeners[node.node_id]
        fresh = MetadataListener(_QUIET, "replay:", _quiet_policy(), lambda: self.now_ms, lambda *_: None)
        log = node.log
        snapshot = log.latest_snapshot_id()
        if snapshot is not None and log.start_offset > 0:  # as the Raft client hands it to a listener
            fresh.handle_load_snapshot(snapshot, list(log.read_snapshot(snapshot)))
        end = listener.last_committed_offset + 1
        batches = [b for b in log.batches(max(fresh.last_committed_offset + 1, 0), end) if b.last_offset < end]
        if batches:
            fresh.handle_commit(batches)
        start = log.start_offset
        if _comparable(fresh.image, start) != _comparable(listener.image, start):
            differs = [name for name, a, b in zip(_FIELDS, _comparable(fresh.image, start),
                                                  _comparable(listener.image, start)) if a != b]
            raise InvariantViolation(f"node {node.node_id}: its committed image differs from a fresh replay of "
                                     f"its log (to offset {end - 1}) in {', '.join(differs)}")

    # -- operations the schedule uses -----------------------------------------------------------

    def snapshot(self, node_id: int) -> None:
        node, listener = self.nodes[node_id], self.listeners[node_id]
        if node.client is None:
            return
        end = listener.last_committed_offset + 1
        latest = node.log.latest_snapshot_id()
        if end <= 0 or end > (node.client.high_watermark or 0) or (latest and end <= latest.end_offset):
            return
        node.client.create_snapshot(end, list(image_records(listener.image)),
                                    last_contained_log_timestamp_ms=listener.image.provenance.last_timestamp_ms,
                                    now_ms=self.now_ms)
        self.note(f"node {node_id}: snapshot at offset {end}")

    def active(self) -> SimNode | None:
        nodes = [n for n in self.alive() if self.controllers[n.node_id].is_active]
        return max(nodes, key=lambda n: self.controllers[n.node_id].active_epoch) if nodes else None


_FIELDS = (*(f for f in MetadataImage.__dataclass_fields__ if f != "quorum"), "quorum.kraft_version",
           "quorum.voters", "quorum.leader_changes")


def _comparable(image: MetadataImage, log_start: int) -> tuple:
    """An image's values, but for the leader changes a snapshot does not keep (those before the
    log's start: the history is the log's, a snapshot holds state)."""
    quorum = image.quorum
    return (*(getattr(image, f) for f in _FIELDS[:-3]), quorum.kraft_version, quorum.voters,
            [c for c in quorum.leader_changes if c.offset >= log_start])


def _noop() -> Append:
    return Append((m.NoOpRecordV0(),), False)


__all__ = ["AckModel", "RecordEdit", "ControllerSimulation", "ImageMarks", "check_image", "sim_controller_config"]
