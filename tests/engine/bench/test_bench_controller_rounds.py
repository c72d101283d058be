"""The summary of alternating rounds of ``kraftd bench controller``: median, range, the ratio,
and a round that did not complete said as such (no processes run here)."""

from __future__ import annotations

from engine.bench.controller import SideResult, _create_summary


def side(name: str, seconds: float | None) -> SideResult:
    result = SideResult(name, partitions=1000)
    if seconds is None:
        result.partitions, result.error = 0, "CreateTopicsRequest not answered by an active controller in time"
    else:
        result.create_s = seconds
    return result


def test_median_range_and_ratio_of_alternating_rounds():
    lines: list[str] = []
    _create_summary([side("kraftd", 30.0), side("Kafka 4.3.1", 40.0), side("kraftd", 20.0),
                     side("Kafka 4.3.1", 36.0), side("kraftd", 26.0), side("Kafka 4.3.1", 50.0)], lines.append)
    assert lines == [
        "  kraftd: create 1,000 partitions: median 26.0 s, range 20.0 - 30.0 s over 3 rounds (30.0, 20.0, 26.0)",
        "  Kafka 4.3.1: create 1,000 partitions: median 40.0 s, range 36.0 - 50.0 s over 3 rounds (40.0, 36.0, 50.0)",
        "  ratio of the medians, kraftd / Kafka 4.3.1: 0.65"]


def test_a_round_not_completed_is_counted_out_and_said():
    lines: list[str] = []
    _create_summary([side("kraftd", None), side("Kafka 4.3.1", 40.0), side("kraftd", 30.0),
                     side("Kafka 4.3.1", 42.0)], lines.append)
    assert lines[0] == ("  kraftd: create 1,000 partitions: median 30.0 s, range 30.0 - 30.0 s over 1 rounds (30.0); "
                        "1 of 2 rounds not completed")
    assert lines[2] == "  ratio of the medians, kraftd / Kafka 4.3.1: 0.73"


def test_no_round_completed_gives_no_ratio():
    lines: list[str] = []
    _create_summary([side("kraftd", None), side("Kafka 4.3.1", 40.0)], lines.append)
    assert lines[0] == "  kraftd: no round completed; 1 of 1 rounds not completed" and len(lines) == 2


def test_the_controllers_cpu_is_summed_per_round_with_its_median():
    lines: list[str] = []
    first, second = side("kraftd", 30.0), side("kraftd", 20.0)
    first.create_cpu_s, second.create_cpu_s = {1: 10.0, 2: 5.5, 3: 4.5}, {1: 8.0, 2: 4.0, 3: 4.0}
    _create_summary([first, second], lines.append)
    assert lines == ["  kraftd: create 1,000 partitions: median 25.0 s, range 20.0 - 30.0 s over 2 rounds (30.0, 20.0); "
                     "CPU of its controllers (sum) median 18.0 s (20.0, 16.0)"]
