"""Spark's JVM keeps off the user's terminal: its WARN lines and banners are dropped, what matters
comes back as our own ``metashell: warning:`` lines, and a JVM that cannot start is one error."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from metashell.export.spark_quiet import TAG, OutputPump, spark_line

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("line, said", [
    ("WARNING: Using incubator modules: jdk.incubator.vector", None),
    ("Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties", None),
    ('Setting default log level to "WARN".', None),
    ("To adjust logging level use sc.setLogLevel(newLevel). For SparkR, use setLogLevel(newLevel).", None),
    ("", None),
    (f"{TAG}ERROR DiskBlockManager: Failed to create local dir in /nope. ", "Spark error: DiskBlockManager: "
                                                                             "Failed to create local dir in /nope."),
    ("Invalid thread stack size: -Xss1x", "Spark: Invalid thread stack size: -Xss1x"),
])
def test_spark_line(line: str, said: str | None) -> None:
    assert spark_line(line + "\n") == said


def test_pump_holds_until_released_then_passes_lines_as_they_come() -> None:
    said: list[str] = []
    arrived = threading.Event()

    def warn(line: str) -> None:
        said.append(line)
        if line.endswith("last"):
            arrived.set()

    pump = OutputPump(warn)
    os.write(pump.write_fd, b"WARNING: a JVM warning\nbefore the gateway\n")
    pump.release()
    os.write(pump.write_fd, f"{TAG}ERROR Executor: last\n".encode())
    pump.close_write_end()
    assert arrived.wait(30)
    pump.thread.join(30)
    assert said == ["Spark: before the gateway", "Spark error: Executor: last"]


CHILD = textwrap.dedent('''
    import sys, threading
    from metashell.export.spark_quiet import default_warn
    from metashell.export.spark_session import get_spark
    done = threading.Event()

    def warn(line):
        default_warn(line)
        if "the last line" in line:
            done.set()

    spark = get_spark(warn=warn)
    jvm = spark.sparkContext._jvm
    logger = jvm.org.apache.logging.log4j.LogManager.getLogger("org.example.Probe")
    logger.warn("a warning Spark would print")           # below our level: never seen
    jvm.System.err.println("WARNING: a JVM warning")      # JVM noise: dropped
    logger.error("the disk is full")                      # matters: ours, one line
    jvm.System.out.println("printed on the JVM's stdout")  # never on our stdout
    logger.error("the last line")
    sys.exit(0 if done.wait(60) else 3)
''')


@pytest.mark.slow
def test_what_the_jvm_says_comes_back_as_our_warnings() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    assert done.stderr.splitlines() == ["metashell: warning: Spark error: Probe: the disk is full",
                                        "metashell: warning: Spark: printed on the JVM's stdout",
                                        "metashell: warning: Spark error: Probe: the last line"]


@pytest.mark.slow
def test_a_real_export_prints_only_its_own_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    done = subprocess.run([sys.executable, "-m", "metashell.cli", "export", "--demo", "/topics", "--out",
                           str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          stdin=subprocess.DEVNULL, env={**env, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"exported 3 rows of partitions to {tmp_path / 'partitions'} (parquet)\n"
    assert done.stderr == ""  # no WARN of Spark's, no log4j banner, no JVM or pandas warning
    assert list((tmp_path / "partitions").glob("part-*.parquet"))


@pytest.mark.slow
def test_a_jvm_that_cannot_start_is_one_line(tmp_path: Path) -> None:
    # a driver option the JVM refuses (Spark makes it ignore unknown -XX options, not bad values)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_SUBMIT_ARGS": "--driver-java-options -Xss1x "
                                                                        "pyspark-shell"}
    done = subprocess.run([sys.executable, "-m", "metashell.cli", "export", "--demo", "/topics", "--out",
                           str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          stdin=subprocess.DEVNULL, env=env)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "metashell: Spark's JVM did not start: Invalid thread stack size: -Xss1x\n"


def test_the_log4j2_file_is_the_users_and_whole(tmp_path: Path, monkeypatch) -> None:
    from metashell.export.spark_quiet import LOG4J2, log4j2_file

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = log4j2_file()
    assert path.parent == tmp_path / "cache" / "metashell" and path.read_text() == LOG4J2
    path.write_text("rootLogger.level = all\n")  # changed since: written again, not trusted by its name
    assert log4j2_file() == path and path.read_text() == LOG4J2
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))  # a cache that cannot be made
    other = log4j2_file()
    assert other.read_text() == LOG4J2 and tmp_path not in other.parents
