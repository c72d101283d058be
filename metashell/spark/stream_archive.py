"""``spark.readStream.format("kraft").load(ARCHIVE)``: a growing archive (``metashell record``'s)
as a stream of its committed records.

The driver reads each archive's ``archive.json`` for its durable end (the manifest names only
offsets whose segments were fsynced first), scans the records from the stream's position up to
there for metadata transactions (metashell.spark.stream_transactions: a micro-batch ends before
an open transaction's Begin) and plans one task per segment file that the micro-batch touches;
the executors read and print the segment's records (metashell.spark.stream_rows). The scan is
kept between micro-batches, so each record is scanned once while the query runs.

Several archives (a glob, or a list) are several clusters: the offset holds a position per
cluster id (metashell.spark.stream_offsets). An archive that appears later joins at its first
offset; an archive's holes (``gaps`` in archive.json: offsets the recorder never got) are passed
over, as the archive says. Offsets the stream still needs but the archive no longer holds (its
retention dropped them) fail the query with one line (failOnDataLoss, the default) or are
skipped with a line saying which (failOnDataLoss=false).
"""

from __future__ import annotations

import glob
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from engine.common.errors import MetadataError
from engine.storage.log_reader import METADATA_PARTITION_DIR, entries_by_batch, list_log_dir
from metashell.record.manifest import MANIFEST_FILE, Manifest, read_manifest
from metashell.spark.corrupt import KraftReadError
from metashell.spark.stream_offsets import (Position, StreamError, StreamOptionError, data_loss_line,
                                            offset_json, positions_of)
from metashell.spark.stream_rows import record_batches
from metashell.spark.stream_transactions import Span, TransactionScan

LOG = logging.getLogger("metashell.spark.stream")


def _torn_tail_ok(position: int, error: MetadataError) -> None:
    """A segment the recorder is appending to ends inside a batch: read up to it."""


@dataclass(frozen=True)
class ArchiveTask(InputPartition):
    """The records ``first``..``last`` of one segment file of one cluster's archive."""

    cluster_id: str
    path: str
    first: int
    last: int
    spans: tuple[Span, ...]


def read_archive_task(task: ArchiveTask) -> Iterator[Any]:
    """The executor's part: the task's rows as Arrow batches; a damaged segment raises one line."""
    try:
        entries = (e for batch in entries_by_batch(Path(task.path), _torn_tail_ok, False, begin=task.first)
                   for e in batch)
        yield from record_batches(task.cluster_id, entries, task.first, task.last, task.spans)
    except MetadataError as err:
        raise KraftReadError(err.one_line()) from None
    except FileNotFoundError:
        raise KraftReadError(f"{task.path}: the segment is gone (the archive's retention dropped it while the "
                           f"query read offsets {task.first} to {task.last})") from None


def archive_roots(paths: Sequence[str]) -> list[Path]:
    """The archives ``load()`` named (a directory holding archive.json, or a glob of them)."""
    roots = []
    for text in paths:
        matched = sorted(glob.glob(text)) if glob.has_magic(text) else [text]
        roots.extend(Path(p) for p in matched if (Path(p) / MANIFEST_FILE).is_file())
        if not glob.has_magic(text) and not (Path(text) / MANIFEST_FILE).is_file():
            raise StreamOptionError(f"{text}: not an archive (no {MANIFEST_FILE}); the kraft stream reads an "
                                    "archive of `metashell record`, or a live quorum (option bootstrap.controllers)")
    return roots


class ArchiveStreamReader(DataSourceStreamReader):
    def __init__(self, paths: Sequence[str], options: Mapping[str, str], *, fail_on_data_loss: bool = True):
        self.paths = list(paths)
        self.fail_on_data_loss = fail_on_data_loss
        self.cluster_override = options.get("clusterId") or options.get("clusterid")
        archive_roots(self.paths)  # a bad path fails the query's start, in one line
        self._scans: dict[str, TransactionScan] = {}
        self._roots: dict[str, Path] = {}

    # -- the archives -------------------------------------------------------------------------

    def _manifests(self) -> dict[str, tuple[Path, Manifest]]:
        out = {}
        for root in archive_roots(self.paths):
            try:
                manifest = read_manifest(root)
            except MetadataError as err:
                raise KraftReadError(err.one_line()) from None
            cluster_id = manifest.cluster_id or self.cluster_override
            if cluster_id is None:
                continue  # a new archive that knows no cluster yet: it joins once it does
            if cluster_id in out:
                raise StreamError(f"{root} and {out[cluster_id][0]} are archives of the same cluster "
                                   f"{cluster_id}: a stream reads one archive per cluster")
            out[cluster_id] = (root, manifest)
            self._roots[cluster_id] = root
        return out

    @staticmethod
    def _first_position(manifest: Manifest) -> Position:
        """Where a new query (or a new cluster) starts: the archive's first offset."""
        if manifest.first_offset <= 0:
            return Position(0, 0)
        epoch = next((e for end, e in manifest.snapshots if end == manifest.first_offset), 0)
        return Position(manifest.first_offset, epoch)

    # -- Spark's calls ------------------------------------------------------------------------

    def initialOffset(self) -> dict:
        return offset_json({cid: self._first_position(m) for cid, (_, m) in self._manifests().items()})

    def latestOffset(self, start: dict, limit: Any = None) -> dict:
        positions = positions_of(start)
        ends = dict(positions)
        for cid, (root, manifest) in self._manifests().items():
            position = positions.get(cid) or self._first_position(manifest)
            position = self._check_loss(cid, position, manifest)
            scan = self._scan(cid, root, position, manifest.last_offset)
            ends[cid] = scan.safe if scan.safe.next > position.next else position
        return offset_json(ends)

    def partitions(self, start: dict, end: dict) -> list[ArchiveTask]:
        starts, ends = positions_of(start), positions_of(end)
        manifests = self._manifests()
        tasks = []
        for cid, stop in ends.items():
            begin = starts.get(cid)
            if begin is None:
                begin = self._first_position(manifests[cid][1]) if cid in manifests else Position(0, 0)
            if stop.next <= begin.next:
                continue
            if cid not in manifests:
                raise StreamError(f"cluster {cid}: its archive is no longer among {', '.join(self.paths)}")
            root, manifest = manifests[cid]
            begin = self._check_loss(cid, begin, manifest)
            tasks.extend(self._tasks(cid, root, begin.next, stop.next - 1))
        return tasks

    def read(self, partition: ArchiveTask) -> Iterator[Any]:
        return read_archive_task(partition)

    def commit(self, end: dict) -> None:
        for cid, position in positions_of(end).items():
            scan = self._scans.get(cid)
            if scan is not None:
                scan.forget_below(position.next)

    # -- planning -------------------------------------------------------------------------------

    def _check_loss(self, cid: str, position: Position, manifest: Manifest) -> Position:
        """The position, or the archive's first offset when retention dropped what it names."""
        if position.next == 0 or manifest.first_offset < 0 or position.next >= manifest.first_offset:
            return position
        if not any(d.first <= position.next <= d.last for d in manifest.dropped) and \
                not any(g.first <= position.next < g.resume for g in manifest.gaps):
            return position  # before the archive began (a new cluster's default start)
        line = data_loss_line(cid, position.next, manifest.first_offset, f"the archive {self._roots.get(cid)}")
        if self.fail_on_data_loss:
            raise StreamError(line)
        LOG.warning("skipping: %s", line)
        return self._first_position(manifest)

    def _segments(self, root: Path) -> list[tuple[int, Path]]:
        return list(list_log_dir(root / METADATA_PARTITION_DIR).segments)

    def _scan(self, cid: str, root: Path, position: Position, last: int) -> TransactionScan:
        """The scan of ``cid`` from ``position``, fed up to offset ``last`` (the durable end)."""
        scan = self._scans.get(cid)
        # every position Spark hands back is one this source gave out: outside any transaction,
        # so a scan that passed it goes on from where it stands
        if scan is None or not (scan.start.next <= position.next <= scan.scanned.next):
            scan = self._scans[cid] = TransactionScan(position)
        if scan.scanned.next > last:
            return scan
        segments = self._segments(root)
        for i, (base, path) in enumerate(segments):
            following = segments[i + 1][0] if i + 1 < len(segments) else None
            if following is not None and following <= scan.scanned.next:
                continue
            if base > last:
                break
            for batch in entries_by_batch(path, _torn_tail_ok, False, begin=scan.scanned.next):
                if batch and batch[0].offset > last:
                    return scan
                scan.feed(e for e in batch if e.offset <= last)
        return scan

    def _tasks(self, cid: str, root: Path, first: int, last: int) -> list[ArchiveTask]:
        scan = self._scans.get(cid)
        if scan is None or not scan.covers(first, last):
            scan = self._scan_fresh(cid, root, first, last)
        spans = scan.spans_between(first, last)
        segments = self._segments(root)
        tasks = []
        for i, (base, path) in enumerate(segments):
            end = segments[i + 1][0] - 1 if i + 1 < len(segments) else None
            if (end is not None and end < first) or base > last:
                continue
            lo, hi = max(first, base), last if end is None else min(last, end)
            tasks.append(ArchiveTask(cid, str(path), lo, hi, tuple(s for s in spans if s.last >= lo and s.first <= hi)))
        return tasks

    def _scan_fresh(self, cid: str, root: Path, first: int, last: int) -> TransactionScan:
        """A batch planned before a restart: its spans, scanned anew (the batch starts outside any
        transaction, as every micro-batch does)."""
        saved = self._scans.pop(cid, None)
        try:
            return self._scan(cid, root, Position(first, 0), last)
        finally:
            if saved is not None:
                self._scans[cid] = saved
