"""The dashboard's Textual themes, dark and light, as data.

The stylesheet (dashboard.tcss) only names theme variables ($primary, $error, ...), so a
theme here is all it takes to recolour every panel; the app registers both and ``t``
switches between them at run time. The inks echo the Pygments styles in pygments_styles.py
so the shell and the dashboard look like one tool.
"""

from __future__ import annotations

from textual.theme import Theme

DARK = Theme(
    name="metashell-dark",
    primary="#5fafd7",
    secondary="#5f87af",
    accent="#ffd75f",
    warning="#ffaf5f",
    error="#ff5f5f",
    success="#87d787",
    foreground="#dadada",
    background="#121212",
    surface="#1c1c1c",
    panel="#262626",
    dark=True,
    variables={
        "footer-key-foreground": "#5fd7ff",
        "block-cursor-background": "#005f87",
        "block-cursor-foreground": "#ffffff",
        "block-cursor-text-style": "none",
    },
)

LIGHT = Theme(
    name="metashell-light",
    primary="#005f87",
    secondary="#5f5f87",
    accent="#af5f00",
    warning="#af5f00",
    error="#af0000",
    success="#005f00",
    foreground="#1c1c1c",
    background="#f5f5f0",
    surface="#ebebe6",
    panel="#dcdcd6",
    dark=False,
    variables={
        "footer-key-foreground": "#005f87",
        "block-cursor-background": "#afd7ff",
        "block-cursor-foreground": "#000000",
        "block-cursor-text-style": "none",
    },
)

THEMES: dict[str, Theme] = {theme.name: theme for theme in (DARK, LIGHT)}
# ``t`` flips between these two.
OPPOSITE = {DARK.name: LIGHT.name, LIGHT.name: DARK.name}
