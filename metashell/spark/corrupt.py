"""Damage, as the kraft data source reports it: the engine's one line
(``<file>, byte offset <n>: <reason>``, engine.common.errors.MetadataError.one_line).

FAILFAST (the default): the task fails with ``KraftReadError`` whose message is that line alone,
so Spark's error, which quotes the Python exception, carries it. PERMISSIVE: the damage becomes
a row with ``_corrupt`` set to the line, ``cluster_id`` and what else is known (the damaged
batch's base offset, when its header still reads) filled, every other column null; the reading
goes on past the damaged batch when its header's length is intact (the walk's step), as Spark's
own file readers go on past a malformed line.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from engine.common.errors import MetadataError
from engine.records.record_batch import LOG_OVERHEAD, peek_batch_extent

# damage inside a batch whose header (and so its length) still reads: engine.image.log_runs's rule
RECORDS_DAMAGE = ("batch CRC mismatch", "absurd record count", "malformed record", "undecodable")


class KraftReadError(Exception):
    """A task's failure: its message is one line naming the file and byte offset (or the path or
    option), never a Python repr."""


@dataclass(frozen=True, slots=True)
class Damage:
    line: str  # <file>, byte offset <n>: <reason>
    offset: int | None  # the damaged batch's base offset, when its header reads
    resume_at: int | None  # the byte position after the damaged batch, when reading can go on there


def damage_at(error: MetadataError, path: str, buf: bytes, pos: int) -> Damage:
    """The damage of the batch at byte ``pos`` of ``buf`` (the file ``path``)."""
    placed = error if error.path is not None else error.at(path=path)
    resume = None
    offset = None
    if error.reason.startswith(RECORDS_DAMAGE):
        end = peek_batch_extent(buf, pos)
        if end is not None and pos + LOG_OVERHEAD <= end <= len(buf):
            resume = end
            offset = struct.unpack_from(">q", buf, pos)[0]
    return Damage(placed.one_line(), offset, resume)


def failure(damage: Damage) -> KraftReadError:
    return KraftReadError(damage.line)


def corrupt_row(width: int, cluster_id: str, damage: Damage, offset_column: int | None = 1) -> tuple:
    """A PERMISSIVE row of ``width`` columns (cluster_id first, _corrupt last) for ``damage``."""
    row = [None] * width
    row[0], row[-1] = cluster_id, damage.line
    if offset_column is not None and damage.offset is not None:
        row[offset_column] = damage.offset
    return tuple(row)
