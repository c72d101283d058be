"""``metashell export`` starts Spark while the image loads, and the export waits for that start."""

from __future__ import annotations

from pathlib import Path

import pytest

from metashell import cli
from metashell.demo.shell_demo import write_demo_log_dir
from metashell.export import spark_start
from metashell.export.spark_start import SMALL_SOURCE_BYTES, is_small
from metashell.shell.session import Session


@pytest.fixture
def demo_log(tmp_path: Path) -> Path:
    return write_demo_log_dir(tmp_path / "demo")


def watch_loads(monkeypatch) -> list[tuple[bool, bool]]:
    """Record, as each image load begins, whether a Spark start is pending and under way (the
    real load then runs)."""
    seen: list[tuple[bool, bool]] = []
    real_load = Session.load

    def load(self, *args, **kwargs):
        start = spark_start.pending()
        seen.append((start is not None, start is not None and start.started()))
        return real_load(self, *args, **kwargs)

    monkeypatch.setattr(Session, "load", load)
    return seen


def test_spark_starts_before_the_image_loads(spark, demo_log: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    seen = watch_loads(monkeypatch)
    errors: list[str] = []
    assert cli.run(["export", "--log-dir", str(demo_log), "/topics", "--out", str(tmp_path)], err=errors.append) == 0
    assert (seen, errors) == ([(True, True)], [])
    assert capsys.readouterr().out == f"exported 3 rows of partitions to {tmp_path / 'partitions'} (parquet)\n"
    assert spark_start.pending() is None  # the start is the export's only: nothing is left pending


def test_is_small(tmp_path: Path) -> None:
    (tmp_path / "log").mkdir()
    (tmp_path / "log" / "a.log").write_bytes(b"x" * 1000)
    assert is_small(tmp_path / "log") and is_small(tmp_path / "log" / "a.log")
    with open(tmp_path / "log" / "b.log", "wb") as big:
        big.truncate(SMALL_SOURCE_BYTES)  # sparse: its size counts, not its blocks
    assert not is_small(tmp_path / "log") and not is_small(tmp_path / "log" / "b.log")
