"""The diff of two marks, as the dashboard's diff box lists it: placeholder until the log/diff
helper's diff lands (metashell.history)."""

from __future__ import annotations

from typing import Any, Sequence

from engine.image.log_runs import Gap
from metashell.dashboard.change_views import ChangesView


def marks_diff(before: Any, a: int, after: Any, b: int, gaps: Sequence[Gap]) -> ChangesView:
    raise NotImplementedError("diff: waiting for metashell.history")
