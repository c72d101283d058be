"""Spark's pushed filters (PySpark 4.1+) -> Pushed, and the reader that takes them.

Taken: on ``offset`` and ``timestamp_ms``: =, <, <=, >, >= and (``offset`` only) In; on ``type``
and ``cluster_id``: = and In. Several are ANDed (Spark pushes a conjunction's parts). Values that
are not whole numbers (offsets, times) or strings (type, cluster id) are left to Spark.

For ``records`` the tasks drop rows by them exactly (metashell.spark.read_records), so they are
reported as pushed: Spark does not look again. For the other tables they narrow the planning
(files and intervals skipped) and are handed back, Spark filtering the rows itself.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Iterator

from pyspark.sql.datasource import (EqualTo, Filter, GreaterThan, GreaterThanOrEqual, In, LessThan,
                                    LessThanOrEqual)

from metashell.spark.datasource import KraftReader
from metashell.spark.pushed import Pushed

_ORDERED = (EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)


def push(pushed: Pushed, found: Filter) -> Pushed | None:
    """``pushed`` narrowed by ``found``, or None when this filter is not one taken."""
    attribute = getattr(found, "attribute", ())  # Not, for one, has a child, no attribute
    column = attribute[0] if len(attribute) == 1 else None
    if column in ("offset", "timestamp_ms"):
        return _ranged(pushed, column, found)
    if column in ("type", "cluster_id"):
        values = _strings(found)
        if values is None:
            return None
        field = "types" if column == "type" else "cluster_ids"
        before = getattr(pushed, field)
        return replace(pushed, **{field: values if before is None else before & values})
    return None


def _strings(found: Filter) -> frozenset[str] | None:
    if isinstance(found, EqualTo) and isinstance(found.value, str):
        return frozenset((found.value,))
    if isinstance(found, In) and all(isinstance(v, str) or v is None for v in found.value):
        return frozenset(v for v in found.value if v is not None)
    return None


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ranged(pushed: Pushed, column: str, found: Filter) -> Pushed | None:
    low_field, high_field = ("offset_min", "offset_max") if column == "offset" else ("time_min_ms", "time_max_ms")
    if isinstance(found, In):
        return None  # an offset set: see offsets_of (exact, on the reader); times: Spark's
    if not isinstance(found, _ORDERED) or not _whole(found.value):
        return None
    value = found.value
    low = {EqualTo: value, GreaterThan: value + 1, GreaterThanOrEqual: value}.get(type(found))
    high = {EqualTo: value, LessThan: value - 1, LessThanOrEqual: value}.get(type(found))
    changes = {}
    if low is not None:
        before = getattr(pushed, low_field)
        changes[low_field] = low if before is None else max(before, low)
    if high is not None:
        before = getattr(pushed, high_field)
        changes[high_field] = high if before is None else min(before, high)
    return replace(pushed, **changes)


def offsets_of(found: Filter) -> frozenset[int] | None:
    """The offsets of ``offset IN (...)``, when every value is a whole number (nulls match nothing)."""
    if isinstance(found, In) and getattr(found, "attribute", None) == ("offset",) \
            and all(_whole(v) or v is None for v in found.value):
        return frozenset(v for v in found.value if v is not None)
    return None


class PushdownReader(KraftReader):
    """KraftReader taking Spark's filters (PySpark 4.1+, spark.sql.python.filterPushdown.enabled)."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        exact = self.options.table == "records"
        columns = set(self._columns())
        for found in filters:
            attribute = getattr(found, "attribute", ())
            if len(attribute) != 1 or attribute[0] not in columns:
                yield found
                continue
            offsets = offsets_of(found)
            if offsets is not None:
                self.offsets = offsets if self.offsets is None else self.offsets & offsets
                if not exact:
                    yield found
                continue
            narrower = push(self.pushed, found)
            if narrower is None:
                yield found
                continue
            self.pushed = narrower
            if not exact:
                yield found

    def _columns(self) -> Iterator[str]:
        from metashell.spark.table_schema import source_column_names

        return source_column_names(self.options.table)
