"""The Spark session exports run in: the active one when there is one, else a new one.

``local[*]`` by default (no UI or progress bars, 4 shuffle partitions, Arrow transfers, quiet logs);
``master="spark://host:7077"`` for a standalone cluster; ``remote="sc://host:15002"`` for
Spark Connect. Missing pyspark or Java is an ``ExportError`` saying what to install.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from engine.errors import MetadataError

NO_PYSPARK = "Spark export needs pyspark: pip install 'metashell[spark]'"
NO_JAVA = "Spark export needs a Java runtime (17 or 21): install a JDK and set JAVA_HOME"


class ExportError(MetadataError):
    """An export that cannot run: pyspark or Java missing, a bad table name or format."""


def import_pyspark() -> Any:
    """The pyspark.sql module, or ExportError saying how to install it."""
    try:
        import pyspark.sql as sql
    except ImportError:
        raise ExportError(NO_PYSPARK) from None
    return sql


def java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    if home and os.path.isfile(os.path.join(home, "bin", "java")):
        return True
    return shutil.which("java") is not None


def get_spark(master: str | None = None, remote: str | None = None) -> Any:
    """The active SparkSession, else a new one (see the module docstring)."""
    sql = import_pyspark()
    active = sql.SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = sql.SparkSession.builder.appName("metashell-export")
    if remote is not None:
        return builder.remote(remote).getOrCreate()  # Spark Connect: the JVM is the server's
    if not java_available():
        raise ExportError(NO_JAVA)
    spark = (builder.master(master or "local[*]")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark
