"""Helpers of the kraft data source's tests (no tests here): the records table read the way the
executors read it (plan, then each task), without Spark, and logs written to be read."""

from __future__ import annotations

import shutil
from pathlib import Path

from engine.storage.meta_properties import MetaProperties, write_meta_properties
from metashell.export.history_tables import history_rows
from metashell.spark.options import read_options
from metashell.spark.paths import resolve_paths
from metashell.spark.plan import RecordsTask, plan_records
from metashell.spark.pushed import Pushed
from metashell.spark.read_records import read_records
from tests.metashell.export.spark_rows import collected
from tests.metashell.history.history_script import STORY, write_story


def plan(options: dict, pushed: Pushed = Pushed()) -> list[RecordsTask]:
    parsed = read_options(options)
    return plan_records(resolve_paths(parsed.paths, parsed.cluster_id), pushed, parsed)


def rows_of(tasks: list[RecordsTask], permissive: bool = False) -> list[tuple]:
    """Every row the tasks yield, in task order, as tuples (cluster_id first)."""
    rows: list[tuple] = []
    for task in tasks:
        for batch in read_records(task, permissive):
            rows.extend(zip(*(column.to_pylist() for column in batch.columns)))
    return rows


def read_rows(options: dict, pushed: Pushed = Pushed(), permissive: bool = False) -> list[tuple]:
    return rows_of(plan(options, pushed), permissive)


def write_split_story(directory: Path, batches: list[tuple[list, bool]] | None = None,
                      roll_after: set[int] | None = None, cluster_id: str = "story-cluster") -> Path:
    """history_script's story (or ``batches``) as a node directory, a new segment after each batch
    whose index is in ``roll_after`` (all: every batch its own segment), with a meta.properties."""
    from engine.storage.metadata_log import MetadataLog

    batches = batches or STORY
    rolls = set(range(len(batches))) if roll_after is None else roll_after
    with MetadataLog.create(directory, fsync_policy="never") as log:
        for index, (records, control) in enumerate(batches):
            offset = log.end_offset
            log.append(records, epoch=1 if offset < 29 else 2, timestamp_ms=1_000 * (offset + 1), control=control)
            if index in rolls and index + 1 < len(batches):
                log.roll()
    write_meta_properties(directory, MetaProperties(version=1, cluster_id=cluster_id, node_id=1))
    return directory


def write_whole_story(directory: Path) -> Path:
    write_story(directory)
    write_meta_properties(directory, MetaProperties(version=1, cluster_id="story-cluster", node_id=1))
    return directory


def copy_node(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def export_records(directory: Path, **bounds) -> list[tuple]:
    """The export's records rows of ``directory`` (what the source must give, cluster_id aside)."""
    return [tuple(row) for row in history_rows(directory, tables=["records"], **bounds)["records"].rows]


def read_kraft(spark, *paths, **options):
    """spark.read.format("kraft") with ``options``, loading one path or several."""
    reader = spark.read.format("kraft")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(list(paths) if len(paths) > 1 else paths[0])


def sorted_rows(df) -> list[tuple]:
    """A DataFrame's rows without cluster_id, by offset."""
    return sorted(collected(df.drop("cluster_id")), key=lambda row: row[0])
