"""The change tables through Spark: typed DataFrames holding exactly the rows built in Python,
and ``metashell export --history TABLE`` writing them (Parquet typed, CSV with arrays and structs
as JSON text). The run's shared local Spark session (the ``spark`` fixture: slow tier).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metashell import cli
from metashell.export import history_dataframe
from metashell.export.change_tables import change_rows
from metashell.export.schemas import CHANGE_TABLES
from metashell.export.spark_session import ExportError
from metashell.spark.table_schema import source_spark_schema
from tests.metashell.export.test_change_tables import write_log
from tests.metashell.export.spark_rows import collected, plain
from tests.metashell.export.test_change_tables_archive import _archive


def _rows(table) -> list[tuple]:
    return [tuple(plain([tuple(x) if isinstance(x, tuple) else x for x in v]) if isinstance(v, list) else v
                  for v in row) for row in table.rows]


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    return _archive(tmp_path_factory.mktemp("change-tables"))[1]


def test_every_change_table_is_a_typed_dataframe_of_its_rows(spark, archive: Path) -> None:
    expected = change_rows(archive)
    for kind in CHANGE_TABLES:
        frame = history_dataframe(archive, kind, spark)  # the kraft data source: cluster_id first
        assert frame.schema == source_spark_schema(kind), kind
        assert collected(frame.drop("cluster_id")) == _rows(expected[kind]), kind
        assert {r.cluster_id for r in frame.select("cluster_id").collect()} <= {"c"}, kind  # its archive.json
    assert collected(history_dataframe(archive, "gaps", spark).drop("cluster_id"))[0][:2] == (12, 18)


def _export(capsys, *argv: str) -> list[str]:
    """``metashell export ARGV``'s lines on stdout (its notes on stderr are Spark's, not ours)."""
    errors: list[str] = []
    assert cli.run(["export", *argv], err=errors.append) == 0, errors
    return capsys.readouterr().out.splitlines()


def test_the_command_line_writes_a_change_table(spark, tmp_path: Path, capsys) -> None:
    log_dir = write_log(tmp_path / "node")
    out = tmp_path / "out"
    lines = _export(capsys, "--log-dir", str(log_dir), "--history", "config_changes", "--out", str(out))
    assert lines == [f"exported 8 rows of config_changes to {out / 'config_changes'} (parquet)"]
    written = spark.read.parquet(str(out / "config_changes")).orderBy("offset", "record_offset")
    assert written.schema == source_spark_schema("config_changes")  # the data source's: cluster_id first
    assert collected(written.drop("cluster_id")) == _rows(change_rows(log_dir)["config_changes"])
    secret = written.where("key = 'ssl.keystore.password'").collect()[0]
    assert (secret.resource_type, secret.resource_name, secret.new_value) == ("cluster", None, "[redacted]")


def test_csv_holds_arrays_and_structs_as_json_text(spark, tmp_path: Path, capsys) -> None:
    log_dir = write_log(tmp_path / "node")
    out = tmp_path / "out"
    _export(capsys, "--log-dir", str(log_dir), "--history", "client_quota_changes", "--format", "csv", "--out", str(out))
    rows = spark.read.option("header", "true").csv(str(out / "client_quota_changes")).orderBy("offset").collect()
    assert [json.loads(r.quota_entity) for r in rows] == [[{"type": "client-id"}, {"type": "user", "name": "alice"}]] * 2
    assert [(r.old_value, r.new_value, r.event) for r in rows] == [(None, "1024.0", "created"),
                                                                   ("1024.0", None, "deleted")]


def test_an_unknown_history_table_is_one_line(spark, tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="unknown history table 'acl_change'"):
        history_dataframe(write_log(tmp_path / "node"), "acl_change", spark)
