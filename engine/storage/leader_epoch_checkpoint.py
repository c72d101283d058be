"""``leader-epoch-checkpoint``: where each leader epoch's first offset is in the log.

Kafka's checkpoint-file format: a version line (``0``), a count line, then one
``epoch startOffset`` line per entry, every line ending in a newline.
"""

from __future__ import annotations

import re
from typing import Iterable

from engine.common.errors import StorageError
from engine.common.file_io import StrPath, read_text_file, write_bytes_atomically

LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
CHECKPOINT_VERSION = 0
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # Java's readLine splits on all three
_WHITESPACE = re.compile(r"\s+")
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_INT32 = 1 << 31
_INT64 = 1 << 63


def read_leader_epoch_checkpoint(path: StrPath) -> list[tuple[int, int]]:
    """The (epoch, start offset) entries of the file at ``path``."""
    return parse_leader_epoch_checkpoint(read_text_file(path), path=path)


def parse_leader_epoch_checkpoint(text: str, path: StrPath | None = None) -> list[tuple[int, int]]:
    """Entries from checkpoint text.

    An empty file is no entries, not an error: Kafka creates the file empty
    before its first write, so a crash can legitimately leave it so.
    """
    where = None if path is None else str(path)
    lines = _LINE_BREAK.split(text)
    if lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start another
    if not lines:
        return []
    version = _int(lines[0], 1, "version", _INT32, where)
    if version != CHECKPOINT_VERSION:
        raise StorageError(f"line 1: unsupported checkpoint version {version} "
                           f"(expected {CHECKPOINT_VERSION})", path=where)
    if len(lines) < 2:
        raise StorageError("line 2: missing entry count (file truncated?)", path=where)
    count = _int(lines[1], 2, "entry count", _INT32, where)
    if count < 0:
        raise StorageError(f"line 2: negative entry count {count}", path=where)
    entries = [_entry(line, n, where) for n, line in enumerate(lines[2:], start=3)]
    if len(entries) != count:
        line_no = 3 + min(count, len(entries))
        raise StorageError(f"line {line_no}: expected {count} entries, found {len(entries)}",
                           path=where)
    return entries


def dump_leader_epoch_checkpoint(entries: Iterable[tuple[int, int]]) -> str:
    """The text Kafka writes for ``entries``."""
    rows = list(entries)
    for epoch, offset in rows:
        if not (-_INT32 <= epoch < _INT32 and -_INT64 <= offset < _INT64):
            raise ValueError(f"entry ({epoch}, {offset}) is out of the int32/int64 range")
    body = "".join(f"{epoch} {offset}\n" for epoch, offset in rows)
    return f"{CHECKPOINT_VERSION}\n{len(rows)}\n{body}"


def write_leader_epoch_checkpoint(path: StrPath, entries: Iterable[tuple[int, int]]) -> None:
    """Write ``entries`` to ``path`` atomically and durably, in Kafka's format."""
    write_bytes_atomically(path, dump_leader_epoch_checkpoint(entries).encode("utf-8"))


def _entry(line: str, line_no: int, where: str | None) -> tuple[int, int]:
    # Kafka splits on runs of whitespace; trailing blanks vanish, leading ones make a bad line.
    parts = _WHITESPACE.split(line.rstrip())
    if len(parts) != 2:
        raise StorageError(f"line {line_no}: expected 'epoch startOffset', found {line!r}",
                           path=where)
    return (_int(parts[0], line_no, "epoch", _INT32, where),
            _int(parts[1], line_no, "start offset", _INT64, where))


def _int(text: str, line_no: int, what: str, limit: int, where: str | None) -> int:
    if not _JAVA_INT.fullmatch(text) or not -limit <= int(text) < limit:
        raise StorageError(f"line {line_no}: {what} is not an integer: {text!r}", path=where)
    return int(text)
