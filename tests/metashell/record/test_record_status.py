"""``metashell record --status DIR`` and the command line's refusals, in process (metashell.cli.run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metashell.cli import run
from metashell.record.archive import Archive
from tests.metashell.record.archive_fixtures import FakeLeaderLog, record_batches, record_gap


def _run(argv: list[str], capsys) -> tuple[int, list[str], list[str]]:
    errors: list[str] = []
    code = run(argv, err=errors.append)
    return code, capsys.readouterr().out.splitlines(), errors


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    leader = FakeLeaderLog()
    writer = Archive(tmp_path / "archive", segment_bytes=512).open()
    writer.set_cluster_id("cluster-7")
    record_batches(writer, leader, 8)
    record_gap(writer, leader, deleted=2, reason="the controllers deleted these records (test)",
               recorded_ms=1_700_000_000_000)
    writer.close()
    return tmp_path / "archive"


def test_status_sums_up_the_archive(archive: Path, capsys) -> None:
    code, out, errors = _run(["record", "--status", str(archive)], capsys)
    assert (code, errors) == (0, [])
    assert out[:4] == [f"archive: {archive}", "cluster id: cluster-7", "offsets held: 0 to 32 (27 records)",
                       "ranges: 0-23, 30-32"]
    assert out[4].startswith("time span: 2023-11-14T22:13:20.000Z to ")
    assert out[5:7] == ["gaps: 1", "  offsets 24 to 29 missing (recorded 2023-11-14T22:13:20.000Z): the controllers "
                                   "deleted these records (test)"]
    assert out[7] == "snapshots: 1 (00000000000000000030-0000000001.checkpoint)"
    names = sorted(p.name for p in (archive / "__cluster_metadata-0").glob("*.log"))
    assert len(names) >= 3 and names[-1] == "00000000000000000030.log"  # rolled at 512 bytes, then the gap
    assert out[8] == f"segments: {len(names)} ({', '.join(names)})"
    size = sum(p.stat().st_size for p in archive.rglob("*") if p.is_file())
    assert out[9:] == [f"size on disk: {size:,} bytes", "recorder: none (the lock is free)",
                       "history index: none yet (built by the recorder or by the first log)"]


def test_status_as_json(archive: Path, capsys) -> None:
    code, out, _ = _run(["record", "--status", str(archive), "--json"], capsys)
    data = json.loads(out[0])
    assert code == 0 and data["ranges"] == [[0, 23], [30, 32]] and data["recorder_pid"] is None
    assert [g["first"] for g in data["gaps"]] == [24]


@pytest.mark.parametrize("damage, why", [
    (lambda a: (a / "archive.json").write_text("{not json"), "archive.json: not an archive manifest: line 1"),
    (lambda a: (a / "archive.json").write_text('{"format": 9}'), "format 9, where this metashell reads format 1"),
    (lambda a: (a / "archive.json").write_text('{"format": 1, "ranges": []}'), "the key 'snapshots' is missing"),
    (lambda a: (a / "archive.json").unlink(), "not an archive: no archive.json"),
])
def test_a_garbled_or_missing_manifest_is_one_line_and_exit_1(archive: Path, capsys, damage, why) -> None:
    damage(archive)
    code, out, errors = _run(["record", "--status", str(archive)], capsys)
    assert code == 1 and out == [] and len(errors) == 1
    assert errors[0].startswith(f"metashell: {archive}") and why in errors[0]


def test_status_of_no_archive_at_all(tmp_path: Path, capsys) -> None:
    code, _, errors = _run(["record", "--status", str(tmp_path / "nothing")], capsys)
    assert code == 1 and errors == [f"metashell: {tmp_path / 'nothing'}: no such archive (not a directory)"]


@pytest.mark.parametrize("argv, line", [
    (["record"], "metashell: record needs --bootstrap-controller HOST:PORT and --archive DIR (or --status DIR)"),
    (["record", "--archive", "x"], "metashell: record needs --bootstrap-controller HOST:PORT and --archive DIR "
                                   "(or --status DIR)"),
    (["record", "--status", "x", "--archive", "y"], "metashell: --status takes only the archive's directory"),
    (["record", "--bootstrap-controller", "h:1", "--archive", "y", "--retention-ms", "soon"],
     "metashell: --retention-ms takes a whole number, not 'soon'"),
    (["record", "--bootstrap-controller", "nonsense", "--archive", "y"],
     "metashell: Invalid url in --bootstrap-controller: nonsense"),
])
def test_bad_command_lines_are_one_line(argv: list[str], line: str, capsys, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, errors = _run(argv, capsys)
    assert (code, errors) == (1, [line])


def test_status_says_how_far_the_history_index_reaches(archive: Path, capsys) -> None:
    from metashell.history.history_index import IndexHistory

    IndexHistory(archive).close()
    _, out, _ = _run(["record", "--status", str(archive)], capsys)
    assert out[-1] == "history index: up to date (items through offset 32)"
    _, out, _ = _run(["record", "--status", str(archive), "--json"], capsys)
    assert json.loads(out[0])["history_index"] == {"state": "current", "settled": 32}
