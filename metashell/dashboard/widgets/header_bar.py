"""The bar across the top: which cluster, which versions, who leads, where in history we are;
attached live, first of all how the feed stands (following, paused with records arriving,
disconnected, an error)."""

from __future__ import annotations

from textual.content import Content
from textual.markup import escape
from textual.widget import Widget

from metashell.dashboard.model import HeaderInfo

# the live state's kinds: following (all is well), paused (looking at the past), down (not following)
LIVE_STYLES = {"live": "b $success", "paused": "b $warning", "down": "b $error"}


class HeaderBar(Widget):
    """Two lines of HeaderInfo; repainted (never relaid out: its height is fixed) only when the
    info or the play state changes."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.info: HeaderInfo | None = None
        self.play_state = ""
        self.live: tuple[str, str] = ("", "")  # (text, one of LIVE_STYLES)
        self._content = Content("")

    def render(self) -> Content:
        return self._content

    def show(self, info: HeaderInfo, play_state: str = "", live: tuple[str, str] = ("", "")) -> bool:
        if info == self.info and play_state == self.play_state and live == self.live:
            return False
        self.info, self.play_state, self.live = info, play_state, live
        self._content = Content.from_markup(self._markup())
        self.refresh()
        return True

    def _markup(self) -> str:
        i = self.info
        assert i is not None

        def field(label: str, value: str) -> str:
            return f"[$text-muted]{label}[/] [b]{escape(value)}[/b]"

        features = " ".join(f"{escape(name)}={level}" for name, level in i.features) or "-"
        # the status first (the feed's state, play mode: what an operator must not miss, also on a
        # narrow terminal), then the position; the long feature list last (cut if need be)
        live_text, live_kind = self.live
        line1 = "   ".join(filter(None, [
            "[b $accent]metashell[/]",
            f"[{LIVE_STYLES.get(live_kind, 'b')}]{escape(live_text)}[/]" if live_text else "",
            f"[b $warning]{escape(self.play_state)}[/]" if self.play_state else "",
            f"[b $primary]{escape(i.position)}[/]",
            field("record time", i.record_time) if i.record_time != "-" else "",
            field("quorum leader", i.leader) if i.leader else ""]))
        line2 = "   ".join([
            field("cluster", i.cluster_id), field("metadata.version", i.metadata_version),
            field("kraft.version", i.kraft_version), f"[$text-muted]features[/] {features}"])
        return f"{line1}\n{line2}"

    def text(self) -> str:
        """The bar as plain text (tests)."""
        return self._content.plain
