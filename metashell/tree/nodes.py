"""Nodes of the metadata filesystem: directories and files, built on demand.

A node is a read-only view: a directory answers ``child_names()`` and ``child(name)``,
a file answers ``value()`` — text, a number, or a JSON-ready structure. Nothing is
copied out of the image until a node is asked, so a tree over a million partitions
costs nothing to make, and a live image can be swapped in under it.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterable, Iterator


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


@dataclass
class FileNode(Node):
    name: str
    get: Callable[[], Any]
    is_directory: ClassVar[bool] = False

    def value(self) -> Any:
        return self.get()


@dataclass
class DirNode(Node):
    """A directory whose children come from two functions: names, and name -> node."""

    name: str
    names: Callable[[], Iterable[str]]
    make: Callable[[str], "Node | None"]
    is_directory: ClassVar[bool] = True

    def child_names(self) -> list[str]:
        return sorted(self.names(), key=natural_key)

    def child(self, name: str) -> Node | None:
        return self.make(name)


def static_dir(name: str, children: dict[str, Callable[[], Node]]) -> DirNode:
    """A directory of fixed children, each made when first asked for."""
    return DirNode(name, lambda: children.keys(), lambda n: children[n]() if n in children else None)


def natural_key(name: str) -> tuple:
    """Numbers in numeric order (partition 2 before 10), then names."""
    return (0, int(name), "") if name.lstrip("-").isdigit() else (1, 0, name)


def split_path(path: str) -> list[str]:
    return [part for part in path.split("/") if part]


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


def resolve(root: Node, path: str) -> Node:
    """The node at absolute ``path``; NodeError naming the first part that is not there."""
    node = root
    walked = ""
    for part in split_path(path):
        if not node.is_directory:
            raise NodeError(f"{walked or '/'}: not a directory")
        child = node.child(part)
        walked += "/" + part
        if child is None:
            raise NodeError(f"{walked}: no such node")
        node = child
    return node


def has_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def expand(root: Node, cwd: str, pattern: str) -> list[str]:
    """Absolute paths matching ``pattern`` (``*``, ``?``, ``[...]`` in any part); sorted."""
    absolute = normalize(cwd, pattern)
    if not has_glob(absolute):
        return [absolute]
    paths = ["/"]
    for part in split_path(absolute):
        next_paths = []
        for base in paths:
            node = resolve(root, base)
            if not node.is_directory:
                continue
            names = [n for n in node.child_names() if fnmatch.fnmatchcase(n, part)] if has_glob(part) else [part]
            next_paths += [base.rstrip("/") + "/" + n for n in names if node.child(n) is not None]
        paths = next_paths
    return paths


def walk(node: Node, path: str) -> Iterator[tuple[str, Node]]:
    """(path, node) for ``node`` and everything under it, depth first, in listing order."""
    yield path, node
    if node.is_directory:
        for name in node.child_names():
            child = node.child(name)
            if child is not None:
                yield from walk(child, path.rstrip("/") + "/" + name)
