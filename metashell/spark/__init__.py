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


def register(spark: Any) -> Any:
    """Register the kraft data source in ``spark`` (a classic or a Spark Connect session)."""
    from metashell.spark.datasource import KraftDataSource

    spark.dataSource.register(KraftDataSource)
    return spark


def session(master: str | None = None, remote: str | None = None) -> Any:
    """A SparkSession (metashell.export.get_spark's) with the kraft data source registered."""
    from metashell.export.spark_session import get_spark

    return register(get_spark(master=master, remote=remote))
