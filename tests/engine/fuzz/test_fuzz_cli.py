"""``kraftd fuzz``: bounded runs (by input count, never by time) in both engines, and its errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.tools.cli import run


def _kraftd(*argv: str) -> tuple[int, list[str], list[str]]:
    out: list[str] = []
    err: list[str] = []
    import engine.tools.cli as cli

    original = cli._out
    cli._out = out.append
    try:
        code = run(list(argv), err.append)
    finally:
        cli._out = original
    return code, out, err


def _report(lines: list[str]) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in lines if ": " in line)


def test_fuzz_list_names_every_target():
    code, out, _ = _kraftd("fuzz", "--list")
    assert code == 0
    assert [line.split(":")[0] for line in out] == [
        "record-batch", "records", "snapshot", "bootstrap-checkpoint", "quorum-state", "meta-properties",
        "request-frame", "response-frame", "served-controller", "served-broker"]


def test_unknown_target_is_one_line():
    code, out, err = _kraftd("fuzz", "no-such-target", "--runs", "5")
    assert code == 1 and out == []
    assert len(err) == 1 and "unknown fuzz target 'no-such-target'" in err[0] and "quorum-state" in err[0]


def test_bad_runs_is_one_line():
    code, _, err = _kraftd("fuzz", "quorum-state", "--runs", "zero")
    assert code == 1 and len(err) == 1 and "--runs" in err[0]


def test_hypothesis_engine_bounded_run(tmp_path: Path):
    code, out, err = _kraftd("fuzz", "quorum-state", "--runs", "200", "--engine", "hypothesis",
                             "--findings", str(tmp_path))
    report = _report(out)
    assert (code, err) == (0, []), out
    assert report["engine"].startswith("hypothesis")
    # the seeds are run first, then mutations until the count: 200 or a chunk's rounding past it
    assert 200 <= int(report["executions"].split()[0]) < 300
    assert "distinct lines of engine/" in report["coverage"]
    assert report["findings"] == "0" and list(tmp_path.iterdir()) == []


def test_hypothesis_engine_saves_a_finding(tmp_path: Path, monkeypatch):
    # a target that breaks on some input: the run reports it and keeps the input for a regression test
    from engine.fuzz import targets as fuzz_targets

    def fragile(data: bytes) -> None:
        if len(data) > 3:
            raise IndexError("out of range")

    monkeypatch.setitem(fuzz_targets.TARGETS, "quorum-state",
                        fuzz_targets.FuzzTarget("quorum-state", "fragile", fragile))
    code, out, _ = _kraftd("fuzz", "quorum-state", "--runs", "50", "--engine", "hypothesis",
                           "--findings", str(tmp_path))
    report = _report(out)
    assert code == 1 and report["findings"] == "1"  # one signature: the same exception, the same line
    saved = list(tmp_path.iterdir())
    assert len(saved) == 1 and len(saved[0].read_bytes()) > 3
    assert "IndexError: out of range" in report["finding"]


def test_atheris_engine_bounded_run(tmp_path: Path):
    pytest.importorskip("atheris")
    code, out, err = _kraftd("fuzz", "meta-properties", "--runs", "300", "--engine", "atheris",
                             "--findings", str(tmp_path / "findings"))
    report = _report(out)
    assert (code, err) == (0, []), out
    assert report["engine"].startswith("atheris")
    assert int(report["executions"].split()[0]) >= 300
    assert report["coverage"].startswith("cov: ")


def test_missing_corpus_and_missing_target_are_one_line(tmp_path: Path):
    code, _, err = _kraftd("fuzz", "quorum-state", "--corpus", str(tmp_path / "absent"), "--runs", "5")
    assert code == 1 and err == [f"kraftd: {tmp_path / 'absent'}: fuzz corpus is not a directory"]
    code, _, err = _kraftd("fuzz", "--runs", "5")
    assert code == 1 and len(err) == 1 and "name a target" in err[0]
