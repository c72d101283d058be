"""The per-file tasks of the ``records`` table: one per segment file, skipped by name.

A segment's offsets run from its base offset (its name) to the next segment's base offset - 1
(the last segment's end is in the file): a segment wholly outside ``startOffset``..``endOffset``
and the pushed offset bounds is never opened. Each task is a plain, picklable value: the
cluster's id, the paths of its log directory's segments (its neighbours are read only to settle
a metadata transaction that straddles files), which one it reads, and the bounds.

Tasks come in the order of the paths given (each cluster's files as load() named them), then by
offset; rows within a task come by offset.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from pyspark.sql.datasource import InputPartition

from metashell.spark.cluster_files import ClusterFiles
from metashell.spark.options import ReadOptions
from metashell.spark.pushed import Pushed


@dataclass(frozen=True)
class RecordsTask(InputPartition):
    """One segment file of one cluster, to read into ``records`` rows."""

    cluster_id: str
    log_dir: str
    segments: tuple[tuple[int, str], ...]  # every segment of the log directory: (base offset, path)
    index: int  # the segment this task reads
    pushed: Pushed  # the rows kept: offsets (startOffset/endOffset folded in), times, types
    log_end: int | None = None  # endOffset: the log is read as if it ended after this offset
    offsets: frozenset[int] | None = None  # offset IN (...) pushed: only these rows

    @property
    def path(self) -> str:
        return self.segments[self.index][1]

    @property
    def base_offset(self) -> int:
        return self.segments[self.index][0]

    @property
    def active(self) -> bool:
        """The log's last segment: a torn tail there is a write in progress, not damage."""
        return self.index == len(self.segments) - 1


def with_options(pushed: Pushed, options: ReadOptions) -> Pushed:
    """``pushed`` narrowed by the startOffset/endOffset options."""
    low = [v for v in (pushed.offset_min, options.start_offset) if v is not None]
    high = [v for v in (pushed.offset_max, options.end_offset) if v is not None]
    return replace(pushed, offset_min=max(low) if low else None, offset_max=min(high) if high else None)


def narrowed(pushed: Pushed, offsets: frozenset[int] | None) -> Pushed:
    """``pushed`` with the offset range of an offset set folded in (for planning)."""
    if offsets is None:
        return pushed
    if not offsets:
        return replace(pushed, offset_min=1, offset_max=0)  # nothing matches
    low = max(min(offsets), pushed.offset_min) if pushed.offset_min is not None else min(offsets)
    high = min(max(offsets), pushed.offset_max) if pushed.offset_max is not None else max(offsets)
    return replace(pushed, offset_min=low, offset_max=high)


def _nonempty(pushed: Pushed) -> bool:
    """Whether any row can pass ``pushed`` (contradictory filters plan no task)."""
    empty_range = (pushed.offset_min is not None and pushed.offset_max is not None
                   and pushed.offset_min > pushed.offset_max) or \
                  (pushed.time_min_ms is not None and pushed.time_max_ms is not None
                   and pushed.time_min_ms > pushed.time_max_ms)
    return not empty_range and pushed.types != frozenset() and pushed.cluster_ids != frozenset()


def plan_records(clusters: Sequence[ClusterFiles], pushed: Pushed, options: ReadOptions,
                 offsets: frozenset[int] | None = None) -> list[RecordsTask]:
    """The tasks for ``clusters``' segments that can hold a row ``pushed`` and the options keep
    (``offsets``: an offset set pushed, only those rows)."""
    from metashell.spark.paths import all_segments

    pushed = with_options(pushed, options)
    planned = narrowed(pushed, offsets)
    tasks: list[RecordsTask] = []
    for files in clusters:
        if pushed.cluster_ids is not None and files.cluster_id not in pushed.cluster_ids:
            continue
        if not files.segments:
            continue
        # the directory's listing again (by name): single files named get their neighbours
        neighbours = tuple((s.base_offset, s.path) for s in all_segments(files))
        index_of = {path: i for i, (_, path) in enumerate(neighbours)}
        for segment in files.segments:
            index = index_of[segment.path]
            last = neighbours[index + 1][0] - 1 if index + 1 < len(neighbours) else None
            if planned.keeps_offsets(segment.base_offset, last) and _nonempty(planned):
                tasks.append(RecordsTask(files.cluster_id or "", files.log_dir, neighbours, index, pushed,
                                         options.end_offset, offsets))
    return tasks

