"""Every command that attaches live says in one line, on stderr with exit code 1, that no
bootstrap controller could be reached and why: the one-shot shell, the interactive shell (through
a pseudo-terminal), ``dash --bootstrap-controller`` with --print, without a terminal and in one
(the app paints, then ends with the line), and ``export``. The controllers: a port bound but not listening (refused) and a host under .invalid
(unknown host), both told apart at once. No timing is asserted: the timeout of each run is a
safety net.
"""

from __future__ import annotations

import os
import pty
import re
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.metashell.shell.test_shell import _read_until

pytestmark = pytest.mark.slow  # processes


@pytest.fixture
def bootstrap() -> Iterator[str]:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))  # bound, never listening: refused, and no one else's port meanwhile
    yield f"127.0.0.1:{probe.getsockname()[1]},nosuchhost.invalid:9093"
    probe.close()


def expected(bootstrap: str) -> str:
    refused = bootstrap.split(",")[0]
    return (f"metashell: cannot reach any bootstrap controller: {refused} (connection refused), "
            "nosuchhost.invalid:9093 (unknown host")


def _metashell(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    return subprocess.run([sys.executable, "-m", "metashell.cli", *args], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, env=env)


@pytest.mark.parametrize("command", [
    ["-c", "summary"],
    ["dash", "--print"],
    ["dash"],  # no terminal here: the summary it would open at
    ["export", "/topics", "--out", "{tmp}/out", "--format", "json"],
], ids=["one-shot", "dash-print", "dash-no-terminal", "export"])
def test_each_command_says_in_one_line_why_no_controller_was_reached(bootstrap: str, command: list[str],
                                                                      tmp_path: Path) -> None:
    words = [w.replace("{tmp}", str(tmp_path)) for w in command]
    at = 1 if words[0] in ("dash", "export") else 0
    proc = _metashell(*words[:at], "--bootstrap-controller", bootstrap, *words[at:])
    assert proc.returncode == 1 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith(expected(bootstrap)), proc.stderr
    assert "Traceback" not in proc.stderr and "Connect call failed" not in line


def test_the_interactive_shell_says_it_in_one_line_too(bootstrap: str, tmp_path: Path) -> None:
    main, child = pty.openpty()
    env = dict(os.environ, TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", METASHELL_HISTORY=str(tmp_path / "history"))
    proc = subprocess.Popen([sys.executable, "-m", "metashell.cli", "--bootstrap-controller", bootstrap],
                            stdin=child, stdout=child, stderr=child, env=env, close_fds=True)
    os.close(child)
    try:
        seen = _read_until(main, b"(connection refused)").decode()
        assert proc.wait(timeout=60) == 1
        seen += _read_until(main, b"\n").decode() if not seen.endswith("\n") else ""
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main)
    lines = [line for line in seen.replace("\r", "").split("\n") if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(expected(bootstrap)), seen


_CONTROL = re.compile(rb"\x1b\[[0-9;?<>=]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>]")


def test_the_live_dashboard_in_a_terminal_ends_with_the_line(bootstrap: str) -> None:
    main, child = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "CI"}  # a terminal, and not CI: the app runs
    env.update(TERM="xterm", COLUMNS="120", LINES="40")
    proc = subprocess.Popen([sys.executable, "-m", "metashell.cli", "dash", "--bootstrap-controller", bootstrap],
                            stdin=child, stdout=child, stderr=child, env=env, close_fds=True)
    os.close(child)
    out = b""
    try:
        deadline = time.monotonic() + 120  # a safety net
        while True:
            ready, _, _ = select.select([main], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(main, 65536)
                except OSError:  # the child's side closed: it ended
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
            assert time.monotonic() < deadline, out[-400:]
        assert proc.wait(timeout=20) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main)
    text = _CONTROL.sub(b"", out).decode(errors="replace")
    assert "Traceback" not in text and "Connect call failed" not in text
    last = text.rstrip().rsplit("\n", 1)[-1]
    assert expected(bootstrap) in last and last.rstrip().endswith(")"), text[-600:]
