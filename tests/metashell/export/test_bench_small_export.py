"""``metashell bench export --small``: what it times (the export, the session alone, started
alike, and the session without the class archive), and its options' errors in one line. Its figures are in docs/performance.md."""

from __future__ import annotations

import sys
from pathlib import Path

from metashell import cli
from metashell.bench.export import SESSION_ONLY, small_export_commands


def test_the_processes_timed(tmp_path: Path) -> None:
    commands = small_export_commands(tmp_path)
    assert commands == {
        "export": ([sys.executable, "-m", "metashell.cli", "export", "--demo", "/topics", "--out", str(tmp_path)], {}),
        "session": ([sys.executable, "-c", SESSION_ONLY], {}),
        # Spark's own start-up: the session without metashell's class archive
        "plain session": ([sys.executable, "-c", SESSION_ONLY], {"METASHELL_SPARK_CLASS_ARCHIVE": "off"})}
    # the session alone is started as the export of --demo starts it: a small export's JVM
    assert "spark_now(small=True)" in SESSION_ONLY and "preflight()" in SESSION_ONLY
    compile(SESSION_ONLY, "<session-only>", "exec")


def test_runs_must_be_positive(capsys) -> None:
    errors: list[str] = []
    assert cli.run(["bench", "export", "--small", "--runs", "0"], err=errors.append) == 1
    assert errors == ["metashell: --runs must be positive"] and capsys.readouterr().out == ""
