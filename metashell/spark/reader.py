"""``KraftReader``: a batch read of the kraft data source. The driver resolves the paths and plans
the tasks by file names only; each task decodes its file or interval on the executor."""

from __future__ import annotations

from typing import Any, Iterator

from pyspark.sql.datasource import DataSourceReader, InputPartition

from engine.common.errors import MetadataError
from metashell.spark.options import read_options
from metashell.spark.pushed import Pushed


class KraftReader(DataSourceReader):
    """A batch read: the paths resolved and the tasks planned on the driver, by names only."""

    def __init__(self, options: Any):
        from metashell.spark.paths import resolve_paths

        self.options = read_options(options)
        self.pushed = Pushed()
        self.offsets: frozenset[int] | None = None  # offset IN (...), pushed (metashell.spark.filters)
        self.clusters = resolve_paths(self.options.paths, self.options.cluster_id)

    def partitions(self) -> list[InputPartition]:
        from metashell.spark.plan import plan_records, with_options

        if self.options.table == "records":
            tasks: list[InputPartition] = list(plan_records(self.clusters, self.pushed, self.options, self.offsets))
        else:
            from metashell.spark.intervals import plan_intervals
            from metashell.spark.plan import narrowed

            pushed = narrowed(with_options(self.pushed, self.options), self.offsets)
            sizes = {"records_per_task": self.options.records_per_task} if self.options.records_per_task else {}
            tasks = [task for files in self.clusters for task in
                     plan_intervals(files, pushed, table=self.options.table, end_offset=self.options.end_offset, **sizes)]
        # Spark needs at least one partition to run read(); an empty plan reads nothing
        return tasks or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from metashell.spark.corrupt import KraftReadError

        if type(partition) is InputPartition:  # the empty plan's
            return
        try:
            if self.options.table == "records":
                from metashell.spark.read_records import read_records

                yield from read_records(partition, self.options.permissive)
            else:
                from metashell.spark.read_state import read_interval

                yield from read_interval(partition, self.options.table, self.options.permissive)
        except MetadataError as exc:  # anything the engine says: its one line, not a repr
            raise KraftReadError(exc.one_line()) from None
