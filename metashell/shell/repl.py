"""The interactive front: prompt-toolkit around a Session.

Completion from completion.complete, history kept in ~/.metashell_history, JSON
highlighted with Pygments (styles in themes/), long output paged. Live (--bootstrap-controller)
the prompt is redrawn every LIVE_REFRESH_S while idle, taking what was committed meanwhile, so
the tree and the prompt's ``[live @N]`` follow the cluster between keystrokes too.

The command line shows once. Between prompts the terminal is in its cooked mode, where the tty
itself echoes what is typed: a command typed ahead while another runs (a long seek, the pager,
watch) was shown by the tty, then again by the next prompt reading it. So the terminal's echo is
off for the whole session (prompt-toolkit draws what it reads, and puts back these settings after
each prompt). And while the prompt is up, what another thread writes (a library's warning on the
live attachment's thread) is printed above it (patch_stdout), not into the line being typed.
"""

from __future__ import annotations

import os
import pydoc
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.patch_stdout import patch_stdout

from metashell.shell.completion import complete
from metashell.shell.registry import ExitShell
from metashell.shell.session import Session

LIVE_REFRESH_S = 0.5
HISTORY_FILE = Path(os.environ.get("METASHELL_HISTORY", Path.home() / ".metashell_history"))


class _SessionCompleter(Completer):
    def __init__(self, session: Session):
        self.session = session

    def get_completions(self, document, complete_event):
        for candidate in complete(self.session, document.text_before_cursor):
            yield Completion(candidate.text, start_position=candidate.start, display=candidate.display)


def highlight(text: str, theme: str | None = None) -> str:
    """JSON coloured for a terminal with the theme's Pygments style (themes/pygments_styles.py,
    ``METASHELL_THEME=dark|light``, ``NO_COLOR`` for none); anything else as is."""
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")) or os.environ.get("NO_COLOR"):
        return text
    from pygments import highlight as pyg_highlight
    from pygments.formatters import Terminal256Formatter
    from pygments.lexers import JsonLexer

    from themes.pygments_styles import STYLES

    style = STYLES.get(theme or os.environ.get("METASHELL_THEME", "dark"), STYLES["dark"])
    return pyg_highlight(text, JsonLexer(), Terminal256Formatter(style=style)).rstrip("\n")


@contextmanager
def terminal_echo_off(stream: TextIO | None = None) -> Iterator[None]:
    """The terminal's own echo off (ECHO cleared) until the block ends, its settings then put back;
    nothing when ``stream`` (default: stdin) is not a terminal. Typed-ahead input stays queued:
    the change does not flush it."""
    try:
        import termios
    except ImportError:  # not a POSIX terminal
        yield
        return
    try:
        fd = (stream or sys.stdin).fileno()
        saved = termios.tcgetattr(fd)
    except (AttributeError, ValueError, OSError, termios.error):
        yield
        return
    quiet = list(saved)
    quiet[3] &= ~termios.ECHO  # the local modes
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def run_repl(session: Session) -> int:
    """Read-eval-print until exit or Ctrl-D; errors are one line and the shell goes on."""
    with terminal_echo_off():
        return _loop(session)


def _loop(session: Session) -> int:
    lines: list[str] = []
    session.out = lines.append
    session.err = lines.append  # in order with the output around it
    session.flush = lambda: _flush(lines, page=False)  # watch prints as it goes
    session.interactive = True
    try:
        history = FileHistory(str(HISTORY_FILE))
    except OSError:
        history = InMemoryHistory()
    prompt = PromptSession(history=history, completer=_SessionCompleter(session), complete_while_typing=False,
                           refresh_interval=LIVE_REFRESH_S if session.live else 0)

    def message() -> str:
        session.refresh()  # the prompt's redraw is on this thread: the tree is swapped between keystrokes
        return session.prompt()

    while True:
        try:
            with patch_stdout(raw=True):  # another thread's writes go above the prompt
                line = prompt.prompt(message)
        except KeyboardInterrupt:
            continue
        except EOFError:
            return 0
        try:
            session.run_line(line)
        except ExitShell:
            return 0
        except KeyboardInterrupt:
            lines.append("metashell: interrupted")  # Ctrl-C ends a command, not the shell
        finally:
            _flush(lines)


def _flush(lines: list[str], page: bool = True) -> None:
    if not lines:
        return
    text = "\n".join(highlight(line) for line in lines)
    lines.clear()
    height = shutil.get_terminal_size((80, 24)).lines
    if page and text.count("\n") + 1 > height - 2:
        pydoc.pager(text)
    else:
        print(text, flush=True)
