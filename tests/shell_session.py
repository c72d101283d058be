"""A shell session over records written to a real log directory (no tests here)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from engine.storage.metadata_log import MetadataLog
from metashell.shell.session import Session
from metashell.source import Source


def session_over(directory: Path, records: list) -> Session:
    """A Session on a log directory holding ``records`` in one batch, its output kept in ``lines``."""
    with MetadataLog.create(directory, fsync_policy="never") as log:
        log.append(records, epoch=1, timestamp_ms=1)
    lines: list[str] = []
    session = Session(Source(log_dir=directory), out=lines.append)
    session.load()
    session.lines = lines
    return session


def run(session: Session, line: str) -> list[str]:
    """The lines ``line`` prints; it must succeed."""
    session.lines.clear()
    assert session.run_line(line) == 0, (line, session.lines)
    return list(session.lines)


def metashell_on_log_dir(directory: Path, *args: str) -> subprocess.CompletedProcess:
    """``metashell --log-dir DIRECTORY ARGS`` as a process of this checkout, no stdin."""
    root = Path(__file__).resolve().parents[1]
    return subprocess.run([sys.executable, "-m", "metashell.cli", "--log-dir", str(directory), *args],
                          capture_output=True, text=True, timeout=120, cwd=root,
                          env=dict(os.environ, PYTHONPATH=str(root)), stdin=subprocess.DEVNULL)
