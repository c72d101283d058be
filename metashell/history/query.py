"""Asking change items by path, and folding them into a diff.

``PathQuery`` says which items a path the user typed reaches. Item paths are the tree's
(metashell/history/change_items.py); a query also takes the places where the tree shows the same
thing under another name:

- a directory reaches every item under it (``/topics/orders``: the topic, its partitions);
- ``/topics/<name>`` also reaches the topic's configs, which the tree shows under
  ``/topics/<name>/configs/`` (their items' paths are ``/configs/TOPIC/<name>/<key>``), and
  ``/topics/<name>/configs[/<key>]`` is that config directory;
- ``/topic-ids/<id>`` reaches the topic with that id and its partitions, whatever its name: the one
  way to ask about one of two topics that had the same name;
- a file of a registration (``/brokers/3/fenced``) or a field of a partition
  (``/topics/orders/0/leader``) reaches the items of that object that changed it, narrowed to it.

``compact`` turns an item's objects into the fields that changed (what ``log`` prints and the
history index keeps); ``fold`` turns the applied items over (A, B] into one difference per path.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable

from metashell.history.change_items import ChangeItem
from metashell.tree.nodes import canonical_name, split_path

# the top directories whose changes are kept (those a change set reaches)
ROOTS = ("brokers", "controllers", "topics", "topic-ids", "features", "configs", "client-quotas", "acls",
         "scram", "delegation-tokens", "producer-ids", "quorum")


class QueryError(ValueError):
    """A path no history is kept for: one line."""


@dataclass(frozen=True)
class PathQuery:
    path: str  # absolute, normalized
    prefixes: tuple[str, ...]  # item paths equal to one, or under one, are reached
    field: tuple[str, str] | None = None  # (object path, field): only items of it that changed the field
    topic_id: str | None = None  # /topic-ids/<id>[/<partition>]: only items of this topic (that partition)
    partition: str | None = None

    def reaches(self, item: ChangeItem) -> bool:
        if self.topic_id is not None:
            return item.topic_id == self.topic_id and (self.partition is None or (
                item.domain == "partitions" and item.key == self.partition))
        if self.field is not None:
            return item.path == self.field[0] and self._field_hit(item)
        return any(_under(item.path, prefix) for prefix in self.prefixes)

    def narrow(self, item: ChangeItem) -> ChangeItem:
        """The item as this query shows it: one field of an object when a field was asked."""
        if self.field is None:
            return item
        name = self.field[1]
        old = item.old.get(name) if isinstance(item.old, dict) else None
        new = item.new.get(name) if isinstance(item.new, dict) else None
        return replace(item, path=f"{item.path}/{name}", old=old, new=new, fields=())

    def _field_hit(self, item: ChangeItem) -> bool:
        return self.field[1] in item.fields or (item.old is None) != (item.new is None)


def _canonical(parts: list[str]) -> list[str]:
    """Each name in its encoded form (a quota entity stays as typed: its ``,`` and ``=`` are its own)."""
    out = []
    for index, part in enumerate(parts):
        keep = index == 1 and parts[0] == "client-quotas" or part in (".", "..")
        out.append(part if keep else canonical_name(part) or part)
    return out


def _under(path: str, prefix: str) -> bool:
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


def path_query(path: str) -> PathQuery:
    """The query for an absolute path (QueryError: a path whose history is not kept). Names may be
    typed as the tree shows them or otherwise (``'my group'``, ``%2f``), as ``cd`` takes them."""
    parts = _canonical(split_path(path))
    if not parts:
        return PathQuery("/", ("/",))
    path = "/" + "/".join(parts)
    top = parts[0]
    if top not in ROOTS:
        raise QueryError(f"{path}: no history is kept there (changes are kept under "
                         f"{', '.join('/' + r for r in ROOTS)})")
    if top == "topic-ids":
        if len(parts) == 1:
            return PathQuery(path, ("/topics",))
        if len(parts) > 3:
            raise QueryError(f"{path}: ask /topics/<name>/<partition>/<field> for one field")
        return PathQuery(path, (), topic_id=parts[1], partition=parts[2] if len(parts) == 3 else None)
    if top == "topics" and len(parts) >= 3 and parts[2] == "configs":
        return PathQuery(path, ("/configs/TOPIC/" + "/".join([parts[1], *parts[3:]]),))
    if top == "topics" and len(parts) == 2:
        return PathQuery(path, (path, f"/configs/TOPIC/{parts[1]}"))
    object_depth = {"brokers": 2, "controllers": 2, "topics": 3, "acls": 2, "delegation-tokens": 2}
    depth = object_depth.get(top)
    if top == "scram":
        depth = 3
    elif top == "quorum" and len(parts) >= 2 and parts[1] == "voters":
        depth = 3
    if depth is not None and len(parts) == depth + 1:
        return PathQuery(path, (), ("/" + "/".join(parts[:depth]), parts[depth]))
    return PathQuery(path, (path,))


# -- what log prints -----------------------------------------------------------------------------

def compact(item: ChangeItem) -> ChangeItem:
    """An item whose old and new objects keep only the fields that changed (created and deleted
    objects stay whole): a partition change reads ``leader 1 -> 2``, not two partition JSONs."""
    fields = item.fields
    if not fields or not isinstance(item.old, dict) or not isinstance(item.new, dict):
        return item
    old, new = item.old, item.new
    return ChangeItem(item.offset, item.timestamp_ms, item.domain, item.entity, item.key, item.path,
                      {k: old.get(k) for k in fields}, {k: new.get(k) for k in fields}, item.record, item.aborted,
                      item.record_offset, item.topic_id, fields, item.event)


# -- what diff prints ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Difference:
    """What differs at one path between two points (of compact items: the fields that changed)."""

    path: str
    domain: str
    entity: str
    key: str | None
    old: Any  # None: absent at A
    new: Any  # None: absent at B
    topic_ids: tuple[str | None, str | None] = (None, None)  # a topic's id at A and at B

    @property
    def kind(self) -> str:
        if self.old is None:
            return "created"
        if self.new is None:
            return "deleted"
        if self.topic_ids[0] and self.topic_ids[1] and self.topic_ids[0] != self.topic_ids[1]:
            return "replaced"  # deleted, and another topic of the same name created
        return "changed"

    def to_json(self) -> dict:
        return {"path": self.path, "kind": self.kind, "domain": self.domain, "entity": self.entity, "key": self.key,
                "old": self.old, "new": self.new}


def fold(items: Iterable[ChangeItem]) -> list[Difference]:
    """One Difference per path the applied ``items`` (in log order, compact or whole) leave changed,
    in path order. An object's fields fold one by one: each field's value before its first change
    and after its last; a field changed and changed back drops out, as does a path whose every
    change cancels out. A SCRAM credential redacted on both sides differs when it changed at all."""
    firsts: dict[str, ChangeItem] = {}
    state: dict[str, list] = {}  # path -> [old, new, whole-old?, topic id at A, topic id at B]
    for item in items:
        if not item.applied:
            continue
        entry = state.get(item.path)
        if entry is None:
            firsts[item.path] = item
            state[item.path] = [item.old, item.new, item.topic_id, item.topic_id]
            continue
        entry[1] = _then(entry[1], item)
        if isinstance(entry[0], dict) and item.fields and isinstance(item.old, dict):
            entry[0] = {**{k: item.old.get(k) for k in item.fields if k not in entry[0]}, **entry[0]}
        entry[3] = item.topic_id
    out = []
    for path in sorted(state):
        old, new, id_a, id_b = state[path]
        first = firsts[path]
        old, new = _trim(old, new, first.domain)
        if old is None and new is None or (old == new and first.domain != "scram"):
            continue
        out.append(Difference(path, first.domain, first.entity, first.key, old, new, (id_a, id_b)))
    return out


def _then(current: Any, item: ChangeItem) -> Any:
    """The value at a path after ``item``, from the value before it (whole or some fields)."""
    if item.new is None or not isinstance(item.new, dict) or not item.fields or current is None \
            or not isinstance(current, dict):
        return item.new
    return {**current, **{k: item.new.get(k) for k in item.fields}}


def _trim(old: Any, new: Any, domain: str) -> tuple[Any, Any]:
    """Two objects cut to the fields that differ, when both are there."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return old, new
    keys = [k for k in [*new, *(k for k in old if k not in new)] if old.get(k) != new.get(k)]
    if not keys:
        return (old, new) if domain == "scram" else ({}, {})
    return {k: old.get(k) for k in keys if k in old}, {k: new.get(k) for k in keys if k in new}
