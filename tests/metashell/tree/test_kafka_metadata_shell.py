"""metashell's ``/image`` against Apache Kafka's own ``kafka-metadata-shell``, byte for byte.

Both read the same files of the scripted history (tests/kafka_peer/history.py), which has what
the real corpus lacks (ACLs, client quotas with a default entity, SCRAM users, a reassignment,
ELR, fenced and shutting-down brokers): every node's newest snapshot; every node's log (Kafka's
shell reads a segment as it reads a snapshot, so the segments from offset 0 give it the log's
newest image) read by ours from the same file and from the node's directory; prefixes of one
node's log cut after the batches where a partition has an ELR, a broker is fenced or shutting
down, or a reassignment is in flight (ours seeks its directory there); and the image written
back by our writer (engine.image.image_writer, engine.storage.snapshot_writer, as kraftd writes
snapshots), which Kafka's shell must print as it prints Kafka's own snapshot.

Kafka's shell is walked by its own listing and ours is asked the same command lines
(tests/kafka_shell_compare.py): for the newest release every answer must be ours character for
character; for 4.1.2 too, but for what that release prints otherwise, exactly
(kafka_shell_compare.expected_of_older). What ours does differently on purpose (error wording, a
quota entity with a default part, encoded names) is the module's docstring there. The provenance
is compared where both read the same file; from a directory ours is the image's, not a file's.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from engine.cluster.kafka_dist import version_key
from engine.image.image_writer import image_records
from engine.image.metadata_history import MetadataHistory
from engine.image.metadata_loader import load_snapshot
from engine.records.record_batch import build_batch, encode_batch
from engine.storage.log_reader import read_batch_headers, read_file
from engine.storage.snapshot_writer import parse_snapshot_name, write_snapshot
from kafka_peer.fixtures import after_history
from metashell.source import Source
from tests.kafka_shell_compare import (OLDER_SHELL, PROVENANCE, Answers, Comparison, compare, kafka_transcript,
                                       our_transcript)
from tests.kafka_shell_tree import parse_java, parse_tree, shell_copy

pytestmark = pytest.mark.kafka


def test_kafka_text_reader_reads_what_kafka_prints() -> None:
    text = ("BrokerRegistration(id=1, incarnationId=QKpN-iV9_uaecLZW0ww3Vw, listeners=[Endpoint(listenerName='PLAIN',"
            " securityProtocol=SSL, host='h', port=9092)], supportedFeatures={kraft.version: 0-1}, "
            "rack=Optional.empty, fenced=false, directories=[], cordonedDirectories=null)")
    assert parse_java(text) == {
        "__type__": "BrokerRegistration", "id": "1", "incarnationId": "QKpN-iV9_uaecLZW0ww3Vw",
        "listeners": [{"__type__": "Endpoint", "listenerName": "PLAIN", "securityProtocol": "SSL", "host": "h",
                       "port": "9092"}],
        "supportedFeatures": {"kraft.version": "0-1"}, "rack": None, "fenced": "false", "directories": [],
        "cordonedDirectories": None}
    assert parse_java("StandardAcl[resourceType=TOPIC, host=*, principal=User:a]")["principal"] == "User:a"
    assert parse_java("Optional[4.3-IV0]") == "4.3-IV0" and parse_java("Optional[rack-1]") == "rack-1"
    with pytest.raises(ValueError):
        parse_java("Name(a=1")


def test_kafka_tree_reader_tells_leaves_from_directories() -> None:
    printed = "byId:\n  X:\n    0:\n      P(leader=1)\n    name:\n      a:b\nbyName:\nempty:\n  \n"
    paths, leaves = parse_tree("/image/t", printed)
    assert paths == {"/image/t/byId", "/image/t/byId/X", "/image/t/byId/X/0", "/image/t/byId/X/name",
                     "/image/t/byName", "/image/t/empty"}
    assert leaves == {"/image/t/byId/X/0": "P(leader=1)", "/image/t/byId/X/name": "a:b", "/image/t/empty": ""}
    with pytest.raises(ValueError):
        parse_tree("/image/t", "a:\n      too deep")


def test_kafkas_shell_is_given_files_without_trailing_control_batches(tmp_path: Path) -> None:
    """Two control offsets after the last data batch leave Kafka 4.1's shell loading forever:
    the copy it is given ends at the last data batch, byte for byte what came before."""
    def batch(offset: int, control: bool) -> bytes:
        return encode_batch(build_batch(offset, [(b"k", b"v")], timestamp_ms=1, leader_epoch=3, control=control))
    data = batch(0, False) + batch(1, True) + batch(2, False)
    (tmp_path / "a.log").write_bytes(data + batch(3, True) + batch(4, True))
    assert shell_copy(tmp_path / "a.log", tmp_path / "cut").read_bytes() == data
    (tmp_path / "b.log").write_bytes(data)
    assert shell_copy(tmp_path / "b.log", tmp_path / "whole").read_bytes() == data


# -- what is compared, per Kafka version (once: JVMs are dear) -------------------------------------

def _partitions(image):
    return (p for t in image.topics.by_id.values() for p in t.partitions.values())


NOTABLE_STATES = {
    "partition with ELR": lambda image: any(p.elr or p.last_known_elr for p in _partitions(image)),
    "partition being reassigned": lambda image: any(p.adding_replicas or p.removing_replicas
                                                    for p in _partitions(image)),
    "fenced broker": lambda image: any(b.fenced for b in image.cluster.brokers.values()),
    "broker shutting down": lambda image: any(b.in_controlled_shutdown for b in image.cluster.brokers.values()),
}
WATCHED_RECORDS = {"PARTITION_CHANGE_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD", "FENCE_BROKER_RECORD",
                   "UNFENCE_BROKER_RECORD", "REGISTER_BROKER_RECORD", "CLEAR_ELR_RECORD"}


@dataclass
class Results:
    snapshots: list[Comparison] = field(default_factory=list)  # every node's newest snapshot
    logs: list[Comparison] = field(default_factory=list)  # every node's log read from offset 0
    points: dict[str, Comparison] = field(default_factory=dict)  # notable state -> a log prefix showing it
    written: list[Comparison] = field(default_factory=list)  # our writer's snapshot in Kafka's shell

    def every(self) -> list[Comparison]:
        return [*self.snapshots, *self.logs, *self.points.values(), *self.written]


_RESULTS: dict[str, Results | BaseException] = {}  # by Kafka version: made once, or why not
# Kafka's answers on a history's own files, walked in the background right after it was written
# there (kafka_peer.fixtures.after_history), by (version, history root, label).
_KAFKA: dict[tuple[str, str, str], Answers] = {}


def snapshot_label(node) -> str:
    return f"node {node.node_id} snapshot {node.snapshots[-1].name}"


def log_label(node) -> str:
    return f"node {node.node_id} log"


@after_history
def kafka_walks_in_the_background(history) -> None:
    """Kafka's shell on each node's newest snapshot and on its log from offset 0 (the history's
    own bytes), two JVMs at a time, beside a history written in the background."""
    scratch = history.root.with_name(f"{history.root.name}-kafka-shell")
    files = []
    for node in history.nodes:
        files.append((snapshot_label(node), node.snapshots[-1]))
        log = log_from_zero(node, scratch / f"log-{node.node_id}")
        if log is not None:
            files.append((log_label(node), log))
    with ThreadPoolExecutor(max_workers=2) as pool:  # its threads are as nice as the lane's
        walks = list(pool.map(lambda i: kafka_transcript(history.dist, files[i][1], scratch / f"run-{i}"),
                              range(len(files))))
    for (label, _), answers in zip(files, walks):
        _KAFKA[(history.version, str(history.root), label)] = answers


def log_from_zero(node, into: Path) -> Path | None:
    """The node's segments as one file when they run from offset 0 (Kafka's shell reads one file)."""
    segments = node.segments
    if not segments or int(segments[0].name.split(".")[0]) != 0:
        return None
    into.mkdir(parents=True, exist_ok=True)
    path = into / "00000000000000000000.log"
    path.write_bytes(b"".join(s.read_bytes() for s in segments))
    return path


def notable_points(log: Path, metadata_dir: Path) -> dict[str, int]:
    """For each notable state, the first batch end after which the image shows it (not inside
    a metadata transaction: Kafka's loader would not show that image yet)."""
    ends = [h.last_offset for _, h in read_batch_headers(log)]
    watched, open_at_end, in_transaction, batch = set(), set(), False, 0
    for entry in read_file(log):
        name = entry.record.type_name
        while ends[batch] < entry.offset:
            batch += 1
        if name == "BEGIN_TRANSACTION_RECORD":
            in_transaction = True
        elif name in ("END_TRANSACTION_RECORD", "ABORT_TRANSACTION_RECORD"):
            in_transaction = False
        elif name in WATCHED_RECORDS:
            watched.add(ends[batch])
        if entry.offset == ends[batch] and in_transaction:
            open_at_end.add(ends[batch])
    history = MetadataHistory.open_log_dir(metadata_dir, earliest=True)
    found: dict[str, int] = {}
    for offset in sorted(watched - open_at_end):
        image = history.image_at(offset=offset)[0]
        for state, shows in NOTABLE_STATES.items():
            if state not in found and shows(image):
                found[state] = offset
    return found


def log_prefix(log: Path, last_offset: int, into: Path) -> Path:
    """The log's batches up to ``last_offset`` (a batch's last) as a file of their own."""
    cut = next((pos for pos, h in read_batch_headers(log) if h.base_offset > last_offset), log.stat().st_size)
    into.mkdir(parents=True, exist_ok=True)
    path = into / log.name
    path.write_bytes(log.read_bytes()[:cut])
    return path


def results(history, scratch: Path) -> Results:
    """Every comparison for this history, made on first use (a failure too is kept, not redone)."""
    if history.version not in _RESULTS:
        try:
            _RESULTS[history.version] = _compare_all(history, scratch)
        except Exception as exc:  # noqa: BLE001 - every test of this version reports it
            _RESULTS[history.version] = exc
    made = _RESULTS[history.version]
    if isinstance(made, BaseException):
        raise AssertionError(f"comparing with kafka-metadata-shell {history.version} failed: {made}") from made
    return made


def _compare_all(history, scratch: Path) -> Results:
    made = Results()
    older = version_key(history.version) < OLDER_SHELL
    # (where the comparison goes, label, the file Kafka reads, our source of the same image,
    #  the offset ours seeks to, the commands not compared)
    jobs: list[tuple] = []
    logs = {}
    for node in history.nodes:
        newest = node.snapshots[-1]
        jobs.append((made.snapshots, snapshot_label(node), newest, Source(snapshot=newest), None, frozenset()))
        log = log_from_zero(node, scratch / f"log-{node.node_id}")
        if log is not None:
            logs[node.node_id] = log
            jobs.append((made.logs, log_label(node), log, Source(snapshot=log), None, frozenset()))
            jobs.append((made.logs, f"{log_label(node)} (ours from its directory)", log,
                         Source(log_dir=node.metadata_dir), None, frozenset({PROVENANCE})))
    chosen = next(n for n in history.nodes if n.node_id in logs)
    for state, offset in notable_points(logs[chosen.node_id], chosen.metadata_dir).items():
        prefix = log_prefix(logs[chosen.node_id], offset, scratch / f"point-{offset}")
        jobs.append((state, f"node {chosen.node_id} log to offset {offset} ({state})", prefix,
                     Source(log_dir=chosen.metadata_dir), offset, frozenset()))
    # our writer, as kraftd writes a snapshot, on the image of Kafka's newest snapshot
    original = chosen.snapshots[-1]
    image, _ = load_snapshot(original)
    (scratch / "written").mkdir()
    written = write_snapshot(scratch / "written", parse_snapshot_name(original.name), image_records(image),
                             last_contained_log_timestamp_ms=image.provenance.last_timestamp_ms,
                             now_ms=image.provenance.last_timestamp_ms, fsync=False)
    jobs.append((made.written, f"our writer's snapshot of node {chosen.node_id}'s {original.name}", written,
                 Source(snapshot=written), None, frozenset()))
    files = list(dict.fromkeys(job[2] for job in jobs))  # one Kafka walk per file
    labels = {job[2]: job[1] for job in reversed(jobs)}

    def walk(i: int) -> Answers:  # walked in the background already (the history's own files), or now
        made_before = _KAFKA.get((history.version, str(history.root), labels[files[i]]))
        if made_before is not None:
            return made_before
        return kafka_transcript(history.dist, files[i], scratch / f"run-{i}")

    with ThreadPoolExecutor(max_workers=2) as pool:  # CI has two cores
        walks = dict(zip(files, pool.map(walk, range(len(files)))))
    for where, label, path, source, offset, skip in jobs:
        ours, quota_names = our_transcript(source, list(walks[path]), older, offset)
        comparison = compare(label, walks[path], ours, quota_names, older, skip)
        if isinstance(where, str):
            made.points[where] = comparison
        else:
            where.append(comparison)
    made.written.append(same_in_kafka(f"Kafka's shell on node {chosen.node_id}'s {original.name} and on ours",
                                      walks[original], walks[written]))
    return made


def same_in_kafka(label: str, theirs: Answers, ours: Answers) -> Comparison:
    """Kafka's shell on Kafka's snapshot and on ours of the same image: the same answers to the same
    commands (but the provenance, which is about the file)."""
    comparison = Comparison(label)
    for command in sorted(theirs.keys() ^ ours.keys()):
        comparison.differences.append(f"{label}: {command}: asked of one file only")
    for command in sorted(theirs.keys() & ours.keys() - {PROVENANCE}):
        comparison.compared["command"] += 1
        comparison.compared["line"] += theirs[command].count("\n")
        if theirs[command] != ours[command]:
            comparison.differences.append(f"{label}: {command}: Kafka's snapshot {theirs[command][:300]!r}, "
                                          f"ours {ours[command][:300]!r}")
    return comparison


# -- the tests ------------------------------------------------------------------------------------------

@pytest.fixture
def compared(kafka_history, tmp_path_factory) -> Results:
    return results(kafka_history, tmp_path_factory.mktemp(f"kafka-shell-{kafka_history.version}"))


def _no_differences(comparisons: list[Comparison]) -> None:
    differences = [d for c in comparisons for d in c.differences]
    assert not differences, f"{len(differences)} differences from kafka-metadata-shell:\n" + "\n".join(differences[:60])


def test_every_nodes_newest_snapshot_reads_the_same(kafka_history, compared: Results) -> None:
    assert len(compared.snapshots) == len(kafka_history.nodes)
    _no_differences(compared.snapshots)


def test_every_nodes_log_reads_the_same_from_its_file_and_its_directory(compared: Results) -> None:
    assert len(compared.logs) >= 6  # the three first nodes, twice (the one added later starts from a snapshot)
    _no_differences(compared.logs)


def test_the_log_at_its_notable_points_reads_the_same(compared: Results) -> None:
    assert sorted(compared.points) == sorted(NOTABLE_STATES), "the history lacks a state the comparison needs"
    for state, comparison in compared.points.items():
        assert comparison.compared[state] > 0, f"{comparison.label}: Kafka's tree did not show it"
    _no_differences(list(compared.points.values()))


def test_our_writers_snapshot_reads_the_same_in_kafka(compared: Results) -> None:
    assert compared.written[-1].compared["line"] > 4000
    _no_differences(compared.written)


def test_the_comparison_covered_every_kind_of_leaf(compared: Results) -> None:
    """The negative control: a comparison that compared little would pass; this one must have
    compared thousands of lines, of every kind the history makes, and its rarer states."""
    from kafka_peer.history import WIDE_PARTITIONS

    total = sum((c.compared for c in compared.every()), Counter())
    newest = compared.snapshots[0].compared
    assert newest["partition"] >= 2 * WIDE_PARTITIONS  # byName and byId
    for kind, least in (("broker", 3), ("controller", 3), ("config", 8), ("quota", 4), ("scram", 3), ("acl", 4),
                        ("metadata version", 1)):
        assert newest[kind] >= least, f"{compared.snapshots[0].label}: only {newest[kind]} {kind} leaves compared"
    for state in NOTABLE_STATES:
        assert total[state] > 0, f"no {state} compared"
