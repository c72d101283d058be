"""``kraftd storage format | info | random-uuid`` against what kafka-storage writes (KIP-631, KIP-853).

Runs ``engine.tools.cli.run`` in-process (stdout through capsys, stderr lines collected),
with a controller.properties written by each test into tmp_path. The bootstrap
checkpoints are compared with the ones real Kafka servers wrote (../shared/corpus).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from engine.tools.cli import run
from engine.common.kafka_uuid import kafka_to_uuid, random_kafka_uuid, uuid_to_kafka
from engine.storage.log_reader import LogEntry, read_batches, read_file
from engine.storage.meta_properties import read_meta_properties
from engine.records.metadata_record_serde import ControlRecord, MetadataRecord
from engine.records.record_batch import RecordBatch, encode_batch
from engine.records.record_json import record_to_json
from tests.conftest import corpus_file

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
BOOTSTRAP = "bootstrap.checkpoint"
VOTERS_SNAPSHOT = Path("__cluster_metadata-0") / "00000000000000000000-0000000000.checkpoint"
PORT = 19093


# ---------------------------------------------------------------------------------------------
# helpers


@dataclasses.dataclass
class Node:
    config: Path
    metadata_dir: Path
    data_dirs: list[Path]

    @property
    def all_dirs(self) -> list[Path]:
        return [*self.data_dirs, self.metadata_dir]


def make_node(tmp_path: Path, *, node_id: int = 1, port: int = PORT, static_voters: str | None = None,
              roles: str = "controller", data_dirs: int = 2) -> Node:
    metadata_dir = tmp_path / "metadata"
    data = [tmp_path / f"data{i}" for i in range(data_dirs)]
    lines = [
        f"process.roles={roles}",
        f"node.id={node_id}",
        f"listeners=CONTROLLER://localhost:{port}" + (",PLAINTEXT://localhost:19092" if "broker" in roles else ""),
        "controller.listener.names=CONTROLLER",
        (f"controller.quorum.voters={static_voters}" if static_voters
         else f"controller.quorum.bootstrap.servers=localhost:{port}"),
        f"metadata.log.dir={metadata_dir}",
        f"log.dirs={','.join(map(str, data))}" if data else "",
    ]
    config = tmp_path / "controller.properties"
    config.write_text("# written by the test\n" + "\n".join(line for line in lines if line) + "\n")
    return Node(config, metadata_dir, data)


def kraftd(*argv: str | Path) -> tuple[int, list[str]]:
    """(exit code, stderr lines) of an in-process run."""
    errors: list[str] = []
    code = run([str(a) for a in argv], err=errors.append)
    return code, errors


def fmt(node: Node, *flags: str, cluster_id: str = CLUSTER_ID) -> tuple[int, list[str]]:
    return kraftd("storage", "format", "--config", node.config, "--cluster-id", cluster_id, *flags)


def assert_refused(result: tuple[int, list[str]], *fragments: str) -> str:
    code, errors = result
    assert code == 1 and len(errors) == 1, result
    line = errors[0]
    assert line.startswith("kraftd: ") and "\n" not in line, line
    for fragment in fragments:
        assert fragment in line, f"{fragment!r} not in {line!r}"
    return line


def records(path: Path) -> list[LogEntry]:
    return list(read_file(path))


def type_names(entries: list[LogEntry]) -> list[str]:
    return [entry.record.type_name for entry in entries]


def feature_levels(path: Path) -> list[tuple[str, int]]:
    return [(e.record.message.name, int(e.record.message.feature_level)) for e in records(path)
            if isinstance(e.record, MetadataRecord)]


def batches(path: Path) -> list[RecordBatch]:
    return [batch for _, batch in read_batches(path)]


def without_timestamps(batch: RecordBatch) -> bytes:
    """The batch's bytes with its timestamps zeroed (the CRC recomputed): all that may differ."""
    assert all(r.timestamp_delta == 0 for r in batch.records)
    return encode_batch(dataclasses.replace(batch, base_timestamp=0, max_timestamp=0, compressed_records=None))


# ---------------------------------------------------------------------------------------------
# (a) --standalone


@pytest.mark.parametrize(("release", "level"), [(None, 30), ("4.4", 33), ("4.1", 27), ("4.0-IV3", 25), ("3.9", 21)])
def test_standalone(tmp_path: Path, capsys, release: str | None, level: int) -> None:
    node = make_node(tmp_path)
    flags = ["--standalone"] + (["--release-version", release] if release else [])
    assert fmt(node, *flags) == (0, [])
    out = capsys.readouterr().out
    assert f"Formatting metadata directory {node.metadata_dir} with metadata.version " in out

    metas = {d: read_meta_properties(d) for d in node.all_dirs}
    for meta in metas.values():
        assert (meta.version, meta.cluster_id, meta.node_id) == (1, CLUSTER_ID, 1)
        assert meta.directory_id is not None
    assert len({m.directory_id for m in metas.values()}) == len(node.all_dirs)  # distinct

    # bootstrap.checkpoint: header, FeatureLevelRecords (metadata.version first), footer
    bootstrap = records(node.metadata_dir / BOOTSTRAP)
    names = type_names(bootstrap)
    assert names[0] == "SNAPSHOT_HEADER" and names[-1] == "SNAPSHOT_FOOTER"
    assert set(names[1:-1]) == {"FEATURE_LEVEL_RECORD"}
    levels = feature_levels(node.metadata_dir / BOOTSTRAP)
    assert levels[0] == ("metadata.version", level)
    assert [name for name, _ in levels[1:]] == sorted(name for name, _ in levels[1:])
    if level == 27:  # what Kafka 4.1's formatter wrote (Yashasvi960__kafka-service)
        assert levels == [("metadata.version", 27), ("eligible.leader.replicas.version", 1),
                          ("group.version", 1), ("transaction.version", 2)]

    # the 0-0 checkpoint: header, kraft.version 1, the one voter, footer
    snapshot = records(node.metadata_dir / VOTERS_SNAPSHOT)
    assert type_names(snapshot) == ["SNAPSHOT_HEADER", "KRAFT_VERSION", "KRAFT_VOTERS", "SNAPSHOT_FOOTER"]
    assert all(isinstance(e.record, ControlRecord) for e in snapshot)
    assert snapshot[1].record.message.k_raft_version == 1
    (voter,) = snapshot[2].record.message.voters
    assert voter.voter_id == 1
    assert voter.voter_directory_id == metas[node.metadata_dir].directory_id
    assert [(e.name, e.host, int(e.port)) for e in voter.endpoints] == [("CONTROLLER", "localhost", PORT)]

    # only the metadata directory holds metadata files
    for data_dir in node.data_dirs:
        assert sorted(p.name for p in data_dir.iterdir()) == ["meta.properties"]
    assert not list(tmp_path.rglob("*.part"))


@pytest.mark.parametrize(("release", "level"), [("3.3", 7), ("3.7", 19), ("3.8-IV0", 20)])
def test_static_voters_release_versions(tmp_path: Path, capsys, release: str, level: int) -> None:
    node = make_node(tmp_path, static_voters=f"1@localhost:{PORT}")
    assert fmt(node, "--release-version", release) == (0, [])
    assert feature_levels(node.metadata_dir / BOOTSTRAP)[0] == ("metadata.version", level)
    assert not (node.metadata_dir / VOTERS_SNAPSHOT).exists()  # static quorum: kraft.version 0
    assert not (node.metadata_dir / "__cluster_metadata-0").exists()


# ---------------------------------------------------------------------------------------------
# (b) --initial-controllers


def test_initial_controllers(tmp_path: Path, capsys) -> None:
    id1, id2 = uuid_to_kafka(random_kafka_uuid()), uuid_to_kafka(random_kafka_uuid())
    node = make_node(tmp_path, node_id=1, port=9093)
    assert fmt(node, "--initial-controllers", f"1@localhost:9093:{id1},2@localhost:9094:{id2}") == (0, [])

    meta = read_meta_properties(node.metadata_dir)
    assert meta.directory_id == kafka_to_uuid(id1)
    data_ids = {read_meta_properties(d).directory_id for d in node.data_dirs}
    assert len(data_ids) == len(node.data_dirs) and not data_ids & {kafka_to_uuid(id1), kafka_to_uuid(id2)}

    snapshot = records(node.metadata_dir / VOTERS_SNAPSHOT)
    assert type_names(snapshot) == ["SNAPSHOT_HEADER", "KRAFT_VERSION", "KRAFT_VOTERS", "SNAPSHOT_FOOTER"]
    voters = snapshot[2].record.message.voters
    assert [(v.voter_id, uuid_to_kafka(v.voter_directory_id), [(e.name, e.host, int(e.port)) for e in v.endpoints])
            for v in voters] == [(1, id1, [("CONTROLLER", "localhost", 9093)]),
                                 (2, id2, [("CONTROLLER", "localhost", 9094)])]


@pytest.mark.parametrize("bad", ["1@localhost:9093", "x@localhost:9093:AAAAAAAAAAAAAAAAAAAAAA",
                                 "1@localhost:9093:not-an-id",
                                 "1@localhost:9093:AAAAAAAAAAAAAAAAAAAAAQ,1@localhost:9094:AAAAAAAAAAAAAAAAAAAAAg"])
def test_bad_initial_controllers(tmp_path: Path, bad: str) -> None:
    node = make_node(tmp_path)
    assert_refused(fmt(node, "--initial-controllers", bad), "initial-controllers")
    assert not node.metadata_dir.exists()


# ---------------------------------------------------------------------------------------------
# (c) the same bootstrap.checkpoint as real Kafka wrote

CORPUS_BOOTSTRAPS = [
    ("Yashasvi960__kafka-service", "4.1-IV1", 27, None),
    ("AdiletBatyrbayev0520__air_analyzer", "4.0-IV3", 25, None),
    ("hiage__kafka-raft/kafka1", "3.3-IV3", 7, "1@kafka1:9093,2@kafka2:9093,3@kafka3:9093"),
]


@pytest.mark.corpus
@pytest.mark.parametrize(("folder", "release", "level", "static_voters"), CORPUS_BOOTSTRAPS,
                         ids=[c[0].split("__")[0] for c in CORPUS_BOOTSTRAPS])
def test_bootstrap_checkpoint_matches_corpus(tmp_path: Path, capsys, folder: str, release: str, level: int,
                                             static_voters: str | None) -> None:
    theirs_path = corpus_file(*folder.split("/"), BOOTSTRAP)
    node = make_node(tmp_path, static_voters=static_voters,
                     roles="broker,controller" if static_voters else "controller")
    assert fmt(node, "--release-version", release, *([] if static_voters else ["--standalone"])) == (0, [])
    ours_path = node.metadata_dir / BOOTSTRAP

    def logical(path: Path) -> list[tuple[str, str]]:
        return [(e.record.type_name, record_to_json(e.record)) for e in read_file(path)]

    assert logical(ours_path) == logical(theirs_path)
    assert feature_levels(ours_path)[0] == ("metadata.version", level)

    def layout(path: Path) -> list[tuple]:
        return [(b.base_offset, b.last_offset, len(b.records), b.is_control, b.partition_leader_epoch, b.attributes,
                 b.producer_id, b.producer_epoch, b.base_sequence) for b in batches(path)]

    ours, theirs = layout(ours_path), layout(theirs_path)
    assert ours == theirs
    # header batch of 1 control record, one data batch, footer batch; leader epoch 0
    count = len(feature_levels(ours_path))
    assert ours == [(0, 0, 1, True, 0, 0x20, -1, -1, -1), (1, count, count, False, 0, 0, -1, -1, -1),
                    (count + 1, count + 1, 1, True, 0, 0x20, -1, -1, -1)]
    # and byte for byte the same batches, once their timestamps are set aside
    assert [without_timestamps(b) for b in batches(ours_path)] == [without_timestamps(b) for b in batches(theirs_path)]
    if static_voters:
        assert not (node.metadata_dir / "__cluster_metadata-0").exists()


# ---------------------------------------------------------------------------------------------
# (d) formatting twice


def test_format_twice(tmp_path: Path, capsys) -> None:
    node = make_node(tmp_path)
    assert fmt(node, "--standalone") == (0, [])
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file() and p != node.config)
    before = {p: p.read_bytes() for p in files}

    line = assert_refused(fmt(node, "--standalone"), "already formatted")
    assert str(node.data_dirs[0]) in line  # the first formatted directory found

    capsys.readouterr()
    assert fmt(node, "--standalone", "--ignore-formatted") == (0, [])
    assert "already formatted" in capsys.readouterr().out
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file() and p != node.config) == files
    assert {p: p.read_bytes() for p in files} == before  # nothing rewritten


def test_ignore_formatted_formats_the_rest(tmp_path: Path, capsys) -> None:
    node = make_node(tmp_path)
    assert fmt(node, "--standalone") == (0, [])
    first_id = read_meta_properties(node.data_dirs[0]).directory_id
    for path in sorted(node.metadata_dir.rglob("*"), reverse=True):  # wipe the metadata dir only
        path.rmdir() if path.is_dir() else path.unlink()
    assert_refused(fmt(node, "--standalone"), "already formatted")
    assert fmt(node, "--standalone", "--ignore-formatted") == (0, [])
    assert read_meta_properties(node.data_dirs[0]).directory_id == first_id
    assert (node.metadata_dir / BOOTSTRAP).is_file() and (node.metadata_dir / VOTERS_SNAPSHOT).is_file()


# ---------------------------------------------------------------------------------------------
# (e) refused quorum options


@pytest.mark.parametrize("flags", [["--standalone"], ["--initial-controllers", "1@localhost:19093:AAAAAAAAAAAAAAAAAAAAAQ"]],
                         ids=["standalone", "initial-controllers"])
def test_static_voters_refuse_dynamic_flags(tmp_path: Path, flags: list[str]) -> None:
    node = make_node(tmp_path, static_voters=f"1@localhost:{PORT}")
    assert_refused(fmt(node, *flags), "controller.quorum.voters")
    assert not any(d.exists() for d in node.all_dirs)


def test_dynamic_controller_needs_a_quorum_flag(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    assert_refused(fmt(node), "--standalone", "--initial-controllers", "--no-initial-controllers")
    assert not any(d.exists() for d in node.all_dirs)


def test_no_initial_controllers(tmp_path: Path, capsys) -> None:
    node = make_node(tmp_path)
    assert fmt(node, "--no-initial-controllers") == (0, [])
    assert (node.metadata_dir / BOOTSTRAP).is_file()
    assert not (node.metadata_dir / VOTERS_SNAPSHOT).exists()


def test_standalone_on_a_broker_is_refused(tmp_path: Path) -> None:
    node = make_node(tmp_path, roles="broker")
    assert_refused(fmt(node, "--standalone"), "controller")
    assert not node.metadata_dir.exists()


def test_two_quorum_flags_are_refused(tmp_path: Path) -> None:
    node = make_node(tmp_path)
    assert_refused(fmt(node, "--standalone", "--no-initial-controllers"), "not allowed with")
    assert not node.metadata_dir.exists()


# ---------------------------------------------------------------------------------------------
# (f) storage info


def test_storage_info(tmp_path: Path, capsys) -> None:
    node = make_node(tmp_path)
    assert fmt(node, "--standalone") == (0, [])
    capsys.readouterr()
    assert kraftd("storage", "info", "--config", node.config) == (0, [])
    out = capsys.readouterr().out
    assert out.startswith("Found log directories:\n")
    assert "problem" not in out.lower()
    for directory in node.all_dirs:
        meta = read_meta_properties(directory)
        assert f"\n  {directory}\n" in out
        assert (f"Found metadata in {directory}: {{cluster.id={CLUSTER_ID}, "
                f"directory.id={uuid_to_kafka(meta.directory_id)}, node.id=1, version=1}}") in out


def test_storage_info_node_id_mismatch(tmp_path: Path, capsys) -> None:
    node = make_node(tmp_path)
    assert fmt(node, "--standalone") == (0, [])
    other = make_node(tmp_path, node_id=2)  # same directories, another node.id
    capsys.readouterr()
    code, errors = kraftd("storage", "info", "--config", other.config)
    out = capsys.readouterr().out
    assert code == 1 and "Traceback" not in out + "".join(errors)
    assert "Found problems:" in out and "node.id 1 does not match the configured 2" in out


# ---------------------------------------------------------------------------------------------
# (g) random-uuid


def test_random_uuid(capsys) -> None:
    seen = set()
    for _ in range(5):
        assert kraftd("storage", "random-uuid") == (0, [])
        text = capsys.readouterr().out
        assert text.endswith("\n") and text.count("\n") == 1
        value = text.strip()
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", value), value
        assert uuid_to_kafka(kafka_to_uuid(value)) == value
        assert not value.startswith("-")
        seen.add(value)
    assert len(seen) == 5


# ---------------------------------------------------------------------------------------------
# Where Kafka's formatter refuses or omits things (each once a divergence, now pinned)


def test_standalone_before_3_9_is_refused(tmp_path: Path, capsys) -> None:
    node = make_node(tmp_path)
    assert_refused(fmt(node, "--standalone", "--release-version", "3.7"), "metadata.version")
    assert not node.metadata_dir.exists()


def test_feature_metadata_version_is_honoured(tmp_path: Path, capsys) -> None:
    node = make_node(tmp_path, static_voters=f"1@localhost:{PORT}")
    assert fmt(node, "--feature", "metadata.version=19") == (0, [])
    assert feature_levels(node.metadata_dir / BOOTSTRAP)[0] == ("metadata.version", 19)


def test_feature_level_zero_writes_no_record(tmp_path: Path, capsys) -> None:
    node = make_node(tmp_path)
    assert fmt(node, "--standalone", "--release-version", "4.1", "--feature", "group.version=0") == (0, [])
    assert "group.version" not in dict(feature_levels(node.metadata_dir / BOOTSTRAP))


def test_kraft_version_is_not_a_bootstrap_record(tmp_path: Path, capsys) -> None:
    node = make_node(tmp_path)
    assert fmt(node, "--standalone", "--feature", "kraft.version=1") == (0, [])
    assert "kraft.version" not in dict(feature_levels(node.metadata_dir / BOOTSTRAP))


def test_unknown_feature_is_refused(tmp_path: Path, capsys) -> None:
    node = make_node(tmp_path)
    assert_refused(fmt(node, "--standalone", "--feature", "nosuch.feature=3"), "nosuch.feature")


def test_voters_snapshot_batch_layout_matches_kafka(tmp_path: Path, capsys) -> None:
    node = make_node(tmp_path)
    assert fmt(node, "--standalone") == (0, [])
    layout = [(b.base_offset, len(b.records), b.is_control) for b in batches(node.metadata_dir / VOTERS_SNAPSHOT)]
    assert layout == [(0, 3, True), (3, 1, True)]
