"""spark.read.format("kraft") in the shared local session: load()'s paths, the offsets and pushed
filters skipping files with exact rows, damage through Spark's error, bad options."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import metashell.spark as kraft
from engine.storage.log_reader import list_log_dir, read_batch_headers
from tests.metashell.export.spark_rows import collected
from tests.metashell.spark.kraft_source_fixtures import export_records, read_kraft, sorted_rows, write_split_story

pytestmark = pytest.mark.slow


def _files_holding(node: Path, low: int, high: int) -> int:
    """How many segments of ``node`` hold offsets in low..high (by their names)."""
    bases = [base for base, _ in list_log_dir(node).segments]
    ends = [b - 1 for b in bases[1:]] + [None]
    return sum(1 for base, end in zip(bases, ends) if base <= high and (end is None or end >= low))


def test_a_list_of_paths_and_a_single_file(spark, tmp_path: Path) -> None:
    kraft.register(spark)
    a = write_split_story(tmp_path / "a", cluster_id="cluster-a", roll_after={5})
    b = write_split_story(tmp_path / "b", cluster_id="cluster-b")
    both = read_kraft(spark, str(a), str(b))
    assert sorted(row[0] for row in both.select("cluster_id").distinct().collect()) == ["cluster-a", "cluster-b"]
    assert both.count() == len(export_records(a)) + len(export_records(b))
    second = list_log_dir(a).segments[1]
    single = read_kraft(spark, str(second[1]))
    assert single.rdd.getNumPartitions() == 1
    assert sorted(collected(single.select("offset")))[0] == (second[0],)


def test_offset_options_skip_files(spark, tmp_path: Path) -> None:
    kraft.register(spark)
    node = write_split_story(tmp_path / "node")
    df = read_kraft(spark, str(node), startOffset=11, endOffset=15)
    assert df.rdd.getNumPartitions() == _files_holding(node, 11, 15) == 2
    assert sorted_rows(df) == export_records(node, start=11, end=15)


def test_pushed_filters_skip_files_and_the_rows_are_exact(spark, tmp_path: Path) -> None:
    node = write_split_story(tmp_path / "node")
    rows = sorted(export_records(node))
    kraft.register(spark, pushdown=True)
    try:
        def read():  # a DataFrame per query: see metashell.spark.datasource on Spark 4.1-4.3
            return read_kraft(spark, str(node))

        narrow = read().where("offset >= 11 and offset <= 15 and type <> 'X'")
        assert narrow.rdd.getNumPartitions() == _files_holding(node, 11, 15) == 2
        assert sorted_rows(narrow) == [r for r in rows if 11 <= r[0] <= 15]
        plan = narrow._jdf.queryExecution().executedPlan().toString()
        assert not re.search(r"offset#\d+L [<>]=", plan), plan  # Spark does not compare the offsets again
        typed = read().where("type in ('CONFIG_RECORD', 'NO_OP_RECORD') and timestamp_ms > 20000")
        assert sorted_rows(typed) == [r for r in rows if r[4] in ("CONFIG_RECORD", "NO_OP_RECORD") and r[2] > 20_000]
        assert read().where("offset in (0, 2, 30)").rdd.getNumPartitions() == _files_holding(node, 0, 30)
        assert read().where("cluster_id = 'another'").count() == 0
        assert read().where("offset > 1000000").count() == 0
    finally:
        kraft.register(spark)


def test_a_dataframe_filtered_then_read_whole_reads_every_row(spark, tmp_path: Path) -> None:
    """Spark 4.1-4.3 keep a pushdown's read plan on the DataFrame: the registered source must
    not take filters there."""
    kraft.register(spark)
    node = write_split_story(tmp_path / "node")
    df = read_kraft(spark, str(node))
    assert df.where("offset >= 11 and offset <= 15").count() == 5
    assert df.count() == len(export_records(node))


def _damaged(tmp_path: Path) -> tuple[Path, Path, int]:
    node = write_split_story(tmp_path / "node", roll_after={12})
    segment = list_log_dir(node).segments[0][1]
    pos = [p for p, _ in read_batch_headers(segment)][4]
    data = bytearray(segment.read_bytes())
    data[pos + 70] ^= 0xFF
    segment.write_bytes(bytes(data))
    return node, segment, pos


def test_damage_fails_the_action_with_its_line_or_becomes_corrupt_rows(spark, tmp_path: Path) -> None:
    kraft.register(spark)
    node, segment, pos = _damaged(tmp_path)
    with pytest.raises(Exception) as failed:
        read_kraft(spark, str(node)).count()
    assert f"{segment}, byte offset {pos}: batch CRC mismatch" in str(failed.value)
    permissive = read_kraft(spark, str(node), mode="PERMISSIVE")
    assert permissive.columns[-1] == "_corrupt"
    corrupt = permissive.where("_corrupt is not null").collect()
    assert len(corrupt) == 1 and corrupt[0]["_corrupt"].startswith(f"{segment}, byte offset {pos}: batch CRC")
    assert permissive.where("_corrupt is null").count() > 0


def test_a_bad_option_is_one_line_in_the_error(spark, tmp_path: Path) -> None:
    kraft.register(spark)
    node = write_split_story(tmp_path / "node")
    with pytest.raises(Exception) as failed:
        read_kraft(spark, str(node), table="nope").count()
    assert "unknown table 'nope' for format kraft" in str(failed.value)
    with pytest.raises(Exception) as failed:
        read_kraft(spark, str(tmp_path / "nowhere")).count()
    assert f"{tmp_path / 'nowhere'}: no such file or directory" in str(failed.value)


def test_the_pushdown_source_reads_where_the_session_turned_pushdown_off(spark, tmp_path: Path) -> None:
    """PySpark fails a reader with pushFilters when spark.sql.python.filterPushdown.enabled is
    off: the source hands out its plain reader there."""
    node = write_split_story(tmp_path / "node")
    key = "spark.sql.python.filterPushdown.enabled"
    before = spark.conf.get(key)
    kraft.register(spark, pushdown=True)
    spark.conf.set(key, "false")
    try:
        assert read_kraft(spark, str(node)).where("offset >= 11 and offset <= 15").count() == 5
    finally:
        spark.conf.set(key, before)
        kraft.register(spark)
