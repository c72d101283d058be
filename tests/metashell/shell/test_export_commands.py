"""The export front ends: the shell's ``export`` command, ``metashell export`` and
``metashell bench export``. Every test with Spark shares the one session of the ``spark``
fixture (tests/conftest.py): the front ends find it active and reuse it."""

from __future__ import annotations

from pathlib import Path

import pytest

from metashell import cli
from metashell.shell import commands
from metashell.shell.session import Session
from metashell.source import Source


@pytest.fixture
def demo_dir(demo_log_dir: Path) -> Path:
    return demo_log_dir


def _session(log_dir: Path, show_secrets: bool = False) -> tuple[Session, list[str], list[str]]:
    out: list[str] = []
    err: list[str] = []
    session = Session(Source(log_dir=log_dir), out=out.append, err=err.append, show_secrets=show_secrets)
    session.load()
    return session, out, err


def _partition_nodes(session: Session) -> int:
    """Partitions as the node tree shows them: the numeric children of /topics/<name>."""
    count = 0
    topics = session.node("/topics")
    for name in topics.child_names():
        count += sum(1 for child in topics.child(name).child_names() if child.isdigit())
    return count


def test_shell_export_parquet_and_json_read_back(spark, demo_dir, tmp_path):
    session, out, err = _session(demo_dir)
    partitions = _partition_nodes(session)
    assert partitions > 0

    assert session.run_line(f"export /topics --out {tmp_path} --format parquet") == 0, err
    assert out == [f"exported {partitions} rows of partitions to {tmp_path / 'partitions'} (parquet)"]
    frame = spark.read.parquet(str(tmp_path / "partitions"))
    assert frame.count() == partitions
    assert {"topic", "partition", "leader", "isr", "under_min_isr"} <= set(frame.columns)

    out.clear()
    brokers = len(session.node("/brokers").child_names())
    assert session.run_line(f"export /brokers --format json --out {tmp_path} --table brokers_json") == 0, err
    assert out == [f"exported {brokers} rows of brokers to {tmp_path / 'brokers_json'} (json)"]
    assert spark.read.json(str(tmp_path / "brokers_json")).count() == brokers


def test_shell_export_relative_path_and_csv(spark, demo_dir, tmp_path):
    session, out, err = _session(demo_dir)
    session.run_line("cd /topics/orders")
    assert session.run_line(f"export . --format csv --out {tmp_path}") == 0, err
    assert len(out) == 1 and out[0].endswith("(csv)")
    rows = spark.read.option("header", True).csv(str(tmp_path / out[0].split(" rows of ")[1].split()[0]))
    assert rows.count() == int(out[0].split()[1]) == 3


def test_shell_export_after_seek_follows_the_image(spark, demo_dir, tmp_path):
    session, out, err = _session(demo_dir)
    session.run_line("seek 0")
    out.clear()
    assert session.run_line(f"export /topics --out {tmp_path}") == 0, err
    assert out[0].startswith(f"exported {_partition_nodes(session)} rows of partitions")


def test_shell_export_history(spark, demo_dir, tmp_path):
    session, out, err = _session(demo_dir)
    session.run_line("records --type PARTITION_RECORD PARTITION_CHANGE_RECORD")
    changes = len(out)
    out.clear()
    assert session.run_line(f"export --history partition_changes --out {tmp_path}") == 0, err
    assert out == [f"exported {changes} rows of partition_changes to {tmp_path / 'partition_changes'} (parquet)"]
    assert spark.read.parquet(str(tmp_path / "partition_changes")).count() == changes

    out.clear()
    session.run_line("records")
    records = len(out)
    out.clear()
    assert session.run_line(f"export --history --out {tmp_path}") == 0, err  # records by default
    assert out == [f"exported {records} rows of records to {tmp_path / 'records'} (parquet)"]


def test_shell_export_progress_lines(spark, demo_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(commands, "PROGRESS_PARTITIONS", 0)
    session, out, err = _session(demo_dir)
    assert session.run_line(f"export /topics --out {tmp_path}") == 0, err
    assert [line.split(" (")[0] for line in out[:-1]] == ["building rows…", "writing…", "done"]
    assert all(line.endswith(" s)") for line in out[:-1])
    assert out[-1].startswith("exported ")


@pytest.mark.parametrize("line, message", [
    ("export /topics", "the following arguments are required: --out"),
    ("export --out {tmp}", "give a PATH to export (e.g. /topics) or --history"),
    ("export /topics --out {tmp} --format xml", "argument --format: invalid choice"),
    ("export /nope --out {tmp}", "/nope"),
    ("export /topics/* --out {tmp} --history", "give either PATH or --history, not both"),
    ("export /topics/orders/* --out {tmp}", "matches"),
    ("export --history nope --out {tmp}", "argument --history: invalid choice"),
])
def test_shell_export_bad_arguments_one_line(demo_dir, tmp_path, line, message):
    session, out, err = _session(demo_dir)
    assert session.run_line(line.format(tmp=tmp_path)) == 1
    assert out == [] and len(err) == 1
    assert err[0].startswith("metashell: export: ") and message in err[0]


def test_shell_export_history_needs_a_log_dir(tmp_path):
    out: list[str] = []
    session = Session(Source(snapshot=tmp_path / "x.checkpoint"), out=out.append)
    assert session.run_line(f"export --history --out {tmp_path}") == 1
    assert out == ["metashell: export: --history needs a log directory (--log-dir): a snapshot holds one point "
                   "in time"]


def test_shell_man_export():
    out: list[str] = []
    Session(Source(log_dir=Path(".")), out=out.append).run_line("man export")
    assert "export PATH --out DIR" in out[0] and "--history" in out[0]


# -- metashell export ------------------------------------------------------------------------


def test_cli_export_end_to_end(spark, demo_dir, tmp_path, capsys):
    errors: list[str] = []
    status = cli.run(["export", "--log-dir", str(demo_dir), "/topics", "--out", str(tmp_path),
                      "--format", "orc", "--table", "parts"], err=errors.append)
    assert (status, errors) == (0, [])
    assert capsys.readouterr().out == f"exported 3 rows of partitions to {tmp_path / 'parts'} (orc)\n"
    assert spark.read.orc(str(tmp_path / "parts")).count() == 3

    status = cli.run(["export", "--log-dir", str(demo_dir), "--offset", "0", "/topics", "--out", str(tmp_path)],
                     err=errors.append)
    assert (status, errors) == (0, [])
    assert capsys.readouterr().out.startswith("exported 0 rows of partitions")

    status = cli.run(["export", "--log-dir", str(demo_dir), "--history", "broker_fencing", "--out", str(tmp_path)],
                     err=errors.append)
    assert (status, errors) == (0, [])
    line = capsys.readouterr().out
    assert line.startswith("exported ") and "rows of broker_fencing" in line
    assert spark.read.parquet(str(tmp_path / "broker_fencing")).count() == int(line.split()[1]) > 0


def test_cli_export_demo_source(spark, tmp_path, capsys):
    assert cli.run(["export", "--demo", "/features", "--out", str(tmp_path), "--format", "json"]) == 0
    assert capsys.readouterr().out == f"exported 1 row of features to {tmp_path / 'features'} (json)\n"
    rows = spark.read.json(str(tmp_path / "features")).collect()
    assert [(r.name, r.level) for r in rows] == [("metadata.version", 27)]


@pytest.mark.parametrize("argv, message", [
    (["export", "/topics", "--out", "{tmp}"], "one of the arguments --snapshot --log-dir --demo --bootstrap-controller is required"),
    (["export", "--log-dir", "{demo}", "--out", "{tmp}"], "give a PATH to export (e.g. /topics) or --history TABLE"),
    (["export", "--log-dir", "{demo}", "/topics"], "the following arguments are required: --out"),
    (["export", "--log-dir", "{demo}", "/topics", "--out", "{tmp}", "--format", "xls"], "invalid choice: 'xls'"),
    (["export", "--log-dir", "{demo}", "/topics", "--history", "records", "--out", "{tmp}"],
     "give either PATH or --history, not both"),
    (["export", "--log-dir", "{demo}", "--history", "records", "--offset", "3", "--out", "{tmp}"],
     "--history exports the whole log"),
    (["export", "--snapshot", "{tmp}/x.checkpoint", "--offset", "3", "/topics", "--out", "{tmp}"],
     "--offset and --time need a log directory"),
    (["export", "--log-dir", "{demo}", "--time", "yesterday", "/topics", "--out", "{tmp}"], "not a time"),
    (["export", "--log-dir", "{demo}", "--spark-master", "local", "--remote", "sc://h:1", "/topics",
      "--out", "{tmp}"], "not allowed with argument"),
    (["export", "--log-dir", "{tmp}/none", "/topics", "--out", "{tmp}"], "no such directory"),
    (["export", "--log-dir", "{tmp}/none", "--history", "records", "--out", "{tmp}"], "no such directory"),
    (["bench", "export", "--partitions", "0"], "--partitions must be positive"),
])
def test_cli_export_bad_arguments_one_line(demo_dir, tmp_path, capsys, argv, message):
    errors: list[str] = []
    argv = [a.format(tmp=tmp_path, demo=demo_dir) for a in argv]
    assert cli.run(argv, err=errors.append) == 1
    assert len(errors) == 1 and errors[0].startswith("metashell: ") and message in errors[0], errors
    assert capsys.readouterr().out == ""


def test_cli_export_missing_path_in_the_tree_one_line(spark, demo_dir, tmp_path, capsys):
    errors: list[str] = []
    assert cli.run(["export", "--log-dir", str(demo_dir), "/nope", "--out", str(tmp_path)], err=errors.append) == 1
    assert len(errors) == 1 and errors[0].startswith("metashell: ") and "/nope" in errors[0]


# -- metashell bench export ------------------------------------------------------------------


def test_bench_export_smoke(spark, capsys):
    assert cli.run(["bench", "export", "--partitions", "2000"]) == 0
    lines = capsys.readouterr().out.splitlines()
    steps = [line.split("  ")[0].strip() for line in lines[1:]]
    for name in ("image build", "spark session", "rows (table_for)", "dataframe", "count()", "parquet write",
                 "total"):
        assert name in steps, lines
    assert "2,000 rows of partitions" in "\n".join(lines)


def test_bench_image_shape():
    from metashell.bench.export import bench_image

    image = bench_image(250)
    assert image.partition_count == 250 and len(image.topics.by_id) == 3
