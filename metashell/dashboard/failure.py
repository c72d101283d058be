"""Where a dashboard failure goes: one line for the operator, the traceback in a log file.

Textual turns an exception inside an app into a boxed traceback (with locals) printed on the
terminal when the app ends, and ``App.run()`` returns as if nothing happened. ``run_app`` keeps
that box off the terminal (Textual prints it on ``App.error_console``, which is pointed at a
buffer), writes the traceback to a log file and returns the line to print and exit 1 on.

The log directory, in order: ``$XDG_STATE_HOME/metashell``, ``~/.local/state/metashell`` (the
XDG default), else ``metashell-<user>`` in the system temporary directory when neither can be
written. One file per failure: ``dashboard-<UTC time>-<pid>.log``.
"""

from __future__ import annotations

import getpass
import io
import os
import tempfile
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console

from engine.common.errors import MetadataError


@dataclass(frozen=True)
class EndedOnError:
    """What an app exits with (``app.exit(EndedOnError(line), return_code=1)``) when it ends on an
    error it already put in one line (a live attach that gave up): ``run_app`` returns the line as
    it is, and logs nothing (there is no traceback to keep)."""

    line: str


def log_dirs() -> list[Path]:
    """Where a failure log may go, best first."""
    state = os.environ.get("XDG_STATE_HOME", "").strip()
    # the XDG spec: a relative $XDG_STATE_HOME is invalid and is ignored
    base = Path(state) if state and os.path.isabs(state) else Path.home() / ".local" / "state"
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container): the number will do
        user = str(os.getuid())
    return [base / "metashell", Path(tempfile.gettempdir()) / f"metashell-{user}"]


def write_failure_log(what: str, details: str) -> Path | None:
    """Write ``details`` (a traceback) under the first log directory that takes it; its path, or
    None when none could be written (the one line then says so)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    for directory in log_dirs():
        path = directory / f"dashboard-{stamp}-{os.getpid()}.log"
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path.write_text(f"metashell dashboard: {what}\n\n{details}", encoding="utf-8")
            return path
        except OSError:
            continue
    return None


def one_line(exc: BaseException) -> str:
    """An exception as one line, as the command line prints any other error."""
    if isinstance(exc, MetadataError):
        return exc.one_line()
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def report(what: str, exc: BaseException | None, fallback: str = "") -> tuple[str, Path | None]:
    """(the one line, the log's path) for ``exc`` (its traceback logged; ``fallback``, e.g. what
    Textual would have printed, when there is no exception object)."""
    details = "".join(traceback.format_exception(exc)) if exc is not None else fallback
    path = write_failure_log(what, details or "(no details were given)\n")
    line = f"{what}: {one_line(exc)}" if exc is not None else what
    where = f"details in {path}" if path is not None else "no log could be written (see docs/dashboard.md)"
    return f"{line} ({where})", path


def run_app(app: Any, **run_options: Any) -> str | None:
    """Run a Textual ``app`` to its end (``run_options`` go to ``App.run``: headless, size):
    None when it ended well, else the one line to print (the app crashed, or could not start)
    after its traceback went to a log file."""
    captured = io.StringIO()
    # What Textual prints when an app fails (its boxed traceback) goes here, not to the terminal.
    app.error_console = Console(file=captured, width=120, markup=False, highlight=False, color_system=None)
    failure: BaseException | None = None
    try:
        app.run(**run_options)
    except Exception as exc:  # noqa: BLE001 - the promise is one line and a log, never a traceback
        failure = exc
    if failure is None and not app.return_code:
        return None
    ended = getattr(app, "return_value", None)
    if failure is None and isinstance(ended, EndedOnError):
        return ended.line
    # Textual keeps the exception that ended the app (to re-raise it under its test pilot).
    failure = failure or getattr(app, "_exception", None)
    line, _ = report("the dashboard failed", failure, captured.getvalue())
    return line
