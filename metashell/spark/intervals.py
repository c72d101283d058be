"""The tasks of the tables that need state: one per snapshot interval of each cluster.

A row of ``partition_changes`` (and of every table but ``records``) says what the state was after
its record, so a task must replay from an image. The export replays each run of a log from its
start (engine.image.run_replay); here the log is cut at its snapshots instead: a task covers the
offsets from one snapshot's end offset up to the next one's, and starts from the image that
snapshot holds, so the tasks of one log replay side by side on the executors.

The plan is made from the files' names alone, on the driver (nothing is decoded there):
- the starting points are the earliest point the directory can rebuild (offset 0, or the oldest
  snapshot the segments continue from: engine.image.metadata_loader.earliest_offset, by name) and
  the end offset of every later snapshot;
- adjacent intervals are merged while the merged span (by offsets, as the names give them) stays
  within ``records_per_task``: a log with a snapshot every few hundred records is not thousands
  of tasks. A merged task keeps the snapshots inside it (``restarts``): where damage or an
  archive's hole stops its replay, it starts again from the first of them past the gap, as the
  export's runs do;
- intervals wholly outside the pushed offset bounds are not planned; a cluster outside the pushed
  cluster ids has no task.

Gaps (damage found by the CRC scan, an archive's holes) are not known on the driver: a task finds
them as it replays (metashell.spark.read_state). The ``gaps`` table is one task per cluster (the
first), which scans the log as the export does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from metashell.spark.cluster_files import ClusterFiles
from metashell.spark.pushed import Pushed

try:  # the base class Spark's planner expects; the fast tier plans without it just as well
    from pyspark.sql.datasource import InputPartition
except ImportError:  # pragma: no cover - pyspark is in the spark extra
    class InputPartition:  # type: ignore[no-redef]
        pass

RECORDS_PER_TASK = 100_000  # the default span a merged interval may reach (offsets, by the names)


@dataclass(frozen=True)
class IntervalTask(InputPartition):
    """One task: rows of records at offsets ``begin`` <= offset < ``end`` (None: to the log's end)
    of one cluster, replayed from the snapshot ending at ``begin`` (``snapshot`` None: from the
    earliest point the directory can rebuild, as the export's first run). Plain values only."""

    cluster_id: str | None
    log_dir: str  # the __cluster_metadata-0 directory
    begin: int
    end: int | None
    snapshot: str | None  # the starting snapshot's path
    restarts: tuple[tuple[int, str], ...] = ()  # (end offset, path) of the snapshots inside the range
    windows: tuple[tuple[int, int | None], ...] | None = None  # single files given: the offsets they hold
    first: bool = False  # the cluster's first task (the gaps table's)
    pushed: Pushed = Pushed()
    end_offset: int | None = None  # the endOffset option: the log read as if it ended there (the export's end)


def plan_intervals(files: ClusterFiles, pushed: Pushed = Pushed(), *, records_per_task: int = RECORDS_PER_TASK,
                   table: str | None = None, end_offset: int | None = None) -> list[IntervalTask]:
    """The tasks of one cluster, in log order (``table`` "gaps": one task for the cluster).
    ``end_offset`` (the endOffset option, as the export's ``end``): the log is read as if it ended
    there, a transaction still open at it not applied (``aborted`` null); ``pushed``'s offset
    bounds are filters on the rows' ``offset`` column."""
    if pushed.cluster_ids is not None and files.cluster_id not in pushed.cluster_ids:
        return []
    windows = _windows(files)
    if table == "gaps":
        return [IntervalTask(files.cluster_id, files.log_dir, 0, None, None, windows=windows, first=True,
                             pushed=pushed, end_offset=end_offset)]
    if windows is not None:  # single files: the intervals are the directory's, the rows the files'
        from metashell.spark.cluster_files import cluster_files_of

        files = cluster_files_of(files.log_dir, files.cluster_id)
    earliest = earliest_by_name(files)
    later = [s for s in files.snapshots if s.end_offset > earliest]
    starts: list[tuple[int, str | None]] = [(earliest, None)] + [(s.end_offset, s.path) for s in later]
    intervals = []
    for index, (begin, path) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else None
        intervals.append([begin, end, path, []])
    merged: list[list] = []
    for interval in intervals:
        last = merged[-1] if merged else None
        if last is not None and interval[1] is not None and interval[1] - last[0] <= max(records_per_task, 1):
            last[3].append((interval[0], interval[2]))  # its snapshot: a restart point after a gap
            last[1] = interval[1]
        else:
            merged.append(interval)
    tasks = []
    for begin, end, path, restarts in merged:
        if not pushed.keeps_offsets(begin, None if end is None else end - 1) or \
                (end_offset is not None and begin > end_offset):
            continue
        if windows is not None and not any(_meets(begin, end, lo, hi) for lo, hi in windows):
            continue
        tasks.append(IntervalTask(files.cluster_id, files.log_dir, begin, end, path, tuple(restarts), windows,
                                  pushed=pushed, end_offset=end_offset))
    if tasks:
        tasks[0] = _first(tasks[0])
    return tasks


def earliest_by_name(files: ClusterFiles) -> int:
    """Where the export's first run starts, from the names (engine.image.metadata_loader's
    ``earliest_offset``): the segments' start when it is 0 or there is no snapshot, else the end
    of the oldest snapshot they continue from (the newest snapshot when none is)."""
    segments, snapshots = files.segments, files.snapshots
    if not segments:
        return snapshots[-1].end_offset if snapshots else 0
    start = segments[0].base_offset
    if start == 0 or not snapshots:
        return start
    covered = [s for s in snapshots if s.end_offset >= start]
    return (covered[0] if covered else snapshots[-1]).end_offset


def _first(task: IntervalTask) -> IntervalTask:
    from dataclasses import replace

    return replace(task, first=True)


def _windows(files: ClusterFiles) -> tuple[tuple[int, int | None], ...] | None:
    """When single files were given (a subset of the directory's segments): the offsets each
    segment holds, [base, next segment's base) by the directory's names; None when every segment
    is there (snapshot files alone hold no record: no window)."""
    from engine.storage.log_reader import list_log_dir

    try:
        every = [base for base, _ in list_log_dir(Path(files.log_dir)).segments]
    except OSError:
        return None  # the task's reading says what is wrong
    given = [s.base_offset for s in files.segments]
    if given == every:
        return None
    following = {base: (every[i + 1] if i + 1 < len(every) else None) for i, base in enumerate(every)}
    return tuple((base, following.get(base)) for base in given)


def _meets(begin: int, end: int | None, lo: int, hi: int | None) -> bool:
    return (end is None or lo < end) and (hi is None or begin < hi)
