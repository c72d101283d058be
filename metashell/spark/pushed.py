"""What Spark's filters narrowed a scan to (metashell.spark.filters makes it from the filters
PySpark 4.1+ pushes down; without pushdown it is the options' ``startOffset``/``endOffset``
alone). The planners skip files and intervals by it; the tasks drop rows by it, exactly, so a
filter reported as pushed needs no second look by Spark."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Pushed:
    offset_min: int | None = None  # rows with offset >= this
    offset_max: int | None = None  # rows with offset <= this (inclusive)
    time_min_ms: int | None = None  # rows with timestamp >= this
    time_max_ms: int | None = None  # rows with timestamp <= this (inclusive)
    types: frozenset[str] | None = None  # the record types asked for (the `type` column), None: all
    cluster_ids: frozenset[str] | None = None  # None: every cluster

    def keeps_offsets(self, first: int, last: int | None) -> bool:
        """Whether offsets ``first``..``last`` (None: unbounded) can hold a row this scan keeps."""
        if self.offset_max is not None and first > self.offset_max:
            return False
        return not (self.offset_min is not None and last is not None and last < self.offset_min)
