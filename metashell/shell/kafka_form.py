"""How ``ls``, ``cat`` and ``tree`` print paths under ``/image``: as kafka-metadata-shell prints
them, so a runbook's expected output is ours too.

* ``cat``: each file's text, one after another, no headers (Kafka's CatCommandHandler).
* ``ls``: names one per line (Kafka's form without a terminal; in one it fills columns). Files
  named come first, by their last name; then each directory's entries, headed ``NAME:`` by its
  last name when there are several targets or files, a blank line between; a directory with no
  entries prints nothing, not even its header (Kafka's LsCommandHandler.printTargets).
* ``tree``: the whole subtree (Kafka's has no depth): each child ``NAME:`` then what it holds,
  two spaces deeper per level; a file's text on its own line. The target's own name is not
  printed (Kafka's ShellNodePrinter).

Every other path, and ``ls -l``, ``cat --json``, keep metashell's own forms.
"""

from __future__ import annotations

from typing import Callable, Iterable

from metashell.tree.nodes import Node, render

IMAGE = "/image"


def under_image(paths: Iterable[str]) -> bool:
    """Whether every one of ``paths`` (absolute) is /image or below it."""
    paths = list(paths)
    return bool(paths) and all(p == IMAGE or p.startswith(IMAGE + "/") for p in paths)


def leaf_text(node: Node) -> str:
    return render(node.human_value())


def cat_lines(nodes: Iterable[Node]) -> list[str]:
    return [leaf_text(node) for node in nodes]


def ls_lines(targets: list[tuple[str, Node]]) -> list[str]:
    """``targets``: (absolute path, node) in the order given."""
    files = [path.rsplit("/", 1)[-1] for path, node in targets if not node.is_directory]
    directories = [(path.rsplit("/", 1)[-1], node.child_names()) for path, node in targets if node.is_directory]
    lines = list(files)
    need_intro = bool(files) or len(directories) > 1
    first = not files
    for name, entries in directories:
        if not entries:
            continue
        if need_intro:
            if not first:
                lines.append("")
            lines.append(f"{name}:")
            first = False
        lines.extend(entries)
    return lines


def tree_lines(node: Node, out: Callable[[str], None], depth: int = 0) -> None:
    indent = "  " * depth
    if not node.is_directory:
        out(indent + leaf_text(node))
        return
    for name in node.child_names():
        child = node.child(name)
        if child is None:
            continue
        out(f"{indent}{name}:")
        tree_lines(child, out, depth + 1)
