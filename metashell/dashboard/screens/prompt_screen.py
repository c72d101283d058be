"""A one-line question in a modal box: jump to an offset, jump to a time."""

from __future__ import annotations

from typing import Callable

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class PromptScreen(ModalScreen[object]):
    """Dismisses with ``parse(text)``; a ValueError from ``parse`` is shown and the box stays."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, placeholder: str, parse: Callable[[str], object]) -> None:
        super().__init__()
        self.title_text, self.placeholder, self.parse = title, placeholder, parse

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-box") as box:
            box.border_title = self.title_text
            yield Input(placeholder=self.placeholder, id="prompt-input")
            yield Static("", id="prompt-error")

    @on(Input.Submitted, "#prompt-input")
    def _submitted(self, event: Input.Submitted) -> None:
        try:
            value = self.parse(event.value.strip())
        except ValueError as exc:
            self.query_one("#prompt-error", Static).update(str(exc))
            return
        self.dismiss(value)

    def action_cancel(self) -> None:
        self.dismiss(None)
