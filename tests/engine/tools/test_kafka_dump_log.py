"""``kraftd dump-log`` against Kafka's own ``kafka-dump-log``, line for line, on every file of a real
cluster's history (tests/kafka_peer/history.py), for each tested Kafka version.

Every node's files are compared: the bootstrap snapshot (``bootstrap.checkpoint``), each snapshot
(``.checkpoint``) and each segment (``.log``) of ``__cluster_metadata-0``. For each way of
printing that both tools share (``MODES``), Kafka's output is the expected text, with no
normalisation at all: the batch lines (offsets, positions, CRCs, timestamps, codecs), the record
lines (sizes, sequences, header keys), the control records' labels and every record's JSON must
be the same characters. What Kafka writes to stderr (log4j's warnings) is not compared.

One normalisation, of Kafka's side only, where Kafka's own releases disagree: with
``--skip-record-metadata`` the Scala tool of Kafka 4.1 (``kafka.tools.DumpLogSegments``) prints a
record as `` payload: {...}``, the Java tool that replaced it (``org.apache.kafka.tools``, 4.3)
as ``| payload: {...}``. ``kraftd`` prints the newer form, so the older tool's lines get their
``|`` back before the comparison (``kafka_lines``). Both print a skipped control record as an
empty line, and that is compared as it is.

Not compared, because ``kraftd dump-log`` does not offer it: Kafka's output without a decoder
(batch lines only, or with ``--print-data-log`` the raw value bytes as text) and the other
decoders (offsets, transactions, share groups, remote log metadata); ours always decodes the
metadata records, as Kafka's ``--cluster-metadata-decoder`` does (which implies
``--print-data-log`` and ``--deep-iteration``).

Cost: one kafka-dump-log JVM per history and mode, over every node's files at once
(``--files a,b,c``); its output is split at the ``Dumping FILE`` lines and kept per version in
``_KAFKA``, so the parametrised tests share it. For a history written in the background (before
the tests that run Kafka, kafka_peer.fixtures), those JVMs run there too, right after it.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from engine.tools.cli import run
from kafka_peer.distribution import KafkaDistribution
from kafka_peer.fixtures import after_history
from kafka_peer.history import KafkaHistory, NodeData

pytestmark = pytest.mark.kafka

# The flags given to both tools, by mode. Ours always decodes, so the decoder flag is Kafka's only.
MODES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "decoder": (("--cluster-metadata-decoder",), ()),
    "skip-record-metadata": (("--cluster-metadata-decoder", "--skip-record-metadata"), ("--skip-record-metadata",)),
}
NODE_IDS = (1, 2, 3, 4)  # three combined nodes, and the controller added then removed (KIP-853)
HEADER = "Dumping "
SCALA_TOOL = "kafka.tools.DumpLogSegments"  # Kafka 4.1's; 4.3 has a Java one in org.apache.kafka.tools

Sections = dict[str, list[str]]
_KAFKA: dict[tuple[str, str, str], Sections] = {}
_OURS: dict[tuple[str, str, str, int], Sections] = {}


def node_files(node: NodeData) -> list[Path]:
    """Every file of a node that holds record batches: bootstrap snapshot, snapshots, segments."""
    bootstrap = node.log_dir / "bootstrap.checkpoint"
    return ([bootstrap] if bootstrap.is_file() else []) + node.snapshots + node.segments


def split_by_file(text: str) -> Sections:
    """Each file's lines (its banner, batch and record lines) by the path in its ``Dumping`` line."""
    sections: Sections = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith(HEADER):
            path = line[len(HEADER):]
            assert path not in sections, f"{path} dumped twice"
            current = sections[path] = []
        elif current is None:
            raise AssertionError(f"a line before the first {HEADER!r} header: {line!r}")
        else:
            current.append(line)
    return sections


def kafka_lines(dist: KafkaDistribution, mode: str, text: str) -> str:
    """Kafka's output, with the one difference between Kafka's releases taken out (see the top)."""
    if mode == "skip-record-metadata" and dist.main_class("kafka-dump-log") == SCALA_TOOL:
        return re.sub(r"^ payload: ", "| payload: ", text, flags=re.MULTILINE)
    return text


def kafka_dump(history: KafkaHistory, mode: str) -> Sections:
    """kafka-dump-log over every node's files: one JVM per history and mode, kept for the session."""
    key = (history.version, str(history.root), mode)
    if key not in _KAFKA:
        files = [str(p) for node in history.nodes for p in node_files(node)]
        assert not any("," in f for f in files), "--files splits at commas"
        done = history.dist.run("kafka-dump-log", *MODES[mode][0], "--files", ",".join(files), timeout_s=600)
        _KAFKA[key] = split_by_file(kafka_lines(history.dist, mode, done.stdout))
        assert sorted(_KAFKA[key]) == sorted(files), "kafka-dump-log did not dump every file given"
    return _KAFKA[key]


@after_history
def kafka_dumps_in_the_background(history: KafkaHistory) -> None:
    """Kafka's dumps, in every mode, of a history the background wrote: only Kafka's tool and text."""
    for mode in MODES:
        kafka_dump(history, mode)


def our_dump(history: KafkaHistory, mode: str, node: NodeData) -> Sections:
    """``kraftd dump-log`` on the node's bootstrap snapshot and its metadata directory (which stands
    for its snapshots then segments), in this process; kept for the session."""
    key = (history.version, str(history.root), mode, node.node_id)
    if key not in _OURS:
        bootstrap = [str(p) for p in node_files(node) if p.name == "bootstrap.checkpoint"]
        stdout, errors = io.StringIO(), []
        with contextlib.redirect_stdout(stdout):
            code = run(["dump-log", *MODES[mode][1], *bootstrap, str(node.metadata_dir)], err=errors.append)
        assert (code, errors) == (0, []), f"kraftd dump-log failed on node {node.node_id}: {errors}"
        _OURS[key] = split_by_file(stdout.getvalue())
    return _OURS[key]


def differences(expected: Sections, actual: Sections) -> list[str]:
    """One sentence per file whose dumps differ: where, and the first differing line of each."""
    problems = []
    for path in sorted(expected.keys() | actual.keys()):
        if path not in actual or path not in expected:
            problems.append(f"{path}: dumped only by {'Kafka' if path in expected else 'kraftd'}")
            continue
        want, got = expected[path], actual[path]
        for index, (w, g) in enumerate(zip(want, got)):
            if w != g:
                problems.append(f"{path} line {index + 2}:\n  kafka:  {w}\n  kraftd: {g}")
                break
        else:
            if len(want) != len(got):
                problems.append(f"{path}: kafka printed {len(want)} lines, kraftd {len(got)}")
    return problems


def node_of(history: KafkaHistory, node_id: int) -> NodeData:
    nodes = {n.node_id: n for n in history.nodes}
    assert node_id in nodes, f"the history has nodes {sorted(nodes)}, not {node_id}"
    return nodes[node_id]


def kafka_sections_of(history: KafkaHistory, mode: str, node: NodeData) -> Sections:
    everything = kafka_dump(history, mode)
    return {str(p): everything[str(p)] for p in node_files(node)}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("node_id", NODE_IDS)
def test_kraftd_dump_log_prints_what_kafka_dump_log_prints(kafka_history, node_id, mode):
    node = node_of(kafka_history, node_id)
    assert node.snapshots and node.segments, f"node {node_id} kept no snapshot or no segment"
    expected = kafka_sections_of(kafka_history, mode, node)
    problems = differences(expected, our_dump(kafka_history, mode, node))
    assert not problems, (f"Kafka {kafka_history.version}, node {node_id}, {mode}: {len(problems)} of "
                          f"{len(expected)} files differ\n" + "\n".join(problems))


# What the history must have put in front of both tools for the comparison to mean something.
METADATA_TYPES = {
    "FEATURE_LEVEL_RECORD", "REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD",
    "REGISTER_CONTROLLER_RECORD", "TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD",
    "REMOVE_TOPIC_RECORD", "CONFIG_RECORD", "CLIENT_QUOTA_RECORD", "USER_SCRAM_CREDENTIAL_RECORD",
    "ACCESS_CONTROL_ENTRY_RECORD", "PRODUCER_IDS_RECORD", "BEGIN_TRANSACTION_RECORD",
    "END_TRANSACTION_RECORD", "NO_OP_RECORD",
}
CONTROL_LABELS = {"LeaderChange:", "KRaftVersion", "KRaftVoters", "SnapshotHeader", "SnapshotFooter"}
RECORD = re.compile(r"\| offset: \d+ \w+: -?\d+ keySize: -?\d+ valueSize: -?\d+ sequence: -?\d+ "
                    r"headerKeys: \[[^]]*\] (?:payload: (?P<payload>\{.*\})|(?P<label>\S+) \{.*\})")


def test_the_comparison_covers_every_kind_of_record(kafka_history):
    """Not vacuous: thousands of records compared, of every type the history writes, among them
    partition changes with ELR fields and voter sets that grew to four and shrank back; and a
    one-character difference is caught."""
    types: Counter[str] = Counter()
    labels: Counter[str] = Counter()
    elr_changes = voter_counts = 0
    seen_voters: set[int] = set()
    for node in kafka_history.nodes:
        expected = kafka_sections_of(kafka_history, "decoder", node)
        assert differences(expected, our_dump(kafka_history, "decoder", node)) == []
        for lines in expected.values():
            for line in lines:
                match = RECORD.fullmatch(line)
                if match is None:
                    continue
                if match["payload"]:
                    record = json.loads(match["payload"])
                    types[record["type"]] += 1
                    data = record["data"]
                    if record["type"] == "PARTITION_CHANGE_RECORD" and (
                            "eligibleLeaderReplicas" in data or "lastKnownElr" in data):
                        elr_changes += 1
                else:
                    labels[match["label"]] += 1
                    if match["label"] == "KRaftVoters":
                        voters = json.loads(line.split(" KRaftVoters ", 1)[1])["voters"]
                        seen_voters.update(v["voterId"] for v in voters)
                        voter_counts += 1
    assert sum(types.values()) > 5000, types
    assert METADATA_TYPES <= set(types), f"missing: {sorted(METADATA_TYPES - set(types))}"
    assert types["PARTITION_RECORD"] >= 2000, types  # the wide topic, in the log and in snapshots
    assert elr_changes > 0, "no PartitionChangeRecord with ELR fields"
    assert CONTROL_LABELS <= set(labels), labels
    assert seen_voters == {1, 2, 3, 4} and voter_counts > 1, seen_voters

    # The comparison itself: one changed character in one record is one difference, named.
    node = kafka_history.nodes[0]
    ours = {path: list(lines) for path, lines in our_dump(kafka_history, "decoder", node).items()}
    path = next(p for p, lines in ours.items() if any('"PARTITION_CHANGE_RECORD"' in ln for ln in lines))
    index = next(i for i, ln in enumerate(ours[path]) if '"PARTITION_CHANGE_RECORD"' in ln)
    ours[path][index] = ours[path][index].replace('"version":', '"version": ', 1)
    problems = differences(kafka_sections_of(kafka_history, "decoder", node), ours)
    assert len(problems) == 1 and problems[0].startswith(f"{path} line {index + 2}:"), problems
