"""A snapshot's voters survive the leader changes read from the segments it replaced.

Kafka's snapshots carry kraft.version and the voter set (KRaftVersion and KRaftVoters in their
first batch) but no leader changes; the loader takes those from the segments a node kept before
its snapshot. After Kafka's metadata log cleaning those segments begin past the records that set
the voters (deleted with the older segments): the snapshot's voters must stand, not the
segments' none. Found against real Kafka controllers (tests/metashell/record: a controller's
directory after a cleaning loaded without voters)."""

from __future__ import annotations

import uuid
from pathlib import Path

from engine.image.metadata_loader import load_log_dir
from engine.records.kio_codec import (KRaftVersionFeature, KRaftVersionRecord, LeaderChangeMessage, LeaderChangeVoter,
                                      VotersEndpoint, VotersRecord, VotersVoter, i16, i32, u16)
from engine.records.metadata_record_serde import control_record, encode_record
from engine.records.record_batch import encode_entries
from engine.storage.snapshot_writer import SnapshotId, write_snapshot

EPOCH = 3
DIRECTORY_IDS = {v: uuid.UUID(int=v) for v in (1, 2, 3)}


def kraft_control(voter_ids: tuple[int, ...]) -> list:
    voters = VotersRecord(version=i16(0), voters=tuple(
        VotersVoter(voter_id=i32(v), voter_directory_id=DIRECTORY_IDS[v],
                    endpoints=(VotersEndpoint(name="CONTROLLER", host="127.0.0.1", port=u16(9000 + v)),),
                    k_raft_version_feature=KRaftVersionFeature(min_supported_version=i16(0),
                                                               max_supported_version=i16(1)))
        for v in voter_ids))
    return [control_record(KRaftVersionRecord(version=i16(0), k_raft_version=i16(1))), control_record(voters)]


def leader_change_batch(base_offset: int, leader: int) -> bytes:
    voters = tuple(LeaderChangeVoter(voter_id=i32(v)) for v in (1, 2, 3))
    record = control_record(LeaderChangeMessage(version=i16(0), leader_id=i32(leader), voters=voters,
                                                granting_voters=voters[:2]))
    return encode_entries(base_offset, [encode_record(record)], epoch=EPOCH, timestamp_ms=1_000 + base_offset,
                          control=True)


def node_dir(tmp_path: Path, segment_base: int, snapshot_end: int) -> Path:
    """A segment from ``segment_base`` (one leader change each offset up to the snapshot and one
    past it) and a snapshot ending at ``snapshot_end`` with the voters 1, 2, 3."""
    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    (directory / f"{segment_base:020d}.log").write_bytes(
        b"".join(leader_change_batch(offset, 1 + offset % 3) for offset in range(segment_base, snapshot_end + 1)))
    write_snapshot(directory, SnapshotId(snapshot_end, EPOCH), [], last_contained_log_timestamp_ms=1_000,
                   now_ms=2_000, kraft_control=kraft_control((1, 2, 3)))
    return directory


def test_the_snapshots_voters_stand_when_the_segments_before_it_lack_them(tmp_path: Path) -> None:
    image, info = load_log_dir(node_dir(tmp_path, segment_base=10, snapshot_end=12), offset=12)
    assert info.snapshot == SnapshotId(12, EPOCH)
    assert image.quorum.kraft_version == 1
    assert [v.id for v in image.quorum.voters] == [1, 2, 3]
    assert [v.directory_id for v in image.quorum.voters] == [DIRECTORY_IDS[v] for v in (1, 2, 3)]
    # the leader changes: those of the segment, before the snapshot and after it
    assert [c.offset for c in image.quorum.leader_changes] == [10, 11, 12]


def test_the_segments_voters_serve_when_the_snapshot_has_none(tmp_path: Path) -> None:
    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    control = kraft_control((1, 2))
    batch = encode_entries(0, [encode_record(r) for r in control], epoch=EPOCH, timestamp_ms=1_000, control=True)
    (directory / f"{0:020d}.log").write_bytes(batch + leader_change_batch(2, 1))
    write_snapshot(directory, SnapshotId(3, EPOCH), [], last_contained_log_timestamp_ms=1_000, now_ms=2_000)
    image, _ = load_log_dir(directory, offset=2)
    assert image.quorum.kraft_version == 1 and [v.id for v in image.quorum.voters] == [1, 2]
