"""A slow controller at a terminal: the shell says what it is waiting for instead of a blank wait.

The controller is a listener that never accepts nor answers (the kernel completes the TCP
handshake; ApiVersions gets no answer). With stderr a pseudo-terminal, the one-shot shell prints
one progress line (what it connects to, and the setup timeout bounding each attempt) once the
wait has lasted a moment; with stderr a pipe (a script), stderr carries the error line alone when
the attach gives up at the request timeout. Timeouts are safety nets.
"""

from __future__ import annotations

import os
import pty
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.metashell.shell.test_shell import _read_until

pytestmark = pytest.mark.slow  # processes


@pytest.fixture
def silent() -> Iterator[str]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)  # never accepted: the handshake completes, nothing ever answers
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}


def test_at_a_terminal_a_slow_controller_gets_one_progress_line(silent: str, tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text("request.timeout.ms=120000\nsocket.connection.setup.timeout.ms=7000\n")
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "metashell.cli", "--bootstrap-controller", silent,
                             "--command-config", str(config), "-c", "summary"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=child, env=_env())
    os.close(child)
    try:
        seen = _read_until(main, b"ms=7000)\r\n").decode()
    finally:
        proc.kill()  # it would wait for ApiVersions until the request timeout
        proc.wait()
        os.close(main)
    (line,) = [line for line in seen.replace("\r", "").split("\n") if line.strip()]
    assert line == f"metashell: connecting to {silent} (socket.connection.setup.timeout.ms=7000)"


def test_without_a_terminal_stderr_has_the_error_alone(silent: str, tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text("request.timeout.ms=4000\n")  # past the moment a terminal gets its progress line
    proc = subprocess.run([sys.executable, "-m", "metashell.cli", "--bootstrap-controller", silent,
                           "--command-config", str(config), "-c", "summary"],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env=_env())
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"metashell: cannot reach any bootstrap controller: {silent} (no ApiVersions response within 4000 ms)"]
