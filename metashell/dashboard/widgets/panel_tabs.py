"""The tab bar of the tabbed layout: one line naming every panel with its key, the one shown
marked. A click on a name brings that panel forward, as its key does."""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from metashell.dashboard.layout import PANELS


class PanelTabs(Widget):
    DEFAULT_CSS = "PanelTabs { height: 1; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.active = PANELS[0].id
        self._content = self._markup()

    def render(self) -> Content:
        return self._content

    def activate(self, panel_id: str) -> None:
        if panel_id != self.active:
            self.active = panel_id
            self._content = self._markup()
            self.refresh()

    def _markup(self) -> Content:
        tabs = []
        for spec in PANELS:
            click = f"@click=screen.show_panel('{spec.id}')"
            if spec.id == self.active:
                tabs.append(f"[reverse b $accent {click}] {spec.key} {spec.title} [/]")
            else:
                tabs.append(f"[{click}] [b]{spec.key}[/b] [$text-muted]{spec.title}[/] [/]")
        return Content.from_markup("".join(tabs))

    def text(self) -> str:
        """The bar as plain text (tests)."""
        return self._content.plain
