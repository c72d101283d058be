"""Nulls where a message's schema allows none.

kio reads an array, string or bytes sent with the null length (-1, or 0 in a compact field) as
None whatever the field's schema says, so a request whose ``topics`` is not nullable can still
arrive with ``topics=None``, and every handler iterating it fails (found by
``kraftd fuzz served-controller``: DeleteAcls ``filters``, CreateTopics ``topics``,
ControllerRegistration ``listeners``). Kafka's generated readers refuse such a message
("non-nullable field topics was serialized as null") and the broker closes the connection;
``first_null`` lets the frame decoder do the same.

A field is nullable when its type hint admits None (``tuple[X, ...] | None``). The plan of
each class (which fields to look at, and which hold nested messages) is built once. It leaves
out what kio never reads as None (integers, booleans, floats, durations, times, error codes)
and nested messages with nothing to look at: the check runs after every frame's decode, and
walking every integer of a 10,000-partition response cost more than decoding it.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import types
import typing
from typing import Any

# (field name, nullable, nested message class or None, whether the field is a tuple of them)
_Plan = tuple[tuple[str, bool, "type | None", bool], ...]


def _nested(hint: Any) -> tuple[type | None, bool]:
    """The message class a field holds (alone or in a tuple), if any."""
    args = [a for a in typing.get_args(hint) if a is not type(None)] if _is_union(hint) else [hint]
    for arg in args:
        if typing.get_origin(arg) is tuple:
            item = typing.get_args(arg)[0]
            return (item, True) if dataclasses.is_dataclass(item) else (None, True)
        if isinstance(arg, type) and dataclasses.is_dataclass(arg):
            return arg, False
    return None, False


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


# what kio's readers return as values, never None (a zero UUID, an array, string or bytes of
# the null length do come back as None)
_NEVER_NONE = (int, float, datetime.timedelta, datetime.datetime)  # bool and IntEnum are ints


def _may_be_none(hint: Any) -> bool:
    return not (isinstance(hint, type) and issubclass(hint, _NEVER_NONE))


@functools.lru_cache(maxsize=None)
def _plan(cls: type) -> _Plan:
    hints = typing.get_type_hints(cls)
    plan = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        nullable = _is_union(hint) and type(None) in typing.get_args(hint)
        nested, is_tuple = _nested(hint)
        if nested is not None and not _plan(nested):
            nested = None  # nothing inside can be None: no need to walk its items
        if (not nullable and _may_be_none(hint)) or nested is not None:
            plan.append((f.name, nullable, nested, is_tuple))
    return tuple(plan)


def first_null(message: Any) -> str | None:
    """The path (``topics[0].partitions``) of the first field that is None though its schema
    has no null, or None when there is none."""
    found = _find(message)
    if found is None:
        return None
    path = ""
    for step in reversed(found):  # built only for the one null found, not for every field walked
        path += f"[{step}]" if isinstance(step, int) else (f".{step}" if path else step)
    return path


def _find(message: Any) -> list[str | int] | None:
    """The steps to the first forbidden None, innermost first."""
    for name, nullable, nested, is_tuple in _plan(type(message)):
        value = getattr(message, name)
        if value is None:
            if not nullable:
                return [name]
            continue
        if nested is None:
            continue
        if not is_tuple:
            found = _find(value)
            if found is not None:
                return [*found, name]
            continue
        for index, item in enumerate(value):
            found = _find(item)
            if found is not None:
                return [*found, index, name]
    return None


__all__ = ["first_null"]
