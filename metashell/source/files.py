"""A snapshot file or a log directory as a Source, and how to move its image in time.

A "snapshot" may be any file of record batches, as ``kafka-metadata-shell --snapshot`` takes
any: a segment is replayed from its first batch (engine.image.metadata_loader.load_file).

A snapshot's topics are decoded on first touch (engine.image.lazy_topics): the first answer
waits for one pass over the file, not for every partition; the same image (and so the same
undecoded topics) is where a log directory's replay and its seeks start.

A log directory is read once, into a MetadataHistory (engine.image.metadata_history), from
its newest snapshot at or before the first point asked for; ``seek`` then replays from the
history's checkpoints instead of reading the log again. A point before that snapshot reads
the older span of the log once; ``seek latest`` reads what a running node appended since
(nothing when the segments' sizes are as they were).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from engine.common.errors import ConfigError
from engine.image.metadata_history import MetadataHistory
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import LoadInfo, load_file
from engine.storage.log_reader import LogEntry, read_file, read_log_dir


@dataclass
class Source:
    """A snapshot file or a log directory; ``load`` gives the image at a point of its history."""

    snapshot: Path | None = None
    log_dir: Path | None = None
    _history: MetadataHistory | None = field(default=None, init=False, repr=False, compare=False)
    at_point: bool = field(default=False, init=False, compare=False)  # at a point a seek chose, not the latest

    live = False

    def load(self, offset: int | None = None, time_ms: int | None = None) -> tuple[MetadataImage, LoadInfo]:
        """The image at a point (the latest without one). A point the log cannot answer is an
        OffsetOutOfRange naming the reachable offsets, and the source stays where it was."""
        if self.log_dir is not None:
            if self._history is None:
                self._history = MetadataHistory.open_log_dir(self.log_dir, offset=offset, time_ms=time_ms)
            elif offset is None and time_ms is None:
                self._history.read_new()  # the latest: what a running node appended since
            answer = self._history.image_at(offset=offset, time_ms=time_ms)
            self.at_point = offset is not None or time_ms is not None
            return answer
        if offset is not None or time_ms is not None:
            raise ConfigError("seek needs a log directory (--log-dir): a snapshot holds one point in time")
        return load_file(self.snapshot)

    def tag(self, shown_offset: int) -> str:
        """Where the shell stands, for its prompt: [seek @N] once a seek (or --offset / --time) moved
        it to a point of the log; nothing at the latest, as the live shell's [live @N] is."""
        return f"[seek @{shown_offset}]" if self.at_point else ""

    def entries(self) -> Iterable[LogEntry]:
        """Every record of the source, in log order (the segments', not a snapshot's, for a log directory)."""
        return read_log_dir(self.log_dir, use_snapshot=False) if self.log_dir else read_file(self.snapshot)

    def close(self) -> None:
        """Nothing to release: the files are read and closed."""

    @property
    def history(self) -> MetadataHistory | None:
        """The log directory's history, once a ``load`` has read it (None before, and for a snapshot)."""
        return self._history

    @property
    def description(self) -> str:
        return str(self.log_dir or self.snapshot)
