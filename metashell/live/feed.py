"""What a live attachment hands the tools: committed batches, in order, and where it stands.

The attachment (metashell.live.attach) runs its own thread and event loop; the shell, the
dashboard and the export never touch a socket. They drain ``FeedUpdate``s, each merging
everything committed since the last drain, and replay them into their MetadataHistory.
A ``reset`` starts the history anew: at attach (the leader's snapshot, or the empty image when
the log still starts at 0) and whenever the attachment fell behind the leader's log start and
had to fetch a snapshot again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.image.metadata_image import MetadataImage
from engine.storage.log_reader import LogEntry


@dataclass(frozen=True)
class AttachStatus:
    """Where the attachment stands, for a prompt or a status bar."""

    bootstrap: str  # the --bootstrap-controller value, as given
    connected: bool = False
    leader_id: int = -1  # -1: not known yet
    leader_epoch: int = -1
    high_watermark: int = -1  # the leader's, as last told (-1: not known yet)
    applied_offset: int = -1  # the last committed offset handed to the tools (-1: none)
    error: str | None = None  # fatal, one line (wrong cluster id, no common Fetch version): the feed stopped
    note: str = "connecting"  # one line: "following leader 3001 (epoch 5)", "disconnected, retrying (at offset N)"
    # until the first high watermark seen is reached (what a tool waits for before it answers):
    catching_up: bool = False
    records_fetched: int = 0  # committed records handed over since attach
    snapshot_bytes: int = 0  # of the snapshot being downloaded (0: none)
    snapshot_size: int = -1  # its size, once the leader told it (-1: unknown or none)

    @property
    def lag(self) -> int:
        """Committed records not yet handed over (0 when unknown)."""
        return max(0, self.high_watermark - 1 - self.applied_offset) if self.high_watermark >= 0 else 0


@dataclass(frozen=True)
class FeedUpdate:
    status: AttachStatus
    reset: tuple[MetadataImage, int] | None = None  # (starting image, its offset; -1 for the empty image)
    batches: list[list[LogEntry]] = field(default_factory=list)  # committed since the last update
