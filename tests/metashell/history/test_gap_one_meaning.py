"""One history of runs and gaps (engine.image.run_replay) behind ``log``, the export and the
dashboard: after an archive's gap the quorum is the snapshot's own, and a gap has one meaning and
one wording wherever it is shown.

The archive (tests/metashell/export/test_change_tables_archive.voters_archive): voter 1 alone
(offsets 0-1), voter 2 added at 2 and a config at 3 (the gap: the recorder never got them),
voter 2 removed at 4; the snapshot at end offset 4 carries the voters {1, 2}, as Kafka writes one
at kraft.version 1; with the manifest naming the gap, or without (a hole alone).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.image.run_replay import RunGap, gap_words
from metashell.dashboard.archive_runs import spans_of, timeline_words
from metashell.dashboard.history import History
from metashell.export.change_tables import change_rows
from tests.metashell.export.test_change_tables_archive import RECORDED_MS, VOTERS_REASON, voters_archive
from tests.metashell.history.test_log_diff_tables import run

REASON = VOTERS_REASON


def _archive(tmp_path: Path, *, manifest: bool) -> Path:
    return voters_archive(tmp_path, manifest=manifest)


@pytest.mark.parametrize("manifest", [True, False], ids=["archive-index", "log-dir"])
def test_log_quorum_after_an_archive_gap_shows_the_snapshots_voters(tmp_path: Path, manifest: bool) -> None:
    """Voter 2's removal at 4 is a change from the snapshot's voters {1, 2}; the voters of the
    segments before the gap ({1}) would hide it."""
    archive = _archive(tmp_path, manifest=manifest)
    status, out, _ = run(archive, "log /quorum/voters --json")
    assert status == 0
    changes = [(row["offset"], row["entity"], row["old"] is not None, row["new"] is not None)
               for row in map(json.loads, out)]
    assert (4, "voter 2", True, False) in changes  # removed after the gap
    assert (1, "voter 1", False, True) in changes  # added before it
    assert not [c for c in changes if 2 <= c[0] < 4]  # nothing of the gap


def test_a_gap_is_worded_the_same_by_log_the_export_and_the_dashboard(tmp_path: Path) -> None:
    archive = _archive(tmp_path, manifest=True)
    gap = RunGap(2, 4, f"archive gap: {REASON}", RECORDED_MS)
    words = gap_words(gap)
    assert words == (f"gap 2..3 (records 2..3 missing; the state at 3 is from snapshot 4): archive gap: {REASON}")
    # log: one line on stderr
    status, _, err = run(archive, "log /")
    assert (status, err) == (0, [f"metashell: log: {words}"])
    # the export: the gaps table's row holds the same bounds and reason
    [row] = change_rows(archive, tables=["gaps"])["gaps"].rows
    assert RunGap(*row) == gap
    # the dashboard: the timeline's words name it so
    history = History.open_log_dir(archive)
    spans = spans_of(history)
    assert spans.runs == ((-1, 1), (3, 4)) and spans.gaps == (gap,)
    line = timeline_words(spans, spans.runs[-1], 4, [])
    assert line.endswith(f" · {words}")
