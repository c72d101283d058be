"""The controller simulation (``kraftd sim controller``): clean seeds hold every invariant,
a seed replays exactly, and each seeded controller bug is caught within a few seeds."""

from __future__ import annotations

import pytest

from engine.controller.controller_config import ControllerConfig
from engine.image.metadata_image import MetadataImage
from engine.sim.state_machine import InvariantViolation
from engine.records import metadata_records as m
from engine.records.kio_codec import i32
from engine.sim.controller_simulation import AckModel, ControllerSimulation, ImageMarks, check_image
from engine.sim.controller_runner import BUGS, run_controller_seeds, run_seed
from tests.controller_helpers import bootstrapped, new_uuid, replayed
from engine.controller.controller_result import ControllerResult

EVENTS = 600


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_clean_seeds_hold_every_invariant(seed: int) -> None:
    result = run_seed(seed, EVENTS)
    assert result.violation is None
    assert result.failovers >= 1 and result.committed > 0


def test_a_seed_does_real_work() -> None:
    """Not a quiet run: topics created, writes acknowledged, brokers registered and unfenced."""
    result = run_seed(7, 2000)
    assert result.violation is None
    assert result.topics >= 3 and result.acked_writes >= 10


def test_a_seed_replays_exactly() -> None:
    first, second = [], []
    a = run_seed(5, EVENTS, trace=first.append)
    b = run_seed(5, EVENTS, trace=second.append)
    assert a == b
    assert first == second and len(first) > 20


@pytest.mark.parametrize("bug,events", [("fenced-leader", EVENTS), ("elr-overlap", EVENTS),
                                        ("hidden-unclean", 1000)])
def test_each_seeded_bug_is_caught_within_a_few_seeds(bug: str, events: int) -> None:
    violations = [run_seed(seed, events, bug=bug).violation for seed in range(1, 7)]
    assert any(violations), bug


def test_the_runner_summarises_like_sim_quorum() -> None:
    lines: list[str] = []
    assert run_controller_seeds(1, 2, 300, out=lines.append) == 0
    assert lines[-1] == "ran 2 seeds, 0 violated an invariant"
    assert lines[-2].startswith("events ") and "wall time" in lines[-2]
    lines.clear()
    assert run_controller_seeds(2, 1, EVENTS, out=lines.append, bug="elr-overlap") == 1
    assert lines[0].startswith("seed 2: VIOLATION: ") and "ELR" in lines[0]
    assert "--bug elr-overlap --trace" in lines[-2]
    assert lines[-1] == "ran 1 seeds, 1 violated an invariant"


def test_unknown_bug_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown bug"):
        run_seed(1, 10, bug="nope")
    assert set(BUGS) == {"fenced-leader", "elr-overlap", "hidden-unclean"}


# -- the checks on their own ---------------------------------------------------------------------

def _cluster_with_topic(isr: tuple[int, ...], elr: tuple[int, ...] = (), fenced: int | None = None) -> MetadataImage:
    image = bootstrapped()
    records = []
    for broker_id in (1, 2, 3):
        records.append(m.RegisterBrokerRecordV3(
            broker_id=i32(broker_id), incarnation_id=new_uuid(broker_id), broker_epoch=10 + broker_id,
            end_points=(), features=(), rack=None, fenced=broker_id == fenced, in_controlled_shutdown=False,
            is_migrating_zk_broker=False, log_dirs=(new_uuid(100 + broker_id),)))
    records.append(m.TopicRecordV0(name="t", topic_id=new_uuid(7)))
    records.append(m.PartitionRecordV2(
        partition_id=i32(0), topic_id=new_uuid(7), replicas=(1, 2, 3), isr=isr, removing_replicas=(),
        adding_replicas=(), leader=isr[0] if isr else -1, leader_epoch=i32(0), partition_epoch=i32(0),
        directories=(new_uuid(101), new_uuid(102), new_uuid(103)), eligible_leader_replicas=elr, last_known_elr=()))
    return replayed(image, ControllerResult(records, None))


def test_check_image_catches_each_broken_rule() -> None:
    check_image("ok", _cluster_with_topic((1, 2)), ImageMarks(), {})
    with pytest.raises(InvariantViolation, match="overlaps ISR"):
        check_image("x", _cluster_with_topic((1, 2), elr=(2,)), ImageMarks(), {})
    with pytest.raises(InvariantViolation, match="fenced broker 1 leads"):
        check_image("x", _cluster_with_topic((1, 2), fenced=1), ImageMarks(), {})
    with pytest.raises(InvariantViolation, match="ELR \\[4\\] is not within replicas"):
        check_image("x", _cluster_with_topic((1,), elr=(4,)), ImageMarks(), {})


def test_epochs_must_not_go_back_in_one_lineage() -> None:
    marks = ImageMarks()
    later = _cluster_with_topic((1, 2))
    change = m.PartitionChangeRecordV2(partition_id=i32(0), topic_id=new_uuid(7), isr=(2,), leader=i32(2))
    moved = replayed(later, ControllerResult([change], None))
    check_image("n", moved, marks, {})
    with pytest.raises(InvariantViolation, match="epochs went back"):
        check_image("n", later, marks, {})


def test_an_election_without_the_acknowledged_writes_is_caught() -> None:
    model = AckModel()
    before = _cluster_with_topic((1, 2))
    model.advance(MetadataImage(), before)
    model.ack((new_uuid(7), 0), frozenset({(1, 11)}))  # acknowledged while only 1 was in the ISR
    change = m.PartitionChangeRecordV2(partition_id=i32(0), topic_id=new_uuid(7), isr=(2,), leader=i32(2))
    with pytest.raises(InvariantViolation, match="broker 2 .* was elected leader"):
        model.advance(before, replayed(before, ControllerResult([change], None)))


def test_a_simulation_builds_with_kafkas_defaults_scaled() -> None:
    sim = ControllerSimulation(1)
    assert isinstance(sim.controller_config, ControllerConfig)
    assert sim.controller_config.broker_session_timeout_ms < ControllerConfig().broker_session_timeout_ms
    assert sorted(sim.controllers) == [1, 2, 3] and len(sim.brokers) == 5


def test_kraftd_sim_controller_on_the_command_line(monkeypatch) -> None:
    """`kraftd sim controller`: the last line counts seeds and violations; exit 1 when a seeded bug is caught."""
    import engine.tools.cli as cli

    lines: list[str] = []
    monkeypatch.setattr(cli, "_out", lines.append)
    assert cli.run(["sim", "controller", "--seeds", "2", "--first-seed", "3", "--events", "300"]) == 0
    assert lines[-1] == "ran 2 seeds, 0 violated an invariant"
    lines.clear()
    assert cli.run(["sim", "controller", "--seeds", "3", "--events", "800", "--bug", "elr-overlap"]) == 1
    assert lines[-1].startswith("ran 3 seeds, ") and not lines[-1].endswith(" 0 violated an invariant")
