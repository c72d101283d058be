"""The metashell dashboard: a Textual app over a FrameSource — a History (time travel over a
file) or a live source (metashell.dashboard.live_history, which grows as the quorum commits).

    app = DashboardApp(History.open_log_dir(path), theme="metashell-dark")
    app.run()

Layout and colours live in themes/dashboard.tcss, the two themes in themes/textual_themes.py;
each panel is a widget of its own (metashell/dashboard/widgets/), the keys are on MainScreen.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ClassVar

from textual.app import App
from textual.binding import Binding, BindingType

import themes
from metashell.dashboard.failure import one_line
from metashell.dashboard.model import Frame, FrameSource
from metashell.dashboard.screens import HelpScreen, MainScreen
from metashell.dashboard.widgets import PartitionsTable, RowTable
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
                ("partitions", list(PartitionsTable.BINDINGS)), ("tables", list(RowTable.BINDINGS))]
