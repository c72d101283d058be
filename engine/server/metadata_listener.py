"""A controller's state machine for now: the image of its committed log, and when to snapshot it.

The Raft core hands every committed batch (control batches too) to ``handle_commit``; they
are replayed through a ``MetadataDelta`` into the next ``MetadataImage``, as Kafka's
``MetadataLoader`` does, and the snapshot policy (``engine.server.snapshot_policy``) is told
how many bytes that was. When it says a snapshot is due, ``emit`` is called with the image at
that committed batch boundary: the node writes it through the Raft core, after the current
poll (the core cannot be re-entered from a listener). A loaded snapshot (a restart, or a
follower handed the leader's) replaces the image and restarts the policy's counters.

Also here: the node's log lines for commit milestones, leader changes and loaded snapshots.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Callable, Sequence

from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage, Provenance
from engine.raft.raft_client import LeaderAndEpoch
from engine.raft.raft_log import LogBatch
from engine.server.snapshot_policy import SnapshotPolicy
from engine.storage.snapshot_writer import SnapshotId

# emit(end_offset, image, last_contained_log_timestamp_ms, reason)
# (end offset, image, timestamp, reason) -> False if the snapshot was not started (one still being written)
SnapshotEmitter = Callable[[int, MetadataImage, int, str], "bool | None"]


def _header_timestamp_ms(batches: Sequence[LogBatch]) -> int:
    for batch in batches:
        for record in batch.records:
            if getattr(record, "type_name", None) == "SNAPSHOT_HEADER":
                return record.message.last_contained_log_timestamp
    return -1


class MetadataListener:
    """A RaftListener that keeps the image of what is committed and decides when to snapshot it."""

    def __init__(self, logger: logging.Logger, prefix: str, policy: SnapshotPolicy, clock: Callable[[], int],
                 emit: SnapshotEmitter):
        self.log = logger
        self.prefix = prefix
        self.policy = policy
        self.clock = clock
        self.emit = emit
        self.image = MetadataImage()
        self.last_committed_offset = -1
        self.commits = 0  # handle_commit calls
        self.leader: LeaderAndEpoch | None = None
        self._next_milestone = 0

    def handle_commit(self, batches: Sequence[LogBatch]) -> None:
        if not batches:
            return
        self.commits += 1
        delta = MetadataDelta(self.image)
        replay = delta.replay
        size_bytes = 0
        for batch in batches:
            records = batch.records
            size_bytes += batch.size_bytes
            if batch.control:
                for i, record in enumerate(records):
                    replay(record, batch.base_offset + i, batch.epoch, batch.append_time_ms)
            elif records:
                # Only where the image stands matters for metadata records: the last one says it.
                for record in records[:-1]:
                    replay(record)
                replay(records[-1], batch.last_offset, batch.epoch, batch.append_time_ms)
        self.image = delta.apply()
        last = batches[-1]
        self.last_committed_offset = last.last_offset
        self._log_milestone()
        policy = self.policy
        before = (policy.bytes_since_snapshot + size_bytes, policy.last_snapshot_ms)
        reason = policy.on_commit(size_bytes, self.clock())
        if reason is not None and self.emit(last.last_offset + 1, self.image, last.append_time_ms, reason) is False:
            # not taken (one is still being written): due again at the next commit, as Kafka's
            # SnapshotGenerator keeps counting when it skips
            policy.not_taken(*before)

    def _log_milestone(self) -> None:
        if self.last_committed_offset >= self._next_milestone:
            self.log.info("%s committed up to offset %d", self.prefix, self.last_committed_offset)
            m = self.last_committed_offset + 1
            self._next_milestone = 10 ** len(str(m)) if m < 10_000 else (m // 10_000 + 1) * 10_000

    def handle_load_snapshot(self, snapshot_id: SnapshotId, batches: Sequence[LogBatch]) -> None:
        delta = MetadataDelta(MetadataImage())
        for batch in batches:
            for record in batch.records:
                delta.replay(record)
        provenance = Provenance(snapshot_id.end_offset - 1, snapshot_id.epoch, _header_timestamp_ms(batches))
        self.image = replace(delta.apply(), provenance=provenance)
        self.last_committed_offset = snapshot_id.end_offset - 1
        self.policy.reset(self.clock())
        self.log.info("%s loaded snapshot %s (%d topics, %d partitions, %d brokers, %d features)", self.prefix,
                      snapshot_id.file_name, len(self.image.topics.by_id), self.image.partition_count,
                      len(self.image.cluster.brokers), len(self.image.features))

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leader = leader
        if leader.leader_id >= 0:  # no leader: the role line ("prospective in epoch 4") says it
            self.log.info("%s leader is %d in epoch %d", self.prefix, leader.leader_id, leader.epoch)


__all__ = ["MetadataListener", "SnapshotEmitter"]
