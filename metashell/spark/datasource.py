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
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader

from metashell.spark.options import read_options
from metashell.spark.reader import KraftReader
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
