"""The dashboard when something fails: a crash inside the app ends it with one line naming a log
file that holds the traceback, exit code 1, and none of Textual's boxed traceback on the
terminal; a live source whose poll raises stops being polled and says so in the header, and the
app lives on with what was fetched.

The crash is provoked the way a bug would come: a panel's row function raising (patched in the
test, in process for the app, or in the child's own interpreter for the command line, run on a
pseudo-terminal as an operator's). The failing source is the live attachment's surface
(test_dashboard_live.PushedFeed) whose drain raises, as a broken attachment's would.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from engine.image.metadata_loader import replay_start, segment_batches
from engine.storage.log_reader import LogEntry
from metashell.dashboard import panels
from metashell.dashboard.app import DashboardApp
from metashell.dashboard.failure import log_dirs, run_app
from metashell.dashboard.history import History
from metashell.dashboard.ticker import ManualTicker
from metashell.dashboard.widgets import HeaderBar
from metashell.live.feed import FeedUpdate
from test_dashboard_live import PushedFeed, attached

ROOT = Path(__file__).resolve().parents[3]
LOG_LINE = re.compile(r"^metashell: the dashboard failed: RuntimeError: the brokers panel broke "
                      r"\(details in (?P<path>\S+\.log)\)$")


class BrokenFeed(PushedFeed):
    """The attachment's surface; once ``broken``, draining it raises as a lost socket would."""

    broken: BaseException | None = None

    def drain(self) -> FeedUpdate:
        if self.broken is not None:
            raise self.broken
        return super().drain()


@pytest.fixture
def batches(demo_log_dir: Path) -> list[list[LogEntry]]:
    start = replay_start(demo_log_dir, earliest=True)
    return list(segment_batches(start.listing, start.begin, []))


def _break_the_brokers_panel(monkeypatch) -> None:
    def broken(*_args, **_kwargs):
        raise RuntimeError("the brokers panel broke")
    monkeypatch.setattr(panels, "broker_rows", broken)


def test_log_dirs_follow_xdg_state_home_then_the_home_default(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert log_dirs()[0] == tmp_path / "state" / "metashell"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")  # the spec: only absolute paths count
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert log_dirs()[0] == tmp_path / "home" / ".local" / "state" / "metashell"


def test_a_crash_inside_the_app_is_one_line_and_a_log(monkeypatch, tmp_path: Path, demo_log_dir: Path,
                                                      capsys) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    _break_the_brokers_panel(monkeypatch)
    line = run_app(DashboardApp(History.open_log_dir(demo_log_dir)), headless=True, size=(120, 40))
    assert line is not None
    match = LOG_LINE.match(f"metashell: {line}")
    assert match, line
    log = Path(match["path"])
    assert log.parent == tmp_path / "metashell"
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "in on_mount" in text
    assert text.rstrip().endswith("RuntimeError: the brokers panel broke")
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "╭" not in out + err  # Textual's box went nowhere


def test_an_app_that_ends_well_writes_no_log(monkeypatch, tmp_path: Path, demo_log_dir: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    async def quit_once_shown(pilot) -> None:  # an operator's "q"
        await pilot.pause()
        await pilot.press("q")

    app = DashboardApp(History.open_log_dir(demo_log_dir))
    assert run_app(app, headless=True, size=(120, 40), auto_pilot=quit_once_shown) is None
    assert app.return_code == 0
    assert not (tmp_path / "metashell").exists()


def test_a_failing_live_source_shows_in_the_header_and_the_app_lives_on(monkeypatch, tmp_path: Path,
                                                                        batches) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    feed = BrokenFeed()
    source = attached(feed, batches[:3])
    poll = ManualTicker()
    shown = batches[2][-1].offset

    async def main() -> None:
        app = DashboardApp(source, poll_ticker=poll)
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause()
            screen = app.main
            feed.push([batches[3]])  # arrives, but the next drain fails
            feed.broken = ConnectionResetError(104, "Connection reset by peer")
            poll.tick()
            await pilot.pause()
            header = screen.query_one(HeaderBar).text()
            assert "✖ live feed stopped: Connection reset by peer" in header
            assert screen.query_one(HeaderBar).live[1] == "down"
            assert not poll.running  # polled no more: its state is unknown
            assert screen.frame.offset == shown  # what was fetched stays, and can be browsed
            await pilot.press("left")
            assert screen.frame.offset == shown - 1
            assert "✖ live feed stopped" in screen.query_one(HeaderBar).text()
            assert app.is_running and app.return_code is None
            [log] = (tmp_path / "metashell").glob("dashboard-*.log")
            assert "ConnectionResetError" in log.read_text() and "in poll_source" in log.read_text()
    asyncio.run(main())


# -- the command line, on a pseudo-terminal ------------------------------------------------------

CRASHING_CLI = """
import sys
from metashell.dashboard import panels
def broken(*_args, **_kwargs):
    raise RuntimeError("the brokers panel broke")
panels.broker_rows = broken
from metashell.cli import main
main()
"""


def _run_on_a_terminal(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run ``argv`` with a pseudo-terminal as stdin, stdout and stderr; its exit code and output."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ROOT, close_fds=True)
    os.close(slave)
    out = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 120)
            if not ready:
                break
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
        code = proc.wait(timeout=120)
    return code, out.decode("utf-8", "replace")


@pytest.mark.slow
def test_the_command_line_ends_a_crashed_dashboard_with_one_line_and_exit_1(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CI"}  # a terminal, not CI: the dashboard runs
    env.update(TERM="xterm-256color", XDG_STATE_HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    code, out = _run_on_a_terminal([sys.executable, "-c", CRASHING_CLI, "demo"], env)
    text = re.sub(r"\x1b\[[0-9;?<>=$]*[A-Za-z]|\x1b\][^\x07]*\x07|\x07", "", out)  # the app's screen codes
    lines = [line for line in text.replace("\r", "").split("\n") if line.strip()]
    assert code == 1, text
    assert len(lines) == 1 and LOG_LINE.match(lines[0]), lines
    assert "Traceback" not in text and "╭" not in text and "│" not in text
    log = Path(LOG_LINE.match(lines[0])["path"])
    assert log.parent == tmp_path / "metashell"
    assert log.read_text().rstrip().endswith("RuntimeError: the brokers panel broke")
