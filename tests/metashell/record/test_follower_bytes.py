"""What the log follower hands a recorder (engine.raft.log_follower ``keep_bytes`` and ``start``), on
scripted Fetch answers: each committed batch's bytes exactly as served, beside its entries; the
live shell's follower keeps none; a follower started at an archive's end asks from there, hands
over no reset, and goes to the leader's snapshot when the log moved past it."""

from __future__ import annotations

import random

from engine.raft import raft_messages as rm
from engine.raft.log_follower import LogFollower
from engine.raft.raft_io import InboundResponse
from engine.records.kio_codec import ErrorCode as E
from tests.metashell.record.archive_fixtures import FakeLeaderLog

LEADER = ("c1", 9093)


def _follower(**kw) -> LogFollower:
    f = LogFollower([LEADER], snapshot_bytes_state=lambda data, sid, where: (data, sid), empty_state=None,
                    cluster_id="cid", rng=random.Random(0), **kw)
    f.leader_id, f.epoch, f.leader_address = 1, 1, LEADER
    return f


def _answer(f: LogFollower, now_ms: int, **kw) -> object:
    (request,) = f.poll(now_ms).messages
    f.receive(now_ms + 1, InboundResponse(request.correlation_id, rm.fetch_response(
        E.none, leader_id=1, epoch=1, leader_address=LEADER, **kw)))
    return request


def test_each_committed_batch_comes_with_its_served_bytes() -> None:
    leader = FakeLeaderLog()
    served = [leader.append(2), leader.append(3), leader.append(1)]
    f = _follower(keep_bytes=True)
    # the high watermark is inside the last batch: it stays pending, bytes and all
    _answer(f, 0, high_watermark=5, records=b"".join(served))
    taken = f.take()
    assert taken.raw == served[:2]
    assert [[e.offset for e in b] for b in taken.batches] == [[0, 1], [2, 3, 4]]
    _answer(f, 10, high_watermark=6)
    assert f.take().raw == served[2:]


def test_the_live_shells_follower_keeps_no_bytes() -> None:
    leader = FakeLeaderLog()
    f = _follower()
    _answer(f, 0, high_watermark=3, records=leader.append(3))
    taken = f.take()
    assert taken.raw == [] and len(taken.batches) == 1


def test_a_follower_started_at_an_archives_end_fetches_from_there_without_a_reset() -> None:
    leader = FakeLeaderLog(epoch=4)
    for _ in range(3):
        leader.append()
    after = leader.append()
    f = _follower(keep_bytes=True, start=(9, 4))
    request = _answer(f, 0, high_watermark=12, records=after)
    part = rm.only_partition(request.request)
    assert (part.fetch_offset, part.last_fetched_epoch) == (9, 4)
    taken = f.take()
    assert taken.reset is None and taken.raw == [after]
    assert f.applied_offset == 11


def test_a_follower_behind_the_leaders_log_start_downloads_its_snapshot_and_resets() -> None:
    leader = FakeLeaderLog()
    for _ in range(4):
        leader.append()
    snapshot_id, data = leader.snapshot()
    f = _follower(keep_bytes=True, start=(3, 1))
    _answer(f, 0, high_watermark=12, snapshot=(snapshot_id.end_offset, snapshot_id.epoch))
    (request,) = f.poll(2).messages
    f.receive(3, InboundResponse(request.correlation_id, rm.fetch_snapshot_response(
        E.none, leader_id=1, epoch=1, snapshot_id=(snapshot_id.end_offset, snapshot_id.epoch), size=len(data),
        position=0, data=data, leader_address=LEADER)))
    taken = f.take()
    assert taken.reset == ((data, snapshot_id), snapshot_id.end_offset - 1)
    assert f.fetch_offset == snapshot_id.end_offset
