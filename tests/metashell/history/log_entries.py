"""Lists of records as the batches of LogEntry a log reader yields, for the change tests (no tests here)."""

from __future__ import annotations

from engine.records.metadata_record_serde import ControlRecord
from engine.storage.log_reader import LogEntry


def entry_batches(*batches: list, epoch: int) -> list[list[LogEntry]]:
    """Each list of records one batch, at consecutive offsets from 0 in leader epoch ``epoch``;
    the record at offset n is stamped 1_000 + n ms."""
    out, offset = [], 0
    for records in batches:
        out.append([LogEntry(offset + n, epoch, 1_000 + offset + n, r, isinstance(r, ControlRecord))
                    for n, r in enumerate(records)])
        offset += len(records)
    return out
