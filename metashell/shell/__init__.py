"""The interactive shell: a pure session (commands over the node tree) and a thin prompt-toolkit front."""

from metashell.shell import commands, history_commands, live_commands  # noqa: E402,F401 - fill the command table
