"""The tables that need state through Spark: ``spark.read.format("kraft").option("table", ...)``
plans one task per snapshot interval and gives the export's rows, led by cluster_id; a corrupt
snapshot fails its task in one line (FAILFAST) or is a ``_corrupt`` row (PERMISSIVE).
On the shared local SparkSession (slow tier)."""

from __future__ import annotations

from pathlib import Path

import pytest

import metashell.spark
from metashell.export import arrow_table
from metashell.export.history_tables import history_rows
from tests.metashell.spark.test_read_state import _flip, write_script_log


@pytest.fixture
def kraft(spark):
    return metashell.spark.register(spark)


def _rows(df) -> list[dict]:
    return df.toArrow().to_pylist()


def _expected(log_dir: Path, table: str, cluster_id: str, **bounds) -> list[dict]:
    table_rows = history_rows(log_dir, tables=[table], **bounds)[table]
    return [{"cluster_id": cluster_id, **row} for row in arrow_table(table_rows).to_pylist()]


def test_state_tables_of_a_log_with_snapshots_are_the_export(kraft, tmp_path) -> None:
    # every table's rows are compared without Spark (test_read_state.py); here a few through it
    log_dir = write_script_log(tmp_path / "log", [5, 10, 15, 20, 25, 30])
    for table in ("partition_changes", "voter_changes", "gaps"):
        df = kraft.read.format("kraft").option("table", table).option("clusterId", "c") \
            .option("recordsPerTask", "5").load(str(log_dir))
        if table == "partition_changes":
            assert df.rdd.getNumPartitions() == 7  # one task per snapshot interval
        if table == "gaps":
            assert df.rdd.getNumPartitions() == 1
        assert _rows(df) == _expected(log_dir, table, "c"), table


def test_a_corpus_dir_and_offsets(kraft, corpus) -> None:
    node = corpus / "djsoler__Big_Data_Proye_Docker"
    df = kraft.read.format("kraft").option("table", "broker_changes").load(str(node))
    rows = _rows(df)
    cluster_id = rows[0]["cluster_id"]
    assert cluster_id and rows == _expected(node, "broker_changes", cluster_id)
    df = kraft.read.format("kraft").option("table", "partition_changes").option("startOffset", "15232") \
        .option("endOffset", "22500").load(str(node))
    assert _rows(df) == _expected(node, "partition_changes", cluster_id, start=15232, end=22500)


def test_a_corrupt_snapshot_fails_in_one_line_or_is_a_corrupt_row(kraft, tmp_path) -> None:
    log_dir = write_script_log(tmp_path / "log", [10, 20])
    snapshot = next((log_dir / "__cluster_metadata-0").glob("*20-0000000001.checkpoint"))
    _flip(snapshot, 80)
    reader = kraft.read.format("kraft").option("table", "config_changes").option("clusterId", "c") \
        .option("recordsPerTask", "1")
    with pytest.raises(Exception) as failed:
        reader.load(str(log_dir)).collect()
    line = f"KraftReadError: {snapshot}, byte offset 0: not a readable snapshot: a record batch fails its checksum"
    assert line in str(failed.value)  # the task's one line, in Spark's error
    rows = _rows(reader.option("mode", "PERMISSIVE").load(str(log_dir)))
    corrupt = [row for row in rows if row["_corrupt"] is not None]
    assert len(corrupt) == 1 and corrupt[0]["_corrupt"].startswith(f"{snapshot}, byte offset 0: ")
    assert [{k: v for k, v in row.items() if k != "_corrupt"} for row in rows if row["_corrupt"] is None] == \
        _expected(log_dir, "config_changes", "c")
