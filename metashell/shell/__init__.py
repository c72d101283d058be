"""The interactive shell: a pure session (commands over the node tree) and a thin prompt-toolkit front."""
