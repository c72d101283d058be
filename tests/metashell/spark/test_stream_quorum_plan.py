"""The live stream's planning, without a quorum: a checkpoint that is not this query's is one line
before anything is fetched, and a micro-batch's bytes are cut into tasks between batches, each
with the offsets and the transactions that touch it."""

from __future__ import annotations

import pytest

from metashell.spark.stream_follow import HeldBatch
from metashell.spark.stream_offsets import StreamError
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
