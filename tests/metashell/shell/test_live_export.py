"""``metashell export --bootstrap-controller``: a live quorum's committed image at attach time,
and what the session fetched (``--history``), through the same export as a log directory's;
and, last, the live shell's prompt while that quorum's only controller is down and back.

One ``kraftd cluster`` (1 controller, 1 simulated broker) serves the module; the controller's
own log directory is the reference: the live export must equal the export of that directory at
the offset the attachment stood at. Spark is the run's shared session (the ``spark`` fixture).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

import pytest
from kafka.admin import NewTopic

from engine.storage.meta_properties import read_meta_properties
from metashell import cli
from metashell.shell.session import Session
from tests.engine.cluster.test_cluster_tool import Cluster
from tests.engine.server.test_controller_processes import poll
from tests.live_cluster import bootstrap, create_topic, running_cluster

# processes, sockets and timers of their own: out of the fast tier
pytestmark = pytest.mark.slow

ATTACHED = re.compile(r"metashell: note: attached to \S+ at offset (\d+)")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    for cluster in running_cluster(tmp_path_factory.mktemp("live-export") / "state", "--controllers", "1",
                                   "--brokers", "1"):
        create_topic(cluster, NewTopic("exported", num_partitions=3, replication_factor=1))
        yield cluster


def export(*argv: str) -> int:
    """``metashell export ARGV``; the offset the live attachment stood at (None for a log directory)."""
    errors: list[str] = []
    assert cli.run(["export", *argv], err=errors.append) == 0, errors
    found = [int(m.group(1)) for line in errors if (m := ATTACHED.match(line))]
    return found[0] if found else None


def rows(spark, path: Path) -> list:
    return sorted(spark.read.parquet(str(path)).collect(), key=repr)


def test_live_export_equals_the_log_directory_at_the_same_offset(cluster, spark, tmp_path):
    log_dir = cluster.root / "controller-1" / "metadata"
    offset = export("--bootstrap-controller", bootstrap(cluster), "/topics", "--out", str(tmp_path / "live"))
    assert offset is not None
    assert export("--log-dir", str(log_dir), "--offset", str(offset), "/topics",
                  "--out", str(tmp_path / "files")) is None
    live = rows(spark, tmp_path / "live" / "partitions")
    assert len(live) == 3 and {row[0] for row in live} == {"exported"}
    assert live == rows(spark, tmp_path / "files" / "partitions")


def test_live_history_is_what_the_session_fetched(cluster, spark, tmp_path):
    log_dir = cluster.root / "controller-1" / "metadata"
    offset = export("--bootstrap-controller", bootstrap(cluster), "--history", "broker_fencing",
                    "--out", str(tmp_path / "live"))
    export("--log-dir", str(log_dir), "--history", "broker_fencing", "--out", str(tmp_path / "files"))
    live = rows(spark, tmp_path / "live" / "broker_fencing")
    assert [row.event for row in live if row.broker_id == 1][:2] == ["register", "unfence"]
    # cluster_id first, as the data source gives it for the log directory: the quorum's own id once
    # the attachment learnt it (DescribeCluster, asked beside the fetches: it may not have answered yet)
    assert spark.read.parquet(str(tmp_path / "live" / "broker_fencing")).columns[0] == "cluster_id"
    assert {row.cluster_id for row in live} <= {None, read_meta_properties(log_dir).cluster_id}
    live = [row[1:] for row in live]
    # the attachment started at the log's start (a new cluster has no snapshot yet): every row up to its offset
    assert live == [row[1:] for row in rows(spark, tmp_path / "files" / "broker_fencing") if row.offset <= offset]


def test_live_export_options_are_one_line(cluster, tmp_path):
    errors: list[str] = []
    assert cli.run(["export", "--bootstrap-controller", bootstrap(cluster), "--log-dir", str(tmp_path), "/topics",
                    "--out", str(tmp_path)], err=errors.append) == 1
    assert cli.run(["export", "--bootstrap-controller", "nope", "/topics", "--out", str(tmp_path)],
                   err=errors.append) == 1
    assert cli.run(["export", "--bootstrap-controller", bootstrap(cluster), "/nope", "--out", str(tmp_path)],
                   err=errors.append) == 1
    assert errors[0] == "metashell: argument --log-dir: not allowed with argument --bootstrap-controller"
    assert errors[1] == "metashell: Invalid url in --bootstrap-controller: nope"
    assert ATTACHED.match(errors[2]) and errors[3:] == ["metashell: /nope: no such node"]


def test_the_live_shell_says_disconnected_and_recovers(cluster):
    """The quorum's only controller stopped and started again: the prompt says so, then follows."""
    session = Session(cli.live_source(bootstrap(cluster)), out=lambda line: None)
    try:
        session.load()

        def prompt() -> str:
            session.refresh()  # as the interactive shell does while it waits at the prompt
            return session.prompt()

        assert prompt().startswith("[live @")
        cluster.ok("stop", "controller-1")
        stopped_at = session.image.provenance.last_offset
        poll(lambda: prompt().startswith("[disconnected @"), "the prompt says disconnected", 60)
        assert prompt() == f"[disconnected @{session.image.provenance.last_offset}] metashell:/> "
        assert session.image.provenance.last_offset >= stopped_at
        cluster.ok("start", "controller-1")
        poll(lambda: prompt().startswith("[live @") and session.image.provenance.last_offset > stopped_at,
             "the prompt follows again", 60)
    finally:
        session.source.close()
