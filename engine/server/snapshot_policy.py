"""When a controller snapshots its image: Kafka's rule (``SnapshotGenerator``), on a given clock.

Every node, leader or follower, snapshots on its own. After each batch of committed records
it has replayed, a snapshot is due when

* the bytes of record batches replayed since the last snapshot reach
  ``metadata.log.max.record.bytes.between.snapshots`` (default 20 MiB), or else
* ``metadata.log.max.snapshot.interval.ms`` (default one hour; 0 turns it off) has passed
  since the last snapshot: checked only when something new was committed, so an idle log
  is not snapshotted again and again.

The counters restart when a snapshot is decided on and when one is loaded (a restart, or a
follower handed the leader's snapshot), and at construction, as in Kafka. Pure: the time comes
in as ``now_ms``; the node edge (``engine.server.metadata_listener``) runs it.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_BYTES_KEY = "metadata.log.max.record.bytes.between.snapshots"
DEFAULT_MAX_BYTES = 20 * 1024 * 1024
MAX_INTERVAL_KEY = "metadata.log.max.snapshot.interval.ms"
DEFAULT_MAX_INTERVAL_MS = 60 * 60 * 1000


@dataclass(frozen=True, slots=True)
class SnapshotLimits:
    max_bytes: int = DEFAULT_MAX_BYTES  # at least 1
    max_interval_ms: int = DEFAULT_MAX_INTERVAL_MS  # 0: no time-based snapshots


class SnapshotPolicy:
    """Counts what was replayed since the last snapshot; ``on_commit`` says when to take one."""

    def __init__(self, limits: SnapshotLimits, now_ms: int):
        if limits.max_bytes < 1 or limits.max_interval_ms < 0:
            raise ValueError(f"bad snapshot limits {limits}")
        self.limits = limits
        self.bytes_since_snapshot = 0
        self.last_snapshot_ms = now_ms

    def reset(self, now_ms: int) -> None:
        """A snapshot was decided on or loaded: count again from here."""
        self.bytes_since_snapshot = 0
        self.last_snapshot_ms = now_ms

    def not_taken(self, bytes_since_snapshot: int, last_snapshot_ms: int) -> None:
        """The snapshot ``on_commit`` asked for was not started: count on from where it stood."""
        self.bytes_since_snapshot = bytes_since_snapshot
        self.last_snapshot_ms = last_snapshot_ms

    def on_commit(self, size_bytes: int, now_ms: int) -> str | None:
        """``size_bytes`` of batches were replayed: the reason to snapshot now, or None.
        A reason restarts the counters (the caller takes the snapshot)."""
        self.bytes_since_snapshot += size_bytes
        limits = self.limits
        if self.bytes_since_snapshot >= limits.max_bytes:
            reason = f"we have replayed at least {limits.max_bytes} bytes"
        elif limits.max_interval_ms and now_ms - self.last_snapshot_ms >= limits.max_interval_ms:
            reason = f"we have waited at least {limits.max_interval_ms} ms"
        else:
            return None
        self.reset(now_ms)
        return reason


__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_INTERVAL_MS", "MAX_BYTES_KEY", "MAX_INTERVAL_KEY", "SnapshotLimits",
           "SnapshotPolicy"]
