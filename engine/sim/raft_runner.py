"""Random fault schedules over many seeds: ``kraftd sim quorum``.

A seed's run has two phases. Chaos: for ``events`` events, faults are injected at
random virtual times (crashes, restarts, partitions, heals, loss, snapshots, voter
changes, resignations) between bursts of appends. Liveness: every fault heals, and a
leader must emerge and commit a fresh record on every live voter within
``liveness_bound_ms`` of virtual time. Any invariant broken in either phase fails the
seed; the same seed replays the same run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from engine.raft import raft_messages as rm
from engine.sim.state_machine import InvariantViolation
from engine.sim.raft_simulation import CLUSTER_ID, LISTENER, SimConfig, Simulation, address_of


@dataclass
class SeedResult:
    seed: int
    events: int
    virtual_ms: int
    committed: int
    epochs: int
    violation: str | None = None


class Chaos:
    def __init__(self, sim: Simulation):
        self.sim = sim
        self.rng = sim.rng
        self.actions: list[tuple[int, Callable[[], None]]] = [
            (8, self.appends), (2, self.crash), (3, self.restart), (1, self.isolate), (1, self.split),
            (2, self.heal), (1, self.lossy), (1, self.snapshot), (1, self.resign),
        ]
        if sim.cfg.kraft_version == 1:
            self.actions += [(1, self.add_voter), (1, self.remove_voter)]
        self.total = sum(w for w, _ in self.actions)

    def schedule_next(self) -> None:
        low, high = self.sim.cfg.fault_interval_ms
        self.sim._push(self.sim.now_ms + self.rng.randint(low, high), "fault", self.tick)

    def tick(self) -> None:
        pick = self.rng.randrange(self.total)
        for weight, action in self.actions:
            if pick < weight:
                action()
                break
            pick -= weight
        self.sim.append(self.rng.randint(0, 3))
        self.schedule_next()

    def appends(self) -> None:
        for _ in range(self.rng.randint(1, 4)):
            self.sim.append(self.rng.randint(1, 20))

    def crash(self) -> None:
        alive = self.sim.alive()
        if len(alive) > 1:
            self.sim.crash(self.rng.choice(alive).node_id)

    def restart(self) -> None:
        dead = [n for n in self.sim.nodes.values() if n.client is None]
        if dead:
            self.sim.start(self.rng.choice(dead).node_id)

    def isolate(self) -> None:
        self.sim.partition({self.rng.choice(sorted(self.sim.nodes))})

    def split(self) -> None:
        ids = sorted(self.sim.nodes)
        self.sim.partition(set(self.rng.sample(ids, self.rng.randint(1, len(ids) - 1))))

    def heal(self) -> None:
        self.sim.heal()
        self.sim.loss, self.sim.duplicate = self.sim.cfg.loss, self.sim.cfg.duplicate

    def lossy(self) -> None:
        self.sim.loss = self.rng.choice([0.0, 0.05, 0.2, 0.5])

    def snapshot(self) -> None:
        alive = self.sim.alive()
        if alive:
            self.sim.snapshot(self.rng.choice(alive).node_id)

    def resign(self) -> None:
        leader = self.sim.leader()
        if leader is not None:
            leader.client.resign(leader.client.epoch, self.sim.now_ms)
            self.sim._schedule_wake(leader, self.sim.now_ms)

    def add_voter(self) -> None:
        leader = self.sim.leader()
        if leader is None:
            return
        voters = leader.client.control.latest_voters()
        candidates = [n for n in self.sim.nodes.values() if voters.node(n.node_id) is None]
        if candidates:
            node = self.rng.choice(candidates)
            self.sim.admin_request(rm.add_voter_request(CLUSTER_ID, node.key, ((LISTENER, address_of(node.node_id)),),
                                                        timeout_ms=5000))

    def remove_voter(self) -> None:
        leader = self.sim.leader()
        if leader is None:
            return
        voters = leader.client.control.latest_voters()
        if len(voters.voters) > 2:
            self.sim.admin_request(rm.remove_voter_request(CLUSTER_ID, self.rng.choice(voters.voters).key))


def run_seed(seed: int, events: int, config: SimConfig | None = None,
             trace: Callable[[str], None] | None = None) -> SeedResult:
    sim = Simulation(seed, config, trace=trace)
    chaos = Chaos(sim)
    chaos.schedule_next()
    try:
        while sim.events < events and sim.step():
            pass
        check_liveness(sim)
    except InvariantViolation as e:
        return _result(sim, f"{e} (event {sim.events}, t={sim.now_ms} ms)")
    return _result(sim, None)


def _result(sim: Simulation, violation: str | None) -> SeedResult:
    return SeedResult(sim.seed, sim.events, sim.now_ms, sim.commits.highest, len(sim.leaders), violation)


def check_liveness(sim: Simulation) -> None:
    """Heal everything; a leader must emerge and commit a new record everywhere in time."""
    sim.queue = [e for e in sim.queue if e[2] != "fault"]
    sim.heal()
    sim.loss = sim.duplicate = 0.0
    for node in list(sim.nodes.values()):
        if node.client is None:
            sim.start(node.node_id)
    bound = sim.cfg.liveness_bound_ms

    def settled() -> bool:
        leader = sim.leader()
        if leader is None:
            return False
        voters = leader.client.control.latest_voters()
        return all(sim.nodes[i].client.leader_and_epoch == leader.client.leader_and_epoch
                   for i in voters.ids if i in sim.nodes)

    if not sim.run_until(settled, bound):
        raise InvariantViolation(f"liveness: no leader agreed by every voter {bound} ms after the faults healed")
    # An append can be lost with the leadership it was made under; then it is made again.
    deadline = sim.now_ms + bound
    while sim.now_ms < deadline:
        leader = sim.leader()
        epoch = leader.client.epoch if leader else -1
        offset = sim.append(1)
        if offset is not None:
            voters = leader.client.control.latest_voters().ids

            def committed_or_moved() -> bool:
                current = sim.leader()
                return current is None or current.client.epoch != epoch or all(
                    sim.nodes[i].machine.next_offset > offset for i in voters if i in sim.nodes)

            sim.run_until(committed_or_moved, deadline - sim.now_ms)
            if all(sim.nodes[i].machine.next_offset > offset for i in voters if i in sim.nodes):
                return
        else:
            sim.run_until(lambda: False, 50)
    raise InvariantViolation(f"liveness: no new record was committed on every voter within {bound} ms")


def run_seeds(first_seed: int, seeds: int, events: int, out: Callable[[str], None] = print,
              config: SimConfig | None = None, trace: bool = False) -> list[SeedResult]:
    started = time.perf_counter()
    results = []
    for seed in range(first_seed, first_seed + seeds):
        result = run_seed(seed, events, config, trace=out if trace else None)
        results.append(result)
        if result.violation:
            out(f"seed {seed}: VIOLATION: {result.violation}")
    failed = [r for r in results if r.violation]
    elapsed = time.perf_counter() - started
    total_events = sum(r.events for r in results)
    out(f"events {total_events}, virtual time {sum(r.virtual_ms for r in results) / 1000:.0f} s, "
        f"records committed {sum(r.committed for r in results)}, elections {sum(r.epochs for r in results)}, "
        f"wall time {elapsed:.1f} s")
    if failed:
        cfg = config or SimConfig()
        flags = "" if (cfg.voters, cfg.observers, cfg.kraft_version) == (3, 1, 1) else (
            f" --voters {cfg.voters} --observers {cfg.observers} --kraft-version {cfg.kraft_version}")
        out(f"replay a failing seed: kraftd sim quorum --first-seed {failed[0].seed} --seeds 1 --events {events}"
            f"{flags} --trace")
    out(f"ran {len(results)} seeds, {len(failed)} violated an invariant")
    return results
