"""The interactive shell: a pure session (commands over the node tree) and a thin prompt-toolkit front."""

from metashell.shell import commands  # noqa: E402,F401 - fills the command table
