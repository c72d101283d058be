"""``metashell bench attach`` end to end at a tiny size: real kraftd controllers started from a
seeded snapshot, the attached tool and the load in their own processes. Asserts the shape of
what it prints and that every figure is there, never a timing (docs/performance.md has those)."""

from __future__ import annotations

import pytest
import re

from metashell.bench.attach import STAGES, bench_attach, build_bench_attach_parser, run_bench_attach

# processes, sockets and timers of their own: out of the fast tier
pytestmark = pytest.mark.slow

NUMBER = r"\d[\d,]*(\.\d+)?"


def test_tiny_run_prints_every_figure_and_says_why_kafka_did_not_run(tmp_path):
    lines: list[str] = []
    sides = bench_attach(partitions=300, records_per_s=40, seconds=1, records_per_request=4, voters=1,
                         kafka="4.3.1", kafka_home=tmp_path, out=lines.append)

    ours, kafka = sides
    assert ours.error is None, ours.error
    assert ours.partitions == 300
    assert ours.requests == 10 and ours.failed_requests == 0 and ours.unseen == 0
    assert len(ours.commit_to_tree_ms) == 10
    assert kafka.error is not None and "no Kafka server jar" in kafka.error
    assert any(line.startswith("Kafka 4.3.1: not run: ") for line in lines)

    summary = lines[lines.index("summary:") + 1:]
    assert summary[0].split() == ["kraftd", "Kafka", "4.3.1"]
    assert summary[1].startswith("  Kafka 4.3.1: not measured: no Kafka quorum:")
    partitions = next(line for line in summary if line.strip().startswith("partitions"))
    assert partitions.split()[1:] == ["300", "-"]
    for label in ("attach: start() to caught up (s)", "attach: first answer, ls /image/topics/byName (s)",
                  "attach: start() to the whole image decoded (s)", "apart: index of the snapshot alone (s)",
                  "apart: every topic decoded alone (s)", "apart: FetchSnapshot alone (s)"):
        row = next(line for line in summary if line.strip().startswith(label))
        assert re.fullmatch(rf"\s+{re.escape(label)}\s+-?{NUMBER}\s+-", row), row
    for label in ("the tool's RSS growth: first answer / whole image (MB)",
                  "during the load: runnable tasks p50 / max (2 cpus)"):
        row = next(line for line in summary if line.strip().startswith(label))
        assert re.fullmatch(rf"\s+{re.escape(label)}\s+-?{NUMBER} / -?{NUMBER}\s+-", row), row
    assert ours.attached["topics_listed"] == ours.attached["topics"] == 3  # the first answer was right
    steps = ours.attached["milestones"]  # the attach's steps, in the order they happen
    assert sorted(steps, key=steps.get) == ["connected", "snapshot named", "downloaded", "indexed", "caught up"]
    # every record of the load traced through its stages; the tail's means given
    assert all(len(ours.stages[label]) == 10 for label, _, _ in STAGES) and set(ours.tail) == {l for l, _, _ in STAGES}
    for label, _, _ in STAGES:
        row = next(line for line in summary if line.strip().startswith(label))
        assert re.fullmatch(rf"\s+{re.escape(label)}\s+(-?{NUMBER} / ){{2}}-?{NUMBER} \[-?{NUMBER}\]\s+-", row), row
    for label in ("commit to tree p50 / p99 / max (ms)", "send to tree p50 / p99 / max (ms)"):
        row = next(line for line in summary if line.strip().startswith(label))
        assert re.fullmatch(rf"\s+{re.escape(label)}\s+(-?{NUMBER} / ){{2}}-?{NUMBER}\s+-", row), row
    committed = next(line for line in summary if line.strip().startswith("records/s committed (asked 40, 1 s)"))
    assert re.fullmatch(rf".*\)\s+{NUMBER}\s+-", committed), committed


def test_parser_defaults_are_the_issue_s_and_bad_values_are_refused(capsys):
    args = build_bench_attach_parser().parse_args([])
    assert (args.partitions, args.records_per_s, args.seconds, args.kafka) == (1_000_000, 1000.0, 30.0, "4.3.1")
    assert run_bench_attach(build_bench_attach_parser().parse_args(["--records-per-s", "0"])) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--records-per-s" in err


def test_metashell_bench_attach_is_the_command_line_s(capsys):
    from metashell.cli import run

    assert run(["bench", "attach", "--seconds", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--seconds" in err and "Traceback" not in err
