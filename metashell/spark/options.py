"""The kraft data source's options, as Spark hands them to ``DataSource.__init__``: a
case-insensitive map of strings. ``read_options`` checks every one and says what is wrong in
one line (an unknown option, table or mode, an offset that is not a number), before a task runs.

    table        records (default) or any other history table (metashell.spark.table_schema)
    mode         FAILFAST (default): a damaged file fails its task; PERMISSIVE: damage becomes
                 rows with ``_corrupt`` set, and reading goes on where it can
    startOffset  the first offset to give rows for (inclusive; the export's ``start``)
    endOffset    the last offset read (inclusive; the export's ``end``): the log is read as if it
                 ended there, so a transaction still open at it has ``aborted`` null
    clusterId    the cluster id of files that have no meta.properties or archive.json beside them
    recordsPerTask  the tables that need state: adjacent snapshot intervals are merged into one
                 task while it spans at most this many offsets (default 100000; by file names)
    path, paths  what load() was given (paths: a JSON list, as DataFrameReader.load sends several)

Streaming options (bootstrap.controllers, kafka.*, command.config, ...) are the stream
readers' (metashell.spark.stream_*, which check them): a batch read refuses them by name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping

from engine.common.errors import ConfigError
from metashell.spark.table_schema import SOURCE_TABLES

MODES = ("FAILFAST", "PERMISSIVE")
BATCH_OPTIONS = ("table", "mode", "startoffset", "endoffset", "clusterid", "path", "paths", "recordspertask")
# The stream readers' options (checked there): with streaming=True they pass here unchecked.
STREAM_PREFIXES = ("kafka.", "bootstrap.", "command.", "stream.", "maxrecordspertrigger", "startingoffsets",
                   "failondataloss", "maxbufferbytes", "fetchtimeoutms")


class OptionError(ConfigError):
    """An option the kraft data source cannot take: one line naming it."""


@dataclass(frozen=True, slots=True)
class ReadOptions:
    table: str = "records"
    permissive: bool = False
    start_offset: int | None = None
    end_offset: int | None = None
    cluster_id: str | None = None
    paths: tuple[str, ...] = ()
    records_per_task: int | None = None  # None: metashell.spark.intervals.RECORDS_PER_TASK


def read_options(options: Mapping[str, str], *, streaming: bool = False) -> ReadOptions:
    """The options of one read, checked. Keys are matched case-insensitively (Spark's own rule)."""
    lowered = {str(key).lower(): value for key, value in options.items()}
    for key in lowered:
        if key in BATCH_OPTIONS or (streaming and key.startswith(STREAM_PREFIXES)):
            continue
        if key.startswith(STREAM_PREFIXES):
            raise OptionError(f"option {key!r} is the streaming source's (spark.readStream.format('kraft')), "
                              "not a batch read's")
        raise OptionError(f"unknown option {key!r} for format kraft (known: table, mode, startOffset, endOffset, "
                          "clusterId, recordsPerTask)")
    table = lowered.get("table", "records") or "records"
    if table not in SOURCE_TABLES:
        raise OptionError(f"unknown table {table!r} for format kraft (known: {', '.join(SOURCE_TABLES)})")
    mode = (lowered.get("mode") or "FAILFAST").upper()
    if mode not in MODES:
        raise OptionError(f"unknown mode {lowered.get('mode')!r} for format kraft (known: FAILFAST, PERMISSIVE)")
    start, end = _offset(lowered, "startoffset", "startOffset"), _offset(lowered, "endoffset", "endOffset")
    if start is not None and end is not None and end < start:
        raise OptionError(f"endOffset {end} is before startOffset {start}")
    cluster_id = (lowered.get("clusterid") or "").strip() or None
    per_task = _count(lowered, "recordspertask", "recordsPerTask")
    return ReadOptions(table, mode == "PERMISSIVE", start, end, cluster_id, paths_of(lowered), per_task)


def paths_of(lowered: Mapping[str, str]) -> tuple[str, ...]:
    """load()'s paths: ``path`` (one), and ``paths`` (several: DataFrameReader.load sends a JSON
    list of strings; a plain string is taken as one path)."""
    found: list[str] = []
    if lowered.get("path"):
        found.append(str(lowered["path"]))
    raw = lowered.get("paths")
    if raw:
        try:
            listed = json.loads(raw)
        except ValueError:
            listed = [raw]
        if isinstance(listed, str):
            listed = [listed]
        if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
            raise OptionError(f"option paths must be a JSON list of paths, not {raw!r}")
        found.extend(p for p in listed if p not in found)
    return tuple(found)


def _offset(lowered: Mapping[str, str], key: str, name: str) -> int | None:
    return _whole_number(lowered, key, name, 0, "an offset (a whole number >= 0)")


def _count(lowered: Mapping[str, str], key: str, name: str) -> int | None:
    return _whole_number(lowered, key, name, 1, "a whole number > 0")


def _whole_number(lowered: Mapping[str, str], key: str, name: str, least: int, what: str) -> int | None:
    """The option as a whole number >= ``least``; None when unset or blank; else one line saying ``what``."""
    raw = lowered.get(key)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = None
    if value is None or value < least:
        raise OptionError(f"option {name} must be {what}, not {raw!r}") from None
    return value
