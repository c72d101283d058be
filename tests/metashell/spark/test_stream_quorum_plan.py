"""The live stream's planning, without a quorum: a checkpoint that is not this query's is one line
before anything is fetched, and a micro-batch's bytes are cut into tasks between batches, each
with the offsets and the transactions that touch it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from engine.records import metadata_records as m
from engine.storage.log_reader import LogEntry
from metashell.spark.stream_follow import HeldBatch, QuorumTail
from metashell.spark.stream_offsets import Position, StreamError
from metashell.spark.stream_quorum import QuorumStreamReader, _chunks
from metashell.spark.stream_transactions import Span


def test_a_checkpoint_of_another_cluster_or_of_two_is_refused_in_one_line():
    reader = QuorumStreamReader({"bootstrap.controllers": "127.0.0.1:1", "clusterId": "mine"})
    with pytest.raises(StreamError,
                       match="^the checkpoint is of cluster theirs, the query's options name cluster mine$"):
        reader.latestOffset({"clusters": {"theirs": {"next": 5, "epoch": 1}}})
    with pytest.raises(StreamError, match="^the checkpoint's offset names 2 clusters; a live stream follows one$"):
        reader.latestOffset({"clusters": {"a": {"next": 5, "epoch": 1}, "b": {"next": 1, "epoch": 1}}})
    assert reader.tail is None  # nothing was fetched


def test_a_micro_batch_is_cut_between_batches_with_its_offsets_and_transactions(monkeypatch):
    monkeypatch.setattr("metashell.spark.stream_quorum.CHUNK_BYTES", 10)
    batches = [HeldBatch(0, 4, b"a" * 6), HeldBatch(5, 9, b"b" * 6), HeldBatch(10, 12, b"c" * 6)]
    spans = (Span(3, 6, True), Span(11, 12, False))
    tasks = _chunks("c1", batches, 2, 11, spans)
    assert [(t.first, t.last, t.data, t.spans) for t in tasks] == [
        (2, 9, b"a" * 6 + b"b" * 6, (spans[0],)),
        (10, 11, b"c" * 6, (spans[1],)),
    ]


def _core(batches: list[list[LogEntry]], raw: list[bytes], *, reset: Any = None, high_watermark: int = -1) -> Any:
    """What QuorumTail._take reads of a LogFollower: one take()'s worth, as the thread would get it."""
    taken = SimpleNamespace(reset=reset, batches=batches, raw=raw)
    return SimpleNamespace(take=lambda: taken, last_failure=None, high_watermark=high_watermark, connected=True,
                           downloading=None)


def _tail(start: Position, **kwargs: Any) -> QuorumTail:  # never opened: no thread, no quorum
    return QuorumTail("127.0.0.1:1", {}, start, cluster_id="mine", **kwargs)


def test_latest_offset_asked_without_a_start_goes_on_from_the_last_end_handed_out():
    # PySpark 4.0 and 4.1 call latestOffset() with no arguments (start came in 4.2)
    reader = QuorumStreamReader({"bootstrap.controllers": "127.0.0.1:1", "clusterId": "mine"})
    tail = reader.tail = _tail(Position(5, 1), skip_lost=False)
    tail._take(_core([[LogEntry(o, 1, 0, m.NoOpRecordV0()) for o in (5, 6, 7)]], [b"x"], high_watermark=8))
    at = {"clusters": {"mine": {"next": 5, "epoch": 1}}}
    assert reader.partitions(at, at) == []  # a replayed empty micro-batch after a restart: its end seeds
    assert reader.latestOffset() == {"clusters": {"mine": {"next": 8, "epoch": 1}}}
    assert reader.latestOffset() == {"clusters": {"mine": {"next": 8, "epoch": 1}}}  # nothing new


def test_a_lost_checkpoint_offset_fails_at_once_with_the_data_loss_line():
    reader = QuorumStreamReader({"bootstrap.controllers": "127.0.0.1:1", "clusterId": "mine",
                                 "fetchTimeoutMs": "5000"})
    tail = reader.tail = _tail(Position(5, 1), skip_lost=False)
    # the leader's log starts past the checkpoint: it hands over its snapshot at 100
    tail._take(_core([], [], reset=(SimpleNamespace(end_offset=100, epoch=2), 100)))
    assert tail.lost == (5, 100)
    assert tail.wait(lambda: False, 5.0)  # woken by the loss, not by the timeout
    start, end = {"clusters": {"mine": {"next": 5, "epoch": 1}}}, {"clusters": {"mine": {"next": 9, "epoch": 1}}}
    with pytest.raises(StreamError, match=r"^cluster mine: offsets 5 to 99 are no longer available .*"
                                          r"failOnDataLoss=false"):
        reader.partitions(start, end)
    reader._fresh = True
    with pytest.raises(StreamError, match=r"^cluster mine: offsets 5 to 99 are no longer available"):
        reader.latestOffset(start)


def test_one_open_transaction_larger_than_the_buffer_is_fetched_on_then_fails_in_one_line():
    tail = _tail(Position(0, 0), skip_lost=False, max_buffer_bytes=100)
    tail._take(_core([[LogEntry(0, 1, 0, m.NoOpRecordV0())]], [b"a" * 100]))
    assert not tail._may_fetch()  # full, no transaction open: Spark drains it first
    tail.drop_below(1)
    tail._take(_core([[LogEntry(1, 1, 0, m.BeginTransactionRecordV0(name="t"))]], [b"b" * 60]))
    tail._take(_core([[LogEntry(2, 1, 0, m.NoOpRecordV0())]], [b"c" * 60]))
    assert tail.held_bytes >= 100 and tail.scan.safe.next == 1
    assert tail._may_fetch()  # Spark can take none of it before its End: fetch on
    tail._take(_core([[LogEntry(3, 1, 0, m.NoOpRecordV0())]], [b"d" * 300]))
    assert not tail._may_fetch()
    assert tail.error == ("the metadata transaction from offset 1 is still open after 420 bytes, more than 4 x "
                          "maxBufferBytes (400): a micro-batch ends outside transactions; raise option "
                          "maxBufferBytes (now 100)")
