"""The Spark session exports run in: the active one when there is one, else a new one.

``local[*]`` by default (no UI or progress bars, 4 shuffle partitions, Arrow transfers, quiet logs);
``master="spark://host:7077"`` for a standalone cluster; ``remote="sc://host:15002"`` for
Spark Connect. Missing pyspark or Java is an ``ExportError`` saying what to install.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from engine.common.errors import MetadataError

NO_PYSPARK = "Spark export needs pyspark: pip install 'metashell[spark]'"
NO_JAVA = "Spark export needs a Java runtime (17 or 21): install a JDK and set JAVA_HOME"


class ExportError(MetadataError):
    """An export that cannot run: pyspark or Java missing, a bad table name or format."""


NO_CONNECT = ("Spark Connect (--remote) needs pyspark's connect client: "
              "pip install 'pyspark[connect]' (grpcio, grpcio-status, googleapis-common-protos, zstandard, pandas)")


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
    """A Spark Connect session for ``remote``; else the active SparkSession when no ``master``
    is asked for; else a new one (see the module docstring)."""
    sql = import_pyspark()
    if remote is not None:
        try:
            from pyspark.sql.connect.session import SparkSession as ConnectSession
        except ImportError:
            raise ExportError(NO_CONNECT) from None
        # Spark Connect: the JVM is the server's; an explicit address wins over a local session.
        return ConnectSession.builder.remote(remote).getOrCreate()
    active = sql.SparkSession.getActiveSession()
    if active is not None and (master is None or active.sparkContext.master == master):
        return active
    builder = sql.SparkSession.builder.appName("metashell-export")
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
