"""Random fault schedules over a simulated controller quorum: ``kraftd sim controller``.

A seed's run: the brokers start, then for ``events`` events a chaos schedule mixes the
brokers' and clients' work (AlterPartition, acknowledged writes, CreateTopics, DeleteTopics,
reassignments, elections, min.insync.replicas changes) with faults (controller crashes and
restarts, partitions, loss, snapshots, resignations; broker crashes, controlled shutdowns,
restarts, brokers cut off from the controllers). Then every fault heals: a controller must be
active and every broker registered and unfenced in its committed image within a bounded
virtual time (liveness). Any invariant broken (``engine.sim.controller_simulation``) fails the seed;
the same seed replays the same run. ``bug`` seeds a controller bug the checks must catch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable

from engine.sim.raft_runner import Chaos as QuorumChaos, SeedResult as QuorumSeedResult
from engine.sim.state_machine import InvariantViolation
from engine.sim.raft_simulation import SimConfig
from engine.sim.controller_simulation import ControllerSimulation, RecordEdit

FAULT_INTERVAL_MS = (200, 2000)  # a fault every so often
WORK_INTERVAL_MS = (20, 200)  # between two pieces of the brokers' and clients' work
LIVENESS_BOUND_MS = 30_000


@dataclass
class SeedResult(QuorumSeedResult):
    """A seed's run: the Raft simulator's figures (``epochs``: elections) and the controllers'."""

    failovers: int = 0
    topics: int = 0
    acked_writes: int = 0
    unclean_recoveries: int = 0


# -- the negative controls: a controller with a seeded bug the checks must catch -------------

def _is_fencing(record: Any) -> bool:
    return getattr(record, "type_name", "") == "BROKER_REGISTRATION_CHANGE_RECORD" and getattr(record, "fenced", 0) == 1


def _is_partition_change(record: Any) -> bool:
    return getattr(record, "type_name", "") == "PARTITION_CHANGE_RECORD"


def _drop_fence_effects(ctx: Any, records: list) -> list:
    """fenced-leader: a fencing result without its partition changes (the broker keeps leading)."""
    if not any(_is_fencing(r) for r in records):
        return records
    return [r for r in records if not _is_partition_change(r)]


def _elr_overlap(ctx: Any, records: list) -> list:
    """elr-overlap: the first ISR a result writes also becomes its ELR."""
    for i, r in enumerate(records):
        if _is_partition_change(r) and r.isr and hasattr(r, "eligible_leader_replicas"):
            return [*records[:i], replace(r, eligible_leader_replicas=(r.isr[0],)), *records[i + 1:]]
    return records


def _hidden_unclean(ctx: Any, records: list) -> list:
    """hidden-unclean: a partition left without a leader gets an out-of-sync replica as its
    leader instead, with an ISR of it alone, and is not marked RECOVERING."""
    fencing = {r.broker_id for r in records if _is_fencing(r)}
    out = []
    for r in records:
        topic = ctx.image.topics.by_id.get(r.topic_id) if _is_partition_change(r) else None
        if topic is not None and r.leader == -1 and r.partition_id in topic.partitions:
            p = topic.partitions[r.partition_id]
            brokers = ctx.image.cluster.brokers
            lagging = [b for b in (r.replicas or p.replicas) if b not in p.isr and b not in fencing
                       and b in brokers and not brokers[b].fenced]
            if lagging:
                r = replace(r, leader=lagging[0], isr=(lagging[0],), leader_recovery_state=0,
                            **({"eligible_leader_replicas": ()} if hasattr(r, "eligible_leader_replicas") else {}))
        out.append(r)
    return out


BUGS: dict[str, RecordEdit] = {
    "fenced-leader": _drop_fence_effects, "elr-overlap": _elr_overlap, "hidden-unclean": _hidden_unclean}


class _Chaos(QuorumChaos):
    """The Raft simulator's faults (crashes, restarts, partitions, loss, snapshots, resignations)
    mixed with the brokers' and clients' work and the brokers' own faults."""

    def __init__(self, sim: ControllerSimulation):
        super().__init__(sim)
        self.running = True
        self.actions = [
            (2, self.crash), (3, self.restart), (1, self.isolate), (2, self.heal), (1, self.lossy),
            (2, self.snapshot), (1, self.resign),
            (2, self.broker_crash), (2, self.broker_shutdown), (4, self.broker_start), (1, self.broker_cut_off),
        ]
        self.total = sum(w for w, _ in self.actions)
        self.work = [(3, self.client), (3, self.produce), (2, self.alter_partition)]

    def start(self) -> None:
        self.schedule_next()
        self._work_tick()

    def tick(self) -> None:
        if self.running:
            self._pick(self.actions)()
            self.schedule_next()

    def _work_tick(self) -> None:
        if self.running:
            self._pick(self.work)()
            low, high = WORK_INTERVAL_MS
            self.sim.call_at(self.sim.now_ms + self.rng.randint(low, high), self._work_tick)

    def _pick(self, actions: list[tuple[int, Callable[[], None]]]) -> Callable[[], None]:
        pick = self.rng.randrange(sum(w for w, _ in actions))
        for weight, action in actions:
            if pick < weight:
                return action
            pick -= weight
        raise AssertionError("unreachable")

    def lossy(self) -> None:
        self.sim.loss = self.rng.choice([0.0, 0.02, 0.1])  # the brokers retry slowly: milder than Raft's

    # -- work ------------------------------------------------------------------------------

    def client(self) -> None:
        self.rng.choice(list(self.sim.clients.values())).act()

    def produce(self) -> None:
        for _ in range(self.rng.randint(1, 4)):
            self.sim.produce()

    def alter_partition(self) -> None:
        running = [b for b in self.sim.brokers.values() if b.state == "running"]
        if running:
            self.rng.choice(running).alter_partition()

    # -- broker faults ---------------------------------------------------------------------------

    def broker_crash(self) -> None:
        up = [b for b in self.sim.brokers.values() if b.state != "down"]
        if len(up) > 2:
            self.rng.choice(up).crash()

    def broker_shutdown(self) -> None:
        running = [b for b in self.sim.brokers.values() if b.state == "running"]
        if len(running) > 2:
            self.rng.choice(running).controlled_shutdown()

    def broker_start(self) -> None:
        down = [b for b in self.sim.brokers.values() if b.state == "down"]
        if down:
            self.sim.start_broker(self.rng.choice(down).id)

    def broker_cut_off(self) -> None:
        """A broker loses the controllers for a while (its session may expire)."""
        broker = self.rng.choice(sorted(self.sim.brokers))
        self.sim.note(f"partition broker {broker} from the controllers")
        for node_id in self.sim.nodes:
            self.sim.blocked.add((broker, node_id))


def run_seed(seed: int, events: int, bug: str | None = None,
             trace: Callable[[str], None] | None = None) -> SeedResult:
    if bug is not None and bug not in BUGS:
        raise ValueError(f"unknown bug {bug!r} (known: {', '.join(BUGS)})")
    config = SimConfig(observers=0, fault_interval_ms=FAULT_INTERVAL_MS)
    sim = ControllerSimulation(seed, config, trace=trace, bug=BUGS[bug] if bug else None)
    chaos = _Chaos(sim)
    for broker_id in sorted(sim.brokers):
        sim.start_broker(broker_id)
    chaos.start()
    try:
        while sim.events < events and sim.step():
            pass
        chaos.running = False
        _check_liveness(sim)
    except InvariantViolation as e:
        return _result(sim, f"{e} (event {sim.events}, t={sim.now_ms} ms)")
    return _result(sim, None)


def _result(sim: ControllerSimulation, violation: str | None) -> SeedResult:
    return SeedResult(sim.seed, sim.events, sim.now_ms, sim.commits.highest, len(sim.leaders), violation,
                      failovers=sim.failovers, topics=len(sim.truth.topics.by_id), acked_writes=sim.model.acked,
                      unclean_recoveries=sim.model.unclean)


def _check_liveness(sim: ControllerSimulation) -> None:
    """Heal everything: a controller is active and every broker registered and unfenced."""
    sim.heal()
    sim.loss = sim.duplicate = 0.0
    for node in sim.nodes.values():
        if node.client is None:
            sim.start(node.node_id)
    for broker in sim.brokers.values():
        if broker.state == "down":
            sim.start_broker(broker.id)
        elif broker.state == "stopping":
            broker.state = "running"  # it changed its mind: not a fault to wait out

    def settled() -> bool:
        active = sim.active()
        if active is None:
            return False
        image = sim.listeners[active.node_id].image
        return all(b.id in image.cluster.brokers and image.cluster.brokers[b.id].epoch == b.epoch
                   and not image.cluster.brokers[b.id].fenced for b in sim.brokers.values())

    if not sim.run_until(settled, LIVENESS_BOUND_MS):
        active = sim.active()
        why = "no active controller" if active is None else "brokers not all registered and unfenced"
        raise InvariantViolation(f"liveness: {why} {LIVENESS_BOUND_MS} ms after the faults healed")


def run_controller_seeds(first_seed: int, seeds: int, events: int, out: Callable[[str], None] = print,
                         bug: str | None = None, trace: bool = False) -> int:
    """Run the seeds; print a violation per failing seed and a summary; 1 if any failed."""
    started = time.perf_counter()
    results = []
    for seed in range(first_seed, first_seed + seeds):
        result = run_seed(seed, events, bug=bug, trace=out if trace else None)
        results.append(result)
        if result.violation:
            out(f"seed {seed}: VIOLATION: {result.violation}")
    failed = [r for r in results if r.violation]
    elapsed = time.perf_counter() - started
    out(f"events {sum(r.events for r in results)}, virtual time {sum(r.virtual_ms for r in results) / 1000:.0f} s, "
        f"records committed {sum(r.committed for r in results)}, failovers {sum(r.failovers for r in results)}, "
        f"topics {sum(r.topics for r in results)}, acknowledged writes {sum(r.acked_writes for r in results)}, "
        f"unclean recoveries {sum(r.unclean_recoveries for r in results)}, "
        f"wall time {elapsed:.1f} s")
    if failed:
        flags = f" --bug {bug}" if bug else ""
        out(f"replay a failing seed: kraftd sim controller --first-seed {failed[0].seed} --seeds 1 --events {events}"
            f"{flags} --trace")
    out(f"ran {len(results)} seeds, {len(failed)} violated an invariant")
    return 1 if failed else 0


__all__ = ["BUGS", "SeedResult", "run_controller_seeds", "run_seed"]
