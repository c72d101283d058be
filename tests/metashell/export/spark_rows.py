"""Spark's rows as plain Python values, for comparing a DataFrame with the rows built in Python
(no tests here)."""

from __future__ import annotations

from typing import Any


def plain(value: Any) -> Any:
    """Spark Rows (structs) and lists as plain tuples and lists, for comparing with table rows."""
    if isinstance(value, list):
        return [plain(v) for v in value]
    if hasattr(value, "asDict"):
        return tuple(plain(v) for v in value)
    return value


def collected(df) -> list[tuple]:
    """A DataFrame's rows, collected, each as a tuple of plain values."""
    return [tuple(plain(v) for v in row) for row in df.collect()]
