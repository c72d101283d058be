"""The test session's real Spark standalone cluster (metashell.bench.spark_cluster: a master and
two workers of one core each, started from pyspark's spark-class on 127.0.0.1), and how a child
process drives it: the suite's own local SparkSession holds this process's one SparkContext.

Executors tell where they ran by their working directory: a standalone worker runs each executor
in WORK_DIR/APP_ID/EXECUTOR_ID, and the Python workers it forks inherit it (``executor_of``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metashell.bench.spark_cluster import REPO, ClusterDidNotStart, StandaloneCluster, driver_env

__all__ = ["REPO", "StandaloneCluster", "demo_node", "driver_env", "executor_of", "rows_of", "standalone_cluster"]


def executor_of(cwd: str) -> str:
    """``worker-N/EXECUTOR_ID`` of a Python worker's working directory on our cluster."""
    path = Path(cwd)
    return f"{path.parent.parent.name}/{path.name}"


def demo_node(directory: Path) -> Path:
    """The demo's log as a node directory: a meta.properties beside it names its cluster."""
    from engine.storage.meta_properties import MetaProperties, write_meta_properties
    from metashell.demo.shell_demo import write_demo_log_dir

    write_meta_properties(write_demo_log_dir(directory), MetaProperties(1, "demo-cluster", node_id=1))
    return directory


def rows_of(df) -> list[str]:
    """A DataFrame's rows, each as sorted-key JSON, sorted: two reads compared as multisets
    (pyspark.testing's comparison imports pyspark.pandas, which the installed pandas may break)."""
    import json

    return sorted(json.dumps(row.asDict(recursive=True), sort_keys=True, default=str) for row in df.collect())


def start_or_fail(work: Path, **kwargs) -> StandaloneCluster:
    """The cluster, or the test failed in one line saying why (no Java: skipped, failed under CI)."""
    from metashell.export.spark_session import java_available

    if not java_available():
        if os.environ.get("CI") == "true":
            pytest.fail("a Spark standalone cluster needs Java. CI=true requires it.", pytrace=False)
        pytest.skip("a Spark standalone cluster needs Java")
    try:
        return StandaloneCluster.start(work, **kwargs)
    except ClusterDidNotStart as exc:
        pytest.fail(f"the Spark standalone cluster did not start: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory):
    """A master and two workers (1 core, 1 GB each) for the session, stopped at its end."""
    pytest.importorskip("pyspark")
    cluster = start_or_fail(tmp_path_factory.mktemp("spark-standalone"))
    yield cluster
    cluster.stop()
