"""The metadata log as a Spark data source: ``spark.read.format("kraft")`` and
``spark.readStream.format("kraft")``, decoded on the executors.

    table_schema   the tables' schemas: the export's, led by cluster_id (and _corrupt)
    datasource     KraftDataSource: the DataSource Spark instantiates (name "kraft")
    paths          what load() was given -> each cluster's files (ClusterFiles)
    plan           the tasks: one per segment file (per-file tables), one per snapshot
                   interval (tables that need the state)
    ...            see docs/architecture.md

``session()`` gives a SparkSession with the source registered; ``register(spark)`` registers it
in a session of your own (PySpark also finds it by itself through the ``pyspark_kraft`` module).
"""

from __future__ import annotations

from typing import Any


def register(spark: Any, pushdown: bool | None = None) -> Any:
    """Register the kraft data source in ``spark`` (a classic or a Spark Connect session).
    ``pushdown``: take Spark's filters (None: where the session's Spark can do it safely,
    metashell.spark.datasource.pushdown_safe)."""
    from metashell.spark.datasource import KraftDataSource, KraftPushdownSource, pushdown_safe

    if pushdown is None:
        pushdown = pushdown_safe(spark)
    spark.dataSource.register(KraftPushdownSource if pushdown else KraftDataSource)
    return spark


def session(master: str | None = None, remote: str | None = None) -> Any:
    """A SparkSession (metashell.export.get_spark's) with the kraft data source registered."""
    from metashell.export.spark_session import get_spark

    spark = get_spark(master=master, remote=remote)
    try:  # the source's filter pushdown (PySpark 4.1+); LOCAL_CONFIG sets it in sessions of ours
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    except Exception:  # noqa: BLE001 - a Spark without the setting: the rows are filtered by Spark
        pass
    return register(spark)
