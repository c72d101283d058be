"""``DIR/.lock``: one recorder per archive (an fcntl lock, released by the kernel when its holder dies).

The holder writes its pid into the file, so that a second recorder is refused with a line
naming it, and ``record --status`` can say whether a recorder is writing. A lock left by a
SIGKILLed recorder is no lock: the kernel dropped it with the process.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from engine.common.errors import ConfigError, StorageError

LOCK_FILE = ".lock"


class ArchiveLocked(ConfigError):
    """Another recorder holds the archive."""


class ArchiveLock:
    def __init__(self, archive: Path):
        self.path = Path(archive) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise ArchiveLocked naming the holder's pid."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StorageError(f"cannot open the archive's lock: {exc.strerror}", path=str(self.path)) from None
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EACCES, errno.EAGAIN):
                holder = holder_pid(self.path)
                who = f"pid {holder}" if holder is not None else "another process"
                raise ArchiveLocked(f"{self.path.parent}: another recorder ({who}) is writing this archive "
                                    f"(it holds {self.path})") from None
            raise StorageError(f"cannot lock the archive: {exc.strerror}", path=str(self.path)) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
            except OSError:
                pass  # a full disk does not stop the unlock
            os.close(self._fd)  # closing drops the lock
            self._fd = None


def holder_pid(path: Path) -> int | None:
    """The pid written in a lock file, if it reads as one."""
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def lock_holder(archive: Path) -> int | None:
    """The pid of the recorder holding ``archive``'s lock now; None when none does (asked without
    taking it: F_GETLK tells the holder)."""
    path = Path(archive) / LOCK_FILE
    if not path.exists():
        return None
    if holder_pid(path) == os.getpid():
        return os.getpid()  # POSIX locks are per process: probing our own lock would release it
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return None
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return holder_pid(path) or -1
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
