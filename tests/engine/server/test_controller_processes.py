"""Real controller processes on 127.0.0.1: election, failover, rejoin, voter changes, snapshots, shutdown.

Controllers are formatted as one dynamic quorum (``kraftd storage format --initial-controllers``)
and started as ``kraftd start`` processes by engine.cluster.processes, which starts the whole
cluster again on new ports if a node finds its port taken. No test needs another to have run:
the one that only reads shares a cluster (a module fixture); every test that kills, adds, stops
or restarts nodes starts its own. Waits poll up to generous deadlines, a safety net against
hangs that fails naming what did not happen, never a performance claim (failover time is
``kraftd bench failover``'s figure). Every process is killed at the end, also after a failure,
and a failing test shows every process's log (pytest's "Captured stdout teardown").
"""

from __future__ import annotations

import json
import signal
import socket
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from engine.common.kafka_uuid import random_kafka_uuid, uuid_to_kafka
from engine.net.kafka_client import request_once
from engine.storage.log_reader import list_log_dir, read_file
from engine.storage.meta_properties import read_meta_properties
from engine.admin import quorum_client as qt
from engine.cluster.processes import ProcessCluster, kraftd

# processes, sockets and timers of their own: out of the fast tier
pytestmark = pytest.mark.slow

ELECTION_TIMEOUT_MS = 1000  # Kafka's default, set explicitly
FETCH_TIMEOUT_MS = 1000  # a dead leader is noticed after the fetch timeout: keep the tests short
DEADLINE_S = 30.0  # the safety net of every wait (a loaded two-core machine included)
SETTINGS = {"controller.quorum.election.timeout.ms": ELECTION_TIMEOUT_MS,
            "controller.quorum.fetch.timeout.ms": FETCH_TIMEOUT_MS}


def poll(predicate: Callable[[], Any], what: str, timeout_s: float = DEADLINE_S, interval_s: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"gave up after {timeout_s:.0f} s waiting for {what}")
        time.sleep(interval_s)


class Cluster(ProcessCluster):
    """A ProcessCluster asked about over the wire and through ``kraftd quorum``."""

    def directory_id(self, node_id: int) -> str:
        return uuid_to_kafka(read_meta_properties(self.root / f"meta{node_id}").directory_id)

    def leader(self, node_ids: list[int] | None = None) -> qt.QuorumInfo | None:
        """The quorum as its leader describes it (None if no leader answers)."""
        ids = node_ids or self.running()

        def send(address: Any, request: Any) -> Any:
            return request_once(address, request, timeout_ms=500)

        try:
            return qt.find_leader([self.address(i) for i in ids], send)[1]
        except qt.QuorumToolError:
            return None

    def describe(self, *args: str, config: Path | None = None) -> Any:
        extra = ["--command-config", str(config)] if config else []
        return kraftd("quorum", "--bootstrap-controller", self.bootstrap, *extra, *args)

    def status(self) -> dict[str, str]:
        done = self.describe("describe", "--status")
        assert done.returncode == 0, done.stderr
        return dict(line.split(":", 1) for line in done.stdout.splitlines())

    def replication(self) -> dict[int, list[str]]:
        done = self.describe("describe", "--replication")
        assert done.returncode == 0, done.stderr
        rows = [line.split() for line in done.stdout.splitlines()[1:]]
        return {int(row[0]): row for row in rows}

    def caught_up_leader(self) -> qt.QuorumInfo | None:
        info = self.leader()
        return info if info and all(v.log_end_offset >= info.high_watermark for v in info.voters) else None


def show_and_kill(cluster: Cluster) -> None:
    cluster.kill()
    print(cluster.logs())  # captured: pytest shows it when the test failed


@pytest.fixture
def clusters(tmp_path: Path) -> Iterator[Callable[..., Cluster]]:
    """``clusters(**settings)``: a started cluster of the test's own; all killed at the end."""
    made: list[Cluster] = []

    def make(voters: int = 3, **settings: Any) -> Cluster:
        cluster = Cluster(tmp_path / f"cluster{len(made) + 1}", {**SETTINGS, **settings}, voters=voters)
        made.append(cluster)
        cluster.launch()
        return cluster

    try:
        yield make
    finally:
        for cluster in made:
            show_and_kill(cluster)


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path_factory.mktemp("shared"), SETTINGS)
    try:
        cluster.launch()
        yield cluster
    except BaseException:
        print(cluster.logs())
        raise
    finally:
        cluster.kill()


@pytest.fixture
def quorum(shared_cluster: Cluster) -> Iterator[Cluster]:
    """The shared cluster, for tests that only read it."""
    yield shared_cluster
    print(shared_cluster.logs())  # captured: pytest shows it when the test failed


def voter_ids(status: dict[str, str]) -> list[int]:
    return sorted(v["id"] for v in json.loads(status["CurrentVoters"]))


# -- the quorum ---------------------------------------------------------------------------------------

def test_a_leader_is_elected_and_appends_commit(quorum: Cluster) -> None:
    info = poll(quorum.leader, "a leader")
    assert info.leader_id in (1, 2, 3) and len(info.voters) == 3
    first = int(quorum.status()["HighWatermark"])
    poll(lambda: int(quorum.status()["HighWatermark"]) > first + 1, "the high watermark to grow", interval_s=0.1)
    status = quorum.status()
    assert voter_ids(status) == [1, 2, 3] and status["ClusterId"].strip() == quorum.cluster_id


def kill_the_leader(cluster: Cluster) -> tuple[int, qt.QuorumInfo]:
    """SIGKILL a caught-up quorum's leader; the killed id and the quorum under its successor."""
    old = poll(cluster.caught_up_leader, "a caught-up quorum")
    cluster.procs[old.leader_id].send_signal(signal.SIGKILL)
    cluster.procs[old.leader_id].wait()
    survivors = [i for i in cluster.ports if i != old.leader_id]
    new = poll(lambda: (i := cluster.leader(survivors)) and i.leader_epoch > old.leader_epoch and i,
               f"a leader in an epoch after {old.leader_epoch} among {survivors}")
    return old.leader_id, new


def test_sigkill_of_the_leader_elects_another(clusters: Callable[..., Cluster]) -> None:
    cluster = clusters()
    killed, new = kill_the_leader(cluster)
    assert new.leader_id != killed and killed not in cluster.running()
    first = new.high_watermark
    poll(lambda: (i := cluster.leader()) and i.high_watermark > first + 1, "commits under the new leader")


def test_the_killed_controller_rejoins_and_catches_up(clusters: Callable[..., Cluster]) -> None:
    cluster = clusters()
    killed, _ = kill_the_leader(cluster)
    cluster.restart(killed)

    def caught_up() -> dict[int, list[str]] | None:
        rows = cluster.replication()  # Kafka's table: NodeId DirectoryId LogEndOffset Lag ... Status
        row = rows.get(killed)
        return rows if row and row[-1] == "Follower" and int(row[3]) <= 1 else None

    poll(caught_up, f"controller {killed} to follow with a lag of at most one record", interval_s=0.1)


def test_a_fourth_controller_is_added_and_one_removed(clusters: Callable[..., Cluster]) -> None:
    cluster = clusters()
    poll(cluster.leader, "a leader")
    fourth = cluster.add_node()
    poll(lambda: (i := cluster.leader([1, 2, 3])) and any(o.replica_id == fourth for o in i.observers),
         f"controller {fourth} to fetch as an observer")
    added = cluster.describe("add-controller", config=cluster.configs[fourth])
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith(f"Added controller {fourth} with directory id {cluster.directory_id(fourth)}")
    assert voter_ids(cluster.status()) == [1, 2, 3, fourth]

    removed = cluster.describe("remove-controller", "--controller-id", str(fourth), "--controller-directory-id",
                               cluster.directory_id(fourth))
    assert removed.returncode == 0, removed.stderr
    status = cluster.status()
    assert voter_ids(status) == [1, 2, 3] and f'"id": {fourth}' in status["CurrentObservers"]


def test_sigterm_stops_every_controller_cleanly(clusters: Callable[..., Cluster]) -> None:
    cluster = clusters()
    leader = poll(cluster.leader, "a leader").leader_id
    order = [leader] + [i for i in cluster.running() if i != leader]  # the leader first: it resigns to the others
    codes = {}
    for i in order:
        cluster.procs[i].send_signal(signal.SIGTERM)
        codes[i] = cluster.procs[i].wait(DEADLINE_S)
    assert codes == {1: 0, 2: 0, 3: 0}
    leader_log = cluster.log_text(leader)
    assert "resigning the leadership" in leader_log and "stopped (last committed offset" in leader_log
    assert "Traceback" not in cluster.logs()


# -- snapshots -----------------------------------------------------------------------------------------

SNAPSHOT_SETTINGS = {
    "metadata.log.max.record.bytes.between.snapshots": 1500,  # ~20 NoOp batches
    "metadata.max.idle.interval.ms": 20,  # a NoOp every 20 ms: snapshots come quickly
    "internal.metadata.log.segment.bytes": 600,  # Kafka's testing override: segments roll often
}


def metadata_dir(cluster: Cluster, node_id: int) -> Path:
    return cluster.root / f"meta{node_id}" / "__cluster_metadata-0"


def newest_snapshot(cluster: Cluster, node_id: int) -> Path | None:
    """The node's newest snapshot taken while running (not the 0-0 one ``storage format`` writes)."""
    found = [path for sid, path in list_log_dir(metadata_dir(cluster, node_id)).snapshots if sid.end_offset > 0]
    return found[-1] if found else None


def first_segment_deleted(cluster: Cluster, node_id: int) -> bool:
    segments = list_log_dir(metadata_dir(cluster, node_id)).segments
    return bool(segments) and segments[0][0] > 0


def test_kraftd_start_snapshots_deletes_old_segments_and_restarts_from_the_snapshot(
        clusters: Callable[..., Cluster]) -> None:
    cluster = clusters(**SNAPSHOT_SETTINGS)
    nodes = [1, 2, 3]
    poll(lambda: all(newest_snapshot(cluster, i) and first_segment_deleted(cluster, i) for i in nodes),
         "a snapshot on every controller, and its first segment deleted")
    assert cluster.stop(DEADLINE_S) == {1: 0, 2: 0, 3: 0}

    taken = {i: newest_snapshot(cluster, i) for i in nodes}
    # controllers snapshot on their own, after the bytes replayed ...
    assert any("because we have replayed at least 1500 bytes" in cluster.log_text(i) for i in nodes)
    for i, path in taken.items():
        log = cluster.log_text(i)
        # ... though a follower behind the leader's log start is sent the leader's snapshot instead
        # (the first seconds' records — bootstrap, controller registrations — fill 1500 bytes fast)
        assert f"created snapshot {path.name} because" in log or f"loaded snapshot {path.name}" in log
        # Kafka's snapshot format, as our reader and kafka-dump-log's twin read it.
        names = [entry.record.type_name for entry in read_file(path, snapshot=True)]
        assert names[:3] == ["SNAPSHOT_HEADER", "KRAFT_VERSION", "KRAFT_VOTERS"] and names[-1] == "SNAPSHOT_FOOTER"
        dump = kraftd("dump-log", str(path))
        assert dump.returncode == 0 and dump.stderr == "", dump.stderr
        end_offset, epoch = (int(part) for part in path.name.removesuffix(".checkpoint").split("-"))
        assert f"Snapshot end offset: {end_offset}, epoch: {epoch}" in dump.stdout and "SnapshotFooter" in dump.stdout
        # What the snapshot covers is gone: no segment but the first ends below its end offset any
        # more (the first may have been the active segment when the snapshot was taken: kept until
        # the next snapshot, where Kafka's periodic snapshot cleaner would remove it sooner).
        bases = [base for base, _ in list_log_dir(metadata_dir(cluster, i)).segments]
        assert bases[0] > 0 and all(later >= end_offset for later in bases[1:2]), (bases, path.name)
        assert all(later > end_offset for later in bases[2:]), (bases, path.name)

    for i in nodes:
        cluster.restart(i)
    for i in nodes:
        poll(lambda: f"loaded snapshot {taken[i].name}" in cluster.log_text(i),
             f"controller {i} to load its snapshot {taken[i].name}")
    poll(lambda: all(newest_snapshot(cluster, i).name > taken[i].name for i in nodes),
         "a newer snapshot on every controller after the restart")
    assert cluster.stop(DEADLINE_S) == {1: 0, 2: 0, 3: 0}
    assert "Traceback" not in cluster.logs()


# -- refusals ----------------------------------------------------------------------------------------

def test_a_bad_config_exits_1_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "broker.properties"
    config.write_text("process.roles=broker,controller\nnode.id=1\nlisteners=CONTROLLER://127.0.0.1:9093\n"
                      "controller.listener.names=CONTROLLER\ncontroller.quorum.bootstrap.servers=127.0.0.1:9093\n"
                      f"metadata.log.dir={tmp_path / 'meta'}\n")
    done = kraftd("start", "--config", str(config))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("kraftd: ")
    assert "log.dirs is not set" in done.stderr  # a combined node is a broker too: its data dirs

    config.write_text(config.read_text().replace("broker,controller", "controller"))
    done = kraftd("start", "--config", str(config))  # not formatted
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "kraftd storage format" in done.stderr

    done = kraftd("start", "--config", str(tmp_path / "missing.properties"))
    assert done.returncode == 1 and done.stderr.count("\n") == 1


def test_a_busy_port_exits_1_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as busy:  # held for the whole test: the port cannot be anyone else's
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        config = tmp_path / "c.properties"
        config.write_text(f"process.roles=controller\nnode.id=1\nlisteners=CONTROLLER://127.0.0.1:{port}\n"
                          "controller.listener.names=CONTROLLER\n"
                          f"controller.quorum.bootstrap.servers=127.0.0.1:{port}\nmetadata.log.dir={tmp_path / 'm'}\n")
        assert kraftd("storage", "format", "--config", str(config), "--cluster-id", uuid_to_kafka(random_kafka_uuid()),
                      "--standalone").returncode == 0
        done = kraftd("start", "--config", str(config))
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "Address already in use" in done.stderr


def test_kraftd_start_has_no_benchmark_options(tmp_path: Path) -> None:
    done = kraftd("start", "--config", str(tmp_path / "c.properties"), "--load-rate", "5")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "kraftd: unrecognized arguments: --load-rate 5\n"
    assert "--load" not in kraftd("start", "--help").stdout


# -- the benchmark ------------------------------------------------------------------------------------

def test_kraftd_bench_quorum_measures_three_processes() -> None:
    """A short run of the benchmark: three real processes under load, both phases, figures printed."""
    done = kraftd("bench", "quorum", "--seconds", "1", "--latency-rate", "200", "--throughput-rate", "2000",
                  "--batch", "20", timeout_s=180)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if "commit latency" in line]
    assert len(lines) == 2, done.stdout
    for line in lines:
        committed = int(line.split("committed ")[1].split(" records")[0].replace(",", ""))
        assert committed > 0 and "p99" in line
