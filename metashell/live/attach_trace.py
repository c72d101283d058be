"""An attachment's timestamps, kept only when asked for (``Attachment(trace=True)``).

``metashell bench attach`` uses them to say where the time goes: per committed batch handed
over, when the Fetch answer that committed it reached the attachment and when it was published
to the tools' side; and once per attach, when each of its steps was first reached (connected,
snapshot named, downloaded, indexed, caught up). All ``time.monotonic()`` seconds, one clock
for every process on the machine. The attachment's thread writes, a tool's thread takes; the
attachment's lock guards both.
"""

from __future__ import annotations

import time
from typing import Any


class AttachTrace:
    def __init__(self) -> None:
        self._batches: list[tuple[int, float, float]] = []
        self._answered_at = 0.0  # when the last answer reached the follower core
        self.milestones: dict[str, float] = {}

    def connected(self) -> None:
        self.milestones.setdefault("connected", time.monotonic())

    def answered(self) -> None:
        """An answer (or failure) is about to reach the core."""
        self._answered_at = time.monotonic()

    def published(self, core: Any, batches: list[list[Any]], reset: bool, caught_up: bool) -> None:
        """What the attachment just handed over (under its lock), and the steps reached by now."""
        now, notes = time.monotonic(), self.milestones
        if core.downloading is not None:
            notes.setdefault("snapshot named", now)
        if reset and "snapshot named" in notes:
            notes.setdefault("downloaded", self._answered_at)  # the answer that completed it
            notes.setdefault("indexed", now)  # the image is built inside that answer's receive
        if caught_up:
            notes.setdefault("caught up", now)
        self._batches.extend((batch[0].offset, self._answered_at, now) for batch in batches)

    def take(self) -> list[tuple[int, float, float]]:
        """(first offset, answer arrived, published) per batch since the last take."""
        taken, self._batches = self._batches, []
        return taken


__all__ = ["AttachTrace"]
