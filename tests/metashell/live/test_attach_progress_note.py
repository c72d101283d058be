"""What the attachment's status says while it connects and catches up (metashell.live.attach's
status_note over the follower's state, driven by scripted answers): where it connects to, the
snapshot bytes downloaded of its size, the records fetched and the offset reached of the high
watermark; then that it follows."""

from __future__ import annotations

import random

from engine.raft import raft_messages as rm
from engine.raft.log_follower import FollowerSettings, LogFollower
from engine.raft.raft_io import InboundResponse
from engine.records.kio_codec import ErrorCode as E
from engine.storage.snapshot_writer import SnapshotId
from metashell.live.attach import status_note

BOOT = [("c1", 9093)]


def _follower() -> LogFollower:
    return LogFollower(BOOT, snapshot_state=lambda entries, sid: sid, empty_state=None, rng=random.Random(0),
                       settings=FollowerSettings(snapshot_max_bytes=10))


def test_connecting_then_the_snapshot_bytes_then_the_records_then_following() -> None:
    f = _follower()
    assert status_note(f, "c1:9093", False, 0, False) == "connecting to c1:9093"
    (ask,) = f.poll(0).messages
    f.receive(1, InboundResponse(ask.correlation_id, None, "cannot connect to c1:9093: connection refused"))
    assert status_note(f, "c1:9093", False, 0, False) == \
        "connecting to c1:9093 (last: cannot connect to c1:9093: connection refused)"
    f.leader_id, f.epoch, f.leader_address = 3, 3, ("c1", 9093)  # as a bootstrap's answer names it
    (ask,) = f.poll(1_000).messages
    f.receive(1_001, InboundResponse(ask.correlation_id, rm.fetch_response(
        E.none, leader_id=3, epoch=3, high_watermark=40, snapshot=(20, 2), leader_address=("c1", 9093))))
    (ask,) = f.poll(1_002).messages
    f.receive(1_003, InboundResponse(ask.correlation_id, rm.fetch_snapshot_response(
        E.none, leader_id=3, epoch=3, snapshot_id=(20, 2), size=2_500_000, position=0, data=b"x" * 10)))
    assert f.downloading == SnapshotId(20, 2) and f.download_progress == (10, 2_500_000)
    assert status_note(f, "c1:9093", False, 0, True) == \
        "downloading snapshot 20-2 from leader 3 (epoch 3): 10 bytes of 2.5 MB"
    f._download = None  # (the snapshot's records are another test's: here, the catch-up after it)
    f.applied_offset, f.high_watermark = 29, 40
    assert status_note(f, "c1:9093", False, 1_234, True) == \
        "catching up with leader 3 (epoch 3): 1,234 records fetched, at offset 30 of 40"
    assert status_note(f, "c1:9093", True, 1_234, True) == "following leader 3 (epoch 3)"
