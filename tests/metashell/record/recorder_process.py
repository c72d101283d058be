"""``metashell record`` as a process for the process tests (no tests here): spawned from this
worktree, its stderr lines collected by a thread, waits that end on an event (a line, an offset
held) with a generous safety net, and a SIGKILL of whatever is left at the end."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

from metashell.record.manifest import Manifest, read_manifest
from engine.common.errors import MetadataError

ROOT = Path(__file__).resolve().parents[3]
SAFETY_NET_S = 120.0  # never reached when the recorder works: each wait ends on its event


def metashell_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "metashell.cli", *args]


def run_metashell(*args: str, timeout_s: float = SAFETY_NET_S) -> subprocess.CompletedProcess:
    return subprocess.run(metashell_command(*args), capture_output=True, text=True, timeout=timeout_s,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=subprocess.DEVNULL)


class RecorderProcess:
    def __init__(self, bootstrap: str, archive: Path, *extra: str,
                 preexec_fn: Callable[[], None] | None = None):
        self.archive = Path(archive)
        self.lines: list[str] = []
        self._changed = threading.Condition()
        args = ["record", "--bootstrap-controller", bootstrap, "--archive", str(archive),
                "--progress-interval-ms", "500", *extra]
        self.proc = subprocess.Popen(metashell_command(*args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True, preexec_fn=preexec_fn,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        with self._changed:
            return "\n".join(self.lines)

    def wait_line(self, pattern: str, *, after: int = 0) -> str:
        """The first stderr line from index ``after`` on matching ``pattern`` (a regex)."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + SAFETY_NET_S
        with self._changed:
            while True:
                for line in self.lines[after:]:
                    if regex.search(line):
                        return line
                if self.proc.poll() is not None and not self._reader.is_alive():
                    raise AssertionError(f"the recorder exited ({self.proc.returncode}) before a line matching "
                                         f"{pattern!r}:\n{self.output()}")
                left = deadline - time.monotonic()
                assert left > 0, f"no line matching {pattern!r} within {SAFETY_NET_S} s:\n{self.output()}"
                self._changed.wait(min(left, 1.0))

    def wait_held(self, offset: int) -> Manifest:
        """Until the manifest says ``offset`` is held (the durable offset reached it)."""
        deadline = time.monotonic() + SAFETY_NET_S
        while True:
            manifest = held_manifest(self.archive)
            if manifest is not None and manifest.last_offset >= offset:
                return manifest
            assert self.proc.poll() is None, f"the recorder exited ({self.proc.returncode}):\n{self.output()}"
            assert time.monotonic() < deadline, f"offset {offset} not held within {SAFETY_NET_S} s " \
                                                f"({manifest}):\n{self.output()}"
            time.sleep(0.1)

    def stop(self, signum: int = signal.SIGTERM) -> int:
        self.proc.send_signal(signum)
        code = self.proc.wait(SAFETY_NET_S)
        self._reader.join(SAFETY_NET_S)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(SAFETY_NET_S)
        self._reader.join(SAFETY_NET_S)


def held_manifest(archive: Path) -> Manifest | None:
    try:
        return read_manifest(archive)
    except MetadataError:
        return None  # not written yet


def log_end_offset(metadata_dir: Path) -> int:
    """One past the last whole batch of a node's metadata log (a running node's: read as it stands)."""
    from tests.archive_compare import whole_batches, _last_offset

    batches = whole_batches(metadata_dir)
    return max((_last_offset(b) for b in batches.values()), default=-1) + 1


def no_traceback(lines: Sequence[str]) -> None:
    assert not any("Traceback" in line or line.startswith("  File ") for line in lines), "\n".join(lines)
