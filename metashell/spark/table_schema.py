"""The schemas of the ``kraft`` data source's tables: the export's own (metashell.export.schemas),
led by ``cluster_id`` so that one query spans many clusters, and, in PERMISSIVE mode, ended by
``_corrupt`` (what a damaged file said, one line naming the file and the byte offset), as Spark's
own file readers add their corrupt-record column.
"""

from __future__ import annotations

from typing import Any

from metashell.export.schemas import COLUMNS, HISTORY_TABLES, _arrow_type, _spark_type

CLUSTER_ID = ("cluster_id", "string", "the cluster's id: the node's meta.properties, or the archive's manifest")
CORRUPT = ("_corrupt", "string", "PERMISSIVE mode only: '<file>, byte offset <n>: <reason>' for damage; "
                                 "null in every row read whole")
# The tables the data source serves: the export's history tables (records, the record tables and
# the change tables); an image's subtree stays the driver's (metashell.export.to_dataframe).
SOURCE_TABLES = HISTORY_TABLES


def source_columns(table: str, permissive: bool = False) -> tuple[tuple[str, Any, str], ...]:
    """(name, type, description) of each column of ``table`` as the data source gives it."""
    if table not in SOURCE_TABLES:
        raise ValueError(f"unknown table {table!r} (known: {', '.join(SOURCE_TABLES)})")
    return (CLUSTER_ID, *COLUMNS[table], *((CORRUPT,) if permissive else ()))


def source_column_names(table: str, permissive: bool = False) -> list[str]:
    return [name for name, _, _ in source_columns(table, permissive)]


def source_spark_schema(table: str, permissive: bool = False) -> Any:
    """The pyspark StructType the data source declares for ``table`` (imports pyspark)."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(name, _spark_type(t), True) for name, t, _ in source_columns(table, permissive)])


def source_arrow_schema(table: str, permissive: bool = False) -> Any:
    """The pyarrow schema of the batches the data source's tasks yield (imports pyarrow)."""
    import pyarrow as pa

    return pa.schema([(name, _arrow_type(t)) for name, t, _ in source_columns(table, permissive)])
