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

__all__ = ["REPO", "StandaloneCluster", "driver_env", "executor_of", "standalone_cluster"]


def executor_of(cwd: str) -> str:
    """``worker-N/EXECUTOR_ID`` of a Python worker's working directory on our cluster."""
    path = Path(cwd)
    return f"{path.parent.parent.name}/{path.name}"


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
