"""One line of text that changes often: redrawn in place, never relaid out.

Static.update asks for a layout pass of the whole screen; the chart labels and markers and
the header change on every frame but never change size (the stylesheet fixes their height),
so they only repaint.
"""

from __future__ import annotations

from rich.text import Text
from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget


class TextLine(Widget):
    DEFAULT_CSS = "TextLine { height: 1; }"

    content: reactive[Content | Text] = reactive(Content(""), layout=False)

    def __init__(self, text: str = "", *, markup: bool = True, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.markup = markup
        self.set_text(text)

    def set_text(self, text: str) -> None:
        """Markup (``[b]...[/b]``, ``[$accent]...[/]``) unless made with markup=False."""
        self.content = Content.from_markup(text) if self.markup else Content(text)

    def render(self) -> Content | Text:
        return self.content

    @property
    def plain(self) -> str:
        return self.content.plain
