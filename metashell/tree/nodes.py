"""Nodes of the metadata filesystem: directories and files, built on demand, and their paths.

A node is a read-only view: a directory answers ``child_names()`` and ``child(name)``,
a file answers ``value()`` — text, a number, or a JSON-ready structure with Kafka's numbers —
and ``human_value()``, the same with Kafka's enums named. Nothing is copied out of the image
until a node is asked, so a tree over a million partitions costs nothing to make, and another
image (after a seek) can be swapped in under it.

Names. A node's name is the name Kafka has (a topic, a user, a config key), percent-encoded
where it could not stand as one word of a path on a shell line: ``%`` itself, ``/``, the
shell's glob, quote, escape and separator characters (``* ? [ ] ' " \\ ;``), ``,`` (it joins
the parts of a quota entity), ``<`` and ``>`` (they mark ``<default>`` and ``<empty>``), spaces
and anything unprintable, as ``%XX`` per UTF-8 byte. A name of ``.`` or ``..`` is ``%2E`` or
``%2E%2E``; the empty name is ``<empty>``. So every name the shell prints is one word that
``cd``, ``ls`` and ``cat`` take back as it is, globs never match by accident, and a path is
always ``/``-joined names. A path typed with a name spelt otherwise (``'my group'``, ``%2f``)
still finds the node: a part that names no child is tried again in its encoded form.
"""

from __future__ import annotations

import json

import fnmatch
import re
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterable, Iterator, Mapping
from urllib.parse import unquote


class NodeError(Exception):
    """A path that does not resolve: one line naming the path and why."""


class Node:
    name: str  # set by each kind of node
    is_directory: ClassVar[bool] = False

    def child_names(self) -> list[str]:
        return []

    def child(self, name: str) -> "Node | None":
        return None

    def value(self) -> Any:
        return None

    def human_value(self) -> Any:
        return self.value()


@dataclass
class FileNode(Node):
    name: str
    get: Callable[[], Any]
    human: Callable[[Any], Any] | None = None  # the value with Kafka's enums named, for people
    is_directory: ClassVar[bool] = False

    def value(self) -> Any:
        return self.get()

    def human_value(self) -> Any:
        value = self.get()
        return value if self.human is None else self.human(value)


@dataclass
class DirNode(Node):
    """A directory whose children come from two functions: names, and name -> node."""

    name: str
    names: Callable[[], Iterable[str]]
    make: Callable[[str], "Node | None"]
    order: Callable[[str], Any] | None = None  # the listing's sort key; None: natural_key
    # the listing's sort, where one faster than sorting by ``order`` gives the same list
    sort: Callable[[Iterable[str]], list[str]] | None = None
    # every child named is a file (a walk then lists them without making their nodes)
    files_only: bool = False
    is_directory: ClassVar[bool] = True

    def child_names(self) -> list[str]:
        if self.sort is not None:
            return self.sort(self.names())
        return sorted(self.names(), key=self.order or natural_key)

    def child(self, name: str) -> Node | None:
        return self.make(name)


def static_dir(name: str, children: dict[str, Callable[[], Node]]) -> DirNode:
    """A directory of fixed children, each made when first asked for."""
    return DirNode(name, lambda: children.keys(), lambda n: children[n]() if n in children else None)


def keyed_dir(name: str, entries: Mapping[str, Any], make: Callable[[str, str], Node]) -> DirNode:
    """A directory over a mapping keyed by Kafka's names: a child's name is its key encoded,
    and ``make(encoded name, key)`` builds it."""
    def child(encoded: str) -> Node | None:
        key = decode_name(encoded)
        return make(encoded, key) if key is not None and key in entries else None
    return DirNode(name, lambda: map(encode_name, entries), child)


_NUMBER = re.compile(r"-?[0-9]+")


def natural_key(name: str) -> tuple:
    """Numbers in numeric order (partition 2 before 10), then names."""
    return (0, int(name), "") if _NUMBER.fullmatch(name) else (1, 0, name)


def name_to_int(name: str) -> int | None:
    """The id a name like ``12`` stands for (ASCII digits only: ``int("²")`` would raise)."""
    if not _NUMBER.fullmatch(name):
        return None
    number = int(name)
    return number if str(number) == name else None  # one spelling per node: not 007, not -0


# -- names ------------------------------------------------------------------------------

EMPTY_NAME = "<empty>"
DEFAULT_NAME = "<default>"  # Kafka's default entity (a null quota entity name, the broker default)
_RESERVED = frozenset("%/\\*?[]'\";,<> ")
_RESERVED_RE = re.compile(r"[%/\\*?\[\]'\";,<> ]")


def encode_name(name: str) -> str:
    """The name the tree shows for Kafka's ``name`` (see the module docstring)."""
    if name.isprintable() and not _RESERVED_RE.search(name) and name not in ("", ".", ".."):
        return name  # the usual case, checked at C speed
    if name == "":
        return EMPTY_NAME
    if name in (".", ".."):
        return "%2E" * len(name)
    return "".join(_escape(c) if c in _RESERVED or not c.isprintable() else c for c in name)


def _escape(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))


def decode_name(encoded: str) -> str | None:
    """Kafka's name for a name the tree shows; None if ``encoded`` is not one the tree makes."""
    if encoded == EMPTY_NAME:
        return ""
    try:
        name = unquote(encoded, errors="surrogatepass") if "%" in encoded else encoded
    except UnicodeDecodeError:
        return None
    return name if encode_name(name) == encoded else None


def canonical_name(typed: str) -> str | None:
    """The encoded form of a name typed otherwise (``my group``, ``%2f``); None if it has none."""
    try:
        return encode_name(unquote(typed, errors="strict"))
    except UnicodeDecodeError:
        return None


def child_of(node: Node, part: str) -> tuple[str, Node] | None:
    """The child ``part`` names, as it is or in its encoded form, with its name as the tree shows it."""
    child = node.child(part)
    if child is not None:
        return part, child
    canonical = canonical_name(part)
    if canonical is not None and canonical != part:
        child = node.child(canonical)
        if child is not None:
            return canonical, child
    return None


# -- paths ------------------------------------------------------------------------------

def split_path(path: str) -> list[str]:
    return [part for part in path.split("/") if part]


def join_path(base: str, name: str) -> str:
    return base.rstrip("/") + "/" + name


def normalize(cwd: str, path: str) -> str:
    """An absolute path from ``path`` relative to ``cwd``, with ``.`` and ``..`` resolved."""
    parts = [] if path.startswith("/") else split_path(cwd)
    for part in split_path(path):
        if part == "..":
            if parts:
                parts.pop()
        elif part != ".":
            parts.append(part)
    return "/" + "/".join(parts)


def locate(root: Node, path: str) -> tuple[str, Node]:
    """The node at absolute ``path`` and its path as the tree spells it; NodeError naming the
    first part that is not there."""
    node = root
    walked = ""
    for part in split_path(path):
        if not node.is_directory:
            raise NodeError(f"{walked or '/'}: not a directory")
        found = child_of(node, part)
        if found is None:
            raise NodeError(f"{walked}/{part}: no such node")
        name, node = found
        walked += "/" + name
    return walked or "/", node


def resolve(root: Node, path: str) -> Node:
    """The node at absolute ``path``; NodeError naming the first part that is not there."""
    return locate(root, path)[1]


def has_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def expand(root: Node, cwd: str, pattern: str) -> list[str]:
    """Absolute paths matching ``pattern`` (``*``, ``?``, ``[...]`` in any part), spelt as the
    tree spells them; sorted. A path without globs comes back as typed if it is not there."""
    absolute = normalize(cwd, pattern)
    if not has_glob(absolute):
        try:
            return [locate(root, absolute)[0]]
        except NodeError:
            return [absolute]  # resolving it again says what is missing
    paths = ["/"]
    for part in split_path(absolute):
        next_paths = []
        for base in paths:
            node = resolve(root, base)
            if not node.is_directory:
                continue
            if has_glob(part):
                next_paths += [join_path(base, n) for n in node.child_names()
                               if fnmatch.fnmatchcase(n, part) and node.child(n) is not None]
            else:
                found = child_of(node, part)
                if found is not None:
                    next_paths.append(join_path(base, found[0]))
        paths = next_paths
    return paths


def walk(node: Node, path: str) -> Iterator[tuple[str, Node]]:
    """(path, node) for ``node`` and everything under it, depth first, in listing order."""
    yield path, node
    if node.is_directory:
        for name in node.child_names():
            child = node.child(name)
            if child is not None:
                yield from walk(child, join_path(path, name))


def walk_paths(node: Node, path: str, keep: Callable[[str, bool], bool] | None = None,
               chunk: int = 8192) -> Iterator[list[str]]:
    """The paths ``walk`` yields, in its order, a list of up to about ``chunk`` at a time, those
    ``keep(name, is_directory)`` refuses left out: the walk of ``find``, a million paths under
    /image/topics, made a directory at a time, and the files of a ``files_only`` directory
    without their nodes."""
    lines: list[str] = []
    stack = [(path, node)]
    while stack:
        path, node = stack.pop()
        is_directory = node.is_directory
        if keep is None or keep(path.rsplit("/", 1)[-1], is_directory):
            lines.append(path)
        if is_directory:
            prefix = path.rstrip("/") + "/"
            names = node.child_names()
            if getattr(node, "files_only", False):
                if keep is None:
                    lines += [prefix + name for name in names]
                else:
                    lines += [prefix + name for name in names if keep(name, False)]
            else:
                children = [(prefix + name, child) for name in names if (child := node.child(name)) is not None]
                children.reverse()
                stack += children
        if len(lines) >= chunk:
            yield lines
            lines = []
    if lines:
        yield lines


def render(value: Any) -> str:
    """A file's value as the shell prints it: text as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return render_json(value)


def render_json(value: Any) -> str:
    """Valid JSON whatever the value (text quoted too): for ``cat --json``."""
    return json.dumps(value, indent=2 if isinstance(value, (dict, list)) and value else None, default=str)
