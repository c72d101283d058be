"""The interactive front: prompt-toolkit around a Session.

Completion from completion.complete, history kept in ~/.metashell_history, JSON
highlighted with Pygments (styles in themes/), long output paged. Live (--bootstrap-controller)
the prompt is redrawn every LIVE_REFRESH_S while idle, taking what was committed meanwhile, so
the tree and the prompt's ``[live @N]`` follow the cluster between keystrokes too.
"""

from __future__ import annotations

import os
import pydoc
import shutil
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.history import FileHistory, InMemoryHistory

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


def run_repl(session: Session) -> int:
    """Read-eval-print until exit or Ctrl-D; errors are one line and the shell goes on."""
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
