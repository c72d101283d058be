"""A stream task's rows: the records of one offset range, as Arrow batches of the ``records``
table (cluster_id first), printed on the executor by the export's own printer (records_row)."""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Sequence

from engine.storage.log_reader import LogEntry
from metashell.export.history_tables import records_row
from metashell.spark.stream_transactions import Span, aborted_of
from metashell.spark.table_schema import source_arrow_schema

ROWS_PER_BATCH = 4096


def record_batches(cluster_id: str, entries: Iterable[LogEntry], first: int, last: int,
                   spans: Sequence[Span]) -> Iterator[Any]:
    """pyarrow RecordBatches of the records with ``first`` <= offset <= ``last``."""
    import pyarrow as pa

    schema = source_arrow_schema("records")
    rows: list[tuple] = []
    for entry in entries:
        offset = entry.offset
        if offset < first:
            continue
        if offset > last:
            break
        rows.append((cluster_id, *records_row(entry, aborted_of(entry, spans))))
        if len(rows) >= ROWS_PER_BATCH:
            yield _batch(pa, schema, rows)
            rows = []
    if rows:
        yield _batch(pa, schema, rows)


def _batch(pa: Any, schema: Any, rows: list[tuple]) -> Any:
    columns = list(zip(*rows))
    return pa.RecordBatch.from_arrays([pa.array(col, type=f.type) for col, f in zip(columns, schema)], schema=schema)
