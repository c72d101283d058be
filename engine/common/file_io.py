"""Small-file I/O shared by every on-disk format: read with one-line errors, replace atomically."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from engine.common.errors import StorageError

StrPath = str | os.PathLike


def read_text_file(path: StrPath, encoding: str = "utf-8") -> str:
    """The text of ``path``; StorageError naming the file on any failure."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise StorageError("no such file", path=str(path)) from None
    except OSError as e:
        raise StorageError(f"cannot read: {e.strerror or e}", path=str(path)) from None
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        reason = f"line {line}: byte 0x{data[e.start]:02x} is not valid {encoding.upper()}"
        raise StorageError(reason, path=str(path), byte_offset=e.start) from None


def write_bytes_atomically(path: StrPath, data: bytes, *, temp_suffix: str | None = None,
                           fsync: bool = True) -> Path:
    """Replace ``path`` with ``data`` so a crash leaves the old or the new file, never half.

    Temp file in the same directory (rename is only atomic within a file system),
    fsync it, rename over the target, then fsync the directory so the rename is durable.
    ``temp_suffix`` names the temp file as Kafka does for snapshots (``.part``);
    by default it gets a random name, so two writers cannot clobber each other.
    """
    target = Path(path)
    temp = target.with_name(target.name + temp_suffix if temp_suffix
                            else f"{target.name}.{secrets.token_hex(4)}.tmp")
    try:
        write_new_file(temp, data, fsync=fsync, exclusive=not temp_suffix)
        os.replace(temp, target)
        if fsync:
            fsync_directory(target.parent)
    except OSError as e:
        temp.unlink(missing_ok=True)
        raise StorageError(f"cannot write: {e.strerror or e}", path=str(target)) from None
    return target


def write_new_file(path: Path, data: bytes, *, fsync: bool = True, exclusive: bool = True) -> None:
    """Write ``data`` to ``path`` (created; with ``exclusive``, never over an existing file),
    fsynced unless told not to. OSError on failure; the caller decides what a partial file means."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (os.O_EXCL if exclusive else 0), 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def write_private(path: Path, data: bytes) -> None:
    """``data`` in a file only its owner reads (a private key, a password): created so, never
    widened after the bytes are in. Whatever was at ``path`` is replaced."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def fsync_directory(directory: Path) -> None:
    if os.name == "nt":  # Windows cannot open a directory for fsync; its rename is durable enough
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
