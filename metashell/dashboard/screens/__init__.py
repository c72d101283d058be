"""The dashboard's screens: the main one, the help, and the small prompts."""

from metashell.dashboard.screens.help_screen import HelpScreen
from metashell.dashboard.screens.main_screen import MainScreen
from metashell.dashboard.screens.prompt_screen import PromptScreen

__all__ = ["HelpScreen", "MainScreen", "PromptScreen"]
