"""``metashell bench export``: how long exporting /topics of a million partitions to Parquet takes;
with ``--small``, how long a small export takes beside the Spark session's own start-up.

Builds an image of ``partitions`` partitions directly (topics of 100 partitions, three replicas
out of six brokers, the ISR one replica short on every 50th partition), then times each step of
an export as ``metashell export`` runs it: the Spark session (local unless one is active), the
rows (``tables.table_for``, pure Python), the DataFrame (``table_dataframe``: the Arrow
conversion and ``createDataFrame``; ``to_dataframe`` is these two steps), a ``count()`` and
the Parquet write. Prints each step's seconds and the total; asserts
nothing. Lives under metashell, not in ``kraftd bench``: the engine never imports metashell
(docs/architecture.md).

``bench_small_export`` times whole processes instead, as a user waits for them: ``metashell
export --demo /topics`` (3 rows, Parquet) against a process that only starts the same local
Spark session and exits, the two taking turns (A B A B ...) so a machine's drift touches both.
The difference of the medians is what the export costs beyond Spark's own start-up. Then one
more process (``small_export_steps``) runs the export's steps as ``metashell export`` does and
says where the time goes: each step's wall seconds, with the Python process's CPU seconds and
the JVM's (its /proc/PID/stat), which a loaded machine stretches less than wall time.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable

from engine.common.directory_id import migrating_array
from engine.common.config_resource import topic_resource
from engine.image.metadata_image import (ConfigurationImage, ConfigurationsImage, FeaturesImage, MetadataImage,
                                         Provenance, TopicImage, TopicsImage)
from engine.image.partition_registration import PartitionRegistration


def bench_image(partitions: int, brokers: int = 6, seed: int = 7) -> MetadataImage:
    """An image of ``partitions`` partitions, 100 per topic, built without records (fast)."""
    rng = random.Random(seed)
    ids = range(1, brokers + 1)
    # a pool of replica sets, drawn from once per partition: building a million NamedTuples is
    # the cost, not choosing the brokers
    pool = [tuple(rng.sample(ids, 3)) for _ in range(997)]
    migrating = migrating_array(3)  # as replay builds them from records without directories
    new = tuple.__new__
    by_id, by_name = {}, {}
    number = 0
    for start in range(0, partitions, 100):
        topic_id = uuid.UUID(int=rng.getrandbits(128))
        name = f"topic-{start // 100:05d}"
        parts = {}
        for partition in range(min(100, partitions - start)):
            replicas = pool[number % 997]
            isr = replicas[:2] if number % 50 == 0 else replicas
            parts[partition] = new(PartitionRegistration, (
                replicas, isr, (), (), replicas[0], 0, number % 9, number % 7, migrating, (), ()))
            number += 1
        by_id[topic_id] = TopicImage(name, topic_id, MappingProxyType(parts))
        by_name[name] = topic_id
    topics = TopicsImage(MappingProxyType(by_id), MappingProxyType(by_name))
    first = topic_resource("topic-00000")
    return MetadataImage(provenance=Provenance(partitions, 1, 1_700_000_000_000),
                         features=FeaturesImage(MappingProxyType({"metadata.version": 27})),
                         configs=ConfigurationsImage(MappingProxyType({first: ConfigurationImage(
                             first, MappingProxyType({"min.insync.replicas": "3"}))})),
                         topics=topics)


def bench_export(partitions: int = 1_000_000, out: Callable[[str], None] = print,
                 spark_master: str | None = None, remote: str | None = None,
                 directory: Path | None = None) -> dict[str, float]:
    """Run the export of /topics over ``partitions`` partitions; returns seconds per step."""
    from metashell.export import export, table_dataframe
    from metashell.export.spark_session import get_spark
    from metashell.export.tables import table_for

    seconds: dict[str, float] = {}

    def step(name: str, work: Callable):
        started = time.perf_counter()
        result = work()
        seconds[name] = time.perf_counter() - started
        out(f"{name:<18} {seconds[name]:7.2f} s")
        return result

    out(f"metashell bench export: /topics of {partitions:,} partitions to Parquet")
    image = step("image build", lambda: bench_image(partitions))
    spark = step("spark session", lambda: get_spark(master=spark_master, remote=remote))
    table = step("rows (table_for)", lambda: table_for(image, "/topics"))
    out(f"{'':<18} {len(table.rows):,} rows of {table.kind}, {len(table.columns)} columns")
    frame = step("dataframe", lambda: table_dataframe(table, spark))
    count = step("count()", frame.count)
    with tempfile.TemporaryDirectory(prefix="metashell-bench-export-", dir=directory) as tmp:
        step("parquet write", lambda: export(frame, Path(tmp), "parquet"))
    seconds["total"] = sum(seconds.values())
    out(f"{'total':<18} {seconds['total']:7.2f} s  (image build to Parquet written; count() = {count:,})")
    return seconds


# the session exactly as ``export --demo`` starts it (a small export: SMALL_EXPORT_JAVA_OPTIONS)
SESSION_ONLY = ("from metashell.export.spark_session import preflight, spark_now\n"
                "preflight()\n"
                "spark_now(small=True)\n")


def small_export_commands(out_dir: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """The processes ``bench_small_export`` times, each with what it adds to the environment: the
    export and the session alone (both with Spark's class archive, as a user's second export has
    it), and the session without the archive: Spark's own start-up, as pyspark alone starts it."""
    from metashell.export.class_archive import ENV

    session = [sys.executable, "-c", SESSION_ONLY]
    return {"export": ([sys.executable, "-m", "metashell.cli", "export", "--demo", "/topics", "--out", str(out_dir)], {}),
            "session": (session, {}),
            "plain session": (session, {ENV: "off"})}


def ensure_class_archive(out: Callable[[str], None]) -> None:
    """Build Spark's class archive now, in the foreground, if there is no whole one: the bench times
    what a user's exports take once the first export has had it built."""
    from metashell.export import class_archive

    if not class_archive.enabled():
        out(f"{class_archive.ENV}=off: no class archive; export and session run without one")
        return
    archive = class_archive.archive_path()
    if class_archive.usable(archive):
        return
    out(f"building Spark's class archive first: {archive}")
    archive.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "metashell.export.class_archive_build", str(archive)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0 or not class_archive.usable(archive):
        raise RuntimeError(f"the class archive was not built: {(done.stderr or done.stdout).strip()[-500:]}")


def bench_small_export(runs: int = 5, out: Callable[[str], None] = print) -> dict[str, float]:
    """Median wall seconds of ``metashell export --demo /topics``, of the session alone, and of
    the session without Spark's class archive, over ``runs`` turns (after one warm-up turn, not
    counted); a run that fails stops the bench."""
    out(f"metashell bench export --small: {runs} turns of export --demo /topics, of the Spark session alone, "
        "and of the session without the class archive")
    ensure_class_archive(out)
    with tempfile.TemporaryDirectory(prefix="metashell-bench-small-") as tmp:
        commands = small_export_commands(Path(tmp))
        walls: dict[str, list[float]] = {name: [] for name in commands}
        for turn in range(runs + 1):
            for name, (argv, env) in commands.items():
                started = time.perf_counter()
                done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                      env={**os.environ, **env})
                wall = time.perf_counter() - started
                if done.returncode != 0:
                    raise RuntimeError(f"{name} exited {done.returncode}: {(done.stderr or done.stdout).strip()}")
                if turn:  # the first turn warms the disk cache and is not counted
                    walls[name].append(wall)
    medians = {name: statistics.median(values) for name, values in walls.items()}
    for name, values in walls.items():
        out(f"{name:<13} median {medians[name]:6.2f} s  (min {min(values):.2f}, max {max(values):.2f})")
    medians["beyond session"] = medians["export"] - medians["session"]
    medians["beyond plain session"] = medians["export"] - medians["plain session"]
    out(f"the export beyond the session's start-up: {medians['beyond session']:.2f} s "
        f"(beyond Spark's start-up without the archive: {medians['beyond plain session']:+.2f} s)")
    steps = subprocess.run([sys.executable, "-m", "metashell.bench.export"], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL)
    for line in (steps.stdout + steps.stderr).splitlines():
        out(line)
    return medians


def jvm_cpu_s(spark: Any) -> float | None:
    """The CPU seconds of the session's JVM so far (Linux: /proc), or None."""
    try:
        pid = spark.sparkContext._gateway.proc.pid
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (AttributeError, OSError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def small_export_steps(out: Callable[[str], None] = print) -> None:
    """One small export in this (fresh) process, step by step as ``metashell export`` runs them:
    the session starting in a thread while the image (3 partitions, as ``--demo``'s, built by
    ``bench_image``) and its rows are made, then the wait for it, the DataFrame and the write."""
    started, cpu_started = time.perf_counter(), time.process_time()
    last = [started]
    from metashell.export import export, table_dataframe
    from metashell.export.spark_session import get_spark, preflight
    from metashell.export.spark_start import SparkStart
    from metashell.export.tables import table_for

    def step(name: str, spark: Any = None) -> None:
        now = time.perf_counter()
        jvm = jvm_cpu_s(spark) if spark is not None else None
        out(f"{name:<40} {now - last[0]:6.2f} s  (at {now - started:6.2f} s; Python CPU "
            f"{time.process_time() - cpu_started:5.2f} s" + (f", JVM CPU {jvm:5.2f} s)" if jvm is not None else ")"))
        last[0] = now

    step("imports (metashell's, and pyspark's)")
    preflight()
    step("preflight (pyspark, pyarrow, Java)")
    with SparkStart(small=True), tempfile.TemporaryDirectory(prefix="metashell-bench-steps-") as tmp:
        table = table_for(bench_image(3), "/topics")
        step("image and rows (Spark starting)")
        spark = get_spark()
        step("waiting for the Spark session", spark)
        frame = table_dataframe(table, spark)
        step("DataFrame (createDataFrame)", spark)
        export(frame, Path(tmp), "parquet", table="partitions")
        step("Parquet write", spark)


if __name__ == "__main__":
    small_export_steps()
