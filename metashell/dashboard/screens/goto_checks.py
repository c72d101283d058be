"""What the dashboard's ``g`` (go to offset) and ``T`` (go to time) accept: the points the command
line's --offset and --time accept, refused in the same one line otherwise (the prompt shows it and
stays; the position does not change).

A file's History holds one pass of its log. A damaged log's (or an archive's) offsets are runs
(engine.image.log_runs) with gaps between them, and the pass holds one run: a point of another
run is taken (the screen opens that run, metashell.dashboard.screens.history_keys); a point in a
gap, or outside every run, is refused in one line naming the gap and the runs.
"""

from __future__ import annotations

from typing import Callable

from engine.common.errors import OffsetOutOfRange
from engine.image.metadata_history import MetadataHistory
from metashell.dashboard.model import FrameSource


def checked_offset(source: FrameSource, text: str, parse: Callable[[str], int]) -> int:
    """An offset ``g`` can go to: ``parse``'s answer (the History's own range), or, in a log with
    gaps, one of any run; a ValueError of one line naming the gap and the runs otherwise."""
    replay = _replay(source)
    if replay is None or not replay.gaps or not text.strip().lstrip("-").isdigit():
        return parse(text)
    offset = int(text)
    _check(replay, offset=offset)
    return offset


def checked_time(source: FrameSource, time_ms: int) -> int:
    """A time ``T`` can go to: not before the log's earliest point (as --time), nor, in a damaged
    log, where its records may be in a gap (a time in another run is taken). A time
    after the last record goes to the last record's image (Kafka's "as of T" reading, as --time)."""
    replay = _replay(source)
    if replay is None:
        return time_ms
    _check(replay, time_ms=time_ms)
    return time_ms


def _replay(source: FrameSource) -> MetadataHistory | None:
    replay = getattr(source, "replay", None)
    return replay if isinstance(replay, MetadataHistory) else None


def _check(replay: MetadataHistory, **point: int) -> None:
    try:
        replay.check_point(**point)
    except OffsetOutOfRange as exc:
        raise ValueError(str(exc)) from None
