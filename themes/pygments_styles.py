"""Pygments styles for metashell's JSON output: dark and light terminals."""

from __future__ import annotations

from pygments.style import Style
from pygments.token import Keyword, Name, Number, Punctuation, String


class MetashellDark(Style):
    """For dark terminals: keys in cyan, strings in green, numbers in yellow."""

    name = "metashell-dark"
    styles = {
        Name.Tag: "bold #5fd7ff",
        String: "#87d787",
        String.Double: "#87d787",
        Number: "#ffd75f",
        Keyword.Constant: "#ff87af",
        Punctuation: "#8a8a8a",
    }


class MetashellLight(Style):
    """For light terminals: the same roles in darker inks."""

    name = "metashell-light"
    styles = {
        Name.Tag: "bold #005f87",
        String: "#005f00",
        String.Double: "#005f00",
        Number: "#875f00",
        Keyword.Constant: "#af005f",
        Punctuation: "#6c6c6c",
    }


STYLES = {"dark": MetashellDark, "light": MetashellLight}
