"""Where an image comes from: one Source family for the shell, the export, the dashboard and the CLI.

* ``Source`` (files): a snapshot file, or a log directory read once into a MetadataHistory
  (engine.image.metadata_history) for time travel;
* ``LiveSource`` (live): a running quorum, an Attachment (metashell.live.attach) whose committed
  batches grow a MetadataHistory, bounded by a window of LIVE_WINDOW_RECORDS records by default.

Both answer ``load(offset=, time_ms=)`` with (image, LoadInfo), hand out their ``entries()`` in log
order and their ``history``, and say what they read in ``description``; ``live`` tells them apart.
"""

from __future__ import annotations

from metashell.source.files import Source
from metashell.source.live import ATTACH_TIMEOUT_S, LIVE_WINDOW_RECORDS, LiveSource

__all__ = ["ATTACH_TIMEOUT_S", "LIVE_WINDOW_RECORDS", "LiveSource", "Source"]
