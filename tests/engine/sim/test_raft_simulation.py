"""The quorum under simulation: random fault schedules over many seeds, and scenarios.

Everything runs on virtual time in one process (engine.sim.raft_simulation); a failing
seed replays exactly with ``kraftd sim quorum --first-seed N --seeds 1``.
"""

from __future__ import annotations

import os

import pytest

from engine.raft import raft_messages as rm
from engine.sim.raft_runner import run_seed, run_seeds
from engine.sim.state_machine import InvariantViolation
from engine.sim.raft_simulation import CLUSTER_ID, LISTENER, SimConfig, Simulation, address_of

SEEDS = int(os.environ.get("METASHELL_SIM_SEEDS", "40"))


def _settled(sim: Simulation):
    leader = sim.leader()
    if leader is None:
        return None
    voters = leader.client.control.latest_voters().ids
    alive = [sim.nodes[i] for i in voters if sim.nodes[i].client is not None]
    if all(n.client.leader_and_epoch == leader.client.leader_and_epoch for n in alive):
        return leader
    return None


def _elect(sim: Simulation, limit_ms: int = 20_000):
    assert sim.run_until(lambda: _settled(sim) is not None, limit_ms), "no leader"
    return _settled(sim)


def _commit(sim: Simulation, count: int = 3, limit_ms: int = 20_000, skip: tuple[int, ...] = ()) -> int:
    """Append through the leader until ``count`` records commit on every live voter (but ``skip``)."""
    for _ in range(20):
        leader = _elect(sim, limit_ms) if not skip else sim.leader()
        offset = sim.append(count)
        voters = [i for i in leader.client.control.latest_voters().ids if i not in skip]
        if sim.run_until(lambda: all(sim.nodes[i].machine is None or sim.nodes[i].machine.next_offset > offset
                                     for i in voters), 3_000):
            return offset
    raise AssertionError("appends never committed")


def _first_violation(seeds, events: int) -> str | None:
    for seed in seeds:
        result = run_seed(seed, events, SimConfig(voters=3))
        if result.violation:
            return result.violation
    return None


# -- random schedules -----------------------------------------------------------------------

@pytest.mark.parametrize("kraft_version,voters", [(1, 3), (0, 5)])
@pytest.mark.slow
def test_random_fault_schedules_keep_every_invariant(kraft_version, voters):
    lines = []
    results = run_seeds(1000 * voters, SEEDS, 1000, out=lines.append,
                        config=SimConfig(kraft_version=kraft_version, voters=voters))
    assert lines[-1] == f"ran {SEEDS} seeds, 0 violated an invariant", "\n".join(lines)
    assert sum(r.committed for r in results) > SEEDS * 50  # the runs did real work
    assert sum(r.epochs for r in results) > SEEDS  # with elections under faults


def test_a_seed_replays_exactly():
    first, second = [], []
    run_seed(77, 800, trace=first.append)
    run_seed(77, 800, trace=second.append)
    assert first == second and len(first) > 20


def test_the_invariants_catch_votes_for_stale_logs(monkeypatch):
    """Break the election rule (vote only for logs at least as up to date): some seed fails."""
    from engine.raft.raft_client import RaftClient

    monkeypatch.setattr(RaftClient, "is_log_up_to_date", lambda self, offset, epoch: True)
    assert _first_violation(range(1, 61), 1500) is not None


def test_the_invariants_catch_a_follower_that_acknowledges_before_fsync(monkeypatch):
    """Followers that skip the flush before acknowledging lose committed data in crashes."""
    from engine.raft.memory_raft_log import MemoryRaftLog

    monkeypatch.setattr(MemoryRaftLog, "flush", lambda self: None)
    violation = _first_violation(range(1, 61), 1500)
    assert violation is not None and "committed" in violation


def test_invariant_violation_names_what_and_where():
    sim = Simulation(5)
    _elect(sim)
    leader = sim.leader()
    leader.max_epoch = leader.client.epoch + 1
    with pytest.raises(InvariantViolation, match=f"node {leader.node_id}'s epoch went back"):
        sim.check_invariants()


# -- scenarios ---------------------------------------------------------------------------------

def test_add_a_voter_once_it_has_caught_up():
    sim = Simulation(11, SimConfig(voters=3, observers=1, loss=0, duplicate=0))
    _commit(sim, 10)
    observer = sim.nodes[4]
    assert not sim.leader().client.control.latest_voters().is_voter(observer.key)
    sim.admin_request(rm.add_voter_request(CLUSTER_ID, observer.key, ((LISTENER, address_of(4)),)))
    assert sim.run_until(lambda: sim.leader() is not None and
                         sim.leader().client.control.latest_voters().ids == (1, 2, 3, 4) and
                         not sim.leader().client.has_uncommitted_voter_change(), 10_000)
    offset = _commit(sim, 3)
    assert observer.machine.next_offset > offset
    assert observer.client.is_voter()


def test_remove_the_leader_and_it_hands_over():
    sim = Simulation(12, SimConfig(voters=3, observers=0, loss=0, duplicate=0))
    _commit(sim, 5)
    old = sim.leader()
    old_epoch = old.client.epoch
    sim.admin_request(rm.remove_voter_request(CLUSTER_ID, old.key))
    assert sim.run_until(lambda: (sim.leader() is not None and sim.leader() is not old
                                  and sim.leader().client.epoch > old_epoch), 20_000)
    new = _elect(sim)
    assert new.client.control.latest_voters().ids == tuple(sorted({1, 2, 3} - {old.node_id}))
    assert not old.client.is_voter()
    offset = _commit(sim, 3)
    assert sim.run_until(lambda: old.machine.next_offset > offset, 10_000), \
        "a removed voter still follows, as an observer"
    assert old.client.quorum.leader_id == new.node_id


def test_replace_a_failed_disk_with_a_new_directory_id():
    sim = Simulation(13, SimConfig(voters=3, observers=0, loss=0, duplicate=0))
    _commit(sim, 5)
    victim = next(n for n in sim.nodes.values() if not n.client.quorum.is_leader())
    old_key = victim.key
    new_key = sim.replace_disk(victim.node_id, auto_join=True)
    sim.start(victim.node_id)

    def replaced() -> bool:
        leader = sim.leader()
        if leader is None:
            return False
        voters = leader.client.control.latest_voters()
        return (voters.node(victim.node_id) is not None and voters.node(victim.node_id).key == new_key
                and not leader.client.has_uncommitted_voter_change())

    assert sim.run_until(replaced, 30_000), "the replaced disk did not rejoin as a voter"
    assert not sim.leader().client.control.latest_voters().is_voter(old_key)
    offset = _commit(sim, 3)
    assert victim.machine.next_offset > offset


def test_an_observer_catches_up_through_a_snapshot():
    sim = Simulation(14, SimConfig(voters=3, observers=1, loss=0, duplicate=0))
    sim.crash(4)
    for _ in range(5):
        _commit(sim, 20)
    for node in sim.alive():
        sim.snapshot(node.node_id)
    leader = sim.leader()
    start = leader.log.start_offset
    assert start > 50 and leader.log.latest_snapshot_id().end_offset == start
    sim.start(4)
    offset = _commit(sim, 3)
    observer = sim.nodes[4]
    assert sim.run_until(lambda: observer.machine.next_offset > offset, 10_000)
    assert observer.log.start_offset >= start  # it installed a snapshot, not the trimmed log
    assert observer.log.latest_snapshot_id() is not None


def test_a_partitioned_voter_rejoins_without_deposing_the_leader():
    sim = Simulation(15, SimConfig(voters=3, observers=0, loss=0, duplicate=0))
    _commit(sim, 5)
    leader = sim.leader()
    epoch = leader.client.epoch
    loner = next(n for n in sim.nodes.values() if n is not leader)
    sim.partition({loner.node_id})
    for _ in range(10):
        _commit(sim, 2, skip=(loner.node_id,))  # the majority goes on meanwhile
    sim.run_until(lambda: False, 10_000)
    assert loner.client.epoch == epoch, "pre-vote keeps a cut-off voter from bumping the epoch"
    sim.heal()
    offset = _commit(sim, 3)
    assert sim.leader() is leader and leader.client.epoch == epoch
    assert loner.machine.next_offset > offset and loner.client.quorum.leader_id == leader.node_id


def test_graceful_resignation_hands_over_to_a_preferred_successor():
    sim = Simulation(16, SimConfig(voters=3, observers=0, loss=0, duplicate=0))
    _commit(sim, 5)
    leader = sim.leader()
    epoch = leader.client.epoch
    leader.client.resign(epoch, sim.now_ms)
    sim._schedule_wake(leader, sim.now_ms)
    started = sim.now_ms
    assert sim.run_until(lambda: sim.leader() is not None and sim.leader().client.epoch > epoch, 5_000)
    # The first preferred successor campaigns at once: well under an election timeout.
    assert sim.now_ms - started < sim.raft_config.election_timeout_ms


def test_kraftd_sim_quorum_prints_a_summary_and_exit_code():
    from engine.tools.cli import run

    lines = []
    import engine.tools.cli as cli

    original = cli._out
    cli._out = lines.append
    try:
        assert run(["sim", "quorum", "--seeds", "3", "--first-seed", "9", "--events", "300"]) == 0
    finally:
        cli._out = original
    assert lines[-1] == "ran 3 seeds, 0 violated an invariant"
    assert lines[0].startswith("events ")


def test_failover_after_a_leader_crash_takes_about_one_fetch_timeout():
    """The survivors notice after fetch.timeout.ms and elect at once: no split vote, no pre-vote
    stall (two prospectives refusing each other), across seeds and both survivor pairs."""
    worst = 0
    for seed in range(30):
        sim = Simulation(seed, SimConfig(voters=3, observers=0, loss=0, duplicate=0,
                                         raft={"append_linger_ms": 5, "fetch_timeout_ms": 1000}))
        _commit(sim, 3)
        old = sim.leader()
        sim.crash(old.node_id)
        crashed_at = sim.now_ms
        assert sim.run_until(lambda: sim.leader() is not None and sim.leader() is not old, 10_000)
        worst = max(worst, sim.now_ms - crashed_at)
    assert worst < 1000 + 500, f"slowest failover {worst} ms"
