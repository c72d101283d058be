"""``KraftDataSource``: the metadata log as a PySpark data source, ``format("kraft")``.

    spark.read.format("kraft").option("table", "records").load("/archive/*/")

The driver (Spark's planning worker) resolves the paths to each cluster's files and plans the
tasks by file names alone (metashell.spark.paths, metashell.spark.plan); the executors decode
(metashell.spark.read_records for ``records``, one task per segment file; ds-state's
metashell.spark.read_state for the tables that need the state, one task per snapshot interval).

Filter pushdown (PySpark 4.1+): ``KraftPushdownSource``'s reader takes filters on offset,
timestamp, type and cluster_id (metashell.spark.filters) and applies them exactly in the tasks.
It is registered only where it is safe: Spark 4.1 to 4.3 keep the read plan a pushdown made on
the data source relation, not on the scan (PythonDataSourceV2.setReadInfo), so a DataFrame
filtered once and then read again unfiltered would read the filtered rows only (newer Spark keeps
it per scan). ``metashell.spark.register`` asks the session's JVM (``pushdown_safe``); the
source PySpark finds by itself (pyspark_kraft) takes no filters, Spark filtering the rows. The
startOffset/endOffset options skip files everywhere: they belong to the DataFrame.

PySpark also refuses a reader that implements ``pushFilters`` when
``spark.sql.python.filterPushdown.enabled`` is off, so the reader without it is handed out then
(see ``_pushdown_enabled``).
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

    pushdown = False  # see the module's docstring: KraftPushdownSource takes Spark's filters

    @classmethod
    def name(cls) -> str:
        return "kraft"

    def schema(self) -> Any:
        options = read_options(self.options, streaming=True)
        return source_spark_schema(options.table, options.permissive)

    def reader(self, schema: Any) -> DataSourceReader:
        reader = _pushdown_reader_class() if self.pushdown and _pushdown_enabled() else KraftReader
        return reader(self.options)

    # Streaming is ds-stream's (metashell.spark.stream_*): these two stay one line each.
    def streamReader(self, schema: Any) -> Any:
        from metashell.spark.stream_source import stream_reader

        return stream_reader(self.options, schema)

    def simpleStreamReader(self, schema: Any) -> Any:
        from metashell.spark.stream_source import simple_stream_reader

        return simple_stream_reader(self.options, schema)


class KraftPushdownSource(KraftDataSource):
    """format("kraft") taking Spark's filters: for a Spark that keeps a pushdown's read plan per
    scan (``pushdown_safe``)."""

    pushdown = True


def pushdown_safe(spark: Any) -> bool:
    """Whether ``spark``'s JVM keeps the read plan a filter pushdown made per scan: its
    PythonScanBuilder holds a ``readInfo`` of its own (Spark 4.1 to 4.3 hold it on the shared
    PythonDataSourceV2). False without a JVM to ask (Spark Connect) or without pushdown."""
    if not hasattr(DataSourceReader, "pushFilters"):
        return False
    try:
        jvm = spark.sparkContext._jvm
        builder = jvm.java.lang.Class.forName(
            "org.apache.spark.sql.execution.datasources.v2.python.PythonScanBuilder")
        return any(field.getName() == "readInfo" for field in builder.getDeclaredFields())
    except Exception:  # noqa: BLE001 - Connect, or classes moved: no pushdown, rows filtered by Spark
        return False


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
            sizes = {"records_per_task": self.options.records_per_task} if self.options.records_per_task else {}
            tasks = [task for files in self.clusters for task in
                     plan_intervals(files, pushed, table=self.options.table, end_offset=self.options.end_offset, **sizes)]
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
