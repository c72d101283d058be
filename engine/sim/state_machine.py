"""The simulator's state machine and its safety checks.

Each replica runs a tiny state machine over the committed log: a CRC chain of every
record it is given. All replicas report into one ``CommitRecord``: the first replica
to commit an offset fixes what is there, and every later commit of that offset, on
any replica, in any incarnation, must agree. A snapshot carries its chain value, and
loading it must agree with the chain every other replica computed at that offset.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Sequence

from engine.common.config_resource import ConfigResourceType
from engine.records import metadata_records as m
from engine.records.metadata_record_serde import ControlRecord
from engine.raft.raft_log import LogBatch
from engine.storage.snapshot_writer import SnapshotId

SNAPSHOT_STATE = "sim.state"


class InvariantViolation(AssertionError):
    pass


def data_record(value: str) -> m.ConfigRecordV0:
    return m.ConfigRecordV0(resource_type=ConfigResourceType.TOPIC.value, resource_name="sim", name="v", value=value)


def log_item(batch: LogBatch, record: object) -> str:
    if isinstance(record, ControlRecord):
        return f"{batch.epoch}:control{record.control_type}"
    return f"{batch.epoch}:{getattr(record, 'value', type(record).__name__)}"


@dataclass
class CommitRecord:
    """What has been committed anywhere: offset -> item, and the chain value at each end."""

    items: dict[int, str] = field(default_factory=dict)
    chains: dict[int, int] = field(default_factory=dict)
    highest: int = 0

    def check_item(self, node: int, offset: int, item: str) -> None:
        known = self.items.setdefault(offset, item)
        if known != item:
            raise InvariantViolation(f"node {node} committed {item!r} at offset {offset}, "
                                     f"where {known!r} was committed before")
        self.highest = max(self.highest, offset + 1)

    def check_chain(self, node: int, end_offset: int, chain: int) -> None:
        known = self.chains.setdefault(end_offset, chain)
        if known != chain:
            raise InvariantViolation(f"node {node}: committed history up to offset {end_offset} differs "
                                     f"from another replica's")


class SimStateMachine:
    """A RaftListener: applies committed batches, loads snapshots, checks both."""

    def __init__(self, node_id: int, commits: CommitRecord):
        self.node_id = node_id
        self.commits = commits
        self.next_offset = 0
        self.chain = 0
        self.values: list[str] = []  # data values applied in this incarnation (for scenario tests)
        self.leader = None
        self.last_timestamp_ms = 0

    def handle_commit(self, batches: Sequence[LogBatch]) -> None:
        for batch in batches:
            if batch.base_offset != self.next_offset:
                raise InvariantViolation(f"node {self.node_id} was given offset {batch.base_offset} "
                                         f"after {self.next_offset - 1}")
            for i, record in enumerate(batch.records):
                item = log_item(batch, record)
                self.commits.check_item(self.node_id, batch.base_offset + i, item)
                self.chain = zlib.crc32(item.encode(), self.chain)
                if not isinstance(record, ControlRecord):
                    self.values.append(getattr(record, "value", ""))
            self.next_offset = batch.last_offset + 1
            self.last_timestamp_ms = batch.append_time_ms
            self.commits.check_chain(self.node_id, self.next_offset, self.chain)

    def handle_load_snapshot(self, snapshot_id: SnapshotId, batches: Sequence[LogBatch]) -> None:
        state = [r for b in batches if not b.control for r in b.records
                 if getattr(r, "name", None) == SNAPSHOT_STATE]
        if len(state) != 1:
            raise InvariantViolation(f"node {self.node_id}: snapshot {snapshot_id} lacks its state record")
        chain = int(state[0].value)
        self.commits.check_chain(self.node_id, snapshot_id.end_offset, chain)
        self.chain = chain
        self.next_offset = snapshot_id.end_offset
        self.values = []

    def handle_leader_change(self, leader) -> None:
        self.leader = leader

    def snapshot_records(self) -> list:
        return [m.ConfigRecordV0(resource_type=ConfigResourceType.TOPIC.value, resource_name="sim", name=SNAPSHOT_STATE,
                                 value=str(self.chain))]
