"""What the dashboard's ``g`` (go to offset) and ``T`` (go to time) accept: the points the command
line's --offset and --time accept, refused in the same one line otherwise (the prompt shows it and
stays; the position does not change).

A file's History holds one pass of its log. A damaged log's offsets are runs
(engine.image.log_runs), and the pass holds one of them: a point of another run is refused too,
naming the --offset that opens it.
"""

from __future__ import annotations

from typing import Callable

from engine.common.errors import OffsetOutOfRange
from engine.image.metadata_history import MetadataHistory
from metashell.dashboard.model import FrameSource


def checked_offset(source: FrameSource, text: str, parse: Callable[[str], int]) -> int:
    """An offset ``g`` can go to: ``parse``'s answer (the History's own range), or, in a damaged
    log, one of the run shown; a ValueError of one line naming the damage and the runs otherwise."""
    replay = _replay(source)
    if replay is None or not replay.gaps or not text.strip().lstrip("-").isdigit():
        return parse(text)
    offset = int(text)
    _check(replay, offset=offset)
    return _in_view(source, offset, f"offset {offset}")


def checked_time(source: FrameSource, time_ms: int) -> int:
    """A time ``T`` can go to: not before the log's earliest point (as --time), nor, in a damaged
    log, where its records may be in the damage or in another run than the one shown. A time
    after the last record goes to the last record's image (Kafka's "as of T" reading, as --time)."""
    replay = _replay(source)
    if replay is None:
        return time_ms
    _check(replay, time_ms=time_ms)
    if replay.gaps:
        offset = replay.image_at(time_ms=time_ms)[0].provenance.last_offset
        _in_view(source, offset, f"that time (offset {offset})")
    return time_ms


def _replay(source: FrameSource) -> MetadataHistory | None:
    replay = getattr(source, "replay", None)
    return replay if isinstance(replay, MetadataHistory) else None


def _check(replay: MetadataHistory, **point: int) -> None:
    try:
        replay.check_point(**point)
    except OffsetOutOfRange as exc:
        raise ValueError(str(exc)) from None


def _in_view(source: FrameSource, offset: int, what: str) -> int:
    low, high = source.start_offset, source.last_offset
    if not low <= offset <= high:
        raise ValueError(f"{what} is in another run of this damaged log than the one shown ({low}..{high}): "
                         f"open it with metashell dash --offset {offset}")
    return offset
