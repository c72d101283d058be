"""``spark.readStream.format("kraft").option("bootstrap.controllers", ...)``: a live quorum's
committed metadata records as a stream.

The driver's stream process follows the quorum (metashell.spark.stream_follow's QuorumTail: the
recorder's observer, failover included) and holds the committed batches' bytes; ``latestOffset``
ends a micro-batch at the furthest committed record outside any metadata transaction;
``partitions`` hands the executors the batches' bytes, in chunks, to decode and print there.

A DataSourceStreamReader, not the simple one: the simple reader prints every row on the driver
and hands Spark tuples; here the driver only scans record types, and the tasks print, as the
batch source's do. After a restart Spark asks again for the micro-batch its offset log holds but
its commit log does not (``partitions(start, end)`` before any ``latestOffset``): the tail then
fetches exactly those offsets again, from ``start``'s offset and epoch, so the rows are the same.

Options: ``bootstrap.controllers`` (host:port,...), the client settings of ``metashell
--command-config`` as ``kafka.<name>`` options or ``command.config`` (a properties file; the
``kafka.`` options win), ``startingOffsets`` (``earliest``, the default: the leader's log start,
or ``latest``: the records committed from the query's start on), ``failOnDataLoss`` (default
true), ``maxBufferBytes`` (how much the driver holds ahead of Spark, default 64 MiB),
``fetchTimeoutMs`` (how long the query's start and a replayed micro-batch wait for the quorum,
default 120000: the stream itself waits as long as the quorum is down).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from engine.common.errors import MetadataError
from engine.storage.log_reader import batches_of_bytes
from metashell.live.attach import load_command_config
from metashell.spark.stream_follow import DEFAULT_MAX_BUFFER_BYTES, QuorumTail
from metashell.spark.corrupt import KraftReadError
from metashell.spark.stream_offsets import (START, Position, StreamError, StreamOptionError, data_loss_line,
                                            int_option, offset_json, positions_of)
from metashell.spark.stream_rows import record_batches
from metashell.spark.stream_transactions import Span

LOG = logging.getLogger("metashell.spark.stream")
CHUNK_BYTES = 8 * 1024 * 1024  # a task's share of a micro-batch


@dataclass(frozen=True)
class QuorumTask(InputPartition):
    """Records ``first``..``last`` of whole batches' bytes, as the leader served them."""

    cluster_id: str
    data: bytes
    first: int
    last: int
    spans: tuple[Span, ...]


def read_quorum_task(task: QuorumTask) -> Iterator[Any]:
    where = f"the batches fetched for offsets {task.first} to {task.last}"
    try:
        entries = (e for _, batch in batches_of_bytes(task.data, where, None, False) for e in batch)
        yield from record_batches(task.cluster_id, entries, task.first, task.last, task.spans)
    except MetadataError as err:
        raise KraftReadError(err.one_line()) from None


def client_config(options: Mapping[str, str]) -> dict[str, str]:
    """The client settings: command.config's file, then the ``kafka.`` options over it."""
    config: dict[str, str] = {}
    path = options.get("command.config")
    if path:
        try:
            config.update(load_command_config(path))
        except MetadataError as err:
            raise StreamOptionError(f"option command.config: {err.one_line()}") from None
    for key, value in options.items():
        if key.lower().startswith("kafka."):
            config[key[len("kafka."):]] = value
    return config


class QuorumStreamReader(DataSourceStreamReader):
    def __init__(self, options: Mapping[str, str], *, fail_on_data_loss: bool = True):
        self.bootstrap = options["bootstrap.controllers"]
        self.config = client_config(options)
        self.cluster_id = options.get("clusterId") or self.config.get("cluster.id") or None
        self.fail_on_data_loss = fail_on_data_loss
        self.starting = str(options.get("startingOffsets", "earliest")).strip().lower()
        if self.starting not in ("earliest", "latest"):
            raise StreamOptionError(f"option startingOffsets={options.get('startingOffsets')!r}: expected "
                                    "earliest or latest (a checkpoint says where a restarted query goes on)")
        self.max_buffer_bytes = int_option(options, "maxBufferBytes", DEFAULT_MAX_BUFFER_BYTES, 1)
        self.timeout_s = int_option(options, "fetchTimeoutMs", 120_000, 1) / 1000
        self.tail: QuorumTail | None = None
        self._warned: set[str] = set()
        self._new_tail(START, probe=True).close()  # bad settings fail the query's start, in one line
        self.tail = None

    # -- the tail ---------------------------------------------------------------------------------

    def _new_tail(self, start: Position, *, probe: bool = False) -> QuorumTail:
        try:
            tail = QuorumTail(self.bootstrap, self.config, start, cluster_id=self.cluster_id,
                              skip_lost=start.next == 0 or not self.fail_on_data_loss,
                              max_buffer_bytes=self.max_buffer_bytes)
        except MetadataError as err:
            raise StreamOptionError(err.one_line()) from None
        return tail if probe else tail.open()

    def _tail_at(self, start: Position) -> QuorumTail:
        tail = self.tail
        if tail is None or not tail.holds(start):
            if tail is not None:
                tail.close()
            tail = self.tail = self._new_tail(start)
        return tail

    def _check(self, tail: QuorumTail) -> None:
        with tail.changed:
            error, lost = tail.error, tail.lost
        if error is not None:
            raise StreamError(error)
        if lost is not None:
            line = data_loss_line(tail.cluster_id or "?", lost[0], lost[1], f"the leader's log at {self.bootstrap}")
            if self.fail_on_data_loss:
                raise StreamError(line)
            if line not in self._warned:
                self._warned.add(line)
                LOG.warning("skipping: %s", line)

    def _waited(self, tail: QuorumTail, ok: Any, what: str) -> None:
        if not tail.wait(ok, self.timeout_s):
            raise StreamError(f"{what}: no answer from the quorum at {self.bootstrap} in {self.timeout_s:g} s"
                               + (f" (last: {tail.last_failure})" if tail.last_failure else ""))
        self._check(tail)

    # -- Spark's calls ------------------------------------------------------------------------

    def initialOffset(self) -> dict:
        tail = self._tail_at(START)
        self._waited(tail, lambda: tail.begin is not None, "starting the stream")
        if self.starting == "latest":
            for _ in range(int(self.timeout_s) + 1):  # what is read on the way there is not kept
                if tail.wait(tail.caught_up, 1.0):
                    break
                tail.drop_below(tail.scan.safe.next)
            self._waited(tail, tail.caught_up, "starting the stream at the latest offset")
            with tail.changed:
                begin = tail.scan.safe
        else:
            begin = tail.begin
        self.cluster_id = tail.cluster_id
        return offset_json({tail.cluster_id: begin})

    def _position(self, offset: dict) -> tuple[str, Position]:
        positions = positions_of(offset)
        if len(positions) != 1:
            raise StreamError(f"the checkpoint's offset names {len(positions)} clusters; a live stream follows one")
        cluster_id, position = next(iter(positions.items()))
        if self.cluster_id is not None and cluster_id != self.cluster_id:
            raise StreamError(f"the checkpoint is of cluster {cluster_id}, the query's options name cluster "
                               f"{self.cluster_id}")
        self.cluster_id = cluster_id
        return cluster_id, position

    def latestOffset(self, start: dict, limit: Any = None) -> dict:
        cluster_id, position = self._position(start)
        tail = self._tail_at(position)
        self._check(tail)
        with tail.changed:
            safe = tail.scan.safe
        end = safe if safe.next > position.next else position
        return offset_json({cluster_id: end})

    def partitions(self, start: dict, end: dict) -> list[QuorumTask]:
        cluster_id, first = self._position(start)
        _, stop = self._position(end)
        if stop.next <= first.next:
            return []
        tail = self._tail_at(first)
        self._waited(tail, lambda: tail.scan.scanned.next >= stop.next,
                     f"fetching offsets {first.next} to {stop.next - 1} again")
        with tail.changed:
            batches = [b for b in tail.batches if b.last >= first.next and b.first < stop.next]
            spans = tail.scan.spans_between(first.next, stop.next - 1)
        return _chunks(cluster_id, batches, first.next, stop.next - 1, spans)

    def read(self, partition: QuorumTask) -> Iterator[Any]:
        return read_quorum_task(partition)

    def commit(self, end: dict) -> None:
        _, position = self._position(end)
        if self.tail is not None:
            self.tail.drop_below(position.next)

    def stop(self) -> None:
        if self.tail is not None:
            self.tail.close()
            self.tail = None


def _chunks(cluster_id: str, batches: list, first: int, last: int, spans: tuple[Span, ...]) -> list[QuorumTask]:
    """Tasks of about CHUNK_BYTES each, cut between batches."""
    tasks, group, size = [], [], 0
    for batch in batches:
        group.append(batch)
        size += len(batch.data)
        if size >= CHUNK_BYTES:
            tasks.append(group)
            group, size = [], 0
    if group:
        tasks.append(group)
    out = []
    for group in tasks:
        lo, hi = max(first, group[0].first), min(last, group[-1].last)
        out.append(QuorumTask(cluster_id, b"".join(b.data for b in group), lo, hi,
                              tuple(s for s in spans if s.last >= lo and s.first <= hi)))
    return out
