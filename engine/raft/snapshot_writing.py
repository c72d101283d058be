"""Writing a snapshot off the event loop: by a forked child, or in slices (a log in memory).

Kafka writes its snapshots on the SnapshotGenerator's own thread; one Python thread cannot, so
a process does (``write_in_child``).

The image a snapshot reads is immutable, and ``fork`` gives the child that very image, copied
only where a page is written: the child encodes the records, writes them to a ``.part`` file
the parent named beforehand (fsynced), says "ok" through a pipe and exits. The parent goes on
serving meanwhile; the pipe's end wakes its loop, and only then, the child reaped and its exit
clean, does the parent install (rename) the file. So a child that fails, is killed or never
finishes leaves at most a ``.part``, which is deleted here, or by the log's next opening after a
crash: never a half snapshot under a snapshot's name. Its failure is one line (the caller logs
it), and the next snapshot that falls due is tried afresh.

The child does nothing but pure encoding and file writes: no logging, no event loop, no garbage
collection (it would walk and dirty every page of the parent's heap), no inherited descriptor
but its pipe (a socket it held would stay open after the parent closed it), and it leaves by
``os._exit`` whatever happens, so no code of the parent's runs twice. On Linux it is killed
with its parent (PR_SET_PDEATHSIG): a SIGKILLed node leaves no writer behind.

Where there is no fork, or the log is in memory (the simulator's; its snapshots are bytes, not
files), ``write_in_slices`` encodes in short slices between the loop's other work and writes on
a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from engine.common.errors import StorageError
from engine.storage.snapshot_writer import SnapshotBuilder

Entry = tuple[bytes | None, bytes | None]
_OK = b"ok"
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_REAP_POLL_S = 0.005
# The child runs this much nicer than its parent: the loops that serve Raft and the controller
# are the critical path, and every node of a quorum snapshots at about the same offsets, so three
# writers at the parents' priority took the CPU from the three loops on a 2-core machine at
# once. At +10 a writer gets about a tenth of what a busy loop gets, and all of an idle CPU.
CHILD_NICE = 10
# In slices: about this much time each, the loop serving requests between them (a million
# partitions take seconds, and a loop stopped past the fetch timeout loses the leadership);
# within a slice the clock is read every so many records.
SNAPSHOT_SLICE_MS = 20
SNAPSHOT_SLICE_RECORDS = 256


def can_fork() -> bool:
    return hasattr(os, "fork")


async def write_in_child(make_builder: Callable[[], SnapshotBuilder], entries: Iterator[Entry],
                         stage: Callable[[bytes], None], part: Path,
                         on_started: Callable[[int], None] | None = None) -> None:
    """Build the snapshot (``make_builder``, then every entry) and ``stage`` its bytes to ``part``,
    in a forked child; returns once ``part`` is complete. StorageError (one line) if the child
    failed or was killed, ``part`` then deleted; cancelled, the child is killed and ``part``
    deleted. ``on_started`` gets the child's pid (tests kill it)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        _child(read_fd, write_fd, make_builder, entries, stage)
    os.close(write_fd)
    if on_started is not None:
        on_started(pid)
    try:
        try:
            message = await _read_to_end(read_fd)
        finally:
            os.close(read_fd)
        status = await _reap(pid)
    except BaseException:
        _kill(pid)
        part.unlink(missing_ok=True)
        raise
    code = os.waitstatus_to_exitcode(status)
    if code == 0 and message == _OK:
        return
    part.unlink(missing_ok=True)
    if code < 0:
        why = f"was killed by signal {signal.Signals(-code).name}"
    else:
        why = f"failed: {message.decode(errors='replace') or f'exit code {code}'}"
    raise StorageError(f"the snapshot writer (process {pid}) {why}", path=str(part))


def _child(read_fd: int, write_fd: int, make_builder: Callable[[], SnapshotBuilder], entries: Iterator[Entry],
           stage: Callable[[bytes], None]) -> None:
    code = 1
    try:
        parent = os.getppid()
        _die_with_parent()
        if os.getppid() != parent:  # the parent died before that took effect
            return
        # Only the pipe stays open: an inherited socket (the listener, a peer's connection) held
        # here would outlive the parent's close of it, and keep a killed node's port bound.
        os.closerange(3, write_fd)
        os.closerange(write_fd + 1, _max_fd())
        gc.disable()  # short-lived: freed at exit, and the parent's heap stays shared
        try:
            signal.set_wakeup_fd(-1)  # a signal here must not wake the parent's loop
        except (ValueError, OSError):
            pass
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, signal.SIG_DFL)
        try:
            os.nice(CHILD_NICE)
        except OSError:
            pass
        builder = make_builder()
        builder.add_entries(entries)
        stage(builder.finish_buffer())  # not a copy: the child's memory is the node's
        os.write(write_fd, _OK)
        code = 0
    except BaseException as err:  # noqa: BLE001 - said to the parent in one line
        try:
            text = " ".join(str(err).split()) or type(err).__name__
            os.write(write_fd, text.encode(errors="replace")[:1000])
        except BaseException:  # noqa: BLE001
            pass
    finally:
        os._exit(code)


def _die_with_parent() -> None:
    """Linux: be sent SIGKILL when the parent dies (a SIGKILLed node leaves no writer behind)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _max_fd() -> int:
    try:
        return min(os.sysconf("SC_OPEN_MAX"), 1 << 20)
    except (OSError, ValueError):
        return 1 << 16


async def _read_to_end(fd: int) -> bytes:
    loop = asyncio.get_running_loop()
    done: asyncio.Future[bytes] = loop.create_future()
    chunks: list[bytes] = []

    def readable() -> None:
        try:
            chunk = os.read(fd, 65536)
        except OSError as err:
            chunk = b""
            chunks.append(f"cannot read from the snapshot writer: {err.strerror}".encode())
        if chunk:
            chunks.append(chunk)
        elif not done.done():
            done.set_result(b"".join(chunks))

    loop.add_reader(fd, readable)
    try:
        return await done
    finally:
        loop.remove_reader(fd)


async def _reap(pid: int) -> int:
    """The child's wait status; it has closed its end of the pipe, so it is exiting."""
    while True:
        reaped, status = os.waitpid(pid, os.WNOHANG)
        if reaped:
            return status
        await asyncio.sleep(_REAP_POLL_S)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


async def write_in_slices(builder: SnapshotBuilder, entries: Iterator[Entry], stage: Callable[[bytes], Any],
                          discard: Callable[[Any], None], stopping: Callable[[], bool]) -> Any:
    """Encode between the loop's other work, then ``stage`` the bytes on a worker thread: what
    ``stage`` returns, or None if ``stopping`` meanwhile. Cancelled mid-write, the thread's
    file is discarded once written, not left behind."""
    more = True
    while more:
        deadline = time.perf_counter() + SNAPSHOT_SLICE_MS / 1000
        while more and time.perf_counter() < deadline:
            more = builder.add_entries(entries, SNAPSHOT_SLICE_RECORDS)
        await asyncio.sleep(0)
        if stopping():
            return None
    data = builder.finish()
    writing = asyncio.ensure_future(asyncio.to_thread(stage, data))
    try:
        return await asyncio.shield(writing)
    except asyncio.CancelledError:
        def discard_when_written(done: asyncio.Future) -> None:
            if not done.cancelled() and done.exception() is None:
                with contextlib.suppress(OSError):
                    discard(done.result())

        writing.add_done_callback(discard_when_written)
        raise


__all__ = ["CHILD_NICE", "SNAPSHOT_SLICE_MS", "SNAPSHOT_SLICE_RECORDS", "can_fork", "write_in_child", "write_in_slices"]
