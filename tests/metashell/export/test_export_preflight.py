"""What Spark lacks is said first: one line, exit code 1, before the log is read or a quorum
attached. Real processes: pyspark is hidden by a package that fails to import, Java by a PATH
and a JAVA_HOME that lead nowhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from metashell.export.spark_session import NO_PYSPARK

# processes of their own (each ends before Spark would start)
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]


def run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "metashell.cli", *argv], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, cwd=ROOT, env=env)


def base_env(**changes: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PYSPARK_SUBMIT_ARGS")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(changes)
    return env


@pytest.fixture
def no_pyspark(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import pyspark`` fails: a package of that name, first on the
    path, that raises ImportError as an absent or broken install does."""
    shim = tmp_path / "shim" / "pyspark"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('No module named pyspark (hidden by the test)')\n")
    return base_env(PYTHONPATH=f"{shim.parent}{os.pathsep}{ROOT}")


@pytest.fixture
def damaged_log(tmp_path: Path) -> Path:
    """A log directory whose only segment is garbage: reading it is an error of its own."""
    log_dir = tmp_path / "__cluster_metadata-0"
    log_dir.mkdir()
    (log_dir / "00000000000000000000.log").write_bytes(b"\xff" * 200)
    return log_dir


def sources(damaged: Path) -> list[list[str]]:
    # nobody listens on port 1: attaching would fail (after seconds) with words of its own
    return [["--bootstrap-controller", "127.0.0.1:1"], ["--log-dir", str(damaged)], ["--demo"]]


def test_no_pyspark_is_said_before_any_work(no_pyspark, damaged_log, tmp_path: Path) -> None:
    for source in sources(damaged_log):
        done = run(["export", *source, "/topics", "--out", str(tmp_path / "out")], no_pyspark)
        assert (done.returncode, done.stdout) == (1, ""), source
        assert done.stderr == f"metashell: {NO_PYSPARK}\n", source
    assert not (tmp_path / "out").exists()


def test_no_pyspark_in_the_shell_export_command(no_pyspark, tmp_path: Path) -> None:
    # said before the export looks at its path (which is not in the tree either)
    done = run(["--demo", "-c", f"export /nope --out {tmp_path / 'out'}"], no_pyspark)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"metashell: export: {NO_PYSPARK}\n"


@pytest.mark.parametrize("java_home, says", [
    (None, "no java on PATH and JAVA_HOME is not set"),
    ("{tmp}/nowhere", "JAVA_HOME={tmp}/nowhere has no bin/java"),
])
def test_no_java_is_said_before_any_work(damaged_log, tmp_path: Path, java_home: str | None, says: str) -> None:
    empty = tmp_path / "empty-path"
    empty.mkdir()
    env = base_env(PATH=str(empty))
    if java_home is not None:
        env["JAVA_HOME"] = java_home.format(tmp=tmp_path)
    for source in sources(damaged_log):
        done = run(["export", *source, "/topics", "--out", str(tmp_path / "out")], env)
        assert (done.returncode, done.stdout) == (1, ""), source
        lines = done.stderr.splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith("metashell: Spark export needs a Java runtime ("), lines
        assert says.format(tmp=tmp_path) in lines[0] and "install a JDK" in lines[0] and "JAVA_HOME" in lines[0]


def test_too_old_a_java_is_said_before_any_work(damaged_log, tmp_path: Path) -> None:
    pyspark_version = pytest.importorskip("pyspark.version").__version__
    from metashell.export.java_runtime import needed_major

    jdk = tmp_path / "old-jdk"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "bin" / "java").write_text("#!/bin/sh\nexit 1\n")
    (jdk / "bin" / "java").chmod(0o755)
    (jdk / "release").write_text('JAVA_VERSION="1.7.0_80"\n')  # older than any pyspark runs on
    done = run(["export", "--bootstrap-controller", "127.0.0.1:1", "/topics", "--out", str(tmp_path / "out")],
               base_env(JAVA_HOME=str(jdk)))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"metashell: Spark export needs a Java runtime ({jdk}/bin/java is Java 7, pyspark "
                           f"{pyspark_version} needs Java {needed_major(pyspark_version)} or newer): install a JDK "
                           f"{needed_major(pyspark_version)} or newer (e.g. apt install openjdk-17-jre-headless) "
                           "and set JAVA_HOME\n")
