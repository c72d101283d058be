"""kraft.version and the voter set, as read from control records in the log and snapshots.

Kafka's KRaftControlRecordStateMachine: every VotersRecord and KRaftVersionRecord the
log holds (committed or not) is noted with its offset, so the latest voter set is
known at once and a truncation can take uncommitted changes back.
"""

from __future__ import annotations

from typing import Iterable

from engine.records.kio_codec import KRaftVersionRecord, VotersRecord
from engine.records.metadata_record_serde import ControlRecord
from engine.raft.raft_log import LogBatch
from engine.raft.voter_set import VoterSet, VoterSetHistory


class KRaftControlState:
    def __init__(self, static_voters: VoterSet):
        self.history = VoterSetHistory(static_voters)
        self._versions: list[tuple[int, int]] = []  # (offset, kraft.version)

    @property
    def kraft_version(self) -> int:
        if self._versions:
            return self._versions[-1][1]
        return 1 if self.history.sets else 0

    def kraft_version_at(self, offset: int) -> int:
        version = 0
        for at, v in self._versions:
            if at > offset:
                break
            version = v
        return version if self._versions else (1 if self.history.offsets and
                                                 self.history.offsets[0] <= offset else 0)

    def latest_voters(self) -> VoterSet:
        return self.history.latest()

    def has_uncommitted_change(self, high_watermark: int | None) -> bool:
        last = max(self.history.latest_offset(), self._versions[-1][0] if self._versions else -1)
        return last >= 0 and (high_watermark is None or last >= high_watermark)

    def observe(self, batches: Iterable[LogBatch], *, snapshot_end_offset: int | None = None) -> None:
        """Note the control records of batches just appended (or of a snapshot, whose
        records all count as being at ``snapshot_end_offset - 1``)."""
        for batch in batches:
            if not batch.control:
                continue
            for i, record in enumerate(batch.records):
                offset = snapshot_end_offset - 1 if snapshot_end_offset is not None else batch.base_offset + i
                self._observe_record(record, offset)

    def _observe_record(self, record: object, offset: int) -> None:
        if not isinstance(record, ControlRecord):
            return
        message = record.message
        if isinstance(message, VotersRecord):
            if self.history.offsets and self.history.offsets[-1] >= offset:
                self.history.truncate_from(offset)
            self.history.add(offset, VoterSet.from_voters_record(message))
        elif isinstance(message, KRaftVersionRecord):
            self._versions = [(o, v) for o, v in self._versions if o < offset]
            self._versions.append((offset, int(message.k_raft_version)))

    def truncate_from(self, end_offset: int) -> None:
        self.history.truncate_from(end_offset)
        self._versions = [(o, v) for o, v in self._versions if o < end_offset]

    def reset(self) -> None:
        self.history.clear()
        self._versions = []

    def control_records_at(self, offset: int) -> list[ControlRecord]:
        """What a snapshot ending after ``offset`` carries: KRaftVersionRecord and VotersRecord
        for kraft.version 1, nothing for 0 (Kafka writes neither for a static quorum)."""
        from engine.records.kio_codec import i16
        from engine.records.metadata_record_serde import control_record

        if self.kraft_version_at(offset) == 0:
            return []
        voters = self.history.value_at(offset)
        return [control_record(KRaftVersionRecord(version=i16(0), k_raft_version=i16(1))),
                control_record(voters.to_voters_record())]
