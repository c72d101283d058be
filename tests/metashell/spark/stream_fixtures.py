"""What the kraft stream's tests share (no tests here): the source registered, a leader's log
with metadata transactions, running a query to Parquet, and the rows the export's engine reads
from a log directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.records import metadata_records as m
from engine.records.metadata_record_serde import encode_record
from engine.records.record_batch import build_batch, encode_batch
from metashell.spark.table_schema import source_column_names
from tests.metashell.record.archive_fixtures import FakeLeaderLog


def register(spark: Any) -> str:
    """The kraft source registered in ``spark``: its format name."""
    import metashell.spark

    metashell.spark.register(spark)
    return "kraft"


class TransactionLog(FakeLeaderLog):
    """FakeLeaderLog with metadata transactions, each marker a batch of its own (as Kafka writes a
    transaction too big for one batch), so a transaction spans batches and segments."""

    def _batch(self, records: list) -> bytes:
        batch = build_batch(self.next_offset, [encode_record(r) for r in records], timestamp_ms=self.time_ms,
                            leader_epoch=self.epoch)
        for i, record in enumerate(records):
            self.delta.replay(record, self.next_offset + i, self.epoch, self.time_ms)
        self.next_offset += len(records)
        self.time_ms += 1000
        data = encode_batch(batch)
        self.batches.append(data)
        return data

    def begin(self) -> bytes:
        return self._batch([m.BeginTransactionRecordV0(name="tx")])

    def end(self, aborted: bool = False) -> bytes:
        return self._batch([m.AbortTransactionRecordV0(reason="test") if aborted else m.EndTransactionRecordV0()])


def expected_rows(log_dir: Path | str, cluster_id: str) -> list[tuple]:
    """The records table of a log directory as the export's engine replays it, cluster_id first."""
    from metashell.export.history_tables import history_rows

    return [(cluster_id, *row) for row in history_rows(log_dir, tables=["records"])["records"].rows]


def parquet_rows(spark: Any, path: Path) -> list[tuple]:
    if not path.exists() or not any(path.glob("*.parquet")):
        return []
    names = source_column_names("records")
    return [tuple(r[n] for n in names) for r in spark.read.parquet(str(path)).collect()]


def start_query(spark: Any, reader: Any, out: Path, checkpoint: Path, name: str) -> Any:
    return (reader.writeStream.format("parquet").option("path", str(out))
            .option("checkpointLocation", str(checkpoint)).queryName(name)
            .trigger(processingTime="200 milliseconds").start())


def stream_end(query: Any) -> int:
    """The next offset the query's last committed micro-batch reached (-1: none yet)."""
    progress = query.lastProgress
    if not progress or not progress.get("sources"):
        return -1
    end = progress["sources"][0].get("endOffset")
    end = json.loads(end) if isinstance(end, str) else end
    if not end:
        return -1
    return max(p["next"] for p in end["clusters"].values())


def wait_stream(query: Any, offset: int, tries: int = 600) -> int:
    """Until the query committed every offset below ``offset`` (its failure raises at once); a
    safety net of ``tries`` waits of 0.2 s on the query's own termination."""
    for _ in range(tries):
        end = stream_end(query)
        if end >= offset:
            return end
        query.awaitTermination(0.2)
    raise AssertionError(f"the stream reached {stream_end(query)}, not {offset}: {query.status}")


def contiguous(rows: list[tuple]) -> None:
    """No record twice, none missing: the offsets run on without a hole."""
    offsets = sorted(r[1] for r in rows)
    assert len(offsets) == len(set(offsets)), "a record written twice"
    assert offsets == list(range(offsets[0], offsets[-1] + 1)), "a record missing"


def forget_last_commit(checkpoint: Path, out: Path) -> int:
    """As if the query died after planning its last micro-batch and before committing it: the
    checkpoint's commit of it and the Parquet sink's record of it go (its offsets stay), so the
    restart reads that micro-batch again from a new reader (``partitions(start, end)`` with no
    ``latestOffset`` before it). Returns the batch id."""
    batch = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    for log in (checkpoint / "commits", out / "_spark_metadata"):
        (log / str(batch)).unlink()
        (log / f".{batch}.crc").unlink(missing_ok=True)  # Hadoop's checksum beside it
    return batch
