"""The kraft data source through Spark Connect: a local Spark Connect server in a child process
(its own JVM: tests/spark_connect.py), the source
registered on the Connect session (``metashell.spark.register``: ``spark.dataSource.register``
sends the class to the server), ``records`` and a change table read through it and written by
the server to Parquet; ``metashell export --history ... --remote`` through the same server.
The rows are compared with the suite's local session reading the same directories.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CORPUS, corpus_unavailable
from tests.spark_connect import run_beside_connect_server
from tests.spark_standalone import REPO, demo_node, driver_env, rows_of

pytestmark = pytest.mark.slow  # a Spark Connect server: a JVM of its own

pytest.importorskip("pyspark.sql.connect.session", reason="pyspark's connect client is not installed "
                    "(pip install 'metashell[connect]')")

CHILD = '''
    import json, os
    import metashell.spark
    from metashell.cli import run
    out, jobs, export_dir = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    spark = metashell.spark.session(remote=f"sc://localhost:{port}")
    assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
    for name, table, paths in jobs:
        spark.read.format("kraft").option("table", table).load(paths).write.parquet(os.path.join(out, name))
    code = run(["export", "--log-dir", export_dir, "--history", "topic_changes", "--out", os.path.join(out, "export"),
                "--format", "json", "--remote", f"sc://localhost:{port}"])
    sys.exit(code)
'''


def test_the_source_through_spark_connect(spark, tmp_path: Path) -> None:
    import metashell.spark

    demo_log_dir = demo_node(tmp_path / "demo")
    nodes = [str(demo_log_dir)]
    if CORPUS.is_dir():
        nodes.append(str(CORPUS / "weebee-io__backend"))
    elif __import__("os").environ.get("CI") == "true":
        corpus_unavailable()
    jobs = [("records", "records", nodes), ("topic_changes", "topic_changes", nodes)]
    out = tmp_path / "out"
    done = run_beside_connect_server(CHILD, [str(out), json.dumps(jobs), str(demo_log_dir)], timeout=300,
                                     cwd=tmp_path, env=driver_env(REPO))
    assert done.returncode == 0, done.stderr[-3000:]
    metashell.spark.register(spark)
    for name, table, paths in jobs:
        local = spark.read.format("kraft").option("table", table).load(paths)
        assert local.count() > 0
        assert rows_of(spark.read.parquet(str(out / name))) == rows_of(local)
    exported = [json.loads(line) for f in sorted((out / "export" / "topic_changes").glob("part-*.json"))
                for line in f.read_text().splitlines()]
    expected = spark.read.format("kraft").option("table", "topic_changes").load(str(demo_log_dir)).count()
    assert len(exported) == expected > 0
    assert f"exported {expected} rows of topic_changes" in done.stdout
