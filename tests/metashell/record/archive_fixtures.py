"""Batches and snapshots as a leader serves them, for the archive's offline tests (no tests here)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from engine.image.image_writer import image_records
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import i8
from engine.records.metadata_record_serde import encode_record
from engine.records.record_batch import build_batch, encode_batch
from engine.storage.snapshot_writer import SnapshotId, snapshot_bytes

TOPIC_CONFIG = 2


@dataclass
class FakeLeaderLog:
    """A leader's log in memory: the bytes of each batch it would serve, its image at each end."""

    epoch: int = 1
    next_offset: int = 0
    time_ms: int = 1_700_000_000_000

    def __post_init__(self) -> None:
        self.batches: list[bytes] = []
        self.delta = MetadataDelta(MetadataImage())

    def append(self, count: int = 3, *, time_ms: int | None = None) -> bytes:
        """A batch of ``count`` config records for topic ``t<offset>``: its bytes, as served."""
        records = [m.ConfigRecordV0(resource_type=i8(TOPIC_CONFIG), resource_name=f"t{self.next_offset}",
                                    name=f"k{i}", value=str(self.next_offset + i)) for i in range(count)]
        stamp = self.time_ms if time_ms is None else time_ms
        self.time_ms += 1000
        batch = build_batch(self.next_offset, [encode_record(r) for r in records], timestamp_ms=stamp,
                            leader_epoch=self.epoch)
        for i, record in enumerate(records):
            self.delta.replay(record, self.next_offset + i, self.epoch, stamp)
        self.next_offset += count
        data = encode_batch(batch)
        self.batches.append(data)
        return data

    def topic(self, name: str) -> bytes:
        record = m.TopicRecordV0(name=name, topic_id=uuid.uuid4())
        batch = build_batch(self.next_offset, [encode_record(record)], timestamp_ms=self.time_ms,
                            leader_epoch=self.epoch)
        self.delta.replay(record, self.next_offset, self.epoch, self.time_ms)
        self.next_offset += 1
        data = encode_batch(batch)
        self.batches.append(data)
        return data

    def snapshot(self) -> tuple[SnapshotId, bytes]:
        """The leader's snapshot at its end (what FetchSnapshot would serve)."""
        image = self.delta.apply()
        self.delta = MetadataDelta(image)
        sid = SnapshotId(self.next_offset, self.epoch)
        return sid, snapshot_bytes(image_records(image), epoch=self.epoch,
                                   last_contained_log_timestamp_ms=self.time_ms, now_ms=self.time_ms)


def record_batches(archive, leader: FakeLeaderLog, count: int) -> None:
    """``count`` batches of the leader's, appended to ``archive`` (an open Archive) and committed."""
    for _ in range(count):
        archive.append(leader.append())
    archive.commit()


def record_gap(archive, leader: FakeLeaderLog, *, deleted: int, reason: str,
               recorded_ms: int) -> tuple[SnapshotId, bytes, bytes]:
    """A gap as the recorder meets it: the leader writes ``deleted`` batches the archive never
    fetches, the archive resets onto the leader's snapshot and records one batch after it.
    Returns (the snapshot's id, its bytes, the batch recorded after it)."""
    for _ in range(deleted):
        leader.append()  # deleted by the controllers before the recorder fetched them
    snapshot_id, data = leader.snapshot()
    archive.reset(data, snapshot_id, reason, recorded_ms)
    after = leader.append()
    archive.append(after)
    archive.commit()
    return snapshot_id, data, after
