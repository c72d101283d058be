"""The recorder's history index (metashell/record/record_index.py), in process with the archive
writer: updated after each commit as the recorder does, it equals an index built from scratch
over the same archive; a process killed in the middle of an update (or of a build) leaves an index
that the next opener (``log``) sees as behind and repairs; ``record --status`` says how far it
reaches."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from metashell.history.history_index import INDEX_DIR, INDEX_FILE, IndexHistory, index_state
from metashell.record.archive import Archive
from metashell.record.record_index import IndexKeeper
from tests.metashell.record.archive_fixtures import FakeLeaderLog, record_gap
from tests.metashell.record.index_reading import index_everything

ROOT = Path(__file__).resolve().parents[3]


def _scratch(root: Path, where: Path) -> tuple:
    """The same archive's index built from scratch (the archive copied without its index)."""
    shutil.copytree(root, where, ignore=shutil.ignore_patterns(INDEX_DIR))
    return index_everything(where)


def _record(root: Path, leader: FakeLeaderLog, keeper: IndexKeeper | None, commits: int, *, per_commit: int = 3,
            segment_bytes: int = 1024) -> None:
    writer = Archive(root, segment_bytes=segment_bytes).open()
    try:
        writer.set_cluster_id("cluster-7")
        for n in range(commits):
            for _ in range(per_commit):
                writer.append(leader.topic(f"topic-{leader.next_offset}") if n % 4 == 0 else leader.append())
            writer.commit()
            if keeper is not None:
                keeper.update_now()
    finally:
        writer.close()


def test_the_recorders_index_equals_one_built_from_scratch(tmp_path: Path) -> None:
    root, lines = tmp_path / "archive", []
    leader = FakeLeaderLog()
    keeper = IndexKeeper(root, log=lines.append)
    _record(root, leader, keeper, 12)
    writer = Archive(root, segment_bytes=1024).open()  # a gap: the leader moved past the archive
    held = leader.next_offset
    snapshot_id, _, _ = record_gap(writer, leader, deleted=3, reason="the controllers deleted these records (test)",
                                   recorded_ms=1_700_000_000_000)
    writer.close()
    keeper.update_now()
    _record(root, leader, keeper, 8)
    assert index_state(root).state == "current" and keeper.settled == leader.next_offset - 1
    assert lines == [] and keeper.updates == 21  # each an update, never a rebuild (a rebuild says a line)
    ours, scratch = index_everything(root), _scratch(root, tmp_path / "copy")
    assert ours == scratch
    items, runs, gaps, settled = ours
    assert len(runs) == 2 and [(g.first, g.resume) for g in gaps] == [(held, snapshot_id.end_offset)]
    assert settled == leader.next_offset - 1 and len({i.path for i in items}) > 20


def test_an_archive_recorded_without_an_index_says_so_and_is_brought_up_to_date(tmp_path: Path) -> None:
    root, lines = tmp_path / "archive", []
    leader = FakeLeaderLog()
    _record(root, leader, None, 6)
    keeper = IndexKeeper(root, log=lines.append)
    assert index_state(root).state == "missing"
    keeper.say_state()
    keeper.update_now()
    assert lines == ["history index: none yet; building it in the background"]
    _record(root, leader, None, 2)
    assert index_state(root).state == "behind"
    keeper.say_state()
    assert lines[1].startswith("history index: items through offset ") and keeper.settled is not None
    keeper.update_now()
    assert index_state(root).state == "current" and index_everything(root) == _scratch(root, tmp_path / "copy")


def test_a_failing_index_update_is_one_line_and_the_next_mends_it(tmp_path: Path) -> None:
    root, lines = tmp_path / "archive", []
    leader = FakeLeaderLog()
    _record(root, leader, None, 3)
    (root / INDEX_DIR).write_text("a file where the index's directory goes")
    keeper = IndexKeeper(root, log=lines.append)
    keeper.update_now()
    keeper.update_now()
    assert len(lines) == 1 and lines[0].startswith("history index: not updated (") and "Traceback" not in lines[0]
    (root / INDEX_DIR).unlink()
    keeper.update_now()
    assert lines[1:] == ["history index: up to date again"] and index_state(root).state == "current"


# A child that opens the index and is SIGKILLed once it is writing rows (it says so, then waits).
_KILLED_CHILD = """
import sys, metashell.history.history_index as hi
real = hi._insert
def insert(db, rows):
    real(db, rows)
    print("writing", flush=True)
    sys.stdin.read()
hi._insert = insert
hi.IndexHistory(hi.Path(sys.argv[1]))
"""


def _kill_while_writing(root: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", _KILLED_CHILD, str(root)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})
    try:
        assert child.stdout.readline() == "writing\n"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(60)


@pytest.mark.slow  # a process
def test_an_update_killed_midway_is_rolled_back_and_redone_by_log(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    leader = FakeLeaderLog()
    keeper = IndexKeeper(root, log=print)
    _record(root, leader, keeper, 4)
    before = index_state(root).settled
    _record(root, leader, None, 4)
    _kill_while_writing(root)
    assert index_state(root).state == "behind" and index_state(root).settled == before  # rolled back whole
    notes: list[str] = []
    history = IndexHistory(root, note=notes.append)  # what log opens
    history.close()
    assert notes == [] and index_state(root).state == "current"
    assert index_everything(root) == _scratch(root, tmp_path / "copy")


@pytest.mark.slow  # a process
def test_a_build_killed_midway_leaves_no_index_and_log_builds_it(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    _record(root, FakeLeaderLog(), None, 6)
    _kill_while_writing(root)
    assert index_state(root).state == "missing"
    assert [p.name for p in (root / INDEX_DIR).iterdir()][0].endswith(".tmp")  # the killed build's file
    IndexHistory(root).close()
    assert sorted(p.name for p in (root / INDEX_DIR).iterdir()) == [INDEX_FILE]  # the stray one removed
    assert index_everything(root) == _scratch(root, tmp_path / "copy")


def test_an_update_that_costs_more_spaces_the_next_out(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    _record(root, FakeLeaderLog(), None, 2)
    ticks = iter([100.0, 102.0, 200.0, 200.1, 300.0, 300.1])  # the first update costs 2 s, the others 0.1 s
    keeper = IndexKeeper(root, log=print, interval_ms=5_000, timer=lambda: next(ticks))
    assert keeper.maybe_start(1_000)
    keeper.wait()
    assert not keeper.maybe_start(1_000 + 19_999)  # 10 x 2 s: no sooner than 20 s after it started
    assert keeper.maybe_start(1_000 + 20_000)
    keeper.wait()
    assert not keeper.maybe_start(21_000 + 4_999) and keeper.maybe_start(21_000 + 5_000)  # cheap: the interval
    keeper.wait()
