"""Spark's class archive (metashell.export.class_archive): built once in the background after an
export that had none, mapped by the next export's JVM, checked before use, and set aside, with
one line, when a JVM cannot start with it. Real processes and real JVMs; each test has a cache
directory of its own. Which classes came from the archive is the JVM's own word
(``-Xlog:class+load``, through PYSPARK_SUBMIT_ARGS as a user would pass it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from metashell.export import class_archive
from metashell.export.class_archive import ENV, QUIET_CDS, RETRY_FAILED_S

ROOT = Path(__file__).resolve().parents[3]
BUILD_TIMEOUT_S = 600  # a build is half a minute on an idle machine; CI's two cores are shared
SPARK_CONTEXT = "org.apache.spark.SparkContext source: "


def env_with_cache(cache: Path, **changes: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    env.update(PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(cache), **{ENV: "on"})
    env.update(changes)
    return env


def class_log_args(logs: Path) -> str:
    """Every JVM started with these (the export's, and a builder's, which inherits them) logs where
    each class came from into a file of its own in ``logs`` (``%p``: its pid)."""
    logs.mkdir(parents=True, exist_ok=True)
    return f"--conf spark.driver.extraJavaOptions=-Xlog:class+load=info:file={logs}/classes-%p.log pyspark-shell"


def spark_context_sources(logs: Path) -> list[str]:
    """Where each JVM that logged into ``logs`` loaded SparkContext from."""
    return sorted(line.split(SPARK_CONTEXT, 1)[1].strip() for log in logs.glob("classes-*.log")
                  for line in log.read_text().splitlines() if SPARK_CONTEXT in line)


def export(tmp_path: Path, env: dict[str, str], name: str) -> subprocess.CompletedProcess:
    work = tmp_path / f"work-{name}"
    work.mkdir()
    return subprocess.run([sys.executable, "-m", "metashell.cli", "export", "--demo", "/topics",
                           "--out", str(tmp_path / f"out-{name}")], capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL, cwd=work, env=env)


def archive_for(env: dict[str, str]) -> Path:
    """The archive path the CLI computes under ``env`` (its cache, Spark's environment)."""
    done = subprocess.run([sys.executable, "-c", "from metashell.export.class_archive import archive_path; "
                           "print(archive_path())"], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip())


def wait_built(archive: Path) -> None:
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    while archive.with_suffix(".building").exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    failed = archive.with_suffix(".failed")
    assert not failed.exists(), failed.read_text()
    assert class_archive.usable(archive), f"no whole archive at {archive} after {BUILD_TIMEOUT_S} s"


def whole_archive(tmp_path: Path, size: int = 1000) -> Path:
    archive = tmp_path / "a.jsa"
    archive.write_bytes(b"x" * size)
    archive.with_suffix(".json").write_text(json.dumps({"size": size}))
    return archive


# -- without a JVM -------------------------------------------------------------------------

def test_an_archive_is_used_only_whole(tmp_path: Path) -> None:
    archive = whole_archive(tmp_path)
    assert class_archive.usable(archive)
    with open(archive, "r+b") as file:
        file.truncate(999)  # a copy cut short: its JVM would die of SIGBUS mapping it
    assert not class_archive.usable(archive)
    archive.with_suffix(".json").write_text("{not json")
    assert not class_archive.usable(archive)
    archive.with_suffix(".json").unlink()
    assert not class_archive.usable(archive)  # renamed into place, its sidecar not yet written
    assert not class_archive.usable(tmp_path / "none.jsa")


def fake_jdk(root: Path, release: str) -> Path:
    (root / "bin").mkdir(parents=True)
    java = root / "bin" / "java"
    java.write_text("#!/bin/sh\nexit 0\n")
    java.chmod(0o755)
    (root / "release").write_text(release)
    return root


def test_one_archive_per_java_and_spark_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    monkeypatch.setenv("JAVA_HOME", str(fake_jdk(tmp_path / "jdk-a", 'JAVA_VERSION="17.0.15"\n')))
    first = class_archive.archive_key()
    assert class_archive.archive_key() == first  # the same runtime: the same archive
    monkeypatch.setenv("JAVA_HOME", str(fake_jdk(tmp_path / "jdk-b", 'JAVA_VERSION="17.0.16"\n')))
    second = class_archive.archive_key()
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))  # on Spark's classpath: another archive
    assert len({first, second, class_archive.archive_key()}) == 3


def test_options_map_the_archive_and_keep_crash_reports_beside_it(tmp_path: Path) -> None:
    archive = tmp_path / "with space" / "k.jsa"
    options = class_archive.java_options(archive)
    assert options == (f'"-XX:SharedArchiveFile={archive}" {QUIET_CDS} '
                       f'"-XX:ErrorFile={archive.parent}/hs_err_pid%p.log"')


def test_a_build_under_way_is_not_started_again(tmp_path: Path) -> None:
    archive = tmp_path / "k.jsa"
    archive.with_suffix(".building").touch()
    said: list[str] = []
    assert class_archive.build_in_background(archive, said.append) is False
    assert said == [] and not archive.exists()


def test_a_failed_build_is_said_once_and_tried_again_after_a_day(tmp_path: Path) -> None:
    archive = tmp_path / "k.jsa"
    archive.with_suffix(".failed").write_text("RuntimeError: the JVM wrote no archive at k.jsa.part\n")
    said: list[str] = []
    assert class_archive._failed_lately(archive, said.append)
    assert class_archive._failed_lately(archive, said.append)
    assert said == ["warning: keeping Spark's classes for quicker exports failed: RuntimeError: the JVM wrote "
                    "no archive at k.jsa.part (tried again after a day)"]
    day_ago = time.time() - RETRY_FAILED_S - 60
    os.utime(archive.with_suffix(".failed-said"), (day_ago, day_ago))
    assert not class_archive._failed_lately(archive, said.append) and len(said) == 1


# -- real JVMs -----------------------------------------------------------------------------

@pytest.mark.slow
def test_the_first_export_has_it_built_and_the_next_maps_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first_logs, second_logs = tmp_path / "first-classes", tmp_path / "second-classes"
    env = env_with_cache(cache, PYSPARK_SUBMIT_ARGS=class_log_args(first_logs))
    archive = archive_for(env)
    assert archive.parent == cache / "metashell" / "spark-classes"

    first = export(tmp_path, env, "first")
    assert (first.returncode, first.stdout) == (0, f"exported 3 rows of partitions to {tmp_path / 'out-first'}"
                                                   "/partitions (parquet)\n")
    assert first.stderr == ("metashell: note: keeping Spark's classes for quicker exports, once per Java and "
                            f"pyspark, in the background: {archive}\n")
    wait_built(archive)
    # the export's JVM and the builder's: both loaded Spark from its jars
    sources = spark_context_sources(first_logs)
    assert len(sources) == 2 and all(source.startswith(("file:", "jar:")) for source in sources), sources

    second = export(tmp_path, {**env, "PYSPARK_SUBMIT_ARGS": class_log_args(second_logs)}, "second")
    assert (second.returncode, second.stderr) == (0, "")  # nothing more to build, nothing said
    assert spark_context_sources(second_logs) == ["shared objects file (top)"]
    assert list((tmp_path / "out-second" / "partitions").glob("part-*.parquet"))


@pytest.mark.slow
def test_off_neither_uses_nor_builds_one(tmp_path: Path) -> None:
    env = env_with_cache(tmp_path / "cache", **{ENV: "off"})
    done = export(tmp_path, env, "off")
    assert (done.returncode, done.stderr) == (0, "")
    assert not (tmp_path / "cache" / "metashell" / "spark-classes").exists()


@pytest.mark.slow
def test_an_archive_the_jvm_cannot_start_with_is_removed_and_rebuilt(tmp_path: Path) -> None:
    env = env_with_cache(tmp_path / "cache")
    archive = archive_for(env)
    archive.parent.mkdir(parents=True)
    built = subprocess.run([sys.executable, "-m", "metashell.export.class_archive_build", str(archive)],
                           capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, env=env)
    assert built.returncode == 0 and class_archive.usable(archive), built.stderr
    # cut short, its sidecar saying so: the size check passes, and the JVM dies mapping it
    size = 1 << 20
    with open(archive, "r+b") as file:
        file.truncate(size)
    archive.with_suffix(".json").write_text(json.dumps({"size": size}))

    done = export(tmp_path, env, "crash")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"metashell: warning: Spark's JVM did not start with the class archive {archive} (A fatal error has been "
        "detected by the Java Runtime Environment:): removed it, starting without it",
        "metashell: note: keeping Spark's classes for quicker exports, once per Java and pyspark, in the "
        f"background: {archive}"]
    assert list((tmp_path / "out-crash" / "partitions").glob("part-*.parquet"))
    assert list(tmp_path.glob("work-crash/hs_err*")) == []  # the JVM's crash report is not left in the cwd
    wait_built(archive)  # and the next export has a whole one again
