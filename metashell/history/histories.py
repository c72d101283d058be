"""The History of any source (metashell/history/sources.py), kept from one question to the next.

``Histories`` is what a shell session, or the dashboard, holds: asked ``of(source)``, it gives the
History that source's changes come from, reusing what it read before:

- live: the session's items, fed only what was committed since the last question;
- an archive (a log directory with ``archive.json``): its index (metashell/history/history_index.py),
  checked against the archive's files at every question; one that cannot be written (a read-only
  archive): the archive replayed instead, with a note;
- a log directory: replayed once, again only when its segments or snapshots change;
- a snapshot file: no history (HistoryUnavailable).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Callable

from engine.storage.log_reader import list_log_dir
from metashell.history.history_index import IndexHistory, archive_root
from metashell.history.sources import LiveItems, log_dir_history

LIVE_WHAT = "what this session fetched since attach"


class HistoryUnavailable(Exception):
    """The source holds one point in time: one line."""


class Histories:
    def __init__(self, note: Callable[[str], None] = lambda line: None) -> None:
        """``note``: where a line about the index goes (rebuilt, cannot be written)."""
        self.note = note
        self._live = LiveItems()
        self._dir: tuple[tuple, Any] | None = None  # (the directory's files as read, its MemoryHistory)

    def of(self, source: Any) -> Any:
        """The History of a Source or LiveSource (metashell/source)."""
        if source.live:
            source.attach()
            return self._live.history(source.history, LIVE_WHAT)
        if source.log_dir is None:
            raise HistoryUnavailable("needs a log directory (--log-dir), an archive or a live quorum: a snapshot "
                                     "holds one point in time")
        directory = Path(source.log_dir)
        root = archive_root(directory)
        if root is not None:
            try:
                return IndexHistory(root, note=self.note)
            except (OSError, sqlite3.Error) as exc:  # a read-only archive: answered without an index
                why = getattr(exc, "strerror", None) or str(exc)
                self.note(f"history index: cannot be written ({why}): reading the archive instead")
        key = _signature(directory)
        if self._dir is None or self._dir[0] != key:
            self._dir = (key, log_dir_history(directory))
        return self._dir[1]


def _signature(path: Path) -> tuple:
    listing = list_log_dir(path)
    return (str(path), *((p.name, p.stat().st_size) for _, p in (*listing.segments, *listing.snapshots)))
