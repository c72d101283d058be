"""The metashell dashboard: a Textual app over a FrameSource — a History (time travel over a
file) or a live source (metashell.dashboard.live_history, which grows as the quorum commits).

    app = DashboardApp(History.open_log_dir(path), theme="metashell-dark")
    app.run()

Layout and colours live in themes/dashboard.tcss, the two themes in themes/textual_themes.py;
each panel is a widget of its own (metashell/dashboard/widgets/), the keys are on MainScreen.
"""

from __future__ import annotations

import os
import stat
import sys

from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ClassVar

from textual.app import App
from textual.binding import Binding, BindingType

import themes
from metashell.dashboard.failure import one_line
from metashell.dashboard.model import Frame, FrameSource
from metashell.dashboard.screens import HelpScreen, MainScreen
from metashell.dashboard.screens.changes_screen import ChangesScreen
from metashell.dashboard.widgets import NodeBrowser, PartitionsTable, RowTable
from themes.textual_themes import OPPOSITE, THEMES

if TYPE_CHECKING:
    from metashell.dashboard.ticker import Ticker


class DashboardApp(App):
    CSS_PATH = Path(themes.__file__).parent / "dashboard.tcss"
    TITLE = "metashell dashboard"
    ENABLE_COMMAND_PALETTE = False  # its theme picker would offer themes the stylesheet was not written for
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("t", "toggle_theme", "Theme"),
    ]

    def __init__(self, source: FrameSource, *, theme: str = "metashell-dark", offset: int | None = None,
                 ticker: "Ticker | None" = None, poll_ticker: "Ticker | None" = None,
                 screenshot_dir: Path | None = None, clock: Callable[[], datetime] | None = None) -> None:
        """``offset``: the record to open at (default: the last one); ``ticker``: what play mode
        ticks on, ``poll_ticker`` what a growing source is polled on (default: Textual's timers;
        tests pass ManualTickers and tick them themselves). ``screenshot_dir``: where ``w`` saves
        the screen (default: the working directory); ``clock``: the wall clock its file name is
        stamped with (tests fix it)."""
        super().__init__()
        self.screenshot_dir = screenshot_dir
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        for definition in THEMES.values():
            self.register_theme(definition)
        self.theme = theme
        self.source = source
        self._offset = offset
        self._ticker = ticker
        self._poll_ticker = poll_ticker

    def on_mount(self) -> None:
        if not self.is_headless and _terminal_present(sys.__stdin__) is not None:
            self.set_interval(TERMINAL_CHECK_S, self._end_without_terminal)

    def _end_without_terminal(self) -> None:
        """A terminal that went away without a hangup (a pty whose other side closed, with no
        SIGHUP because this process does not own it) leaves Textual's input thread reading EOF
        in a loop at full CPU: the app ends instead."""
        if _terminal_present(sys.__stdin__) is False:
            self.exit(return_code=1)

    def get_default_screen(self) -> MainScreen:
        return MainScreen(self.source, self._offset, ticker=self._ticker, poll_ticker=self._poll_ticker)

    @property
    def main(self) -> MainScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    @property
    def frame(self) -> Frame | None:
        return self.main.frame

    def show(self, frame: Frame) -> None:
        """Show ``frame`` in every panel (incrementally): the one entry point for new state."""
        self.main.show(frame)

    def action_toggle_theme(self) -> None:
        self.theme = OPPOSITE.get(self.theme, "metashell-dark")

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_scopes()))

    def action_save_screen(self) -> Path | None:
        """Save the screen as an SVG (for an incident ticket) and say where; None if it failed."""
        frame = self.frame
        stamp = self._clock().astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        at = f"offset-{frame.offset}" if frame is not None and frame.offset >= 0 else "start"
        directory = self.screenshot_dir if self.screenshot_dir is not None else Path.cwd()
        try:
            written = Path(self.save_screenshot(filename=f"metashell-{at}-{stamp}.svg", path=str(directory)))
        except OSError as exc:
            self.notify(f"the screen was not saved: {one_line(exc)}", severity="error", timeout=10)
            return None
        self.notify(f"screen saved to {written}", title="screenshot", timeout=10)
        return written

    def help_scopes(self) -> list[tuple[str, list[BindingType]]]:
        """Where each key works, straight from the classes' BINDINGS."""
        return [("dashboard", list(MainScreen.BINDINGS)), ("anywhere", list(self.BINDINGS)),
                ("partitions", list(PartitionsTable.BINDINGS)), ("node browser", list(NodeBrowser.BINDINGS)),
                ("tables", list(RowTable.BINDINGS)), ("history, diff", list(ChangesScreen.BINDINGS))]


TERMINAL_CHECK_S = 2.0


def _terminal_present(stream) -> bool | None:
    """True while ``stream`` is a terminal whose device still exists; False once it was one and
    is gone (a closed pty answers no terminal request, and its /dev/pts node is removed: no links
    left); None for a stream that is no terminal (or no stream)."""
    try:
        fd = stream.fileno()
        status = os.fstat(fd)
    except (AttributeError, ValueError, OSError):
        return None
    if os.isatty(fd):
        return status.st_nlink > 0
    return False if status.st_nlink == 0 and _is_a_pty_device(status) else None


def _is_a_pty_device(status: os.stat_result) -> bool:
    """A character device of the pseudo-terminal kind (major 136-143, Linux's Unix98 ptys)."""
    return stat.S_ISCHR(status.st_mode) and 136 <= os.major(status.st_rdev) <= 143
