"""A dashboard whose terminal goes away ends. A pty whose other side closes sends no hangup to a
process that does not own it as its controlling terminal (a test harness's, a supervisor's), and
Textual's input thread then reads EOF in a loop at full CPU: one such orphan ran for an hour."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time

import pytest

from tests.pty_terminal import ROOT

pytestmark = pytest.mark.slow

SAFETY_S = 60.0  # a safety net, never a performance claim


def test_the_dashboard_ends_when_its_terminal_goes_away() -> None:
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color"}
    env.pop("CI", None)  # the dashboard opens only in a terminal, CI unset
    dashboard = subprocess.Popen([sys.executable, "-m", "metashell.cli", "demo"], cwd=ROOT, env=env,
                                 stdin=child, stdout=child, stderr=child, close_fds=True, start_new_session=True)
    os.close(child)
    try:
        drawn, deadline = b"", time.monotonic() + SAFETY_S
        while b"Partitions" not in drawn:  # painted: the app runs
            assert dashboard.poll() is None and time.monotonic() < deadline, drawn[-500:]
            if select.select([main], [], [], 0.2)[0]:
                drawn += os.read(main, 65536)
        os.close(main)  # the terminal goes away
        main = -1
        assert dashboard.wait(timeout=SAFETY_S) == 1
    finally:
        if dashboard.poll() is None:
            dashboard.kill()
            dashboard.wait()
        if main >= 0:
            os.close(main)
