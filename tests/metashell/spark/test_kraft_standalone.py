"""The kraft data source on a real Spark standalone cluster: a master and two workers of one core
each, started from pyspark's spark-class on 127.0.0.1 (tests/spark_standalone.py).

A driver of its own (a child process: this one holds the suite's local SparkContext) reads the
corpus's real Kafka directories and the demo's log, ``records`` (a task a segment) and
``partition_changes`` (a task a snapshot interval), and writes each DataFrame to Parquet with
where each row was made: the Python worker's working directory (a standalone worker runs each
executor in WORK_DIR/APP_ID/EXECUTOR_ID) and the file metashell was imported from. The tests
compare the rows with the suite's local session reading the same paths, and check that the
tasks ran on both workers' executors. A second application ships metashell as a wheel (named
.zip, in ``spark.submit.pyFiles``, as docs/spark-cluster.md tells) and its executors import it
from there.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import CORPUS, corpus_unavailable
from tests.spark_standalone import REPO, demo_node, driver_env, executor_of, rows_of, standalone_cluster  # noqa: F401 - a fixture

pytestmark = pytest.mark.slow  # JVMs: a master, two workers, their executors and a driver

CORPUS_NODES = ("hiage__kafka-raft/kafka1", "weebee-io__backend")

DRIVER = textwrap.dedent('''
    import json, os, sys, time
    from pyspark.sql import SparkSession, functions as F, types as T
    master, out, jobs, conf = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
    builder = SparkSession.builder.master(master).appName("kraft-standalone-test")
    for key, value in {"spark.ui.enabled": "false", "spark.executor.memory": "512m", "spark.executor.cores": "1",
                       "spark.sql.shuffle.partitions": "2", **conf}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    # both executors registered before the first job, so that its tasks can spread over both
    tracker, deadline = spark.sparkContext._jsc.sc().statusTracker(), time.monotonic() + 120
    while len(tracker.getExecutorInfos()) < 3:  # the driver is listed too
        if time.monotonic() > deadline:
            sys.exit(f"only {len(tracker.getExecutorInfos()) - 1} of 2 executors registered in 120 s")
        time.sleep(0.2)
    import metashell.spark
    metashell.spark.register(spark)
    where = F.udf(lambda: os.getcwd() + "|" + __import__("metashell").__file__, T.StringType()).asNondeterministic()
    for name, table, paths in jobs:
        df = spark.read.format("kraft").option("table", table).load(paths)
        df.withColumn("_where", where()).write.parquet(os.path.join(out, name))
    spark.stop()
''')


def _nodes(demo_node: Path) -> list[str]:
    if not CORPUS.is_dir():
        corpus_unavailable()
    return [*(str(CORPUS / node) for node in CORPUS_NODES), str(demo_node)]


def _drive(cluster, out: Path, jobs: list, conf: dict | None = None, pythonpath: str | Path = REPO) -> Path:
    done = subprocess.run([sys.executable, "-c", DRIVER, cluster.url, str(out), json.dumps(jobs), json.dumps(conf or {})],
                          capture_output=True, text=True, timeout=400, stdin=subprocess.DEVNULL,
                          env=driver_env(pythonpath), cwd=out.parent)
    if done.returncode != 0:
        last = [line for line in done.stderr.splitlines() if line.strip()][-30:]
        pytest.fail("the driver on the standalone cluster failed:\n" + "\n".join(last), pytrace=False)
    return out


@pytest.fixture(scope="module")
def cluster_reads(standalone_cluster, tmp_path_factory):  # noqa: F811 - the fixture imported above
    """One application on the cluster, each table of every node read once: {name: (parquet dir, paths)}."""
    nodes = _nodes(demo_node(tmp_path_factory.mktemp("demo-node")))
    out = tmp_path_factory.mktemp("standalone-reads") / "out"
    jobs = [("records", "records", nodes), ("partition_changes", "partition_changes", nodes)]
    _drive(standalone_cluster, out, jobs)
    return {name: (out / name, paths, table) for name, table, paths in jobs}


def _same_rows_as_local(spark, written: Path, table: str, paths: list[str]) -> list:
    import metashell.spark

    got = spark.read.parquet(str(written))
    local = metashell.spark.register(spark).read.format("kraft").option("table", table).load(paths)
    assert got.columns[:-1] == local.columns
    assert local.count() > 0
    assert rows_of(got.drop("_where")) == rows_of(local)
    return [row["_where"] for row in got.select("_where").collect()]


@pytest.mark.corpus
def test_records_on_the_cluster_are_the_local_rows(spark, cluster_reads) -> None:
    written, paths, table = cluster_reads["records"]
    _same_rows_as_local(spark, written, table, paths)


@pytest.mark.corpus
def test_partition_changes_on_the_cluster_are_the_local_rows(spark, cluster_reads) -> None:
    written, paths, table = cluster_reads["partition_changes"]
    _same_rows_as_local(spark, written, table, paths)
    by_cluster = spark.read.parquet(str(written)).groupBy("cluster_id").count().collect()
    assert len(by_cluster) == len(paths)  # three nodes, three clusters


@pytest.mark.corpus
def test_the_tasks_ran_on_both_workers(spark, cluster_reads, standalone_cluster) -> None:  # noqa: F811
    places = set()
    for written, _paths, _table in cluster_reads.values():
        places |= {row["_where"].split("|")[0] for row in spark.read.parquet(str(written)).select("_where").distinct().collect()}
    assert all(Path(p).is_relative_to(standalone_cluster.work) for p in places), places
    executors = {executor_of(p) for p in places}
    assert {e.split("/")[0] for e in executors} == {"worker-0", "worker-1"}, executors


@pytest.fixture(scope="session")
def metashell_wheel(tmp_path_factory) -> Path:
    """metashell built as a wheel (``pip wheel``), once a session, from a copy of the sources;
    its copy named .zip."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for package in ("engine", "metashell", "themes"):
        shutil.copytree(REPO / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work / "dist"), str(source)],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        pytest.fail(f"pip wheel failed: {(done.stderr.strip().splitlines() or ['no output'])[-1]}", pytrace=False)
    wheel = next((work / "dist").glob("metashell-*.whl"))
    # PySpark puts .zip, .egg and .jar py-files on the workers' sys.path, not .whl: a pure-Python
    # wheel is a zip, shipped under that name (docs/spark-cluster.md)
    return Path(shutil.copy2(wheel, wheel.with_suffix(".zip")))


@pytest.mark.corpus
def test_a_wheel_shipped_with_py_files_is_what_the_executors_import(spark, standalone_cluster, metashell_wheel,  # noqa: F811
                                                                    tmp_path) -> None:
    nodes = _nodes(demo_node(tmp_path / "demo"))
    out = _drive(standalone_cluster, tmp_path / "out", [("records", "records", nodes)],
                 {"spark.submit.pyFiles": str(metashell_wheel)})
    imported = {w.split("|")[1] for w in _same_rows_as_local(spark, out / "records", "records", nodes)}
    assert imported and all(metashell_wheel.name in path for path in imported), imported
