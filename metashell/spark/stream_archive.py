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
skipped with a line saying which (failOnDataLoss=false). A transaction still open at a hole (its
End was in the offsets the recorder never got) ends there with ``aborted`` null, as the export
says of a transaction open where a run ends. ``startingOffsets``: ``earliest`` (the default, each
archive's first offset) or ``latest`` (each archive's durable end, at the Begin of a transaction
open there).
"""

from __future__ import annotations

import glob
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from engine.common.errors import MetadataError
from engine.storage.log_reader import METADATA_PARTITION_DIR, LogEntry, entries_by_batch, list_log_dir
from metashell.record.manifest import MANIFEST_FILE, Manifest, read_manifest
from metashell.spark.corrupt import KraftReadError
from metashell.spark.stream_offsets import (Position, StreamError, StreamOptionError, data_loss_line,
                                            offset_json, positions_of, starting_offsets)
from metashell.spark.stream_rows import record_batches
from metashell.spark.stream_transactions import Span, TransactionScan

LOG = logging.getLogger("metashell.spark.stream")


class _TornTail:
    """The last segment, which the recorder may be appending to, can end inside a batch: it is
    read up to there. Only past the offsets the manifest counts as durable: short of them the
    same bytes are damage (``check``). Every other segment is read strictly."""

    def __init__(self) -> None:
        self.error: MetadataError | None = None

    def __call__(self, position: int, error: MetadataError) -> None:
        self.error = error

    def check(self, read_to: int, needed: int) -> None:
        """Raise the torn tail's error when the offsets read (to ``read_to``, exclusive) stop short
        of ``needed`` (inclusive)."""
        if self.error is not None and read_to <= needed:
            raise self.error


def _entries(path: Path, begin: int, last_segment: bool, needed: int) -> Iterator[LogEntry]:
    """The records of a segment from ``begin`` on; see _TornTail."""
    torn = _TornTail() if last_segment else None
    read_to = begin
    for batch in entries_by_batch(path, torn, False, begin=begin):
        if batch:
            read_to = batch[-1].offset + 1
        yield from batch
    if torn is not None:
        torn.check(read_to, needed)


@dataclass(frozen=True)
class ArchiveTask(InputPartition):
    """The records ``first``..``last`` of one segment file of one cluster's archive."""

    cluster_id: str
    path: str
    first: int
    last: int
    spans: tuple[Span, ...]
    last_segment: bool = False  # the archive's newest segment (see _TornTail)


def read_archive_task(task: ArchiveTask) -> Iterator[Any]:
    """The executor's part: the task's rows as Arrow batches; a damaged segment raises one line."""
    try:
        entries = _entries(Path(task.path), task.first, task.last_segment, task.last)
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
        # absolute on the driver: an executor of a standalone cluster runs in its own work dir
        roots.extend(Path(p).absolute() for p in matched if (Path(p) / MANIFEST_FILE).is_file())
        if not glob.has_magic(text) and not (Path(text) / MANIFEST_FILE).is_file():
            raise StreamOptionError(f"{text}: not an archive (no {MANIFEST_FILE}); the kraft stream reads an "
                                    "archive of `metashell record`, or a live quorum (option bootstrap.controllers)")
    return roots


class ArchiveStreamReader(DataSourceStreamReader):
    def __init__(self, paths: Sequence[str], options: Mapping[str, str], *, fail_on_data_loss: bool = True):
        self.paths = list(paths)
        self.fail_on_data_loss = fail_on_data_loss
        self.cluster_override = options.get("clusterId") or options.get("clusterid")
        self.starting = starting_offsets(options)
        archive_roots(self.paths)  # a bad path fails the query's start, in one line
        self._scans: dict[str, TransactionScan] = {}
        self._roots: dict[str, Path] = {}
        # the last end handed to Spark (or handed back by it): the start of a latestOffset() asked
        # without one, as PySpark 4.0 and 4.1 ask (the start argument came in 4.2)
        self._handed: dict | None = None

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
        manifests = self._manifests()
        positions = {cid: self._first_position(m) for cid, (_, m) in manifests.items()}
        if self.starting == "latest":
            # each archive's durable end, or the Begin of a transaction open there
            positions = {cid: self._safe_end(cid, root, positions[cid], manifest)
                         for cid, (root, manifest) in manifests.items()}
        self._handed = offset_json(positions)
        return self._handed

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        if start is None:
            start = self._handed if self._handed is not None else self.initialOffset()
        positions = positions_of(start)
        ends = dict(positions)
        for cid, (root, manifest) in self._manifests().items():
            position = positions.get(cid) or self._first_position(manifest)
            position = self._check_loss(cid, position, manifest)
            ends[cid] = self._safe_end(cid, root, position, manifest)
        self._handed = offset_json(ends)
        return self._handed

    def _safe_end(self, cid: str, root: Path, position: Position, manifest: Manifest) -> Position:
        """How far a micro-batch from ``position`` may go: the durable end, outside any transaction."""
        try:
            scan = self._scan(cid, root, position, manifest.last_offset, manifest)
        except MetadataError as err:  # damage: the file and the byte offset, in one line
            raise StreamError(err.one_line()) from None
        return scan.safe if scan.safe.next > position.next else position

    def partitions(self, start: dict, end: dict) -> list[ArchiveTask]:
        starts, ends = positions_of(start), positions_of(end)
        self._handed = end  # a replayed micro-batch after a restart: the next goes on from its end
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
            tasks.extend(self._tasks(cid, root, begin.next, stop.next - 1, manifest))
        return tasks

    def reportLatestOffset(self) -> dict | None:
        """How far the archives' durable ends were scanned (outside transactions): Spark's progress
        shows it beside the micro-batch's end, so the lag of the query is in sight."""
        return offset_json({cid: scan.safe for cid, scan in self._scans.items()}) if self._scans else None

    def read(self, partition: ArchiveTask) -> Iterator[Any]:
        return read_archive_task(partition)

    def commit(self, end: dict) -> None:
        if self._handed is None:
            self._handed = end
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

    def _scan(self, cid: str, root: Path, position: Position, last: int, manifest: Manifest) -> TransactionScan:
        """The scan of ``cid`` from ``position``, fed up to offset ``last`` (the durable end). At a
        hole of the archive (the offsets jump, or the scan stands in one of the manifest's gaps) a
        transaction still open is cut (TransactionScan.cut): its End is in no segment, and
        waiting for it would stall the stream for good."""
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
            for entry in _entries(path, scan.scanned.next, following is None, last):
                if entry.offset > last:
                    return scan
                if entry.offset > scan.scanned.next:
                    scan.cut()
                scan.feed((entry,))
        if scan.open_first is not None and manifest.gap_for(scan.scanned.next) is not None:
            scan.cut()  # the hole is at the durable end: the records after it are not written yet
        return scan

    def _tasks(self, cid: str, root: Path, first: int, last: int, manifest: Manifest) -> list[ArchiveTask]:
        scan = self._scans.get(cid)
        if scan is None or not scan.covers(first, last):
            try:
                scan = self._scan_fresh(cid, root, first, last, manifest)
            except MetadataError as err:
                raise StreamError(err.one_line()) from None
        spans = scan.spans_between(first, last)
        segments = self._segments(root)
        tasks = []
        for i, (base, path) in enumerate(segments):
            end = segments[i + 1][0] - 1 if i + 1 < len(segments) else None
            if (end is not None and end < first) or base > last:
                continue
            lo, hi = max(first, base), last if end is None else min(last, end)
            tasks.append(ArchiveTask(cid, str(path), lo, hi, tuple(s for s in spans if s.last >= lo and s.first <= hi),
                                     end is None))
        return tasks

    def _scan_fresh(self, cid: str, root: Path, first: int, last: int, manifest: Manifest) -> TransactionScan:
        """A batch planned before a restart: its spans, scanned anew (the batch starts outside any
        transaction, as every micro-batch does)."""
        saved = self._scans.pop(cid, None)
        try:
            return self._scan(cid, root, Position(first, 0), last, manifest)
        finally:
            if saved is not None:
                self._scans[cid] = saved
