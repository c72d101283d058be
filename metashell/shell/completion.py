"""Completion as a pure function: the text before the cursor in, candidates out.

The first word completes to command names; later words to options of that command,
to command names after ``man``, to record types after ``records --type`` (in the spelling
begun: ``PARTITION_`` or ``Partition``), or to node paths (relative or absolute, directories
with a trailing ``/``).
"""

from __future__ import annotations

import shlex
from typing import NamedTuple

from metashell.tree.nodes import NodeError, normalize, resolve
from metashell.shell.commands import COMMANDS
from metashell.shell.session import Session


class Candidate(NamedTuple):
    text: str  # what replaces the word being typed
    start: int  # its position relative to the cursor (negative: chars to replace)
    display: str


def complete(session: Session, before_cursor: str) -> list[Candidate]:
    segment = before_cursor.rsplit(";", 1)[-1].lstrip()
    try:
        words = shlex.split(segment)
    except ValueError:
        return []
    if segment and not segment[-1].isspace() and words:
        current, previous = words[-1], words[:-1]
    else:
        current, previous = "", words
    if not previous:
        return [Candidate(name, -len(current), name) for name in sorted(COMMANDS) if name.startswith(current)]
    command = COMMANDS.get(previous[0])
    if command is not None and current.startswith("-"):
        options = sorted(o for action in command.parser._actions for o in action.option_strings)
        return [Candidate(o, -len(current), o) for o in options if o.startswith(current)]
    if previous == ["man"]:
        return [Candidate(name, -len(current), name) for name in sorted(COMMANDS) if name.startswith(current)]
    if previous[0] == "records" and "--type" in previous and not any(
            w.startswith("-") for w in previous[previous.index("--type") + 1:]):
        return _record_types(current)
    return _paths(session, current)


def _record_types(current: str) -> list[Candidate]:
    from metashell.shell.record_types import names_like

    names = names_like(current)  # constants until a lower-case letter says the class names are meant
    return [Candidate(n, -len(current), n) for n in sorted(names) if n.lower().startswith(current.lower())]


def _paths(session: Session, current: str) -> list[Candidate]:
    head, _, prefix = current.rpartition("/")
    base = head + "/" if current.count("/") else ""
    try:
        directory = resolve(session.root, normalize(session.cwd, head or ("/" if current.startswith("/") else ".")))
    except NodeError:
        return []
    if not directory.is_directory:
        return []
    out = []
    for name in directory.child_names():
        if name.startswith(prefix):
            child = directory.child(name)
            suffix = "/" if child is not None and child.is_directory else ""
            out.append(Candidate(base + name + suffix, -len(current), name + suffix))
    return out
