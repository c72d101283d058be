"""PySpark finds format("kraft") by itself (the pyspark_kraft module), in a fresh session of its
own with Spark's default settings (no filter pushdown): no register() needed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from metashell.export.history_tables import history_rows
from tests.metashell.spark.kraft_source_fixtures import write_split_story

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[3]


_FRESH = """
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
rows = spark.read.format("kraft").load(sys.argv[1]).groupBy("cluster_id").count().collect()
print(json.dumps({r["cluster_id"]: r["count"] for r in rows}))
spark.stop()
"""


def test_a_fresh_session_finds_the_source_without_registering(tmp_path: Path) -> None:
    node = write_split_story(tmp_path / "node")
    env = dict(os.environ, PYTHONPATH=str(REPO), PYSPARK_PYTHON=sys.executable)
    done = subprocess.run([sys.executable, "-c", _FRESH, str(node)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == \
        {"story-cluster": len(history_rows(node, tables=["records"])["records"].rows)}
