"""No silent clamps on the command line: ``--offset`` / ``--time`` outside what a log can answer is
one line on stderr naming the reachable offsets, exit code 1, nothing on stdout, for the shell's
one-shot commands, ``dash`` (with and without a terminal: before the app opens) and ``export``
(before Spark starts). A time after the last record is the latest image (the state as of then:
nothing changed after it), as Kafka's tools read "as of T".

The demo log (metashell.demo.shell_demo) holds offsets 0 to 23, stamped from
2026-01-01T00:00:00Z, one second a batch.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from metashell.demo.shell_demo import write_demo_log_dir

pytestmark = pytest.mark.slow  # processes

ROOT = Path(__file__).resolve().parents[3]
RANGE = "offsets -1 (before the first record) to 23 can be reached"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    return write_demo_log_dir(tmp_path_factory.mktemp("cli-positions") / "demo")


def metashell(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "metashell.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env=env, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("point, words", [
    (("--offset", "999999"), "offset 999999 is past the log's end"),
    (("--offset", "-5"), "offset -5 is before the log's earliest point"),
    (("--time", "2020-01-01T00:00:00Z"),
     "time 2020-01-01T00:00:00.000Z is before the log's earliest point (offset -1, 2026-01-01T00:00:00.000Z)"),
])
def test_a_point_out_of_range_is_one_line_and_exit_1(demo: Path, point: tuple[str, str], words: str) -> None:
    expected = f"metashell: {words}: {RANGE}\n"
    done = metashell("--log-dir", str(demo), *point, "-c", "summary")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", expected)
    done = metashell("dash", "--log-dir", str(demo), *point)  # no terminal here: the summary's path
    assert (done.returncode, done.stdout, done.stderr) == (1, "", expected)


def test_a_time_after_the_last_record_is_the_latest(demo: Path) -> None:
    done = metashell("--log-dir", str(demo), "--time", "2031-01-01T00:00:00Z", "-c", "summary")
    assert done.returncode == 0 and done.stdout.startswith("offset:       23 of 23\n"), done.stderr


def test_the_edges_are_reachable(demo: Path) -> None:
    assert metashell("--log-dir", str(demo), "--offset", "23", "-c", "summary").stdout.startswith("offset:       23")
    assert metashell("--log-dir", str(demo), "--offset", "-1", "-c", "ls /topics").returncode == 0


def test_export_refuses_before_spark_starts(demo: Path, tmp_path: Path) -> None:
    done = metashell("export", "--log-dir", str(demo), "/topics", "--out", str(tmp_path / "out"),
                     "--offset", "999999")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"metashell: offset 999999 is past the log's end: "
                                                                  f"{RANGE}\n")
    assert not (tmp_path / "out").exists()


def test_dash_in_a_terminal_refuses_before_the_app_opens(demo: Path) -> None:
    main, child = pty.openpty()
    env = dict(os.environ, TERM="xterm", NO_COLOR="1", COLUMNS="100", LINES="30", PYTHONPATH=str(ROOT))
    env.pop("CI", None)
    proc = subprocess.Popen([sys.executable, "-m", "metashell.cli", "dash", "--log-dir", str(demo),
                             "--offset", "999999"], stdin=child, stdout=child, stderr=child, env=env,
                            close_fds=True, cwd=ROOT)
    os.close(child)
    shown = b""
    try:
        code = proc.wait(timeout=120)  # it ends by itself: no app waits for keys
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the child's side closed: everything was read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(main)
    assert (code, shown.decode()) == (1, f"metashell: offset 999999 is past the log's end: {RANGE}\r\n")
