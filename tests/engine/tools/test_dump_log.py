"""``kraftd dump-log`` on real Kafka files: the lines kafka-dump-log --cluster-metadata-decoder prints.

Expected values are read straight from the file bytes (batch header fields at their
fixed offsets), not from the engine's decoder, so the dump is checked independently.
Runs ``engine.tools.cli.run`` in-process with stdout captured by capsys.
"""

from __future__ import annotations

import re
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.tools.cli import run
from tests.conftest import CORPUS, corpus_file

HIAGE_SEGMENT = ("hiage__kafka-raft", "kafka1", "__cluster_metadata-0", "00000000000000000000.log")
ADILET_SNAPSHOT = ("AdiletBatyrbayev0520__air_analyzer", "__cluster_metadata-0",
                   "00000000000000019240-0000000003.checkpoint")

pytestmark = pytest.mark.corpus


def dump(capsys, *argv: str | Path) -> list[str]:
    capsys.readouterr()
    errors: list[str] = []
    assert run(["dump-log", *map(str, argv)], err=errors.append) == 0, errors
    assert errors == []
    return capsys.readouterr().out.splitlines()


@dataclass(frozen=True)
class RawBatch:
    """A batch header as it stands in the file (big-endian fields at fixed offsets)."""

    position: int
    size: int
    base_offset: int
    leader_epoch: int
    crc: int
    attributes: int
    last_offset_delta: int
    max_timestamp: int
    count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & 0x20)


def raw_batches(path: Path) -> list[RawBatch]:
    buf = path.read_bytes()
    out, pos = [], 0
    while pos < len(buf):
        base_offset, length, epoch, magic, crc, attributes, last_delta = struct.unpack_from(">qiibIhi", buf, pos)
        assert magic == 2
        (max_ts,) = struct.unpack_from(">q", buf, pos + 35)
        (count,) = struct.unpack_from(">i", buf, pos + 57)
        out.append(RawBatch(pos, length + 12, base_offset, epoch, crc, attributes, last_delta, max_ts, count))
        pos += length + 12
    assert pos == len(buf)
    return out


BATCH_LINE = re.compile(
    r"baseOffset: (?P<base>\d+) lastOffset: (?P<last>\d+) count: (?P<count>\d+) baseSequence: -1 "
    r"lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: (?P<epoch>\d+) "
    r"isTransactional: false isControl: (?P<control>true|false) deleteHorizonMs: OptionalLong.empty "
    r"position: (?P<position>\d+) CreateTime: (?P<ts>\d+) size: (?P<size>\d+) magic: 2 "
    r"compresscodec: none crc: (?P<crc>\d+) isvalid: true")
RECORD_LINE = re.compile(
    r"\| offset: (?P<offset>\d+) CreateTime: \d+ keySize: (?P<key>-?\d+) valueSize: \d+ sequence: -1 "
    r"headerKeys: \[\] (?P<payload>.*)")


# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("parts", [
    HIAGE_SEGMENT,
    ADILET_SNAPSHOT,
    ("Yashasvi960__kafka-service", "bootstrap.checkpoint"),
    ("Danielowo2000__BigDataTechnologies-Version-2__tarball-3.5.0", "__cluster_metadata-0",
     "00000000000000017073-0000000004.checkpoint"),
], ids=["segment", "snapshot", "bootstrap", "snapshot-3.5"])
def test_every_batch_and_record_line(capsys, parts: tuple[str, ...]) -> None:
    path = corpus_file(*parts)
    lines = dump(capsys, path)
    expected = raw_batches(path)
    assert lines[0] == f"Dumping {path}"

    body = lines[2:]
    batch_indexes = [i for i, line in enumerate(body) if line.startswith("baseOffset: ")]
    assert len(batch_indexes) == len(expected)
    assert all(line.startswith(("baseOffset: ", "| offset: ")) for line in body)
    assert sum(line.startswith("| offset: ") for line in body) == sum(b.count for b in expected)

    for raw, index, nxt in zip(expected, batch_indexes, batch_indexes[1:] + [len(body)]):
        m = BATCH_LINE.fullmatch(body[index])
        assert m, body[index]
        assert (int(m["base"]), int(m["last"]), int(m["count"]), int(m["epoch"]), m["control"] == "true",
                int(m["position"]), int(m["ts"]), int(m["size"]), int(m["crc"])) == \
               (raw.base_offset, raw.last_offset, raw.count, raw.leader_epoch, raw.is_control,
                raw.position, raw.max_timestamp, raw.size, raw.crc)
        record_lines = body[index + 1:nxt]
        assert len(record_lines) == raw.count
        matches = [RECORD_LINE.fullmatch(line) for line in record_lines]
        assert all(matches), record_lines
        assert [int(r["offset"]) for r in matches] == list(range(raw.base_offset, raw.last_offset + 1))
        for r in matches:
            if raw.is_control:  # control records: a 4-byte key and a labelled JSON
                assert r["key"] == "4"
                assert re.fullmatch(r"(SnapshotHeader|SnapshotFooter|LeaderChange:|KRaftVersion|KRaftVoters) \{.*\}",
                                    r["payload"]), r["payload"]
            else:
                assert r["key"] == "-1"
                assert r["payload"].startswith('payload: {"type":"') and r["payload"].endswith("}}")
                assert "UNKNOWN" not in r["payload"]


def test_known_lines_match_kafka(capsys) -> None:
    """Lines in the form of kafka-dump-log (the format of its source, DumpLogSegments), with the
    values of hiage__kafka-raft/kafka1: batch fields, CRC and positions as they stand in the file."""
    lines = dump(capsys, corpus_file(*HIAGE_SEGMENT))
    assert lines[1] == "Log starting offset: 0"
    assert lines[2] == (
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: false "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1680676273490 size: 91 magic: 2 "
        "compresscodec: none crc: 4242693028 isvalid: true")
    assert lines[3] == (
        "| offset: 0 CreateTime: 1680676273490 keySize: -1 valueSize: 23 sequence: -1 headerKeys: [] "
        'payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":7}}')
    assert lines[11] == ("| offset: 4 CreateTime: 1680676274012 keySize: -1 valueSize: 4 sequence: -1 headerKeys: [] "
                         'payload: {"type":"NO_OP_RECORD","version":0,"data":{}}')


def test_kafka_dump_log_flags_the_decoder_implies_are_accepted(capsys) -> None:
    """kafka-dump-log runbooks pass --deep-iteration --print-data-log with the decoder: same output."""
    plain = dump(capsys, corpus_file(*HIAGE_SEGMENT))
    assert dump(capsys, "--deep-iteration", "--print-data-log", "--cluster-metadata-decoder",
                corpus_file(*HIAGE_SEGMENT)) == plain


def test_bootstrap_lines_match_kafka(capsys) -> None:
    path = corpus_file("Yashasvi960__kafka-service", "bootstrap.checkpoint")
    lines = dump(capsys, path)
    assert lines[:2] == [f"Dumping {path}", "KRaft bootstrap snapshot"]
    assert lines[3] == ("| offset: 0 CreateTime: 1771362955352 keySize: 4 valueSize: 11 sequence: -1 headerKeys: [] "
                        'SnapshotHeader {"version":0,"lastContainedLogTimestamp":0}')
    assert lines[5].endswith(
        'payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":27}}')
    assert lines[-1] == ("| offset: 5 CreateTime: 1771362955362 keySize: 4 valueSize: 3 sequence: -1 headerKeys: [] "
                         'SnapshotFooter {"version":0}')


@pytest.mark.parametrize(("parts", "end_offset", "epoch"), [
    (ADILET_SNAPSHOT, 19240, 3),
    (("Yashasvi960__kafka-service", "__cluster_metadata-0", "00000000000000010830-0000000003.checkpoint"), 10830, 3),
])
def test_snapshot_banner(capsys, parts: tuple[str, ...], end_offset: int, epoch: int) -> None:
    path = corpus_file(*parts)
    lines = dump(capsys, path)
    assert lines[0] == f"Dumping {path}"
    assert lines[1] == f"Snapshot end offset: {end_offset}, epoch: {epoch}"
    assert lines[2].startswith("baseOffset: 0 lastOffset: 0 count: 1 ") and "isControl: true" in lines[2]
    header = RECORD_LINE.fullmatch(lines[3])
    assert header and header["offset"] == "0" and header["key"] == "4"
    assert re.fullmatch(r'SnapshotHeader \{"version":0,"lastContainedLogTimestamp":\d+\}', header["payload"])
    assert lines[-1].endswith(' SnapshotFooter {"version":0}')


def test_skip_record_metadata(capsys) -> None:
    path = corpus_file(*ADILET_SNAPSHOT)
    full = dump(capsys, path)
    bare = dump(capsys, "--skip-record-metadata", path)
    assert len(bare) == len(full)
    # As kafka-dump-log --skip-record-metadata prints them (4.3): "| payload: {...}"; control
    # records are skipped, each leaving an empty line.
    full_records = [line for line in full if line.startswith("| ") and " payload: " in line]
    bare_records = [line for line in bare if line.startswith("| ")]
    assert [line for line in bare if line == ""] == [""] * (sum(line.startswith("| ") for line in full)
                                                           - len(full_records)) != []
    assert len(bare_records) == len(full_records) > 3
    for with_meta, without in zip(full_records, bare_records):
        for part in ("offset:", "CreateTime:", "keySize:", "valueSize:", "sequence:", "headerKeys:"):
            assert part not in without, without
        # what is left is the payload, exactly as in the full line
        payload = RECORD_LINE.fullmatch(with_meta)["payload"]
        assert without == f"| {payload}"
    # batch lines are unchanged
    assert [line for line in bare if line and not line.startswith("| ")] == \
           [line for line in full if not line.startswith("| ")]


def test_directory_dumps_snapshots_then_segments(tmp_path: Path, capsys) -> None:
    """A metadata directory stands for its snapshots (in order) then its segments; other files are passed over."""
    adilet = CORPUS / "AdiletBatyrbayev0520__air_analyzer" / "__cluster_metadata-0"
    snapshots = [corpus_file(*ADILET_SNAPSHOT[:-1], "00000000000000007510-0000000002.checkpoint"),
                 corpus_file(*ADILET_SNAPSHOT)]
    segment = corpus_file(*HIAGE_SEGMENT)  # the smallest real segment
    node_dir = tmp_path / "node"
    meta = node_dir / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    for source in [*snapshots, segment]:
        shutil.copyfile(source, meta / source.name)
    for noise in ["quorum-state", "leader-epoch-checkpoint", "partition.metadata", "00000000000000011973.snapshot"]:
        shutil.copyfile(adilet / noise, meta / noise)
    (meta / "00000000000000000000.index").write_bytes(b"\0" * 8)
    (meta / "00000000000000000000.timeindex").write_bytes(b"\0" * 12)
    (meta / "00000000000000099999-0000000009.checkpoint.part").write_bytes(b"garbage")
    (meta / "00000000000000000000.log.deleted").write_bytes(b"garbage")
    (node_dir / "meta.properties").write_text("version=1\n")

    expected = [meta / s.name for s in snapshots] + [meta / segment.name]
    for argument in (meta, node_dir):  # the partition directory, or the node's log directory holding it
        lines = dump(capsys, argument)
        assert [line for line in lines if line.startswith("Dumping ")] == [f"Dumping {p}" for p in expected]
        separate = dump(capsys, *expected)
        assert lines == separate


def test_several_files_in_the_order_given(capsys) -> None:
    a = corpus_file("Yashasvi960__kafka-service", "bootstrap.checkpoint")
    b = corpus_file(*ADILET_SNAPSHOT)
    lines = dump(capsys, b, a)
    assert [line for line in lines if line.startswith("Dumping ")] == [f"Dumping {b}", f"Dumping {a}"]
    assert lines == dump(capsys, b) + dump(capsys, a)


def test_zero_uuids_print_as_kafka_prints_them() -> None:
    """kio reads Kafka's all-zero UUID as None; the JSON must still say AAAAAAAAAAAAAAAAAAAAAA."""
    from engine.records.kio_codec import i32
    from engine.records.metadata_records import PartitionChangeRecordV1, PartitionRecordV1
    from engine.records.record_json import record_to_json

    record = PartitionRecordV1(partition_id=i32(0), topic_id=None, replicas=(i32(1),), isr=(i32(1),),
                               removing_replicas=(), adding_replicas=(), leader=i32(1), leader_epoch=i32(0),
                               partition_epoch=i32(0), directories=(None,))
    text = record_to_json(record)
    assert '"topicId":"AAAAAAAAAAAAAAAAAAAAAA"' in text and '"directories":["AAAAAAAAAAAAAAAAAAAAAA"]' in text
    change = PartitionChangeRecordV1(partition_id=i32(0), topic_id=None)  # tagged directories null: left out
    assert "directories" not in record_to_json(change)
