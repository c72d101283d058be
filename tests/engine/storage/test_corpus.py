"""Every file a real Kafka wrote decodes fully, with no unknown record, and re-encodes byte-identically."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.storage.log_reader import entries_of_batch, list_log_dir, read_batches, read_file, read_log_dir
from engine.records.metadata_record_serde import ControlRecord, MetadataRecord, UnknownRecord, decode_record, encode_record
from engine.records.record_batch import encode_batch
from tests.conftest import CORPUS, corpus_params


def _record_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*") if p.suffix in (".log", ".checkpoint"))


def _node_dirs() -> list[Path]:
    return sorted(p.parent for p in CORPUS.rglob("__cluster_metadata-0")) if CORPUS.is_dir() else []


def _id(path: Path | None) -> str:
    return str(path.relative_to(CORPUS)) if path is not None else "no-corpus"


@pytest.mark.parametrize("path", corpus_params(_record_files()), ids=_id)
def test_every_batch_and_record_round_trips(corpus: Path, path: Path) -> None:
    data = path.read_bytes()
    rebuilt = bytearray()
    records = 0
    for position, batch in read_batches(path):
        encoded = encode_batch(batch)
        assert encoded == data[position:position + batch.size_bytes], f"batch at {position}"
        rebuilt += encoded
        for record in batch.records:
            decoded = decode_record(record.key, record.value, batch.is_control)
            assert not isinstance(decoded, UnknownRecord), decoded
            assert isinstance(decoded, ControlRecord if batch.is_control else MetadataRecord)
            assert encode_record(decoded) == (record.key, record.value)
            records += 1
    assert bytes(rebuilt) == data
    assert records > 0


@pytest.mark.parametrize("node_dir", corpus_params(_node_dirs()), ids=_id)
@pytest.mark.slow
def test_log_dir_reads_snapshot_then_segments(corpus: Path, node_dir: Path) -> None:
    listing = list_log_dir(node_dir)
    entries = list(read_log_dir(node_dir))
    assert entries and not any(isinstance(e.record, UnknownRecord) for e in entries)
    log_offsets = [e.offset for e in entries if not e.in_snapshot]
    assert log_offsets == sorted(log_offsets) and len(set(log_offsets)) == len(log_offsets)
    if listing.latest_snapshot is not None:
        snapshot_id, _ = listing.latest_snapshot
        assert entries[0].record.type_name == "SNAPSHOT_HEADER"
        assert all(o >= snapshot_id.end_offset for o in log_offsets)
    full = [e for e in read_log_dir(node_dir, use_snapshot=False)]
    assert [e.offset for e in full] == list(range(full[0].offset, full[0].offset + len(full)))


def test_known_facts_of_the_corpus(corpus: Path) -> None:
    hiage = corpus / "hiage__kafka-raft" / "kafka1"
    entries = list(read_log_dir(hiage))
    first = entries[0].record
    assert first.type_name == "FEATURE_LEVEL_RECORD" and first.message.feature_level == 7
    leader_change = entries[1].record
    assert leader_change.type_name == "LEADER_CHANGE" and leader_change.message.leader_id == 1
    assert [v.voter_id for v in leader_change.message.voters] == [1, 2, 3]
    topics = {e.record.message.name for e in entries if e.record.type_name == "TOPIC_RECORD"}
    assert len(topics) == 3
    partitions = [e for e in entries if e.record.type_name == "PARTITION_RECORD"]
    assert len(partitions) == 60

    snapshot = corpus / "Yashasvi960__kafka-service" / "__cluster_metadata-0" / \
        "00000000000000010830-0000000003.checkpoint"
    records = [e.record for e in read_file(snapshot)]
    levels = {r.message.name: r.message.feature_level for r in records if r.type_name == "FEATURE_LEVEL_RECORD"}
    assert levels == {"metadata.version": 27, "group.version": 1, "eligible.leader.replicas.version": 1,
                      "transaction.version": 2}
    assert sum(r.type_name == "PARTITION_RECORD" for r in records) == 54


@pytest.mark.parametrize("path", corpus_params(_record_files()), ids=_id)
@pytest.mark.slow
def test_fast_path_reads_what_the_general_path_reads(corpus: Path, path: Path) -> None:
    """log_reader's in-place decoder is an optimisation: it must agree with batch decoding exactly."""
    fast = list(read_file(path))
    general = [entry for _, batch in read_batches(path) for entry in entries_of_batch(batch, fast[0].in_snapshot)]
    assert fast == general
