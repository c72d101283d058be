"""The dashboard's screen as the terminal shows it, as text: for tests that read what a user reads.

The frame is the compositor's (every widget, in its place, clipped and overlapped as drawn),
rendered as Textual's own ``export_screenshot`` renders it for an SVG, but into plain text.
"""

from __future__ import annotations

import io
import re

from rich.console import Console
from textual.app import App


def screen_lines(app: App) -> list[str]:
    """The terminal's lines, top to bottom."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True, color_system=None,
                      legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text().splitlines()


def shows(app: App, pattern: str) -> bool:
    """Some line on screen matches ``pattern`` (a regular expression)."""
    return any(re.search(pattern, line) for line in screen_lines(app))


def elr_moment(history) -> int:
    """In the dashboard demo's bad day (metashell.demo.dashboard_demo): where payments-0's ISR
    emptied and its last-known ELR was set (leaderless, ELR [2, 4], last-known ELR [2])."""
    return next(e.offset for e in history.events
                if e.kind == "elr-change" and e.subject == "payments-0" and "last-known ELR [] →" in e.text)
