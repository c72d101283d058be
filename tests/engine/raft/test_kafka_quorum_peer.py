"""The quorum and Raft on the wire, with Apache Kafka as the peer (both tested versions).

* ``kraftd quorum describe`` against Kafka's running quorum answers what ``kafka-metadata-quorum``
  answers, through the controllers and through the broker; and Kafka's tool asked about a
  quorum of ``kraftd start`` processes answers what ours does.
* A ``kraftd start`` controller outside the voter set (formatted ``--no-initial-controllers``,
  auto-join off) is an observer of Kafka's quorum: it finds the leader through
  ``controller.quorum.bootstrap.servers``, Kafka's leader lists it among its observers, and its
  log is Kafka's, batch for batch and byte for byte, up to the high watermark.
* A fresh observer of a Kafka node whose log starts after a snapshot gets that snapshot by
  FetchSnapshot (in chunks), byte for byte, then the log after it in Fetch answers that Kafka
  cuts inside batches; its image is the snapshot's and then the log's.
* Voter changes across the two: Kafka's tool adds a controller of ours to our quorum and removes
  it; ours adds a controller of ours to a Kafka quorum (it then follows Kafka's leader as a
  voter) and removes it.

Two calls of the tools are moments apart, so what moves between them is normalised and only
that: the high watermark, the follower lag and its time in ``--status``; log end offsets, lags
and timestamps in ``--replication``. Everything else (ids, directory ids, epochs, endpoints,
order, column layout) must be equal. Kafka clusters are few: the shared ``kafka_quorum`` for
what only asks; per version one combined node that snapshots (a module fixture) and one
controller whose voters the voter test changes.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from engine.cluster.kafka_dist import version_key
from engine.common.kafka_uuid import uuid_to_kafka
from engine.image.metadata_loader import load_log_dir, load_snapshot
from engine.net.kafka_client import request_once
from engine.net.ports import is_address_in_use, pick_ports
from engine.raft import raft_messages as rm
from engine.raft.voter_set import ReplicaKey
from engine.server.controller_node import ControllerNode, load_controller_settings
from engine.storage.log_segment import iter_batches
from engine.storage.leader_epoch_checkpoint import LEADER_EPOCH_CHECKPOINT_FILE, read_leader_epoch_checkpoint
from engine.storage.meta_properties import read_meta_properties
from engine.storage.snapshot_writer import SnapshotId, parse_snapshot_name
from engine.admin import quorum_client as qt
from engine.cluster.processes import SOURCE_ROOT, ProcessCluster, kraftd
from engine.admin.storage_format import format_storage
from kafka_peer.cluster import KafkaCluster
from kafka_peer.fixtures import ahead_of_version, take_ahead
from kafka_peer.nodes import quorum_leader, wait_until

pytestmark = pytest.mark.kafka

OBSERVER_ID = 100  # no Kafka node has it
DEADLINE_S = 120.0  # the safety net of our own waits (JVMs on a loaded two-core machine), not a speed claim
CLEANING_DEADLINE_S = 300.0  # Kafka cleans its metadata log every 60 s, from the raft client's start

# ------------------------------------------------------------------ the tools' answers, normalised
STATUS_MOVING = ("HighWatermark:", "MaxFollowerLag:", "MaxFollowerLagTimeMs:")
TABLE_MOVING = ("LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp")
MOVING_CELL = re.compile(r"-?\d+( ms ago)?")
LABEL_WIDTH = 24  # "HighWatermark:          " — the label column of --status


def normalised(lines: list[str]) -> list[Any]:
    """``describe --status`` lines, or the ``--replication`` table as rows of cells, with what
    moves between two calls replaced by "*" once checked to be a number (or "N ms ago")."""
    if lines and lines[0].startswith("ClusterId:"):
        out = []
        for line in lines:
            label, value = line[:LABEL_WIDTH], line[LABEL_WIDTH:]
            if label.split()[0] in STATUS_MOVING:
                assert re.fullmatch(r"-?\d+", value), line
                value = "*"
            out.append(label + value)
        return out
    rows = [line.split("\t") for line in lines]
    assert all(row[-1] == "" for row in rows), lines  # every cell, the last too, ends with a tab
    rows = [[cell.rstrip(" ") for cell in row[:-1]] for row in rows]
    # The layout is Kafka's pretty table over these cells, so comparing cells compares the bytes.
    assert qt.pretty_table(rows[0], rows[1:]) == lines
    moving = [rows[0].index(name) for name in TABLE_MOVING]
    for row in rows[1:]:
        for i in moving:
            assert MOVING_CELL.fullmatch(row[i]), row
            row[i] = "*"
    return rows


def kafka_describe(dist, *args: str) -> list[str]:
    return dist.run("kafka-metadata-quorum", *args).stdout.splitlines()


def our_describe(*args: str) -> list[str]:
    done = kraftd("quorum", *args)
    assert done.returncode == 0 and not done.stderr, done.stderr
    return done.stdout.splitlines()


def high_watermark(lines: list[str]) -> int:
    return int(next(line for line in lines if line.startswith("HighWatermark:")).split()[1])


# ------------------------------------------------------------------ 1. our tool, Kafka's quorum
DESCRIBE_CASES = [("controller", ("--status",)), ("controller", ("--replication",)),
                  ("controller", ("--replication", "--human-readable")),
                  ("server", ("--status",)), ("server", ("--replication",))]


@pytest.mark.parametrize(("through", "mode"), DESCRIBE_CASES, ids=[f"{t}{''.join(m)}" for t, m in DESCRIBE_CASES])
def test_our_describe_of_kafkas_quorum_is_kafkas(kafka_dist, kafka_quorum, through: str, mode: tuple) -> None:
    bootstrap = (["--bootstrap-controller", kafka_quorum.bootstrap_controllers] if through == "controller"
                 else ["--bootstrap-server", kafka_quorum.bootstrap_servers])
    theirs = kafka_describe(kafka_dist, *bootstrap, "describe", *mode)
    ours = our_describe(*bootstrap, "describe", *mode)  # asked after Kafka's tool
    assert normalised(ours) == normalised(theirs)
    if mode == ("--status",):
        assert high_watermark(theirs) <= high_watermark(ours)  # it never goes back in an epoch
        assert '"endpoints": ["CONTROLLER://127.0.0.1:' in ours[6] and '"id": 4,' in ours[7]  # the broker


# ------------------------------------------------------------------ 2. Kafka's tool, our quorum
KAFKAS_TIMEOUTS = {"controller.quorum.election.timeout.ms": 1000, "controller.quorum.fetch.timeout.ms": 2000}


@pytest.fixture(scope="module")
def kraftd_quorum(tmp_path_factory):
    """Three ``kraftd start`` controllers on a dynamic quorum (Kafka's timeouts), with a leader."""
    cluster = ProcessCluster(tmp_path_factory.mktemp("kraftd-quorum"), KAFKAS_TIMEOUTS)
    try:
        cluster.launch()
        wait_until(lambda: quorum_leader([cluster.address(i) for i in (1, 2, 3)]) >= 0, "a kraftd leader", [])
        yield cluster
    finally:
        cluster.kill()


@pytest.mark.parametrize("mode", ["--status", "--replication"])
def test_kafkas_describe_of_our_quorum_is_ours(kafka_dist, kraftd_quorum, mode: str) -> None:
    bootstrap = ("--bootstrap-controller", kraftd_quorum.bootstrap)
    theirs = kafka_describe(kafka_dist, *bootstrap, "describe", mode)
    ours = our_describe(*bootstrap, "describe", mode)
    assert normalised(theirs) == normalised(ours), kraftd_quorum.logs()
    if mode == "--status":
        assert theirs[1].startswith("LeaderId:") and theirs[-1] == "CurrentObservers:       []"
        assert theirs[0] == f"ClusterId:              {kraftd_quorum.cluster_id}"


def voters_and_observers(cluster: ProcessCluster) -> tuple[list[int], list[int]]:
    """The ids the leader lists (QuorumToolError while there is none)."""
    info = qt.find_leader([cluster.address(i) for i in cluster.running()], qt.default_send(2000))[1]
    return [v.replica_id for v in info.voters], [o.replica_id for o in info.observers]


def test_kafkas_tool_adds_and_removes_a_controller_of_ours(kafka_dist, tmp_path: Path) -> None:
    """Kafka's admin client changes our voters: AddRaftVoter (Kafka 4.1 speaks only v0 of it, we
    read v1) and RemoveRaftVoter, sent to the leader it finds through DescribeCluster."""
    cluster = ProcessCluster(tmp_path, KAFKAS_TIMEOUTS)
    try:
        cluster.launch()
        fourth = cluster.add_node()
        directory_id = uuid_to_kafka(read_meta_properties(tmp_path / f"meta{fourth}").directory_id)
        wait_until(lambda: fourth in voters_and_observers(cluster)[1], f"controller {fourth} as an observer", [])
        bootstrap = ("--bootstrap-controller", cluster.bootstrap)
        added = kafka_describe(kafka_dist, *bootstrap, "--command-config", str(cluster.configs[fourth]),
                               "add-controller")
        assert added == [f"Added controller {fourth} with directory id {directory_id} and endpoints: "
                         f"CONTROLLER://127.0.0.1:{cluster.ports[fourth]}"], cluster.logs()
        wait_until(lambda: voters_and_observers(cluster)[0] == [1, 2, 3, fourth], f"{fourth} among the voters", [])
        removed = kafka_describe(kafka_dist, *bootstrap, "remove-controller", "--controller-id", str(fourth),
                                 "--controller-directory-id", directory_id)
        # sic: up to 4.3 Kafka printed two spaces there (printf("%s KRaft...", "Removed ")), 4.4 one
        gap = " " if version_key(kafka_dist.version) >= (4, 4, 0) else "  "
        assert removed == [f"Removed{gap}KRaft controller {fourth} with directory id {directory_id}"]
        wait_until(lambda: voters_and_observers(cluster) == ([1, 2, 3], [fourth]), f"{fourth} an observer again", [])
    finally:
        cluster.kill()


# ------------------------------------------------------------------ logs, compared batch by batch
def log_batches(metadata_dir: Path, below: int, start: int = 0) -> list[tuple[int, int, int, bytes]]:
    """(base offset, last offset, epoch, raw bytes) of the segment batches in [start, below).
    A running Kafka node may be writing the last batch of its active segment: reading stops
    at a torn tail, which lies past anything committed."""
    out = []
    for segment in sorted(metadata_dir.glob("*.log")):
        data = segment.read_bytes()
        for pos, header, end in iter_batches(data, str(segment), decode_records=False,  # CRC checked
                                             on_torn_tail=lambda at, error: None):
            if start <= header.base_offset and header.last_offset < below:
                out.append((header.base_offset, header.last_offset, header.partition_leader_epoch, data[pos:end]))
    return out


def epochs_below(metadata_dir: Path, offset: int) -> list[tuple[int, int]]:
    return [e for e in read_leader_epoch_checkpoint(metadata_dir / LEADER_EPOCH_CHECKPOINT_FILE) if e[1] < offset]


def formatted_node(home: Path, cluster: KafkaCluster, node_id: int = OBSERVER_ID, port: int = 0,
                   **extra: Any) -> Path:
    """The config of a controller of ours outside the voter set, formatted ``--no-initial-controllers``
    with Kafka's cluster id. Port 0 unless a voter must call it (no voter calls an observer)."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "controller.properties"
    config.write_text("\n".join([
        "process.roles=controller", f"node.id={node_id}", f"listeners=CONTROLLER://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER", f"controller.quorum.bootstrap.servers={cluster.bootstrap_controllers}",
        f"metadata.log.dir={home / 'meta'}", *(f"{k}={v}" for k, v in extra.items())]) + "\n")
    if not (home / "meta").exists():
        format_storage(config, cluster.cluster_id, no_initial_controllers=True, out=lambda line: None)
    return config


class Kraftd:
    """``kraftd start`` as a process, its output in ``HOME/kraftd.log``."""

    def __init__(self, config: Path) -> None:
        self.config, self.log_path = config, config.parent / "kraftd.log"
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen([sys.executable, "-m", "engine.tools.cli", "start", "--config", str(config)],
                                            stdout=log, stderr=log, stdin=subprocess.DEVNULL, cwd=SOURCE_ROOT)

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def listening(self) -> bool:
        return "listening on" in self.log

    # What kafka_peer.nodes.wait_until asks of the nodes it watches: a wait fails at once if we exit.
    def check_running(self) -> None:
        assert self.process.poll() is None, f"kraftd exited ({self.process.returncode}):\n{self.log}"

    def log_tail(self) -> str:
        return "\n".join(f"  kraftd| {line}" for line in self.log.splitlines()[-40:])

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise


def start_on_free_port(home: Path, cluster: KafkaCluster, node_id: int) -> tuple[Kraftd, int]:
    """A controller of ours on a chosen port, again on another if that one was taken meanwhile."""
    for attempt in range(3):
        port = pick_ports(1)[0]
        node = Kraftd(formatted_node(home, cluster, node_id, port))
        try:
            wait_until(node.listening, f"kraftd node {node_id} to listen", [node])
            return node, port
        except AssertionError:
            if attempt == 2 or not is_address_in_use(node.log):
                raise
    raise AssertionError("unreachable")


def kafka_quorum_info(cluster: KafkaCluster) -> qt.QuorumInfo:
    return qt.find_leader(cluster.controller_addresses, qt.default_send(5000))[1]


# ------------------------------------------------------------------ 3. an observer of Kafka's quorum
def test_observer_of_kafkas_quorum_replicates_its_log(kafka_dist, kafka_quorum, tmp_path: Path) -> None:
    node = Kraftd(formatted_node(tmp_path, kafka_quorum))
    our_dir = tmp_path / "meta" / "__cluster_metadata-0"
    directory_id = read_meta_properties(tmp_path / "meta").directory_id
    target = kafka_quorum_info(kafka_quorum).high_watermark
    try:
        # Kafka's leader itself says our node fetched (with its directory id) past the target.
        wait_until(lambda: any(o.replica_id == OBSERVER_ID and o.replica_directory_id == directory_id
                               and o.log_end_offset >= target for o in kafka_quorum_info(kafka_quorum).observers),
                   f"Kafka's leader to see observer {OBSERVER_ID} at offset {target}", [node])
    finally:
        code = node.stop()
    assert code == 0 and f"leader is {kafka_quorum.leader_id()} in epoch" in node.log, node.log

    common = min(kafka_quorum_info(kafka_quorum).high_watermark, max(b[1] for b in log_batches(our_dir, 2**62)) + 1)
    # the high watermark needs only a majority: a voter may still be behind it
    wait_until(lambda: all(v.log_end_offset >= common for v in kafka_quorum_info(kafka_quorum).voters),
               f"every voter at offset {common}", kafka_quorum.nodes)
    ours = log_batches(our_dir, common)
    assert common >= target and ours[0][0] == 0 and ours[-1][1] == common - 1
    for voter in kafka_quorum.voters:
        assert log_batches(voter.metadata_dir, common) == ours, f"node {voter.node_id}'s log differs from ours"
        assert epochs_below(voter.metadata_dir, common) == epochs_below(our_dir, common)


def test_our_tool_makes_our_controller_a_voter_of_kafkas_quorum(kafka_dist, tmp_path: Path) -> None:
    """``kraftd quorum add-controller`` on a Kafka quorum: Kafka 4.1 takes AddRaftVoter v0 only, and
    Kafka's leader asks the new voter's ApiVersions for the kraft.version levels it supports."""
    cluster = KafkaCluster(kafka_dist, tmp_path / "kafka", voters=1).start()
    node = None
    try:
        node, port = start_on_free_port(tmp_path / "ours", cluster, OBSERVER_ID)
        directory_id = uuid_to_kafka(read_meta_properties(tmp_path / "ours" / "meta").directory_id)
        # Kafka's leader adds only a caught-up observer (its AddVoterHandler: a fetch after the first)
        wait_until(lambda: any(o.replica_id == OBSERVER_ID and o.last_caught_up_timestamp > 0
                               for o in kafka_quorum_info(cluster).observers), "our observer caught up",
                   [node, *cluster.nodes])
        bootstrap = ("--bootstrap-controller", cluster.bootstrap_controllers)
        assert our_describe(*bootstrap, "--command-config", str(node.config), "add-controller") == [
            f"Added controller {OBSERVER_ID} with directory id {directory_id} and endpoints: "
            f"CONTROLLER://127.0.0.1:{port}"]
        assert [v.replica_id for v in kafka_quorum_info(cluster).voters] == [1, OBSERVER_ID]
        theirs = kafka_describe(kafka_dist, *bootstrap, "describe", "--replication")
        assert normalised(theirs)[1:] == [["1", cluster.nodes[0].directory_id, "*", "*", "*", "*", "Leader"],
                                          [str(OBSERVER_ID), directory_id, "*", "*", "*", "*", "Follower"]]
        assert normalised(our_describe(*bootstrap, "describe", "--replication")) == normalised(theirs)
        assert our_describe(*bootstrap, "remove-controller", "--controller-id", str(OBSERVER_ID),
                            "--controller-directory-id", directory_id) == [
            f"Removed  KRaft controller {OBSERVER_ID} with directory id {directory_id}"]
        assert [v.replica_id for v in kafka_quorum_info(cluster).voters] == [1]
        assert node.stop() == 0, node.log
    finally:
        cluster.close()
        if node is not None and node.process.poll() is None:
            node.process.kill()


# ------------------------------------------------------------------ 4. a fresh observer, by FetchSnapshot
SNAPSHOT_BYTES = 10_000
SNAPSHOTTING = {
    "metadata.log.max.record.bytes.between.snapshots": str(SNAPSHOT_BYTES),
    # Every snapshot but the newest is over retention at Kafka's next cleaning (each 60 s): the
    # log's start then moves up to the newest, and a fetcher from offset 0 is sent the snapshot.
    "metadata.max.retention.bytes": "1",
    "metadata.max.idle.interval.ms": "0",  # no NoOps: only our topics count towards snapshots
    "internal.metadata.delete.delay.millis": "3600000",  # a cleaned snapshot's file stays (as .deleted)
    # Kafka 4.1's leader cuts each Fetch answer at this size, inside a batch if need be (4.3's at
    # the size the fetcher asks, which our observer sets low; 4.3 ignores this name).
    "internal.metadata.max.fetch.size.in.bytes": "1024",
}
BEFORE = [(f"before-{i}", 80) for i in range(2)]  # ~6 KB each: a snapshot after the second
AFTER = [(f"after-{i}", 3) for i in range(6)]  # ~300 B each, 2 KB together: no snapshot


def create_topics(cluster: KafkaCluster, topics: list[tuple[str, int]]) -> None:
    """One CreateTopics per topic, one after the other: one small batch each in the log."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for name, partitions in topics:
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=DEADLINE_S)


def snapshot_ids(metadata_dir: Path) -> list[SnapshotId]:
    return sorted(s for s in (parse_snapshot_name(p.name) for p in metadata_dir.iterdir()) if s is not None)


@ahead_of_version("snapshotting_node")
def _snapshotting_cluster(kafka_dist, root: Path) -> tuple[KafkaCluster, SnapshotId]:
    """One combined Kafka node whose log starts at its newest snapshot, with records after it.
    Most of its minute is Kafka's wait for its metadata log cleaning (every 60 s, fixed)."""
    cluster = KafkaCluster(kafka_dist, root, voters=1, combined=True, config=SNAPSHOTTING)
    try:
        cluster.start()
        node = cluster.nodes[0]
        directory = node.metadata_dir
        create_topics(cluster, BEFORE)
        wait_until(lambda: any(s.end_offset > 0 for s in snapshot_ids(directory)), "Kafka's snapshot", [node])
        snapshot = snapshot_ids(directory)[-1]
        create_topics(cluster, AFTER)
        wait_until(lambda: snapshot_ids(directory)[0].end_offset > 0, "Kafka's cleaning of its metadata log",
                   [node], timeout_s=CLEANING_DEADLINE_S)
        assert snapshot_ids(directory) == [snapshot], "a snapshot after the last topics: AFTER is too big"
    except BaseException:
        cluster.close()
        raise
    return cluster, snapshot


@pytest.fixture(scope="module")
def snapshotting_node(kafka_dist, tmp_path_factory):
    """Yields (cluster, the snapshot its log starts at) for this Kafka version, and closes it. Begun
    with the session's first test of the version (``ahead_of_version``), so Kafka's cleaning wait
    passes while other tests run: per version half a minute less of the suite."""
    cluster, snapshot = take_ahead("snapshotting_node", kafka_dist, tmp_path_factory,
                                   timeout_s=DEADLINE_S + CLEANING_DEADLINE_S)
    try:
        yield cluster, snapshot
    finally:
        cluster.close()


def kafka_snapshot_bytes(directory: Path, snapshot: SnapshotId) -> bytes:
    path = directory / snapshot.file_name
    return path.read_bytes() if path.exists() else path.with_name(path.name + ".deleted").read_bytes()


class LoadRecorder:
    """A RaftListener beside the node's own: the image right after each snapshot load."""

    def __init__(self) -> None:
        self.node: ControllerNode | None = None
        self.loads: list[tuple[SnapshotId, Any]] = []

    def handle_load_snapshot(self, snapshot_id: SnapshotId, batches) -> None:
        self.loads.append((snapshot_id, self.node.image))  # the node's listener loaded it first

    def handle_commit(self, batches) -> None:
        pass

    def handle_leader_change(self, leader) -> None:
        pass


async def run_observer(config: Path, target: int, recorder: LoadRecorder) -> ControllerNode:
    node = ControllerNode(load_controller_settings(config))
    recorder.node = node
    node.attach(recorder)
    await node.start()
    try:
        deadline = time.monotonic() + DEADLINE_S
        while node.last_committed_offset < target - 1:
            assert node.driver.failure is None and time.monotonic() < deadline, \
                f"committed {node.last_committed_offset} of {target - 1}"
            await asyncio.sleep(0.05)
    finally:
        await node.stop()
    return node


def test_fresh_observer_gets_kafkas_snapshot(kafka_dist, snapshotting_node, tmp_path: Path) -> None:
    cluster, snapshot = snapshotting_node
    kafka_dir = cluster.nodes[0].metadata_dir
    # Small asks: the snapshot comes in chunks, and Kafka 4.3 cuts Fetch answers inside batches.
    config = formatted_node(tmp_path, cluster, **{"controller.quorum.fetch.max.bytes": 1024,
                                                  "controller.quorum.fetch.snapshot.max.bytes": 4096})
    our_dir = tmp_path / "meta" / "__cluster_metadata-0"
    target = kafka_quorum_info(cluster).high_watermark
    assert target > snapshot.end_offset + len(AFTER)
    recorder = LoadRecorder()
    node = asyncio.run(run_observer(config, target, recorder))

    assert [s for s, _ in recorder.loads] == [snapshot]
    assert snapshot_ids(our_dir) == [snapshot]
    assert (our_dir / snapshot.file_name).read_bytes() == kafka_snapshot_bytes(kafka_dir, snapshot)
    loaded = recorder.loads[0][1]
    assert loaded == load_snapshot(our_dir / snapshot.file_name)[0]  # Kafka's file's image (same bytes)
    assert {name for name, _ in BEFORE} <= set(loaded.topics.by_name)
    assert not {name for name, _ in AFTER} & set(loaded.topics.by_name)

    # After the snapshot: Kafka's log, byte for byte, and the image of it.
    ours = log_batches(our_dir, target, snapshot.end_offset)
    assert ours[0][0] == snapshot.end_offset and ours[-1][1] == target - 1
    assert log_batches(kafka_dir, target, snapshot.end_offset) == ours
    # As in a Kafka follower that loaded a snapshot, the epochs begin again where its log does.
    first_of_epoch = {}
    for base, _, epoch, _ in ours:
        first_of_epoch.setdefault(epoch, base)
    assert epochs_below(our_dir, target) == sorted(first_of_epoch.items())
    image = node.image
    assert {name for name, _ in AFTER} <= set(image.topics.by_name)
    kafkas = load_log_dir(kafka_dir, offset=node.last_committed_offset)[0]
    # Kafka's directory keeps the segments before its snapshot, where our loader also finds the
    # leader changes of older epochs; an observer that started at the snapshot never saw them.
    assert replace(image, quorum=replace(image.quorum, leader_changes=kafkas.quorum.leader_changes)) == kafkas


def test_kafka_cuts_fetch_answers_inside_batches(kafka_dist, snapshotting_node) -> None:
    """What the observer above goes through, one answer at a time: Kafka's leader ends a Fetch
    answer inside a batch (4.1 at its own limit, 4.3 at the size asked); the whole batches
    before the torn one are what a fetcher takes."""
    cluster, snapshot = snapshotting_node
    kafka_dir = cluster.nodes[0].metadata_dir
    small = [b for b in log_batches(kafka_dir, 2**62, snapshot.end_offset) if len(b[3]) < 512]
    assert len(small) >= 4, "the topics made after the snapshot"
    start = small[0][0]
    request = rm.fetch_request(cluster.cluster_id, ReplicaKey(OBSERVER_ID + 1, uuid.uuid4()), small[0][2], start,
                               small[0][2], 0, 1024)
    answer = rm.only_partition(request_once(cluster.controller_addresses[0], request, timeout_ms=5000))
    assert answer.error_code == rm.NONE
    whole = rm.fetched_records(answer)
    assert 0 < len(whole) < len(bytes(answer.records)) <= 1024
    expected = log_batches(kafka_dir, 2**62, start)
    taken = [(header.base_offset, header.last_offset, header.partition_leader_epoch, whole[pos:end])
             for pos, header, end in iter_batches(whole, "fetched records", decode_records=False)]
    assert taken == expected[:len(taken)]


# ------------------------------------------------------------------ 5. pre-votes in a mixed quorum
def test_restarting_kafkas_leader_moves_the_epoch_as_one_election_does(kafka_dist, tmp_path: Path) -> None:
    """Our voter and Kafka's, Kafka's leading; it restarts. Our pre-votes carry our current epoch,
    as Kafka's do, so the rounds that fail while it is away move no epoch (when ours named epoch
    + 1, Kafka's voter took each one: 1 to 5 during its shutdown, 7 once elected). What is left
    is an election or two (a resigning leader may hand over first; a split vote costs one)."""
    from engine.storage.quorum_state_file import read_quorum_state

    cluster = KafkaCluster(kafka_dist, tmp_path / "kafka", voters=1).start()
    node = None
    try:
        node, port = start_on_free_port(tmp_path / "ours", cluster, OBSERVER_ID)
        # Kafka's leader adds only a caught-up observer (its AddVoterHandler: a fetch after the first)
        wait_until(lambda: any(o.replica_id == OBSERVER_ID and o.last_caught_up_timestamp > 0
                               for o in kafka_quorum_info(cluster).observers), "our observer caught up",
                   [node, *cluster.nodes])
        bootstrap = ("--bootstrap-controller", cluster.bootstrap_controllers)
        our_describe(*bootstrap, "--command-config", str(node.config), "add-controller")
        wait_until(lambda: [v.replica_id for v in kafka_quorum_info(cluster).voters] == [1, OBSERVER_ID],
                   "our controller a voter", [node, *cluster.nodes])
        before = kafka_quorum_info(cluster)
        assert before.leader_id == 1
        kafka = cluster.voters[0]
        kafka.stop()
        ours = read_quorum_state(tmp_path / "ours" / "meta" / "__cluster_metadata-0" / "quorum-state")
        assert ours.leader_epoch <= before.leader_epoch + 1, "our epoch while Kafka's voter was away"
        kafka.start()
        # Asked through both voters: a leader of ours answers DescribeQuorum too.
        both = [kafka.controller_address, ("127.0.0.1", port)]

        def settled() -> bool:
            info = qt.find_leader(both, qt.default_send(5000))[1]
            return info.leader_id in (1, OBSERVER_ID) and all(v.log_end_offset >= info.high_watermark
                                                              for v in info.voters)

        wait_until(settled, "a leader both voters follow", [node, kafka])
        after = qt.find_leader(both, qt.default_send(5000))[1]
        assert before.leader_epoch < after.leader_epoch <= before.leader_epoch + 3, (before, after)
        assert read_quorum_state(kafka.metadata_dir / "quorum-state").leader_epoch == after.leader_epoch
        assert node.stop() == 0, node.log
    finally:
        cluster.close()
        if node is not None and node.process.poll() is None:
            node.process.kill()
