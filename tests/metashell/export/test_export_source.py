"""``metashell export --history`` through the kraft data source: the rows are the driver-side
export's with ``cluster_id`` first (null where nothing names the cluster), and a damaged file
fails the export in one line naming the file and the byte offset, Spark's repeats of the task's
traceback kept off the terminal."""

from __future__ import annotations

from pathlib import Path

from engine.storage.meta_properties import MetaProperties, write_meta_properties
from metashell import cli
from metashell.demo.shell_demo import write_demo_log_dir
from metashell.export import history_dataframe
from metashell.export.spark_quiet import TAG, spark_line
from tests.metashell.export.spark_rows import collected


def _export(log_dir: Path, table: str, out: Path) -> tuple[int, list[str]]:
    errors: list[str] = []
    return cli.run(["export", "--log-dir", str(log_dir), "--history", table, "--out", str(out)],
                   err=errors.append), errors


def test_the_export_is_the_driver_side_rows_with_the_cluster_id_first(spark, tmp_path: Path, capsys) -> None:
    bare = write_demo_log_dir(tmp_path / "bare")  # no meta.properties: nothing names the cluster
    node = write_demo_log_dir(tmp_path / "node")
    write_meta_properties(node, MetaProperties(1, "demo-cluster", node_id=1))
    for log_dir, cluster_id in ((bare, None), (node, "demo-cluster")):
        out = tmp_path / f"out-{log_dir.name}"
        assert _export(log_dir, "leader_changes", out) == (0, [])
        written = spark.read.parquet(str(out / "leader_changes")).orderBy("offset")
        driver = history_dataframe(log_dir, "leader_changes", spark, driver=True)
        assert written.columns == ["cluster_id", *driver.columns]
        assert {r.cluster_id for r in written.select("cluster_id").collect()} == {cluster_id}
        assert collected(written.drop("cluster_id")) == collected(driver) != []
        assert capsys.readouterr().out.splitlines() == [
            f"exported {driver.count()} rows of leader_changes to {out / 'leader_changes'} (parquet)"]


def test_a_damaged_segment_fails_the_export_in_one_line(spark, tmp_path: Path) -> None:
    log_dir = write_demo_log_dir(tmp_path / "demo")
    segment = sorted((log_dir / "__cluster_metadata-0").glob("*.log"))[0]
    data = bytearray(segment.read_bytes())
    data[200] ^= 0xFF  # inside the first batch: its CRC no longer matches
    segment.write_bytes(bytes(data))
    status, errors = _export(log_dir, "records", tmp_path / "out")
    assert status == 1
    assert len(errors) == 1 and "\n" not in errors[0], errors
    assert errors[0].startswith(f"metashell: {log_dir}: records: {segment}, byte offset ")
    assert ": batch CRC mismatch: stored " in errors[0]
    assert "Traceback" not in errors[0] and "SQLSTATE" not in errors[0]


def test_a_failing_tasks_repeats_are_no_warnings() -> None:
    python = "[PYTHON_EXCEPTION] An exception was thrown from the Python worker: Traceback ..."
    for repeat in (f"ERROR Executor: Exception in task 0.0 in stage 0.0 (TID 0) {python}",
                   f"ERROR Utils: Aborting task {python}",
                   "ERROR TaskSetManager: Task 0 in stage 0.0 failed 1 times; aborting job",
                   f"ERROR FileFormatWriter: Aborting job 47b37c49. {python}",
                   "ERROR FileFormatWriter: Job: job_1, Task: task_1, Task attempt attempt_1 aborted."):
        assert spark_line(TAG + repeat) is None, repeat
    assert spark_line(TAG + "ERROR SparkContext: Error initializing SparkContext.") == (
        "Spark error: SparkContext: Error initializing SparkContext.")
    assert spark_line(TAG + "ERROR Executor: Exception in heartbeater") == "Spark error: Executor: Exception in heartbeater"
