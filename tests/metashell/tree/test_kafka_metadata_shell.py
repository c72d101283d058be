"""metashell's ``/image`` against Apache Kafka's own ``kafka-metadata-shell``, leaf by leaf.

Both read the same files of the scripted history (tests/kafka_peer/history.py): every node's
newest snapshot; every node's log (Kafka's shell reads a segment as it reads a snapshot, so the
segments from offset 0 give it the log's newest image, which ours builds from the directory);
prefixes of one node's log cut after the batches where a partition has an ELR, a broker is
fenced or shutting down, or a reassignment is in flight; and the image written back by our
writer (engine.image.image_writer, engine.storage.snapshot_writer, as kraftd writes snapshots).

Every path under ``/image`` must be in both trees, and every leaf's content the same, field by
field. Kafka prints Java objects' ``toString()``; ``parse_java`` (tests/kafka_shell_tree.py, which
also drives Kafka's shell) turns that into fields, and ``kafka_form`` turns our JSON into the same
fields. What differs in form only, and why:

* our leaves are JSON with snake_case or camelCase keys; Kafka prints ``Name(field=value)``.
* enums: we keep Kafka's numbers in the value and name them in ``human_value``; Kafka prints
  names. Booleans, numbers and ids are compared as the text Kafka prints.
* SCRAM salts and keys: Kafka prints hex; ours (with show_secrets, as here) base64. Redacted
  by default in ours, which Kafka's shell does not do.
* ``/image/provenance``: Kafka's shell reads any file as a log and skips its control batches,
  so it prints the last data batch's offset (inside the file, for a snapshot), epoch and max
  timestamp; we check that against the file. Ours is the image's as a broker's loader has it:
  for a log, the last batch's, control batches too (a LeaderChange often ends the log); for a
  snapshot, its end offset - 1, its epoch (compared with Kafka's) and the header's timestamp.
* quota entities with a default (null) part: Kafka names the entity without that part, and
  one with only default parts gets the empty name, which its shell lists but cannot open (and
  its ``find`` then fails). Ours is ``clientId(<default>)``; compared under Kafka's name when that
  name is not empty, else only checked to be listed by Kafka.
* Kafka 4.1 lists ``/image/features/zkMigrationState`` but cannot open it (4.3 no longer lists
  it); a listed name that Kafka cannot open counts as absent on its side.
* the order of ``find``: Kafka's is by name, ours numbers in numeric order; paths compare as sets.
"""

from __future__ import annotations

import base64
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from engine.image.image_writer import image_records
from engine.image.metadata_history import MetadataHistory
from engine.image.metadata_loader import load_log_dir, load_snapshot
from engine.records.record_batch import build_batch, encode_batch
from engine.storage.log_reader import read_batch_headers, read_file
from engine.storage.snapshot_writer import parse_snapshot_name, write_snapshot
from kafka_peer.fixtures import after_history
from metashell.tree.nodes import Node, decode_name, resolve, split_path, walk
from metashell.tree.root import build_tree
from tests.kafka_shell_tree import (KafkaTree, kafka_tree, last_batches, parse_java, parse_tree, provenance_of,
                                    shell_copy)

pytestmark = pytest.mark.kafka

DEFAULT_PART = re.compile(r"_?(clientId|ip|user)\(<default>\)")


def java_text(value: Any) -> Any:
    """Our JSON value as Kafka's toString() would spell its parts (booleans, numbers as text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return [java_text(v) for v in value]
    if isinstance(value, dict):
        return {k: java_text(v) for k, v in value.items()}
    return None if value is None else str(value)


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


# -- our leaves in Kafka's fields -------------------------------------------------------------

def _listeners(endpoints: list[dict]) -> list[dict]:
    return [{"__type__": "Endpoint", "listenerName": e["name"], "securityProtocol": e["security_protocol"],
             "host": e["host"], "port": e["port"]} for e in endpoints]


def _registration(kind: str, value: dict, human: dict) -> dict:
    shown = {"__type__": kind, "id": value["id"], "epoch": value.get("epoch"),
             "incarnationId": value["incarnation_id"]}
    if kind == "ControllerRegistration":
        del shown["epoch"]
        shown["zkMigrationReady"] = value["zk_migration_ready"]
    shown["listeners"] = _listeners(human["endpoints"])
    shown["supportedFeatures"] = {n: f"{lo}-{hi}" for n, (lo, hi) in value["supported_features"].items()}
    if kind == "BrokerRegistration":
        shown.update(rack=value["rack"], fenced=value["fenced"], inControlledShutdown=value["in_controlled_shutdown"],
                     isMigratingZkBroker=value["is_migrating_zk_broker"], directories=value["directories"],
                     cordonedDirectories=value["cordoned_directories"])
    return shown


def _partition(value: dict, human: dict) -> dict:
    return {"__type__": "PartitionRegistration", "replicas": value["replicas"], "directories": value["directories"],
            "isr": value["isr"], "removingReplicas": value["removingReplicas"],
            "addingReplicas": value["addingReplicas"], "elr": value["eligibleLeaderReplicas"],
            "lastKnownElr": value["lastKnownElr"], "leader": value["leader"],
            "leaderRecoveryState": human["leaderRecoveryState"], "leaderEpoch": value["leaderEpoch"],
            "partitionEpoch": value["partitionEpoch"]}


def _acl(human: dict) -> dict:
    return {"__type__": "StandardAcl", **{k: v for k, v in human.items() if k != "id"}}


def _scram(value: dict) -> dict:
    hexed = {k: base64.b64decode(value[k]).hex() for k in ("salt", "storedKey", "serverKey")}
    return {"__type__": "ScramCredentialData", **hexed, "iterations": value["iterations"]}


# (kind, path pattern, how Kafka's text reads, how our node reads as the same fields)
LEAVES: tuple[tuple[str, re.Pattern, Any, Any], ...] = tuple((kind, re.compile(pattern), kafka, ours) for
                                                             kind, pattern, kafka, ours in (
    ("metadata version", r"/image/features/metadataVersion", parse_java, lambda n: n.value()),
    ("feature", r"/image/features/finalized_[^/]+", str, lambda n: n.value()),
    ("broker", r"/image/cluster/brokers/\d+", parse_java,
     lambda n: _registration("BrokerRegistration", n.value(), n.human_value())),
    ("controller", r"/image/cluster/controllers/\d+", parse_java,
     lambda n: _registration("ControllerRegistration", n.value(), n.human_value())),
    ("topic name", r"/image/topics/by(Name|Id)/[^/]+/name", str, lambda n: n.value()),
    ("topic id", r"/image/topics/by(Name|Id)/[^/]+/id", str, lambda n: n.value()),
    ("partition", r"/image/topics/by(Name|Id)/[^/]+/\d+", parse_java, lambda n: _partition(n.value(), n.human_value())),
    ("config", r"/image/configs/[^/]+/[^/]+", str, lambda n: n.value()),
    ("client quota", r"/image/clientQuotas/[^/]+/[^/]+", float, lambda n: float(n.value())),
    ("producer ids", r"/image/producerIds/nextProducerId", str, lambda n: n.value()),
    ("acl", r"/image/acls/byId/[^/]+", parse_java, lambda n: _acl(n.human_value())),
    ("scram", r"/image/scram/SCRAM-SHA-(256|512)/[^/]+", parse_java, lambda n: _scram(n.value())),
))


# What Kafka's shell lists and cannot open (see the module docstring): nothing else may be so.
KAFKA_CANNOT_OPEN = {"/image/features/zkMigrationState", "/image/clientQuotas/"}
# Fields newer Kafka versions print: where an older one does not, ours must hold this.
NEWER_FIELDS = {"cordonedDirectories": None}  # KIP-1066, Kafka 4.3


def leaf_kind(path: str) -> tuple[str, Any, Any] | None:
    for kind, pattern, kafka, ours in LEAVES:
        if pattern.fullmatch(path):
            return kind, kafka, ours
    return None


def kafka_form(value: Any) -> Any:
    """Our fields as Kafka prints them: numbers, booleans and ids as text."""
    return java_text(value)


# -- our tree, by Kafka's paths ----------------------------------------------------------------

def kafka_name(part: str) -> str:
    """Kafka's name for one part of our path: our encoding undone, and a quota entity's default
    parts left out as Kafka leaves them out."""
    if "(<default>)" in part:
        part = DEFAULT_PART.sub("", part).lstrip("_")
    decoded = decode_name(part)
    return part if decoded is None else decoded


def our_tree(image, info) -> dict[str, Node]:
    """Every node under our /image, by the path Kafka's shell has for it."""
    root = build_tree(image, info, show_secrets=True)
    return {"/" + "/".join(kafka_name(p) for p in split_path(path)): node
            for path, node in walk(resolve(root, "/image"), "/image")}


# -- the comparison ------------------------------------------------------------------------------

@dataclass
class Comparison:
    label: str
    differences: list[str] = field(default_factory=list)
    compared: Counter = field(default_factory=Counter)  # leaf kinds (and notable states) compared

    def differ(self, path: str, what: str) -> None:
        self.differences.append(f"{self.label}: {path}: {what}")


def _fields_apart(ours: Any, kafka: Any) -> str:
    if isinstance(ours, dict) and isinstance(kafka, dict):
        keys = sorted(set(ours) | set(kafka))
        return "; ".join(f"{k}: ours {ours.get(k, '<absent>')!r}, Kafka {kafka.get(k, '<absent>')!r}"
                         for k in keys if ours.get(k, "<absent>") != kafka.get(k, "<absent>"))
    return f"ours {ours!r}, Kafka {kafka!r}"


def _note_states(comparison: Comparison, kind: str, shown: dict) -> None:
    """Count the rarer states a leaf showed, so the coverage check can ask for them."""
    if kind == "partition":
        comparison.compared["partition with ELR"] += bool(shown["elr"] or shown["lastKnownElr"])
        comparison.compared["partition being reassigned"] += bool(shown["addingReplicas"] or shown["removingReplicas"])
    elif kind == "broker":
        comparison.compared["fenced broker"] += shown["fenced"] == "true"
        comparison.compared["broker shutting down"] += shown["inControlledShutdown"] == "true"


def compare(label: str, kafka: KafkaTree, ours: dict[str, Node], batches: tuple[tuple, tuple],
            log: bool) -> Comparison:
    """Kafka's tree of a file against ours of the same image. ``batches``: the file's last data
    batch and last batch (``last_batches``), for the provenance (see the module docstring)."""
    comparison = Comparison(label)
    for path in sorted(kafka.unreachable - KAFKA_CANNOT_OPEN):
        comparison.differ(path, "listed by Kafka's shell, which cannot open it")
    quota_default = {p for p in ours if p.startswith("/image/clientQuotas//") or p == "/image/clientQuotas/"}
    if quota_default and "/image/clientQuotas/" not in kafka.unreachable:
        comparison.differ("/image/clientQuotas/", "an entity of default parts only, not listed by Kafka")
    comparison.compared["default quota entity (Kafka cannot open it)"] += bool(quota_default)
    for path in sorted(kafka.paths - ours.keys()):
        comparison.differ(path, "in Kafka's tree, not in ours")
    for path in sorted(ours.keys() - kafka.paths - quota_default):
        comparison.differ(path, "in our tree, not in Kafka's")
    for path in sorted(kafka.paths & ours.keys()):
        node = ours[path]
        if node.is_directory != (path not in kafka.leaves):
            comparison.differ(path, "a directory on one side, a leaf on the other")
        elif path == "/image/provenance":
            _compare_provenance(comparison, kafka, node.value(), batches, log)
        elif not node.is_directory:
            _compare_leaf(comparison, path, node, kafka.leaves[path])
    return comparison


def _compare_leaf(comparison: Comparison, path: str, node: Node, text: str) -> None:
    found = leaf_kind(path)
    if found is None:
        comparison.differ(path, f"a leaf this test has no comparison for: {text[:200]!r}")
        return
    kind, kafka_read, ours_read = found
    try:
        kafka = kafka_read(text)
    except ValueError as exc:
        comparison.differ(path, f"Kafka's text unreadable ({exc})")
        return
    ours = ours_read(node)
    if kind != "client quota":
        ours = kafka_form(ours)
    if isinstance(kafka, dict):
        for name in NEWER_FIELDS.keys() & ours.keys() - kafka.keys():
            if ours[name] == NEWER_FIELDS[name]:
                del ours[name]  # a field this Kafka does not have yet, and ours has nothing in it
    comparison.compared[kind] += 1
    if ours != kafka:
        comparison.differ(path, _fields_apart(ours, kafka))
    elif isinstance(kafka, dict):
        _note_states(comparison, kind, kafka)


def _compare_provenance(comparison: Comparison, kafka: KafkaTree, ours: dict, batches: tuple[tuple, tuple],
                        log: bool) -> None:
    last_data, last = batches
    shown = provenance_of(kafka.leaves["/image/provenance"])
    comparison.compared["provenance"] += 1
    if shown != last_data:
        comparison.differ("/image/provenance", f"Kafka's {shown}, the file's last data batch {last_data}")
    mine = (ours["last_offset"], ours["last_epoch"], ours["last_timestamp_ms"])
    if (mine != last) if log else (mine[1] != shown[1]):
        comparison.differ("/image/provenance", f"ours {mine}, Kafka's {shown}, the file's last batch {last}")


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
# Kafka's trees of a history's own files, made in the background right after it was written there
# (kafka_peer.fixtures.after_history), by (version, history root, label).
_KAFKA_TREES: dict[tuple[str, str, str], KafkaTree] = {}


def snapshot_label(node) -> str:
    return f"node {node.node_id} snapshot {node.snapshots[-1].name}"


def log_label(node) -> str:
    return f"node {node.node_id} log"


@after_history
def kafka_trees_in_the_background(history) -> None:
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
        trees = list(pool.map(lambda i: kafka_tree(history.dist, files[i][1], scratch / f"run-{i}"), range(len(files))))
    for (label, _), tree in zip(files, trees):
        _KAFKA_TREES[(history.version, str(history.root), label)] = tree


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
    jobs = []  # (where the comparison goes, label, file Kafka reads, our tree of it, a log?)
    logs = {}
    for node in history.nodes:
        newest = node.snapshots[-1]
        jobs.append((made.snapshots, snapshot_label(node), newest,
                     our_tree(*load_snapshot(newest)), False))
        log = log_from_zero(node, scratch / f"log-{node.node_id}")
        if log is not None:
            logs[node.node_id] = log
            jobs.append((made.logs, log_label(node), log, our_tree(*load_log_dir(node.metadata_dir)), True))
    chosen = next(n for n in history.nodes if n.node_id in logs)
    for state, offset in notable_points(logs[chosen.node_id], chosen.metadata_dir).items():
        prefix = log_prefix(logs[chosen.node_id], offset, scratch / f"point-{offset}")
        jobs.append((state, f"node {chosen.node_id} log to offset {offset} ({state})", prefix,
                     our_tree(*load_log_dir(chosen.metadata_dir, offset=offset)), True))
    # our writer, as kraftd writes a snapshot, on the image of Kafka's newest snapshot
    original = chosen.snapshots[-1]
    image, _ = load_snapshot(original)
    (scratch / "written").mkdir()
    written = write_snapshot(scratch / "written", parse_snapshot_name(original.name), image_records(image),
                             last_contained_log_timestamp_ms=image.provenance.last_timestamp_ms,
                             now_ms=image.provenance.last_timestamp_ms, fsync=False)
    jobs.append((made.written, f"our writer's snapshot of node {chosen.node_id}'s {original.name}", written,
                 our_tree(*load_snapshot(written)), False))
    def tree(i: int) -> KafkaTree:  # made in the background already (the history's own files), or now
        made_before = _KAFKA_TREES.get((history.version, str(history.root), jobs[i][1]))
        return made_before if made_before is not None else kafka_tree(history.dist, jobs[i][2], scratch / f"run-{i}")

    with ThreadPoolExecutor(max_workers=2) as pool:  # CI has two cores
        trees = list(pool.map(tree, range(len(jobs))))
    for (where, label, path, ours, log), tree in zip(jobs, trees):
        comparison = compare(label, tree, ours, last_batches(path), log)
        if isinstance(where, str):
            made.points[where] = comparison
        else:
            where.append(comparison)
    kafka_original = trees[[job[2] for job in jobs].index(original)]
    made.written.append(same_in_kafka(f"Kafka's shell on node {chosen.node_id}'s {original.name} and on ours",
                                      kafka_original, trees[-1]))
    return made


def same_in_kafka(label: str, theirs: KafkaTree, ours: KafkaTree) -> Comparison:
    """Kafka's shell on Kafka's snapshot and on ours of the same image: the same text, leaf by leaf
    (but the provenance, which is about the file)."""
    comparison = Comparison(label)
    for path in sorted(theirs.paths ^ ours.paths):
        comparison.differ(path, "in one tree only")
    for path in sorted(theirs.leaves.keys() & ours.leaves.keys() - {"/image/provenance"}):
        comparison.compared["leaf"] += 1
        if theirs.leaves[path] != ours.leaves[path]:
            comparison.differ(path, f"Kafka's snapshot {theirs.leaves[path]!r}, ours {ours.leaves[path]!r}")
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


def test_every_nodes_log_reads_the_same_as_its_directory(compared: Results) -> None:
    assert len(compared.logs) >= 3  # the three first nodes (the one added later starts from a snapshot)
    _no_differences(compared.logs)


def test_the_log_at_its_notable_points_reads_the_same(compared: Results) -> None:
    assert sorted(compared.points) == sorted(NOTABLE_STATES), "the history lacks a state the comparison needs"
    for state, comparison in compared.points.items():
        assert comparison.compared[state] > 0, f"{comparison.label}: Kafka's tree did not show it"
    _no_differences(list(compared.points.values()))


def test_our_writers_snapshot_reads_the_same_in_kafka(compared: Results) -> None:
    assert compared.written[-1].compared["leaf"] > 4000
    _no_differences(compared.written)


def test_the_comparison_covered_every_kind_of_leaf(compared: Results) -> None:
    """The negative control: a comparison that compared little would pass; this one must have
    compared thousands of leaves, of every kind the history makes."""
    from kafka_peer.history import WIDE_PARTITIONS

    total = sum((c.compared for c in compared.every()), Counter())
    newest = compared.snapshots[0].compared
    assert newest["partition"] >= 2 * WIDE_PARTITIONS  # byName and byId
    for kind, least in (("broker", 3), ("controller", 3), ("topic name", 8), ("topic id", 8), ("config", 8),
                        ("client quota", 4), ("scram", 3), ("acl", 4), ("producer ids", 1), ("feature", 3),
                        ("metadata version", 1), ("provenance", 1)):
        assert newest[kind] >= least, f"{compared.snapshots[0].label}: only {newest[kind]} {kind} leaves compared"
    for state in NOTABLE_STATES:
        assert total[state] > 0, f"no {state} compared"
    assert total["default quota entity (Kafka cannot open it)"] > 0
