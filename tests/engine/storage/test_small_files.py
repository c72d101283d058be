"""Kafka's small log-directory files against real Kafka-written examples in ../shared/corpus.

For each format: every corpus file parses to the values read off the files by eye,
and our writer reproduces each file byte for byte.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from engine.common.java_properties import load_properties
from engine.common.kafka_uuid import METADATA_TOPIC_ID, kafka_to_uuid
from engine.storage.leader_epoch_checkpoint import read_leader_epoch_checkpoint, write_leader_epoch_checkpoint
from engine.storage.meta_properties import read_meta_properties, write_meta_properties
from engine.storage.partition_metadata_file import read_partition_metadata, write_partition_metadata
from engine.storage.quorum_state_file import read_quorum_state, write_quorum_state
from tests.conftest import CORPUS

pytestmark = pytest.mark.corpus  # without the corpus: skipped, or failed under CI (tests/conftest.py)

# Facts read from the corpus files with `cat`:
# node dir -> (cluster.id, node.id, directory.id, leaderEpoch, voters, #epochs, last epoch entry)
FACTS = {
    "AdiletBatyrbayev0520__air_analyzer":
        ("jhCzCarDSyqr9FkZhIbmYQ", 1, "6BJSiEv3efW8qtBcaQzAMw", 3, (1,), 3, (3, 11973)),
    "Danielowo2000__BigDataTechnologies-Version-2__tarball-3.5.0":
        ("ZP2ltPx0So-u7ZsfIzft0Q", 1, None, 5, (1,), 5, (5, 24269)),
    "Yashasvi960__kafka-service":
        ("4L6g3nShT-eMCtK--X86sw", 1, "XDiUWENaLJfovKLwim0QHw", 9, (1,), 9, (9, 94434)),
    "djsoler__Big_Data_Proye_Docker":
        ("Some(5L6g3nShT-eMCtK--X86sw)", 1, "Hscwwb6257wHmkVnA1s8cQ", 5, (1,), 5, (5, 8030)),
    "hiage__kafka-raft/kafka1": ("EP6hyiddQNW5FPrAvR9kWw", 1, None, 1, (1, 2, 3), 1, (1, 0)),
    "hiage__kafka-raft/kafka2": ("EP6hyiddQNW5FPrAvR9kWw", 2, None, 1, (1, 2, 3), 1, (1, 0)),
    "hiage__kafka-raft/kafka3": ("EP6hyiddQNW5FPrAvR9kWw", 3, None, 1, (1, 2, 3), 1, (1, 0)),
    "weebee-io__backend": ("test-cluster-id", 1, "7JDpkrIMlrONCzR3iJSXfQ", 24, (1,), 24, (24, 50283)),
}
# Kafka on JDK 18+ stores properties sorted by key; on JDK 9-17 in hash-table order.
KEY_ORDER = {"Yashasvi960__kafka-service": "sorted", "djsoler__Big_Data_Proye_Docker": "sorted"}
NODES = sorted(FACTS)
_ZONE_OFFSETS = {"UTC": 0, "GMT": 0, "WAT": 1}


def _node(name: str) -> Path:
    return CORPUS / name


def _log_dir(name: str) -> Path:
    return _node(name) / "__cluster_metadata-0"


def test_every_corpus_node_has_facts() -> None:
    found = {str(p.parent.relative_to(CORPUS)) for p in CORPUS.glob("**/meta.properties")}
    assert found == set(FACTS)


# ------------------------------------------------------------------ meta.properties

@pytest.mark.parametrize("name", NODES)
def test_corpus_meta_properties(name: str) -> None:
    cluster_id, node_id, directory_id, *_ = FACTS[name]
    meta = read_meta_properties(_node(name))
    assert meta.version == 1
    assert meta.cluster_id == cluster_id
    assert meta.node_id == node_id
    assert meta.directory_id == (kafka_to_uuid(directory_id) if directory_id else None)
    assert meta.extra == {}
    assert read_meta_properties(_node(name) / "meta.properties") == meta


def test_corpus_odd_cluster_ids_are_kept_verbatim() -> None:
    assert read_meta_properties(_node("djsoler__Big_Data_Proye_Docker")).cluster_id == \
        "Some(5L6g3nShT-eMCtK--X86sw)"
    assert read_meta_properties(_node("weebee-io__backend")).cluster_id == "test-cluster-id"


def _stored_date(text: str) -> datetime:
    """The "#Sun May 11 08:08:34 UTC 2025" line of a stored file, as an aware datetime."""
    m = re.search(r"^#\w{3} (\w{3} \d\d \d\d:\d\d:\d\d) (\w+) (\d{4})$", text, re.M)
    assert m, "no date line"
    zone = timezone(timedelta(hours=_ZONE_OFFSETS[m[2]]), m[2])
    return datetime.strptime(f"{m[1]} {m[3]}", "%b %d %H:%M:%S %Y").replace(tzinfo=zone)


@pytest.mark.parametrize("name", NODES)
def test_corpus_meta_properties_byte_exact(name: str, tmp_path: Path) -> None:
    original = (_node(name) / "meta.properties").read_bytes()
    meta = read_meta_properties(_node(name))
    order = KEY_ORDER.get(name, "jdk-hash")
    written = write_meta_properties(tmp_path, meta, now=_stored_date(original.decode()), key_order=order)
    assert written.read_bytes() == original


# ------------------------------------------------------------------ quorum-state

@pytest.mark.parametrize("name", NODES)
def test_corpus_quorum_state(name: str) -> None:
    *_, epoch, voters, _, _ = FACTS[name]
    state = read_quorum_state(_log_dir(name) / "quorum-state")
    assert state.data_version == 0
    assert (state.leader_id, state.leader_epoch, state.voted_id) == (1, epoch, -1)
    assert state.current_voters == voters
    assert (state.cluster_id, state.applied_offset, state.voted_directory_id) == ("", 0, None)


@pytest.mark.parametrize("name", NODES)
def test_corpus_quorum_state_byte_exact(name: str, tmp_path: Path) -> None:
    original = (_log_dir(name) / "quorum-state").read_bytes()
    write_quorum_state(tmp_path / "quorum-state", read_quorum_state(_log_dir(name) / "quorum-state"))
    assert (tmp_path / "quorum-state").read_bytes() == original


# ------------------------------------------------------------------ leader-epoch-checkpoint

@pytest.mark.parametrize("name", NODES)
def test_corpus_leader_epoch_checkpoint(name: str) -> None:
    *_, count, last = FACTS[name]
    entries = read_leader_epoch_checkpoint(_log_dir(name) / "leader-epoch-checkpoint")
    assert len(entries) == count
    assert entries[0] == (1, 0) and entries[-1] == last
    assert [e for e, _ in entries] == list(range(1, count + 1))  # one entry per epoch here
    assert all(a[1] <= b[1] for a, b in zip(entries, entries[1:]))


def test_corpus_leader_epoch_checkpoint_known_entries() -> None:
    entries = read_leader_epoch_checkpoint(_log_dir("Yashasvi960__kafka-service") / "leader-epoch-checkpoint")
    assert entries == [(1, 0), (2, 690), (3, 3624), (4, 12651), (5, 55627), (6, 55628),
                       (7, 77936), (8, 93884), (9, 94434)]


@pytest.mark.parametrize("name", NODES)
def test_corpus_leader_epoch_checkpoint_byte_exact(name: str, tmp_path: Path) -> None:
    source = _log_dir(name) / "leader-epoch-checkpoint"
    write_leader_epoch_checkpoint(tmp_path / "lec", read_leader_epoch_checkpoint(source))
    assert (tmp_path / "lec").read_bytes() == source.read_bytes()


# ------------------------------------------------------------------ partition.metadata

@pytest.mark.parametrize("name", NODES)
def test_corpus_partition_metadata(name: str, tmp_path: Path) -> None:
    source = _log_dir(name) / "partition.metadata"
    meta = read_partition_metadata(source)
    assert (meta.version, meta.topic_id) == (0, METADATA_TOPIC_ID)
    write_partition_metadata(tmp_path / "partition.metadata", meta.topic_id)
    assert (tmp_path / "partition.metadata").read_bytes() == source.read_bytes()


# ------------------------------------------------------------------ generic properties

@pytest.mark.parametrize("name", NODES)
def test_corpus_meta_properties_as_plain_properties(name: str) -> None:
    props = load_properties(_node(name) / "meta.properties")
    assert props["version"] == "1"
    assert props["cluster.id"] == FACTS[name][0]
    assert set(props) <= {"version", "cluster.id", "node.id", "directory.id"}
