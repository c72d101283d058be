"""The live shell's ``export --history TABLE`` for the change tables: what the session fetched
from a running quorum, through the same change items as a log directory's.

One ``kraftd cluster`` (1 controller, 1 simulated broker) with a topic created with a config.
The controller's own log directory is the reference: the live rows must equal the rows of that
directory up to the offset the session had fetched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
from kafka.admin import NewTopic

from engine.cluster.layout import load_layout
from metashell import cli
from metashell.export.change_tables import change_rows
from metashell.export.schemas import column_names
from metashell.shell.session import Session
from tests.engine.cluster.test_cluster_tool import Cluster
from tests.live_cluster import bootstrap, create_topic, running_cluster
from tests.metashell.export.spark_rows import collected
from tests.metashell.export.test_change_tables_spark import _rows

# processes, sockets and timers of their own: out of the fast tier
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    for cluster in running_cluster(tmp_path_factory.mktemp("live-changes") / "state", "--controllers", "1",
                                   "--brokers", "1"):
        create_topic(cluster, NewTopic("audited", num_partitions=2, replication_factor=1,
                                       topic_configs={"retention.ms": "60000"}))
        yield cluster


def test_live_change_tables_are_the_log_directorys_up_to_what_was_fetched(cluster, spark, tmp_path: Path) -> None:
    log_dir = cluster.root / "controller-1" / "metadata"
    lines: list[str] = []
    session = Session(cli.live_source(bootstrap(cluster)), out=lines.append)
    session.err = lines.append
    try:
        session.load()
        for kind in ("config_changes", "topic_changes", "broker_changes"):
            assert session.run_line(f"export --history {kind} --out {tmp_path}") == 0, lines
            fetched = session.source.history.last_offset  # what the export read (the session may grow after)
            written = collected(spark.read.parquet(str(tmp_path / kind)))
            # cluster_id first, as the data source's tables have it: the quorum's own id
            assert {row[0] for row in written} == {load_layout(cluster.root).cluster_id}, kind
            live = sorted((row[1:] for row in written), key=repr)
            assert live == sorted(_rows(change_rows(log_dir, end=fetched)[kind]), key=repr), kind
            assert lines[-1] == f"exported {len(live)} row{'' if len(live) == 1 else 's'} of {kind} to " \
                                f"{tmp_path / kind} (parquet)"
            rows = sorted((dict(zip(column_names(kind), row)) for row in live), key=lambda r: r["offset"])
            if kind == "config_changes":
                assert [(r["entity"], r["key"], r["new_value"], r["event"]) for r in rows] == [
                    ("topic audited", "retention.ms", "60000", "created")]
            if kind == "topic_changes":
                created = [(r["topic"], r["partition"]) for r in rows if r["event"] == "created"]
                assert sorted(created, key=repr) == [("audited", 0), ("audited", 1), ("audited", None)]
            if kind == "broker_changes":
                assert [r["event"] for r in rows][:2] == ["register", "unfence"]
    finally:
        session.source.close()
