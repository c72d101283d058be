"""The interactive shell in a pseudo-terminal, as tmux runs it: the command line typed shows once.

Two ways it used to show twice: a command typed while another still ran was echoed by the
terminal itself (cooked mode between prompts) and drawn again by the prompt that read it; and
a line another thread wrote while the prompt was up landed inside the line being typed, which
the prompt then drew again below it. Each test holds the shell at the moment that matters by an
event it controls (a pager that waits on a FIFO, a thread that waits on one), never by time.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.pty_terminal import Terminal, screen

ROWS, COLUMNS = 12, 100


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "TERM": "xterm", "NO_COLOR": "1", "PROMPT_TOOLKIT_NO_CPR": "1",
           "METASHELL_HISTORY": str(tmp_path / "history"), "LINES": str(ROWS), "COLUMNS": str(COLUMNS), **extra}
    env.pop("CI", None)
    return env


def _lines_with(terminal: Terminal, text: str) -> list[str]:
    return [line for line in screen(terminal.text) if text in line]


def test_a_command_typed_while_another_runs_shows_once(tmp_path: Path) -> None:
    release = tmp_path / "release"
    os.mkfifo(release)
    # output longer than the screen goes to the pager: this one holds the shell between prompts
    pager = f"cat >/dev/null; echo PAGING; read line < {release}"
    terminal = Terminal(["--demo"], _env(tmp_path, PAGER=pager), size=(ROWS, COLUMNS))
    try:
        row, _ = terminal.expect(r"^metashell:/>$")
        terminal.type("find /\r")
        terminal.read_until("PAGING")
        terminal.type("pwd\r")  # typed ahead: the shell is still in find's pager
        with open(release, "w") as fifo:
            fifo.write("go\n")
        prompt_row, _ = terminal.expect(r"^metashell:/> pwd$", row + 1)
        assert terminal.expect(r"^/$", prompt_row)[0] == prompt_row + 1
        assert _lines_with(terminal, "pwd") == ["metashell:/> pwd"]
        terminal.type("exit\r")
        assert terminal.close() == 0
    finally:
        terminal.kill()


_SPEAKER = """
import logging, sys, threading
from pathlib import Path
from metashell.demo.shell_demo import write_demo_log_dir
from metashell.shell.repl import run_repl
from metashell.shell.session import Session
from metashell.source import Source

def speak():  # as a library on another thread warns: logging's last resort, to stderr
    with open(sys.argv[1]) as fifo:
        fifo.read()
    logging.getLogger("asyncio").warning("a warning from another thread")

threading.Thread(target=speak, daemon=True).start()
session = Session(Source(log_dir=write_demo_log_dir(Path(sys.argv[2]))))
session.load()
sys.exit(run_repl(session))
"""


def test_another_threads_line_goes_above_the_prompt_not_into_the_typed_line(tmp_path: Path) -> None:
    speak = tmp_path / "speak"
    os.mkfifo(speak)
    (tmp_path / "demo").mkdir()
    program = [sys.executable, "-c", _SPEAKER, str(speak), str(tmp_path / "demo")]
    terminal = Terminal([], _env(tmp_path, PYTHONPATH=str(Path(__file__).resolve().parents[3])),
                        size=(ROWS, COLUMNS), program=program)
    try:
        terminal.expect(r"^metashell:/>$")
        terminal.type("cat /brokers/1/sta")
        terminal.read_until("cat /brokers/1/sta")
        with open(speak, "w") as fifo:
            fifo.write("now\n")
        terminal.read_until("a warning from another thread")
        terminal.type("te\r")
        row, _ = terminal.expect(r"^metashell:/> cat /brokers/1/state$")
        assert terminal.expect(r"^active$", row)[0] == row + 1
        assert _lines_with(terminal, "a warning from another thread") == ["a warning from another thread"]
        assert _lines_with(terminal, "cat /brokers") == ["metashell:/> cat /brokers/1/state"]
        terminal.type("exit\r")
        assert terminal.close() == 0
    finally:
        terminal.kill()
