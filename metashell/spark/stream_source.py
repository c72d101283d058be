"""Which stream ``spark.readStream.format("kraft")`` reads: a live quorum
(``bootstrap.controllers``) or growing archives (``load(path)``), from the data source's options.
KraftDataSource.streamReader delegates here; the simple (driver-only) reader is not offered: see
metashell.spark.stream_quorum for why."""

from __future__ import annotations

import json
from typing import Any, Mapping

from metashell.spark.stream_offsets import StreamOptionError, bool_option

STREAM_TABLES = ("records",)


def load_paths(options: Mapping[str, str]) -> list[str]:
    """The paths ``load()`` was given: ``path`` for one, ``paths`` (a JSON list) for several."""
    paths = []
    raw = options.get("paths")
    if raw:
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = [raw]
        paths.extend(str(p) for p in (value if isinstance(value, list) else [value]))
    if options.get("path"):
        paths.append(str(options["path"]))
    return paths


def stream_reader(options: Mapping[str, str], schema: Any = None) -> Any:
    """The DataSourceStreamReader for ``options`` (Spark's, case-insensitive); StreamOptionError,
    one line, for options that name no stream or two."""
    table = str(options.get("table", "records")).strip()
    if table not in STREAM_TABLES:
        raise StreamOptionError(f"option table={table!r}: the kraft stream serves the records table (the tables "
                                "that need the state are read in batch: spark.read.format(\"kraft\"))")
    mode = str(options.get("mode", "FAILFAST")).strip().upper()
    if mode != "FAILFAST":
        raise StreamOptionError(f"option mode={options.get('mode')!r}: a stream fails on damage (FAILFAST); "
                                "read a damaged log in batch with PERMISSIVE")
    for name, why in (("startOffset", "a stream starts at option startingOffsets, a restarted one at its checkpoint"),
                      ("endOffset", "a stream has no end: stop the query, or read in batch"),
                      ("maxRecordsPerTrigger", "a micro-batch takes every committed record the driver holds "
                                               "(option maxBufferBytes bounds that)")):
        if options.get(name) is not None:
            raise StreamOptionError(f"option {name} is not the kraft stream's: {why}")
    fail = bool_option(options, "failOnDataLoss", True)
    paths = load_paths(options)
    bootstrap = options.get("bootstrap.controllers")
    if bootstrap is not None and paths:
        raise StreamOptionError("give either option bootstrap.controllers (a live quorum) or load(path) (an "
                                "archive), not both")
    if bootstrap is not None:
        if not str(bootstrap).strip():
            raise StreamOptionError("option bootstrap.controllers is empty (expected host:port,...)")
        from metashell.spark.stream_quorum import QuorumStreamReader

        return QuorumStreamReader(options, fail_on_data_loss=fail)
    if not paths:
        raise StreamOptionError("the kraft stream needs option bootstrap.controllers (a live quorum) or "
                                "load(path) of an archive written by `metashell record`")
    from metashell.spark.stream_archive import ArchiveStreamReader

    return ArchiveStreamReader(paths, options, fail_on_data_loss=fail)


def simple_stream_reader(options: Mapping[str, str], schema: Any = None) -> Any:
    """Never asked: PySpark asks ``simpleStreamReader`` only when ``streamReader`` is not
    implemented, and the kraft stream's is (its tasks print the rows on the executors; the simple
    reader would print every row on the driver). Said in one line should a caller ask."""
    raise StreamOptionError("the kraft stream is a DataSourceStreamReader (KraftDataSource.streamReader); it "
                            "offers no simple (driver-only) reader")
