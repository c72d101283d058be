"""Where the shell's image comes from, and how to move it in time."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.common.errors import ConfigError
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import LoadInfo, load_log_dir, load_snapshot


@dataclass
class Source:
    """A snapshot file or a log directory; ``load`` gives the image at a point of its history."""

    snapshot: Path | None = None
    log_dir: Path | None = None

    def load(self, offset: int | None = None, time_ms: int | None = None) -> tuple[MetadataImage, LoadInfo]:
        if self.log_dir is not None:
            return load_log_dir(self.log_dir, offset=offset, time_ms=time_ms)
        if offset is not None or time_ms is not None:
            raise ConfigError("seek needs a log directory (--log-dir): a snapshot holds one point in time")
        return load_snapshot(self.snapshot)

    @property
    def description(self) -> str:
        return str(self.log_dir or self.snapshot)
