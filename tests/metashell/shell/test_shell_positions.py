"""Where the offline shell stands: a seek out of range is one line naming the reachable offsets and
changes nothing, the prompt shows ``[seek @N]`` after a seek, and a seek keeps the working
directory when it exists at the new offset (else it says where it moved). In process (by captured
output), with ``-c`` (a process), and in a pseudo-terminal.

The demo log (metashell.demo.shell_demo) holds offsets 0 to 23; topic ``orders`` is created at
offset 10, so it is not there at offset 3.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.common.errors import OffsetOutOfRange
from metashell.demo.shell_demo import write_demo_log_dir
from metashell.shell.session import Session
from metashell.source import Source

ROOT = Path(__file__).resolve().parents[3]
RANGE = "offsets -1 (before the first record) to 23 can be reached"


@pytest.fixture()
def demo(tmp_path: Path) -> Path:
    return write_demo_log_dir(tmp_path / "demo")


@pytest.fixture()
def session(demo: Path) -> Session:
    out: list[str] = []
    err: list[str] = []
    s = Session(Source(log_dir=demo), out=out.append, err=err.append)
    s.load()
    s.lines, s.errors = out, err
    return s


def run(session: Session, line: str) -> tuple[int, list[str], list[str]]:
    session.lines.clear()
    session.errors.clear()
    status = session.run_line(line)
    return status, list(session.lines), list(session.errors)


@pytest.mark.parametrize("offset, words", [
    ("99999999", "offset 99999999 is past the log's end"),
    ("24", "offset 24 is past the log's end"),
    ("-5", "offset -5 is before the log's earliest point"),
])
def test_a_seek_out_of_range_is_one_line_and_changes_nothing(session: Session, offset: str, words: str) -> None:
    run(session, "cd /topics/orders; seek 12")
    before = (session.image, session.cwd, session.prompt())
    assert run(session, f"seek {offset}") == (1, [], [f"metashell: seek: {words}: {RANGE}"])
    assert (session.image, session.cwd, session.prompt()) == before
    assert session.prompt() == "[seek @12] metashell:/topics/orders> "


def test_the_range_rides_on_the_error(demo: Path) -> None:
    """What the dashboard's ``g`` can offer without reading the line."""
    source = Source(log_dir=demo)
    with pytest.raises(OffsetOutOfRange) as refused:
        source.load(offset=100)
    assert (refused.value.first, refused.value.last) == (-1, 23)


def test_the_edges_of_the_range_are_reachable(session: Session) -> None:
    assert run(session, "seek 23") == (0, ["at offset 23"], [])
    assert run(session, "seek -1") == (0, ["at offset -1"], [])
    assert run(session, "ls /topics") == (0, [], [])  # before the first record: nothing yet


def test_the_prompt_shows_a_seek_until_seek_latest(session: Session) -> None:
    assert session.prompt() == "metashell:/> "
    run(session, "seek 3")
    assert session.prompt() == "[seek @3] metashell:/> "
    run(session, "seek --time 1767225604000")  # the batch stamped at 4 s ends at offset 13
    assert session.prompt() == "[seek @13] metashell:/> "
    run(session, "seek latest")
    assert session.prompt() == "metashell:/> "


def test_a_seek_keeps_the_directory_that_still_exists(session: Session) -> None:
    run(session, "cd /topics/orders")
    assert run(session, "seek 12; pwd") == (0, ["at offset 12", "/topics/orders"], [])


def test_a_seek_says_where_it_moved_when_the_directory_is_gone(session: Session) -> None:
    run(session, "cd /topics/orders/configs")
    status, out, err = run(session, "seek 3; pwd")
    assert (status, out) == (0, ["at offset 3", "/topics"])
    assert err == ["metashell: note: /topics/orders/configs does not exist at offset 3: now in /topics"]


def _metashell(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "metashell.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))


@pytest.mark.slow
def test_c_commands_keep_or_move_the_directory(demo: Path) -> None:
    done = _metashell("--log-dir", str(demo), "-c", "cd /topics/orders; seek 12; pwd; seek 3; pwd")
    assert (done.returncode, done.stdout) == (0, "at offset 12\n/topics/orders\nat offset 3\n/topics\n")
    assert done.stderr == "metashell: note: /topics/orders does not exist at offset 3: now in /topics\n"
    done = _metashell("--log-dir", str(demo), "-c", "seek 99999999; pwd")
    assert (done.returncode, done.stdout) == (1, "/\n")
    assert done.stderr == f"metashell: seek: offset 99999999 is past the log's end: {RANGE}\n"


_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Screen:
    """What a terminal showed, control sequences left out, read on to each thing expected in
    turn (a chunk may hold the next one too: it is kept, not consumed twice)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.raw, self.at = fd, b"", 0

    def expect(self, needle: str, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s  # a safety net against a hang, not a timing claim
        while (found := self.text.find(needle, self.at)) < 0:
            left = deadline - time.monotonic()
            assert left > 0, f"never saw {needle!r}; got {self.text[self.at:][-600:]!r}"
            if select.select([self.fd], [], [], left)[0]:
                self.raw += os.read(self.fd, 65536)
        self.at = found + len(needle)

    @property
    def text(self) -> str:
        return _ESCAPES.sub("", self.raw.decode(errors="replace"))


@pytest.mark.slow
def test_the_offline_prompt_in_a_terminal(demo: Path, tmp_path: Path) -> None:
    main, child = pty.openpty()
    env = dict(os.environ, TERM="xterm", NO_COLOR="1", PROMPT_TOOLKIT_NO_CPR="1", COLUMNS="120", LINES="40",
               METASHELL_HISTORY=str(tmp_path / "history"), PYTHONPATH=str(ROOT))
    env.pop("CI", None)
    proc = subprocess.Popen([sys.executable, "-m", "metashell.cli", "--log-dir", str(demo)], stdin=child,
                            stdout=child, stderr=child, env=env, close_fds=True, cwd=ROOT)
    os.close(child)
    screen = Screen(main)
    try:
        screen.expect("metashell:/>")
        os.write(main, b"cd /topics/orders\r")
        screen.expect("metashell:/topics/orders>")
        os.write(main, b"seek 12\r")
        screen.expect("[seek @12] metashell:/topics/orders>")
        os.write(main, b"seek 99999999\r")
        screen.expect(f"metashell: seek: offset 99999999 is past the log's end: {RANGE}")
        screen.expect("[seek @12] metashell:/topics/orders>")  # where it stood
        os.write(main, b"seek 3\r")
        screen.expect("/topics/orders does not exist at offset 3: now in /topics")
        screen.expect("[seek @3] metashell:/topics>")
        os.write(main, b"seek latest\r")
        screen.expect("at offset 23")
        screen.expect("metashell:/topics>")
        assert "[seek @" not in screen.text[screen.text.rindex("at offset 23"):]  # the latest: no tag
        os.write(main, b"exit\r")
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(main)
