"""The help: what the words, flags and markers on screen mean (metashell.dashboard.legend), then
every key, read from the bindings themselves (so the help cannot drift from the keys)."""

from __future__ import annotations

from typing import Iterable

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, VerticalScroll
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Static

from metashell.dashboard.legend import legend
from metashell.dashboard.widgets.row_table import Column, RowTable

HelpRow = tuple[str, str, str]  # keys, what they do, where they work


def binding_rows(app, scopes: Iterable[tuple[str, Iterable[BindingType]]]) -> list[HelpRow]:
    """One row per binding (keys joined), in the order the classes declare them."""
    rows: list[HelpRow] = []
    seen: set[tuple[str, str]] = set()
    for scope, bindings in scopes:
        for binding in bindings:
            if not isinstance(binding, Binding):
                binding = Binding(*binding)
            keys = [k.strip() for k in binding.key.split(",")]
            shown = " / ".join(_display(app, k, binding.action) for k in keys)
            if (shown, scope) in seen:
                continue
            seen.add((shown, scope))
            rows.append((shown, binding.description or binding.action, scope))
    return rows


def _display(app, key: str, action: str) -> str:
    """As the footer shows it; a lone symbol (⏎, ←) gets its name too: "⏎ enter"."""
    shown = app.get_key_display(Binding(key, action))
    return f"{shown} {key}" if len(shown) == 1 and not shown.isascii() else shown


def legend_text() -> str:
    """The legend as plain text, one line per entry (tests, and a reader without the screen)."""
    return "\n".join(f"{section}: " + "; ".join(f"{word}: {meaning}" for word, meaning in entries)
                     for section, entries in legend())


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark,q", "close", "Close help")]

    def __init__(self, scopes: list[tuple[str, Iterable[BindingType]]]) -> None:
        super().__init__()
        self.scopes = scopes
        self.rows: list[HelpRow] = []

    def compose(self) -> ComposeResult:
        self.rows = binding_rows(self.app, self.scopes + [("help", self.BINDINGS)])
        with VerticalScroll(id="help-box") as box:
            box.border_title = "Legend and keys  (↑↓ scroll · escape closes)"
            for section, entries in legend():
                yield Static(f"[b $accent]{escape(section)}[/]", classes="help-heading")
                with Grid(classes="legend"):  # word | meaning, the meaning wrapping in its column
                    for word, meaning in entries:
                        yield Static(word, markup=False, classes="legend-word")
                        yield Static(meaning, markup=False, classes="legend-meaning")
            yield Static("[b $accent]Keys[/]", classes="help-heading")
            table = RowTable((Column("keys", "keys", max_width=30), Column("what", "what", max_width=40),
                              Column("where", "where", max_width=16)),
                             lambda row: [(row[0], "leader"), (row[1], None), (row[2], "muted")], id="help-table")
            table.can_focus = False  # the box scrolls as one: legend and keys
            yield table

    def on_mount(self) -> None:
        self.query_one(RowTable).set_rows(self.rows)
        self.query_one("#help-box").focus()

    def legend_words(self) -> list[str]:
        """The words the legend explains, as shown (tests)."""
        return [str(word.render()) for word in self.query(".legend-word").results(Static)]

    def keys(self) -> list[str]:
        """Every key listed (tests)."""
        return [word for shown, _, _ in self.rows for key in shown.split(" / ") for word in {key, key.split(" ")[-1]}]

    def action_close(self) -> None:
        self.dismiss(None)
