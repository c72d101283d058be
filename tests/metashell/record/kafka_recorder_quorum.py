"""A real Kafka quorum that forgets its past quickly, and `metashell record` processes against it.

The quorum (``start_forgetful_quorum``): three controller-only nodes on a dynamic quorum and one
broker (the admin requests go through it), configured so that Kafka itself throws old metadata
away fast, as a production cluster does over hours:
- no NoOp records (``metadata.max.idle.interval.ms=0``): the log grows only by what a test does, so
  a snapshot (``SNAPSHOT_EVERY_BYTES`` of records) comes when a test writes enough, never from idle
  NoOps while a recorder is between two leaders (it would find a gap there, by chance);
- segments roll after a second (``metadata.log.segment.ms``; ``metadata.log.segment.bytes`` cannot
  go below 8 MiB, MetadataLogConfig of 4.4), so whole segments end below a snapshot and can go;
- ``metadata.max.retention.bytes=1``: at each of Kafka's metadata log cleanings (every 60 s
  from the raft client's start, fixed in KafkaRaftClient) every snapshot but the newest is
  deleted, the log start moves up to it and the segments wholly below it are deleted;
- a deleted snapshot stays on disk as ``.checkpoint.deleted`` (``internal.metadata.delete.delay.millis``),
  so a test can still compare the bytes a recorder fetched with the file the leader served.

``Recorder`` runs ``python -m metashell.cli record`` from this worktree on an archive directory,
and reads the archive's manifest (``archive.json``, the shared contract) to know how far it got.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from archive_compare import assert_contiguous, compare_archive
from kafka_peer.cluster import KafkaCluster
from kafka_peer.distribution import KafkaDistribution
from kafka_peer.nodes import KafkaNode, wait_until

REPO = Path(__file__).resolve().parents[3]
SNAPSHOT_EVERY_BYTES = 8_000
FORGETFUL = {
    "metadata.max.idle.interval.ms": "0",
    "metadata.log.max.record.bytes.between.snapshots": str(SNAPSHOT_EVERY_BYTES),
    "metadata.log.segment.ms": "1000",
    "metadata.max.retention.bytes": "1",
    "internal.metadata.delete.delay.millis": "3600000",
    # ACLs need an authorizer to be accepted; everyone is a super user (PLAINTEXT, ANONYMOUS), so
    # nothing is refused: what is recorded is what the controllers write, enforced or not.
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
    "allow.everyone.if.no.acl.found": "true",
    "auto.create.topics.enable": "false",
}
DEADLINE_S = 120.0  # a safety net for JVMs on a loaded two-core machine, never a speed claim


TOOLS = ("kafka-storage", "kafka-configs", "kafka-metadata-quorum", "kafka-dump-log")


def with_tools(newest: KafkaDistribution) -> KafkaDistribution:
    """The newest server when Maven Central serves its tools too, else the newest release that has
    them (the tests script changes with kafka-configs and kafka-metadata-quorum, and read the
    archive with kafka-dump-log): never a test skipped for a server served days before its tools."""
    if all(newest.has(tool) for tool in TOOLS):
        return newest
    from kafka_peer.distribution import KafkaUnavailable, fetch
    from kafka_peer.fixtures import VERSIONS, unavailable

    why = None
    try:
        return fetch(VERSIONS[-1], tools=True)
    except KafkaUnavailable as exc:
        why = str(exc)
    unavailable(why)  # outside the except block: one sentence, not a chain
    raise AssertionError("unreachable")


def start_forgetful_quorum(dist: KafkaDistribution, root: Path) -> KafkaCluster:
    return KafkaCluster(dist, root, voters=3, brokers=1, quorum="dynamic", config=FORGETFUL).start()


def forgetful_quorum(newest: KafkaDistribution, root: Path) -> Iterator[KafkaCluster]:
    """The body of a module fixture: a forgetful quorum of the newest server with tools, closed after."""
    cluster = start_forgetful_quorum(with_tools(newest), root)
    yield cluster
    cluster.close()


def revived(cluster: KafkaCluster) -> KafkaCluster:
    """``cluster`` with every node a test before this one killed (or left half-way) restarted."""
    for node in cluster.nodes:
        if not node.alive:
            cluster.restart(node)
    return cluster


# ------------------------------------------------------------------ what the controllers hold on disk
def segment_paths(metadata_dir: Path) -> list[Path]:
    return sorted(metadata_dir.glob("*.log"))


def snapshot_ids_on_disk(metadata_dir: Path, *, deleted: bool = False) -> list[tuple[int, int]]:
    """(end offset, epoch) of each snapshot file, the ones marked deleted too if asked."""
    ids = []
    for path in metadata_dir.iterdir():
        name = path.name
        if name.endswith(".checkpoint.deleted") and deleted:
            name = name[: -len(".deleted")]
        if name.endswith(".checkpoint") and "-" in name:
            offset, epoch = name[: -len(".checkpoint")].split("-")
            ids.append((int(offset), int(epoch)))
    return sorted(ids)


def log_start_offset(metadata_dir: Path) -> int:
    """Where a node's log starts: the base offset of its first segment file still live. Kafka
    renames a deleted segment (``.log.deleted``) before it goes, so the live ``.log`` files are
    the log; their first base offset is at or below the log start offset Kafka keeps in memory."""
    segments = segment_paths(metadata_dir)
    return int(segments[0].name[:20]) if segments else 0


def _quorum_info(cluster: KafkaCluster):
    from engine.admin.quorum_client import default_send, find_leader

    return find_leader([n.controller_address for n in cluster.voters if n.alive], default_send(5000))[1]


def high_watermark(cluster: KafkaCluster) -> int:
    """The leader's high watermark (the next offset to commit) from a DescribeQuorum answer."""
    return int(_quorum_info(cluster).high_watermark)


def leader_epoch(cluster: KafkaCluster) -> int:
    return wait_until(lambda: int(_quorum_info(cluster).leader_epoch), "a leader epoch", cluster.live_nodes())


# ------------------------------------------------------------------ the recorder process
class Recorder:
    """One ``metashell record`` process on an archive; started again as often as a test likes."""

    def __init__(self, cluster: KafkaCluster, archive: Path, *extra: str) -> None:
        self.cluster, self.archive, self.extra = cluster, archive, extra
        self.process: subprocess.Popen | None = None
        self.output = archive.with_name(archive.name + ".out")
        self.runs = 0

    def command(self) -> list[str]:
        return [sys.executable, "-m", "metashell.cli", "record", "--bootstrap-controller",
                self.cluster.bootstrap_controllers, "--archive", str(self.archive), *self.extra]

    def start(self) -> "Recorder":
        assert not self.alive, "the recorder is already running"
        self.runs += 1
        with open(self.output, "ab") as out:
            out.write(f"---- run {self.runs}\n".encode())
            out.flush()
            self.process = subprocess.Popen(self.command(), cwd=REPO, stdin=subprocess.DEVNULL, stdout=out,
                                            stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(REPO)},
                                            start_new_session=True)
        return self

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s: float = 30) -> int:
        """SIGTERM: the recorder's clean close; its exit code (and never a traceback in its output)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=timeout_s)
        assert "Traceback" not in self.log(), self.log()[-3000:]
        return code

    def kill(self) -> None:
        if self.alive:
            self.process.kill()
        if self.process is not None:
            self.process.wait(timeout=30)

    def log(self) -> str:
        try:
            return self.output.read_text(errors="replace")
        except OSError:
            return "(no output)"

    def manifest(self) -> dict[str, Any] | None:
        try:
            return json.loads((self.archive / "archive.json").read_text())
        except (OSError, ValueError):
            return None  # not written yet (it is replaced atomically: never half-written)

    def last_offset(self) -> int:
        made = self.manifest()
        return -1 if made is None or made.get("last_offset") is None else int(made["last_offset"])

    def wait_until(self, check: Callable[[], Any], what: str, timeout_s: float = DEADLINE_S) -> Any:
        """Poll ``check``; fail early if the recorder exits, naming its output."""
        deadline = time.monotonic() + timeout_s
        while True:
            value = check()
            if value:
                return value
            if not self.alive:
                raise AssertionError(f"{what}: the recorder exited ({self.process.returncode}):\n{self.log()[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not within {timeout_s} s; manifest {self.manifest()}\n"
                                     f"{self.log()[-3000:]}")
            time.sleep(0.2)

    def held_through(self) -> int:
        """The last offset whose state the archive holds: its last record's, or where its newest
        snapshot ends when no record follows it (a new archive of a leader whose log starts at
        its high watermark holds only the snapshot it fetched, and its manifest no record yet)."""
        made = self.manifest() or {}
        ends = [end - 1 for end, _ in made.get("snapshots", [])]
        return max([self.last_offset(), *ends])

    def wait_caught_up(self, what: str = "the recorder caught up") -> int:
        """Until the archive holds every offset the quorum has committed now; that offset."""
        target = wait_until(lambda: high_watermark(self.cluster), "a high watermark", self.cluster.live_nodes()) - 1
        self.wait_until(lambda: self.held_through() >= target, f"{what} (offset {target})")
        return target


def metashell(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    """``python -m metashell.cli ARGS`` from this worktree (the console script points at main's)."""
    return subprocess.run([sys.executable, "-m", "metashell.cli", *args], cwd=REPO, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout_s,
                          env={**os.environ, "PYTHONPATH": str(REPO), "CI": "true"})


def live_voters(cluster: KafkaCluster) -> list[KafkaNode]:
    return [n for n in cluster.voters if n.alive]


def wait_voters_caught_up(cluster: KafkaCluster, last: int) -> None:
    """Until every live voter's log holds ``last`` (DescribeQuorum's log end offsets): only then
    are a node's files comparable with an archive up to there."""
    def caught_up() -> bool:
        info = _quorum_info(cluster)
        ends = {int(v.replica_id): int(v.log_end_offset) for v in info.voters}
        return all(ends.get(n.node_id, -1) > last for n in live_voters(cluster))

    wait_until(caught_up, f"every live voter holding offset {last}", cluster.live_nodes())


def assert_like_the_controllers(cluster: KafkaCluster, archive: Path, last: int) -> None:
    """The archive holds each live voter's own batches, byte for byte, over the offsets both hold
    (the leader's log at least some of them), and is contiguous where its manifest says it is.
    Compared once every voter holds ``last``: a voter behind has an older tail, not another one."""
    assert_contiguous(archive)
    wait_voters_caught_up(cluster, last)
    leader = cluster.wait_leader()
    for node in live_voters(cluster):
        compared = compare_archive(archive, node.metadata_dir)
        if node.node_id == leader:
            assert compared > 0, f"the leader {leader} holds none of the archive's batches"
