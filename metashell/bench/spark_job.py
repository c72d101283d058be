"""One Spark application of ``metashell bench spark``, in a process of its own (a process holds
one SparkContext, and each master is a new one): ``python -m metashell.bench.spark_job JSON``.

JSON: ``{"master": ..., "conf": {...}, "way": "source" | "driver", "tables": [...],
"node_dirs": [...], "rounds": n}``. Prints one JSON line a measurement:
``{"table", "way", "round", "rows", "seconds"}``, after one ``{"session_s": ...}`` line. The
source's workers are warmed up first (``warm_up``), untimed.

Each measurement is one job that builds every row and every column: ``count(*)`` and the sum
of a hash of all the columns (a ``count()`` alone could be answered without building the
columns). ``source`` reads ``spark.read.format("kraft")`` over all the node directories in one
DataFrame; ``driver`` is the export as it was before the data source: each directory's table
decoded and replayed in this process (metashell.export.history_tables), handed to Spark as
Arrow, the clusters' DataFrames unioned.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def session(master: str, conf: dict[str, str]) -> Any:
    from pyspark.sql import SparkSession

    from metashell.export.spark_session import LOCAL_CONFIG
    import metashell.spark

    builder = SparkSession.builder.master(master).appName("metashell-bench-spark")
    for key, value in {**LOCAL_CONFIG, **conf}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return metashell.spark.register(spark)


def dataframe(spark: Any, way: str, table: str, node_dirs: list[str]) -> Any:
    if way == "source":
        return spark.read.format("kraft").option("table", table).load(node_dirs)
    return driver_dataframe(spark, table, node_dirs)


def driver_dataframe(spark: Any, table: str, node_dirs: list[str]) -> Any:
    """The driver-side export's DataFrame of every cluster, a cluster_id column added to match."""
    from pyspark.sql import functions as F

    from engine.storage.meta_properties import read_meta_properties
    from metashell.export import history_dataframe

    frames = [history_dataframe(node, table, spark, driver=True).select(
        F.lit(read_meta_properties(node).cluster_id).alias("cluster_id"), "*") for node in node_dirs]
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    return union


def built(df: Any) -> int:
    """Build every row and column of ``df``; its row count."""
    from pyspark.sql import functions as F

    row = df.agg(F.count(F.lit(1)).alias("rows"), F.sum(F.hash(*df.columns).cast("long")).alias("h")).first()
    return int(row["rows"])


def warm_up(spark: Any, node_dirs: list[str]) -> None:
    """One small read first (each cluster's first records): the Python workers started and
    metashell imported in them, which the first timed job would otherwise pay."""
    built(spark.read.format("kraft").option("table", "records").option("endOffset", "0").load(node_dirs))


def main(argv: list[str]) -> int:
    job = json.loads(argv[0])
    started = time.perf_counter()
    spark = session(job["master"], job.get("conf", {}))
    if job.get("wait_executors"):
        _wait_executors(spark, job["wait_executors"])
    print(json.dumps({"session_s": time.perf_counter() - started}), flush=True)
    if job["way"] == "source":
        warm_up(spark, job["node_dirs"])
    for table in job["tables"]:
        for round_ in range(job.get("rounds", 1)):
            started = time.perf_counter()
            rows = built(dataframe(spark, job["way"], table, job["node_dirs"]))
            print(json.dumps({"table": table, "way": job["way"], "round": round_, "rows": rows,
                              "seconds": time.perf_counter() - started}), flush=True)
    spark.stop()
    return 0


def _wait_executors(spark: Any, count: int, timeout_s: float = 120.0) -> None:
    """Wait until ``count`` executors registered (a standalone master starts them as the app
    arrives): a measurement started before would run on fewer cores than it says."""
    deadline = time.monotonic() + timeout_s
    tracker = spark.sparkContext._jsc.sc().statusTracker()
    while len(tracker.getExecutorInfos()) - 1 < count:  # the driver is listed too
        if time.monotonic() > deadline:
            raise SystemExit(f"only {len(tracker.getExecutorInfos()) - 1} of {count} executors registered "
                             f"in {timeout_s:.0f} s")
        time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
