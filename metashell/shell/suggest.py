""""Did you mean": the names close to one that was mistyped, for the end of a one-line error.

Used for commands (``lss``), ``man`` topics, options (``--jsn``), record types and paths whose
part is missing where a close sibling exists (``/topcs/orders``). Closeness is difflib's ratio,
as git and Python's own NameError hints use; a name that differs only in case is the one answer.
"""

from __future__ import annotations

import difflib
from typing import Iterable

from metashell.tree.nodes import Node, NodeError, child_of, has_glob, locate, split_path

MAX_SUGGESTIONS = 3
MAX_CANDIDATES = 50_000  # a directory larger than this (a huge /topics) gets no hint: an error stays instant
CUTOFF = 0.7  # "lss" is 0.8 from "ls", "brokrs" 0.92 from "brokers"; "topics" 0.62 from "metrics" is not close


def close_names(word: str, candidates: Iterable[str], limit: int = MAX_SUGGESTIONS) -> list[str]:
    """The candidates closest to ``word``, best first; [] when none is close."""
    pool = sorted(set(candidates))
    if len(pool) > MAX_CANDIDATES:
        return []
    same_case = [c for c in pool if c.lower() == word.lower() and c != word]
    if same_case:
        return same_case[:limit]
    close = difflib.get_close_matches(word.lower(), [c.lower() for c in pool], n=limit, cutoff=CUTOFF)
    by_lower: dict[str, str] = {}
    for c in pool:
        by_lower.setdefault(c.lower(), c)
    return [by_lower[c] for c in close if by_lower[c] != word]


def did_you_mean(names: list[str]) -> str:
    """`` (did you mean ls?)``, `` (did you mean cat or cd?)``; "" for no names."""
    if not names:
        return ""
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    return f" (did you mean {listed}?)"


def hint(word: str, candidates: Iterable[str]) -> str:
    return did_you_mean(close_names(word, candidates))


def path_hint(root: Node, absolute: str) -> str:
    """For an absolute path (globs allowed) whose first missing literal part has close siblings:
    the path with that part corrected, best first, when that resolves whole (or holds globs);
    else the corrected part alone (``/topcs/nope`` → ``/topics``)."""
    parts = split_path(absolute)
    node, walked = root, ""
    for index, part in enumerate(parts):
        if has_glob(part) or not node.is_directory:
            return ""
        found = child_of(node, part)
        if found is not None:
            walked += "/" + found[0]
            node = found[1]
            continue
        rest = parts[index + 1:]
        names = close_names(part, node.child_names())
        fixes = ["/".join([walked, name, *rest]) for name in names]
        if not has_glob("/".join(rest)):
            fixes = [fix for fix in fixes if _exists(root, fix)] or [f"{walked}/{name}" for name in names]
        return did_you_mean(fixes)
    return ""


def _exists(root: Node, path: str) -> bool:
    try:
        locate(root, path)
    except NodeError:
        return False
    return True
