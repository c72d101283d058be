"""quorum-state, leader-epoch-checkpoint and partition.metadata: round trips and bad input."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.common.errors import StorageError
from engine.common.kafka_uuid import METADATA_TOPIC_ID, ZERO_UUID, uuid_to_kafka
from engine.storage.leader_epoch_checkpoint import (
    dump_leader_epoch_checkpoint,
    parse_leader_epoch_checkpoint,
    read_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)
from engine.storage.partition_metadata_file import (
    PartitionMetadata,
    read_partition_metadata,
    write_partition_metadata,
)
from engine.storage.quorum_state_file import (
    QuorumStateData,
    dump_quorum_state,
    parse_quorum_state,
    read_quorum_state,
    write_quorum_state,
)

V0_TEXT = ('{"clusterId":"","leaderId":1,"leaderEpoch":3,"votedId":-1,"appliedOffset":0,'
           '"currentVoters":[{"voterId":1}],"data_version":0}')
V1_TEXT = '{"leaderId":-1,"leaderEpoch":2,"votedId":1,"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ","data_version":1}'


def _expect_error(path: Path, content: str | bytes, reason: str, reader) -> StorageError:
    """Write ``content`` to ``path``, read it, and check the error names the file and reason."""
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(StorageError) as e:
        reader(path)
    assert str(path) in str(e.value), str(e.value)
    assert reason in str(e.value), str(e.value)
    return e.value


# ------------------------------------------------------------------ quorum-state


def test_quorum_state_v1_example_from_kafka_docs(tmp_path: Path) -> None:
    state = parse_quorum_state(V1_TEXT)
    assert state == QuorumStateData(-1, 2, 1, voted_directory_id=state.voted_directory_id, data_version=1)
    assert uuid_to_kafka(state.voted_directory_id) == "J8aAPcfLQt2bqs1JT_rMgQ"
    write_quorum_state(tmp_path / "quorum-state", state)
    assert (tmp_path / "quorum-state").read_text() == V1_TEXT


def test_quorum_state_defaults_write_v1_with_zero_directory() -> None:
    assert dump_quorum_state(QuorumStateData()) == \
        '{"leaderId":-1,"leaderEpoch":-1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}'
    assert parse_quorum_state(dump_quorum_state(QuorumStateData())) == QuorumStateData()


def test_quorum_state_v0_null_voters_and_escaped_cluster_id() -> None:
    state = QuorumStateData(3, 7, 3, cluster_id='a"b\\c\x01é', applied_offset=42, data_version=0)
    text = dump_quorum_state(state)
    assert text == ('{"clusterId":"a\\"b\\\\c\\u0001é","leaderId":3,"leaderEpoch":7,"votedId":3,'
                    '"appliedOffset":42,"currentVoters":null,"data_version":0}')
    assert parse_quorum_state(text) == state


def test_quorum_state_write_replaces_atomically(tmp_path: Path) -> None:
    path = tmp_path / "quorum-state"
    path.write_text(V0_TEXT)
    write_quorum_state(path, QuorumStateData(leader_id=2, leader_epoch=4))
    assert read_quorum_state(path) == QuorumStateData(leader_id=2, leader_epoch=4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quorum-state"]


@pytest.mark.parametrize("state, field", [
    (QuorumStateData(current_voters=(1,)), "current_voters"),
    (QuorumStateData(cluster_id="x"), "cluster_id"),
    (QuorumStateData(applied_offset=5), "applied_offset"),
    (QuorumStateData(voted_directory_id=uuid.UUID(int=9), data_version=0), "voted_directory_id"),
    (QuorumStateData(data_version=2), "data_version"),
])
def test_quorum_state_refuses_fields_its_version_cannot_hold(state: QuorumStateData, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        dump_quorum_state(state)


_int32 = st.integers(-(1 << 31), (1 << 31) - 1)
_v0 = st.builds(QuorumStateData, leader_id=_int32, leader_epoch=_int32, voted_id=_int32,
                current_voters=st.none() | st.lists(_int32, max_size=5).map(tuple),
                cluster_id=st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
                applied_offset=st.integers(-(1 << 63), (1 << 63) - 1), data_version=st.just(0))
_v1 = st.builds(QuorumStateData, leader_id=_int32, leader_epoch=_int32, voted_id=_int32,
                voted_directory_id=st.none() | st.integers(1, (1 << 128) - 1).map(lambda n: uuid.UUID(int=n)),
                data_version=st.just(1))


@settings(max_examples=200, deadline=None)
@given(_v0 | _v1)
def test_quorum_state_round_trip(state: QuorumStateData) -> None:
    text = dump_quorum_state(state)
    assert parse_quorum_state(text) == state
    compact = json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
    assert compact == re.sub(r"\\u00[0-9A-F]{2}", lambda m: m[0].lower(), text)  # Jackson: upper-case hex
    assert list(json.loads(text))[-1] == "data_version"


@pytest.mark.parametrize("content, reason", [
    ("", "empty quorum-state file"),
    ("\n  \n", "empty quorum-state file"),
    ("garbage", "not valid JSON at line 1 column 1"),
    (V0_TEXT[:40], "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"leaderId":1}', "missing field 'data_version'"),
    (V0_TEXT.replace('"data_version":0', '"data_version":2'), "unsupported data_version 2"),
    (V0_TEXT.replace('"data_version":0', '"data_version":"0"'), "field 'data_version' should be an integer"),
    (V0_TEXT.replace('"leaderEpoch":3,', ""), "missing field 'leaderEpoch'"),
    (V0_TEXT.replace('"clusterId":"",', ""), "missing field 'clusterId'"),
    (V0_TEXT.replace('"appliedOffset":0,', ""), "missing field 'appliedOffset'"),
    (V0_TEXT.replace(',"currentVoters":[{"voterId":1}]', ""), "missing field 'currentVoters'"),
    (V0_TEXT.replace('{"voterId":1}', '{"id":1}'), "missing field 'voterId'"),
    (V0_TEXT.replace('[{"voterId":1}]', '{}'), "'currentVoters' should be a list or null"),
    (V0_TEXT.replace('[{"voterId":1}]', '[1]'), "currentVoters[0] should be an object"),
    (V0_TEXT.replace('"leaderId":1', '"leaderId":true'), "field 'leaderId' should be an integer"),
    (V0_TEXT.replace('"leaderId":1', '"leaderId":1.5'), "field 'leaderId' should be an integer"),
    (V0_TEXT.replace('"leaderId":1', '"leaderId":2147483648'), "field 'leaderId' is out of range"),
    (V1_TEXT.replace('"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ",', ""), "missing field 'votedDirectoryId'"),
    (V1_TEXT.replace("J8aAPcfLQt2bqs1JT_rMgQ", "not-a-uuid"), "field 'votedDirectoryId'"),
    (b"\xff\xfe{}", "not valid UTF-8"),
])
def test_bad_quorum_state(tmp_path: Path, content: str | bytes, reason: str) -> None:
    _expect_error(tmp_path / "quorum-state", content, reason, read_quorum_state)


def test_missing_quorum_state(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="no such file"):
        read_quorum_state(tmp_path / "quorum-state")


# ------------------------------------------------------------------ leader-epoch-checkpoint


def test_leader_epoch_checkpoint_round_trip(tmp_path: Path) -> None:
    entries = [(0, 0), (3, 100), (7, (1 << 63) - 1)]
    write_leader_epoch_checkpoint(tmp_path / "lec", entries)
    assert (tmp_path / "lec").read_text() == f"0\n3\n0 0\n3 100\n7 {(1 << 63) - 1}\n"
    assert read_leader_epoch_checkpoint(tmp_path / "lec") == entries
    write_leader_epoch_checkpoint(tmp_path / "lec", [])
    assert (tmp_path / "lec").read_text() == "0\n0\n"
    assert read_leader_epoch_checkpoint(tmp_path / "lec") == []


def test_leader_epoch_checkpoint_empty_file_is_no_entries(tmp_path: Path) -> None:
    # Kafka creates the file empty before its first write and reads it back as no entries.
    (tmp_path / "lec").write_text("")
    assert read_leader_epoch_checkpoint(tmp_path / "lec") == []


def test_leader_epoch_checkpoint_tolerates_what_kafka_tolerates() -> None:
    assert parse_leader_epoch_checkpoint("0\r\n2\r\n1 0\r\n2\t\t5  \n") == [(1, 0), (2, 5)]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_int32, st.integers(-(1 << 63), (1 << 63) - 1)), max_size=20))
def test_leader_epoch_checkpoint_round_trip_property(entries: list[tuple[int, int]]) -> None:
    assert parse_leader_epoch_checkpoint(dump_leader_epoch_checkpoint(entries)) == entries


def test_leader_epoch_checkpoint_refuses_out_of_range() -> None:
    with pytest.raises(ValueError, match="range"):
        dump_leader_epoch_checkpoint([(1 << 31, 0)])


@pytest.mark.parametrize("content, reason", [
    ("garbage\n", "line 1: version is not an integer: 'garbage'"),
    ("1\n0\n", "line 1: unsupported checkpoint version 1"),
    ("0\n", "line 2: missing entry count"),
    ("0\nx\n", "line 2: entry count is not an integer"),
    ("0\n-1\n", "line 2: negative entry count"),
    ("0\n2\n1 0\n", "line 4: expected 2 entries, found 1"),
    ("0\n1\n1 0\n2 5\n", "line 4: expected 1 entries, found 2"),
    ("0\n2\n1 0\n\n2 5\n", "line 4: expected 'epoch startOffset'"),
    ("0\n1\n1 0 7\n", "line 3: expected 'epoch startOffset'"),
    ("0\n1\n 1 0\n", "line 3: expected 'epoch startOffset'"),
    ("0\n1\n1 x\n", "line 3: start offset is not an integer"),
    ("0\n1\n2147483648 0\n", "line 3: epoch is not an integer"),
    ("0\n1\n١ 0\n", "line 3: epoch is not an integer"),  # Arabic-Indic digit: not for Java
    (b"0\n1\n1 \xff\n", "line 3: byte 0xff is not valid UTF-8"),
])
def test_bad_leader_epoch_checkpoint(tmp_path: Path, content: str | bytes, reason: str) -> None:
    _expect_error(tmp_path / "leader-epoch-checkpoint", content, reason, read_leader_epoch_checkpoint)


# ------------------------------------------------------------------ partition.metadata


def test_partition_metadata_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "partition.metadata"
    write_partition_metadata(path)
    assert path.read_bytes() == b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"
    assert read_partition_metadata(path) == PartitionMetadata(0, METADATA_TOPIC_ID)
    other = uuid.uuid4()
    write_partition_metadata(path, other)
    assert read_partition_metadata(path) == PartitionMetadata(0, other)
    with pytest.raises(ValueError):
        write_partition_metadata(path, ZERO_UUID)


def test_partition_metadata_accepts_newer_version_and_final_newline(tmp_path: Path) -> None:
    path = tmp_path / "partition.metadata"
    path.write_text("version: 3\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n")
    assert read_partition_metadata(path) == PartitionMetadata(3, METADATA_TOPIC_ID)


@pytest.mark.parametrize("content, reason", [
    ("", "empty partition.metadata file"),
    ("garbage", "line 1: expected 'version: <value>'"),
    ("version: 0", "line 2: missing 'topic_id: ...' line"),
    ("version: 0\n", "line 2: missing 'topic_id: ...' line"),
    ("version: -1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", "line 1: version is not a non-negative integer"),
    ("version: x\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", "line 1: version is not a non-negative integer"),
    ("version: 0\ntopicid: AAAAAAAAAAAAAAAAAAAAAQ", "line 2: expected 'topic_id: <value>'"),
    ("version: 0\ntopic_id: AAAA", "line 2: bad topic_id"),
    ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "line 2: topic_id is the zero uuid"),
    ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\nmore", "line 3: unexpected content"),
])
def test_bad_partition_metadata(tmp_path: Path, content: str, reason: str) -> None:
    _expect_error(tmp_path / "partition.metadata", content, reason, read_partition_metadata)
