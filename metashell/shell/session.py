"""A shell session: the current image and directory, history, and running command lines.

Pure of any terminal: output goes to ``out`` (a function taking one line), so commands
are tested by their captured output. The prompt-toolkit front (repl.py) and the one-shot
mode (cli) are thin layers over ``run_line``.

Over a live quorum (source.LiveSource) the session follows commits: before each command it
takes what was committed since (unless the source is frozen: one-shot commands answer from the
state at attach time, or a seek looks at the past), and the interactive front refreshes while
idle. ``prompt()`` says where it stands. A refresh asks the source what changed since the image
it shows (a change set), and the new tree keeps what that left as it was.
"""

from __future__ import annotations

import shlex
import sys
import time
from typing import Callable

from engine.common.errors import MetadataError
from engine.image.change_set import ChangeSet
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import LoadInfo
from metashell.tree.nodes import Node, NodeError, expand, normalize, resolve
from metashell.shell.registry import COMMANDS, ShellError, unknown_command
from metashell.shell.suggest import path_hint
from metashell.source import LiveSource, Source
from metashell.tree.root import tree_root
from metashell.tree.tree_layout import TreeBuilder


class Session:
    def __init__(self, source: Source | LiveSource, out: Callable[[str], None] = print,
                 err: Callable[[str], None] | None = None, show_secrets: bool = False):
        self.source = source
        self.out = out
        self.err = err or out
        self.show_secrets = show_secrets
        self.cwd = "/"
        self.history: list[str] = []
        self.image: MetadataImage = MetadataImage()
        self.info: LoadInfo | None = None
        self._tree = TreeBuilder(self.image, None, show_secrets)
        self.root: Node = tree_root(self._tree)
        self.interactive = False  # a terminal front (repl): watch may run until Ctrl-C
        self.flush: Callable[[], None] = sys.stdout.flush  # what watch calls after each print
        self.clock: Callable[[], float] = time.monotonic  # seconds; watch --timeout-ms measures with it

    @property
    def live(self) -> bool:
        return self.source.live

    def refresh(self) -> bool:
        """Live and following: take what was committed since, and show it. True when the image changed."""
        source = self.source
        if not source.live or source.frozen or not source.following:
            return False
        mark = source.mark()  # where the history stood: the image shown, unless a wait() grew it since
        grew = source.poll()
        history = source.history  # it may also have grown by a wait() the session did not see
        if not grew and (history is None or history.last_offset == self.image.provenance.last_offset):
            return False
        image, info = source.load()
        shown = mark is not None and mark.offset == self.image.provenance.last_offset
        # asked only when the tree holds work worth keeping (a replay of what arrived)
        changes = source.changes_since(mark) if shown and self._tree.holds_work else None
        self.set_image(image, info, changes)
        return True

    def prompt(self) -> str:
        """``metashell:/topics> ``; after a seek ``[seek @1200] metashell:/topics> ``; live:
        ``[live @18234] metashell:/topics> `` (see Source.tag and LiveSource.tag)."""
        tag = self.source.tag(self.image.provenance.last_offset)
        return f"{tag} metashell:{self.cwd}> " if tag else f"metashell:{self.cwd}> "

    def load(self, offset: int | None = None, time_ms: int | None = None) -> None:
        image, info = self.source.load(offset=offset, time_ms=time_ms)
        self.set_image(image, info)

    def set_image(self, image: MetadataImage, info: LoadInfo | None, changes: ChangeSet | None = None) -> None:
        """Swap in another image (time travel, or the live feed). The tree is rebuilt lazily over
        it, keeping what ``changes`` (from the image shown to this one; None: unknown) left as it
        was; the current directory stays if it still exists, else the session moves to its nearest
        ancestor that does and says so (a note on ``err``)."""
        self.image, self.info = image, info
        self._tree = self._tree.carried(image, info, changes)
        self.root = tree_root(self._tree)
        if self._is_directory(self.cwd):
            return
        gone, self.cwd = self.cwd, self._nearest_directory(self.cwd)
        self.err(f"metashell: note: {gone} does not exist at offset {image.provenance.last_offset}: now in {self.cwd}")

    def _is_directory(self, path: str) -> bool:
        try:
            return resolve(self.root, path).is_directory
        except NodeError:
            return False

    def _nearest_directory(self, path: str) -> str:
        """The closest ancestor of ``path`` that is a directory of the current image (``/`` at worst)."""
        while path != "/":
            path = path.rsplit("/", 1)[0] or "/"
            if self._is_directory(path):
                return path
        return "/"

    # -- paths ---------------------------------------------------------------------

    def absolute(self, path: str) -> str:
        return normalize(self.cwd, path)

    def node(self, path: str) -> Node:
        try:
            return resolve(self.root, self.absolute(path))
        except NodeError as exc:
            raise ShellError(f"{exc}{path_hint(self.root, self.absolute(path))}") from None

    def paths(self, pattern: str) -> list[str]:
        """Absolute paths for an argument, globs expanded; an error when a glob matches nothing."""
        try:
            matches = expand(self.root, self.cwd, pattern)
        except NodeError as exc:
            raise ShellError(str(exc)) from None
        if not matches:
            raise ShellError(f"{pattern}: no match{path_hint(self.root, self.absolute(pattern))}")
        return matches

    # -- running -------------------------------------------------------------------------

    def run_line(self, line: str) -> int:
        """Run ``cmd args; cmd args ...``; returns 1 if any command failed, else 0."""
        line = line.strip()
        if not line:
            return 0
        self.history.append(line)
        status = 0
        for part in _split_commands(line):
            try:
                words = shlex.split(part)
            except ValueError as exc:
                self.err(f"metashell: {exc}")
                return 1
            if not words:
                continue
            command = COMMANDS.get(words[0])
            self.refresh()  # live: each command answers from the newest image
            if command is None:
                self.err(f"metashell: {unknown_command(words[0])}")
                status = 1
                continue
            try:
                status = max(status, command.run(self, words[1:]))
            except ShellError as exc:
                self.err(f"metashell: {words[0]}: {exc}")
                status = 1
            except MetadataError as exc:
                self.err(f"metashell: {words[0]}: {exc.one_line()}")
                status = 1
        return status


def _split_commands(line: str) -> list[str]:
    """Split on ``;`` outside quotes."""
    parts, current, quote = [], [], None
    for char in line:
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == ";":
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts
