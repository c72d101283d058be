"""Metadata as Spark DataFrames: the image's tables, and the log's history.

    to_dataframe(source, "/topics")          partitions (or brokers, voters, configs, ...)
    history_dataframe(log_dir, "records")    records, partition_changes, broker_fencing,
                                             controller_registrations, leader_changes; the change
                                             tables: config_changes, acl_changes, ..., and gaps:
                                             the kraft data source (metashell.spark), cluster_id first
    history_dataframe(log_dir, offsets=[..]) partitions at each offset (as_of_offset column)
    export(df, out_dir, "parquet")           parquet, json, csv or orc, written by Spark

An image's tables are built in the driver, as Arrow tables with the typed schemas of
metashell.export.schemas; a log's history tables are read by the kraft data source on the
executors (its schemas: metashell.spark.table_schema).
CSV cannot hold arrays or structs: ``export`` writes them as JSON text in CSV.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from metashell.export.schemas import SCHEMA_DOCS, arrow_schema, spark_schema
from metashell.export.spark_session import ExportError, get_spark

if TYPE_CHECKING:
    from metashell.export.tables import Table

FORMATS = ("parquet", "json", "csv", "orc")

__all__ = ["ExportError", "FORMATS", "SCHEMA_DOCS", "Table", "export", "get_spark", "history_dataframe",
           "load_image", "source_dataframe", "table_dataframe", "table_for", "to_dataframe"]


def __getattr__(name: str) -> Any:
    # The image's tables import the engine and the tree (a third of a second): loaded when first
    # asked for, so a command line can start Spark before it needs them (metashell.cli's export).
    if name in ("Table", "table_for"):
        from metashell.export import tables

        return getattr(tables, name)
    raise AttributeError(f"module 'metashell.export' has no attribute {name!r}")


def load_image(source: Any, *, offset: int | None = None, time_ms: int | None = None) -> Any:
    """An image (MetadataImage) from a MetadataImage, a Source (metashell.source), or a path: a log
    directory or a snapshot (.checkpoint) file."""
    from engine.image.metadata_image import MetadataImage

    if isinstance(source, MetadataImage):
        if offset is not None or time_ms is not None:
            raise ExportError("offset and time_ms need a log directory, not an image")
        return source
    if hasattr(source, "load"):
        return source.load(offset=offset, time_ms=time_ms)[0]
    from metashell.source import Source

    path = Path(source)
    return (Source(log_dir=path) if path.is_dir() else Source(snapshot=path)).load(offset=offset,
                                                                                   time_ms=time_ms)[0]


def arrow_table(table: Table) -> Any:
    """The rows as a pyarrow Table of the kind's schema, built column by column."""
    import pyarrow as pa

    schema = arrow_schema(table.kind)
    columns = list(zip(*table.rows)) if table.rows else [()] * len(schema)
    return pa.Table.from_arrays([pa.array(col, type=field.type) for col, field in zip(columns, schema)],
                                schema=schema)


def table_dataframe(table: Table, spark: Any = None) -> Any:
    """A DataFrame of ``table``, with its kind's typed schema."""
    spark = spark or get_spark()
    return spark.createDataFrame(arrow_table(table), schema=spark_schema(table.kind))


def to_dataframe(source: Any, path: str = "/topics", spark: Any = None, *, offset: int | None = None,
                 time_ms: int | None = None, show_secrets: bool = False) -> Any:
    """The table of ``path`` (see metashell.export.tables.table_for) as a DataFrame."""
    from metashell.export.tables import table_for

    spark = spark or get_spark()
    image = load_image(source, offset=offset, time_ms=time_ms)
    return table_dataframe(table_for(image, path, show_secrets=show_secrets), spark)


def history_dataframe(log_dir: Any, table: str = "records", spark: Any = None, *, start: int | None = None,
                      end: int | None = None, offsets: Iterable[int] | None = None, driver: bool = False) -> Any:
    """A history table of a log directory or archive (or a node directory, or a list or glob
    of them): the kraft data source's DataFrame (``spark.read.format("kraft")``, decoded on the
    executors, ``cluster_id`` first). With ``offsets``, the partitions at each offset (built in
    the driver). ``driver=True``: the table decoded and replayed in this process and handed to
    Spark as Arrow, the export's schema without ``cluster_id`` (the way before the data source)."""
    from metashell.export.history_tables import HISTORY_TABLES, history_rows, images_at

    spark = spark or get_spark()
    if offsets is not None:
        return table_dataframe(images_at(log_dir, offsets), spark)
    if table not in HISTORY_TABLES:
        raise ExportError(f"unknown history table {table!r} (known: {', '.join(HISTORY_TABLES)})")
    if driver:
        return table_dataframe(history_rows(log_dir, start=start, end=end, tables=[table])[table], spark)
    return source_dataframe(log_dir, table, spark, start=start, end=end)


def source_dataframe(paths: Any, table: str, spark: Any, *, start: int | None = None,
                     end: int | None = None) -> Any:
    """``spark.read.format("kraft").option("table", table).load(paths)``, the source registered
    in ``spark`` first (a Connect session too); ``start``/``end`` as startOffset/endOffset.

    One directory that nothing names the cluster of (no meta.properties or archive.json: a bare
    copy of __cluster_metadata-0, a generated log) is still exported, its cluster_id null: the
    source wants an id for such files (option clusterId), so it gets a stand-in, replaced here."""
    import metashell.spark

    reader = metashell.spark.register(spark).read.format("kraft").option("table", table)
    if start is not None:
        reader = reader.option("startOffset", str(start))
    if end is not None:
        reader = reader.option("endOffset", str(end))
    if isinstance(paths, (list, tuple)):
        return reader.load([str(p) for p in paths])
    unnamed = _names_no_cluster(Path(paths))
    frame = reader.option("clusterId", UNNAMED_CLUSTER).load(str(paths)) if unnamed else reader.load(str(paths))
    if not unnamed:
        return frame
    from pyspark.sql import functions as F

    return frame.select(*(F.lit(None).cast("string").alias(c) if c == "cluster_id" else F.col(c) for c in frame.columns))


UNNAMED_CLUSTER = "-"  # the clusterId stand-in of source_dataframe, never seen in its rows


def _names_no_cluster(path: Path) -> bool:
    """Whether ``path``, a directory, has no meta.properties or archive.json to name its cluster."""
    if not path.is_dir():
        return False
    from engine.storage.log_reader import list_log_dir
    from metashell.spark.paths import cluster_id_of

    try:
        return cluster_id_of(list_log_dir(path).path) is None
    except Exception:  # noqa: BLE001 - the source says what is wrong with the directory, in one line
        return False


def export(df: Any, out_dir: Any, fmt: str = "parquet", table: str | None = None) -> Path:
    """Write ``df`` with Spark under ``out_dir`` (``out_dir/table`` when ``table`` is given),
    replacing what is there. CSV: arrays and structs become JSON text, with a header row."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r} (known: {', '.join(FORMATS)})")
    target = Path(out_dir) / table if table else Path(out_dir)
    writer_df = _flatten_for_csv(df) if fmt == "csv" else df
    writer = writer_df.write.mode("overwrite")
    if fmt == "csv":
        writer = writer.option("header", "true")
    getattr(writer, fmt)(str(target))
    return target


def _flatten_for_csv(df: Any) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType, StructType

    return df.select([F.to_json(F.col(f.name)).alias(f.name)
                      if isinstance(f.dataType, (ArrayType, StructType, MapType)) else F.col(f.name)
                      for f in df.schema.fields])

