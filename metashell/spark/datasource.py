"""``KraftDataSource``: the metadata log as a PySpark data source, ``format("kraft")``.

    spark.read.format("kraft").option("table", "records").load("/archive/*/")

The driver (Spark's planning worker) resolves the paths to each cluster's files and plans the
tasks by file names alone (metashell.spark.paths, metashell.spark.plan); the executors decode
(metashell.spark.read_records for ``records``, one task per segment file; ds-state's
metashell.spark.read_state for the tables that need the state, one task per snapshot interval).

Filter pushdown (PySpark 4.1+): the reader takes filters on offset, timestamp, type and
cluster_id (metashell.spark.filters) and applies them exactly in the tasks. PySpark refuses a
reader that implements ``pushFilters`` when ``spark.sql.python.filterPushdown.enabled`` is off,
so the reader without it is handed out then (see ``_pushdown_enabled``): a session that never
turned pushdown on still reads, Spark filtering the rows itself.
"""

from __future__ import annotations

import sys
from typing import Any, Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from engine.common.errors import MetadataError
from metashell.spark.options import read_options
from metashell.spark.pushed import Pushed
from metashell.spark.table_schema import source_spark_schema


class KraftDataSource(DataSource):
    """format("kraft"): see the module's docstring and metashell.spark.options for the options."""

    @classmethod
    def name(cls) -> str:
        return "kraft"

    def schema(self) -> Any:
        options = read_options(self.options, streaming=True)
        return source_spark_schema(options.table, options.permissive)

    def reader(self, schema: Any) -> DataSourceReader:
        reader = KraftReader if not _pushdown_enabled() else _pushdown_reader_class()
        return reader(self.options)

    # Streaming is ds-stream's (metashell.spark.stream_*): these two stay one line each.
    def streamReader(self, schema: Any) -> Any:
        from metashell.spark.stream_source import stream_reader

        return stream_reader(self.options, schema)

    def simpleStreamReader(self, schema: Any) -> Any:
        from metashell.spark.stream_source import simple_stream_reader

        return simple_stream_reader(self.options, schema)


class KraftReader(DataSourceReader):
    """A batch read: the paths resolved and the tasks planned on the driver, by names only."""

    def __init__(self, options: Any):
        from metashell.spark.paths import resolve_paths

        self.options = read_options(options)
        self.pushed = Pushed()
        self.offsets: frozenset[int] | None = None  # offset IN (...), pushed (metashell.spark.filters)
        self.clusters = resolve_paths(self.options.paths, self.options.cluster_id)

    def partitions(self) -> list[InputPartition]:
        from metashell.spark.plan import plan_records, with_options

        if self.options.table == "records":
            tasks: list[InputPartition] = list(plan_records(self.clusters, self.pushed, self.options, self.offsets))
        else:
            from metashell.spark.intervals import plan_intervals
            from metashell.spark.plan import narrowed

            pushed = narrowed(with_options(self.pushed, self.options), self.offsets)
            tasks = [task for files in self.clusters for task in plan_intervals(files, pushed)
                     if pushed.cluster_ids is None or files.cluster_id in pushed.cluster_ids]
        # Spark needs at least one partition to run read(); an empty plan reads nothing
        return tasks or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from metashell.spark.corrupt import KraftReadError

        if type(partition) is InputPartition:  # the empty plan's
            return
        try:
            if self.options.table == "records":
                from metashell.spark.read_records import read_records

                yield from read_records(partition, self.options.permissive)
            else:
                from metashell.spark.read_state import read_interval

                yield from read_interval(partition, self.options.table, self.options.permissive)
        except MetadataError as exc:  # anything the engine says: its one line, not a repr
            raise KraftReadError(exc.one_line()) from None


def _pushdown_reader_class() -> type:
    """KraftReader with ``pushFilters`` (PySpark 4.1+: DataSourceReader.pushFilters exists)."""
    if not hasattr(DataSourceReader, "pushFilters"):
        return KraftReader
    from metashell.spark.filters import PushdownReader

    return PushdownReader


def _pushdown_enabled() -> bool:
    """Whether Spark will push filters to this reader. PySpark's planning worker
    (pyspark.sql.worker.plan_data_source_read) holds the session's setting in its local
    ``enable_pushdown`` when it calls ``reader()``, and fails a reader with ``pushFilters`` when it
    is off; its filter-pushdown worker (data_source_pushdown_filters) calls ``reader()`` only when
    it is on, and has no such local. Nothing else tells a data source the setting, so it is read
    from the caller's frame; absent, pushdown is on."""
    frame = sys._getframe(2)  # reader() -> here; the worker's frame called reader()
    return bool(frame.f_locals.get("enable_pushdown", True)) if frame is not None else True
