"""The recorder keeps its archive's history index up to date, so that ``log`` answers at once.

The index (metashell/history/history_index.py) is a cache: ``log`` checks it against the archive
and brings it up to date itself. Left to ``log``, the first question on a freshly recorded
archive pays for the whole archive (minutes at ten million records). So the recorder, in its own
process, brings the index up to date every ``interval_ms`` after a durable commit: the same
incremental update ``log`` does (the items after the index's ``settled`` offset, from the newest
snapshot at or before it), so the recorder's index and one built from scratch are the same
thing, by construction.

Off the fetch path: the update runs in a worker thread while the recorder goes on fetching; the
recorder only holds back its writes to the archive's files (commits, its own snapshots,
retention) until the update ends, so the update reads whole files (no torn tail to mistake for
damage) and the batches fetched meanwhile wait in memory. Never blocking recording on the
cache: a failure is one line, recording goes on, the next update (or ``log``) tries again; a
recorder killed mid-update leaves sqlite's journal (rolled back at the next open) or the old
file beside a stray temporary one (a rebuild writes a new file and renames it), which the next
opener sees as behind and brings up to date.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

DEFAULT_INDEX_INTERVAL_MS = 5_000
# An update costs what is new plus what the shared readers do once per opening over the whole
# archive (the runs' scan of every batch header, the quorum before the newest snapshot): 0.5 s at
# 1M records, 1.7 s at 10M (docs: /work/tmp/perf_recindex.md). The next update waits for this
# many times the last one's cost, so the index takes at most a tenth of the recorder's time.
COST_SHARE_INVERSE = 10


class IndexKeeper:
    """Brings ``root``'s index up to date in a worker thread, at most once every ``interval_ms``."""

    def __init__(self, root: Path, *, log: Callable[[str], None], interval_ms: int = DEFAULT_INDEX_INTERVAL_MS,
                 on_done: Callable[[], None] = lambda: None, timer: Callable[[], float] = time.monotonic):
        self.root = Path(root)
        self._on_done = on_done
        self._timer = timer
        self._started_ms = 0
        self._ran_ms: int | None = None  # the last update's cost, once it ended
        self._log = log
        self.interval_ms = interval_ms
        self._thread: threading.Thread | None = None
        self._next_ms = 0
        self._failing: str | None = None
        self.settled: int | None = None  # how far the index reached after the last update
        self.updates = 0

    @property
    def busy(self) -> bool:
        """An update is reading the archive: its files must not change until it ends."""
        return self._thread is not None and self._thread.is_alive()

    def say_state(self) -> None:
        """At the recorder's start: one line when the index is missing or stale (it is brought up to date now)."""
        from metashell.history.history_index import index_state

        state = index_state(self.root)
        if state.state == "missing":
            self._log("history index: none yet; building it in the background")
        elif state.state == "stale":
            self._log(f"history index: rebuilding it in the background ({state.why})")
        elif state.state == "behind":
            self._log(f"history index: items through offset {state.settled:,}; "
                      "bringing it up to date in the background")

    def maybe_start(self, now_ms: int, force: bool = False) -> bool:
        """Start an update when none runs and the interval has passed, and ten times the last update's
        cost (``force``: whatever the interval)."""
        if self.busy:
            return False
        if self._ran_ms is not None:
            self._next_ms = self._started_ms + max(self.interval_ms, self._ran_ms * COST_SHARE_INVERSE)
            self._ran_ms = None
        if not force and now_ms < self._next_ms:
            return False
        self._started_ms = now_ms
        self._next_ms = now_ms + self.interval_ms
        self._thread = threading.Thread(target=self._update_then_tell, name="history-index", daemon=True)
        self._thread.start()
        return True

    def wait(self, timeout_s: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout_s)

    def update_now(self) -> None:
        """One update in the calling thread (a test's, a bench's)."""
        self._update()

    def _update_then_tell(self) -> None:
        started = self._timer()
        try:
            self._update()
        finally:
            self._ran_ms = int((self._timer() - started) * 1000)
            self._on_done()

    def _update(self) -> None:
        from metashell.history.history_index import IndexHistory

        try:
            history = IndexHistory(self.root, note=self._log)
            try:
                self.settled = history.settled
            finally:
                history.close()
            self.updates += 1
        except Exception as exc:  # noqa: BLE001 - a cache: any failure is one line, never the recorder's end
            line = " ".join(str(exc).split()) or type(exc).__name__
            if line != self._failing:
                self._log(f"history index: not updated ({line}); recording goes on, log rebuilds it later")
            self._failing = line
            return
        if self._failing is not None:
            self._log("history index: up to date again")
            self._failing = None
