"""``kraftd bench peer``: metashell against Apache Kafka's own tools, side by side in one run.

Two pairs, each on the same generated files, alternated A B A B so that a machine whose speed
drifts slows both sides alike:

* time to the first answer: ``metashell --snapshot F -c pwd`` against
  ``kafka-metadata-shell --snapshot F ls /`` (Kafka's shell takes no ``pwd`` outside its
  interactive mode; ``ls /`` is its cheapest command). Both print only once the whole
  snapshot is loaded into an image.
* records per second: ``kraftd dump-log`` against ``kafka-dump-log --cluster-metadata-decoder``
  on one large segment, standard output to /dev/null for both.

Kafka's mains run as its scripts run them: ``java`` with the flags bin/kafka-run-class.sh gives
every tool when no environment variable overrides them (``KAFKA_TOOL_JVM_OPTS``), and its
default heap (-Xmx256M) except for the metadata shell, which cannot hold a large snapshot in
256M (its loader dies of OutOfMemoryError and the shell waits forever): ``kafka_heap`` is then
what an operator would put in KAFKA_HEAP_OPTS. Every figure is of a whole process, started
fresh: wall seconds from the start to the first line printed (the shell) or to the exit (the
dump), and the CPU seconds and peak memory the kernel accounted to it.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple, Sequence

from engine.common.errors import ConfigError, MetadataError
from engine.records import metadata_records as m
from engine.records.kio_codec import i16
from engine.storage.snapshot_writer import SnapshotId, write_snapshot
from engine.bench.replay import partition_heavy_records, write_bench_log

# bin/kafka-run-class.sh's defaults for KAFKA_JVM_PERFORMANCE_OPTS and KAFKA_JMX_OPTS.
KAFKA_TOOL_JVM_OPTS = (
    "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true",
    "-Dcom.sun.management.jmxremote=true", "-Dcom.sun.management.jmxremote.authenticate=false",
    "-Dcom.sun.management.jmxremote.ssl=false",
)
KAFKA_DEFAULT_HEAP = "256M"  # bin/kafka-run-class.sh's KAFKA_HEAP_OPTS default
SHELL_MAIN = "org.apache.kafka.shell.MetadataShell"
DUMP_MAINS = ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")  # 4.3 moved it
# As Kafka's config/tools-log4j2.yaml: warnings and errors only, to standard error.
LOG4J2_TOOLS = """status = warn
appender.err.type = Console
appender.err.name = ERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = ERR
"""
RUN_TIMEOUT_S = 900.0


class PeerError(MetadataError):
    """One side of the comparison could not run or gave a wrong answer."""


class Run(NamedTuple):
    """One whole process: wall seconds to its first line (or exit), and the kernel's accounting."""

    seconds: float
    cpu_seconds: float
    peak_mb: float


@dataclass(frozen=True, slots=True)
class KafkaTools:
    """One Kafka version's jars, the java to run them, and where its dump tool's main lives."""

    version: str
    libs: Path
    java: str
    dump_main: str

    def command(self, main: str, heap: str, log4j: Path, *args: str) -> list[str]:
        return [self.java, f"-Xmx{heap}", *KAFKA_TOOL_JVM_OPTS, f"-Dlog4j2.configurationFile={log4j}",
                "-cp", str(self.libs / "*"), main, *args]


def kafka_tools(libs: Path) -> KafkaTools:
    """Kafka's version and dump main in ``libs`` (a directory of its jars), and the java to run them."""
    jars = {jar.name: jar for jar in libs.glob("kafka*.jar")} if libs.is_dir() else {}
    clients = [name for name in jars if name.startswith("kafka-clients-")]
    if not clients or not any(name.startswith("kafka-shell-") for name in jars):
        raise ConfigError(f"{libs}: no Kafka jars here (need kafka-clients-*.jar and kafka-shell-*.jar)")
    version = clients[0].removeprefix("kafka-clients-").removesuffix(".jar")
    classes: set[str] = set()
    for jar in jars.values():
        with zipfile.ZipFile(jar) as archive:
            classes.update(archive.namelist())
    dump = next((main for main in DUMP_MAINS if main.replace(".", "/") + ".class" in classes), None)
    if dump is None:
        raise ConfigError(f"{libs}: Kafka {version} has no DumpLogSegments main (looked for {', '.join(DUMP_MAINS)})")
    java_home = os.environ.get("JAVA_HOME")  # as kafka-run-class.sh picks its java
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not java or not Path(java).exists():
        raise ConfigError("java not found (set JAVA_HOME or put java on PATH)")
    return KafkaTools(version, libs, java, dump)


def bench_files(directory: Path, partitions: int, log_partitions: int,
                out: Callable[[str], None]) -> tuple[Path, list[Path], int]:
    """The snapshot (a metadata.version record, then ``partitions`` partitions, 100 per topic) and
    the segments of a log of ``log_partitions`` partitions, with that log's record count; made
    once in ``directory`` and reused while they are there (each appears whole, by a rename)."""
    snapshot_dir = directory / f"snapshot-{partitions}"
    if not snapshot_dir.is_dir():
        started = time.perf_counter()
        partial = Path(tempfile.mkdtemp(prefix=snapshot_dir.name + ".", dir=directory))
        records = [m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27))]
        records += partition_heavy_records(partitions)
        write_snapshot(partial, SnapshotId(len(records), 1), records, last_contained_log_timestamp_ms=0,
                       now_ms=0, fsync=False)
        del records
        partial.rename(snapshot_dir)
        out(f"generated a snapshot of {partitions:,} partitions in {time.perf_counter() - started:.0f} s")
    log_dir = directory / f"log-{log_partitions}"
    if not log_dir.is_dir():
        started = time.perf_counter()
        partial = Path(tempfile.mkdtemp(prefix=log_dir.name + ".", dir=directory))
        write_bench_log(partial, log_partitions)
        partial.rename(log_dir)
        out(f"generated a log of {log_partitions:,} partitions in {time.perf_counter() - started:.0f} s")
    snapshots = sorted(snapshot_dir.glob("*.checkpoint"))
    segments = sorted(log_dir.glob("__cluster_metadata-0/*.log"))
    if len(snapshots) != 1 or not segments:
        raise ConfigError(f"{directory}: unexpected files in {snapshot_dir.name} or {log_dir.name}; remove them")
    records = log_partitions + -(-log_partitions // 100)  # the partitions and one TopicRecord per 100
    return snapshots[0], segments, records


def timed(command: Sequence[str], stdout: Path | None = None, first_line: bool = False) -> tuple[Run, str]:
    """Run ``command`` to its end: the Run, and its first line of output when ``first_line``
    (the clock then stops at that line, the rest is read and dropped) or else its standard
    output goes to ``stdout`` (default /dev/null) and the clock stops at the exit."""
    with tempfile.TemporaryFile() as err, open(stdout or os.devnull, "wb") as sink:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stderr=err,
                                   stdout=subprocess.PIPE if first_line else sink)
        # A JVM whose loader thread died of OutOfMemoryError waits forever: bound every run.
        killer = threading.Timer(RUN_TIMEOUT_S, process.kill)
        killer.start()
        line = ""
        try:
            if first_line:
                line = process.stdout.readline().decode(errors="replace").strip()
                answered = time.perf_counter() - started
                shutil.copyfileobj(process.stdout, sink)
                process.stdout.close()
            _, status, usage = os.wait4(process.pid, 0)  # the child's own CPU time and peak memory
            ended = time.perf_counter() - started
            process.returncode = code = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait again
        finally:
            killer.cancel()
            if process.returncode is None:  # interrupted before the child was reaped
                process.kill()
                process.wait()
        if code != 0:
            err.seek(0)
            said = [ln for ln in err.read().decode(errors="replace").splitlines() if ln.strip()]
            why = said[-1].strip() if said else "no message"
            if ended >= RUN_TIMEOUT_S:
                why = f"killed after {RUN_TIMEOUT_S:.0f} s (for Kafka's shell: a heap too small? see --kafka-heap)"
            raise PeerError(f"{shlex.join(command[:1] + list(command[-4:]))} exited {code}: {why}")
    return Run(answered if first_line else ended, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024), line


def _median_line(label: str, runs: list[Run], figure: str) -> str:
    return (f"  {label}: {figure}, cpu {statistics.median(r.cpu_seconds for r in runs):.2f} s, "
            f"peak {statistics.median(r.peak_mb for r in runs):,.0f} MiB")


def _ratio_line(what: str, ours: list[float], theirs: list[float], note: str) -> str:
    pairs = sorted(a / b for a, b in zip(ours, theirs))
    return (f"ratio {what} metashell/Kafka: {statistics.median(ours) / statistics.median(theirs):.2f} "
            f"(pair by pair {pairs[0]:.2f} - {pairs[-1]:.2f}; {note})")


def alternate(a: Callable[[], Run], b: Callable[[], Run], rounds: int,
              out: Callable[[str], None], names: tuple[str, str]) -> tuple[list[Run], list[Run]]:
    """A B A B ...: ``rounds`` counted runs of each."""
    runs: tuple[list[Run], list[Run]] = ([], [])
    for round_number in range(1, rounds + 1):
        for side, (name, work) in enumerate(zip(names, (a, b))):
            run = work()
            runs[side].append(run)
            out(f"  round {round_number} {name}: {run.seconds:.2f} s, cpu {run.cpu_seconds:.2f} s, "
                f"peak {run.peak_mb:,.0f} MiB")
    return runs


def bench_peer(kafka_libs: Path, partitions: int = 1_000_000, log_partitions: int = 300_000, rounds: int = 3,
               kafka_heap: str = "2G", directory: Path | None = None, out: Callable[[str], None] = print) -> None:
    """Both pairs against the Kafka jars in ``kafka_libs``; files in ``directory`` (kept), else a temporary one."""
    kafka = kafka_tools(Path(kafka_libs))
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="kraftd-bench-peer-") as tmp:
        work = Path(directory) if directory else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        snapshot, segments, records = bench_files(work, partitions, log_partitions, out)
        log4j = Path(tmp) / "tools-log4j2.properties"
        log4j.write_text(LOG4J2_TOOLS)
        ours_shell = [python, "-m", "metashell.cli", "--snapshot", str(snapshot), "-c", "pwd"]
        kafka_shell = kafka.command(SHELL_MAIN, kafka_heap, log4j, "--snapshot", str(snapshot), "ls", "/")
        ours_dump = [python, "-m", "engine.tools.cli", "dump-log", *map(str, segments)]
        kafka_dump = kafka.command(kafka.dump_main, KAFKA_DEFAULT_HEAP, log4j, "--cluster-metadata-decoder",
                                   "--files", ",".join(map(str, segments)))
        out(f"Kafka {kafka.version} ({kafka.libs}), {kafka.java}; metashell on {python} "
            f"{sys.version.split()[0]}; {rounds} counted rounds after one warm-up, A B A B")
        for command in (ours_shell, kafka_shell, ours_dump, kafka_dump):
            out(f"$ {shlex.join(command)}")
        names = ("metashell", f"Kafka {kafka.version}")

        out(f"time to the first answer, snapshot of {partitions:,} partitions "
            f"({snapshot.stat().st_size / 1e6:.0f} MB):")
        _check_answer(names[0], timed(ours_shell, first_line=True)[1], "/")
        _check_answer(names[1], timed(kafka_shell, first_line=True)[1], "image")
        shells = alternate(lambda: timed(ours_shell, first_line=True)[0],
                           lambda: timed(kafka_shell, first_line=True)[0], rounds, out, names)
        seconds = _column(shells, "seconds")
        for name, side, heap in zip(names, (0, 1), ("", f" (-Xmx{kafka_heap})")):
            out(_median_line(f"{name} median{heap}", shells[side],
                             f"first answer {statistics.median(seconds[side]):.2f} s"))

        size = sum(s.stat().st_size for s in segments)
        out(f"dump-log, {records:,} records ({size / 1e6:.0f} MB) in {len(segments)} segment(s), output to /dev/null:")
        digests = [_check_dump(name, command, Path(tmp) / "dump.txt", records)
                   for name, command in zip(names, (ours_dump, kafka_dump))]
        same = "identical" if digests[0] == digests[1] else "DIFFERENT"
        out(f"  both printed every record; their outputs are {same}")
        dumps = alternate(lambda: timed(ours_dump)[0], lambda: timed(kafka_dump)[0], rounds, out, names)
        rates = [[records / r.seconds for r in side] for side in dumps]
        for name, side, heap in zip(names, (0, 1), ("", f" (-Xmx{KAFKA_DEFAULT_HEAP})")):
            out(_median_line(f"{name} median{heap}", dumps[side], f"{statistics.median(rates[side]):,.0f} records/s"))

        # CPU seconds too: on a shared machine they move less than wall seconds, and they show
        # what a multi-threaded JVM gains in wall time over one Python thread.
        out(_ratio_line("first answer seconds", *seconds, "above 1: metashell slower"))
        out(_ratio_line("first answer cpu seconds", *_column(shells, "cpu_seconds"), "above 1: metashell used more"))
        out(_ratio_line("first answer peak memory", *_column(shells, "peak_mb"), "above 1: metashell used more"))
        out(_ratio_line("dump-log records/s", *rates, "below 1: metashell slower"))
        out(_ratio_line("dump-log cpu seconds", *_column(dumps, "cpu_seconds"), "above 1: metashell used more"))


def _column(runs: tuple[list[Run], list[Run]], figure: str) -> list[list[float]]:
    """One figure of every run, per side."""
    return [[getattr(r, figure) for r in side] for side in runs]


def _check_answer(name: str, line: str, expected: str) -> None:
    if line != expected:
        raise PeerError(f"{name} answered {line[:80]!r}, expected {expected!r}")


def _check_dump(name: str, command: list[str], path: Path, records: int) -> str:
    """The warm-up run, into a file: every record printed? Returns the output's digest."""
    timed(command, stdout=path)
    digest = hashlib.sha256()
    printed = 0
    with open(path, "rb") as text:
        for line in text:
            digest.update(line)
            printed += line.startswith(b"| offset: ")
    path.unlink()
    if printed != records:
        raise PeerError(f"{name} printed {printed} records, expected {records}")
    return digest.hexdigest()
