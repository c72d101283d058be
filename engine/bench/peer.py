"""``kraftd bench peer``: metashell against Apache Kafka's own tools, side by side in one run.

Every row of issue 26's table, on the same generated files, each side taking its turn (A B C,
A B C, ...: ours, then each Kafka version given) so that a machine whose speed drifts slows all
sides alike:

* the shells (engine/bench/peer_shells.py): ``metashell --snapshot F`` and
  ``kafka-metadata-shell --snapshot F``, both interactive on their standard input, are asked
  ``ls /image/topics/byName`` (the first answer), ``cat`` of one partition, and
  ``find /image/topics/byName`` (a whole-image answer); each question is asked again until its
  answer is the one the file holds (Kafka's shell may answer from a partly loaded image). The
  snapshot is written as Kafka 4.x writes one (engine/bench/peer_files.py).
* records per second: ``kraftd dump-log`` against ``kafka-dump-log --cluster-metadata-decoder``
  on one log, standard output to /dev/null for both, after a run of each into a file whose
  outputs must be identical.
* with ``controller``, ``kraftd bench controller``'s creation of the same number of partitions,
  ours against the newest Kafka given (its own command, reused).

Kafka's mains run as its scripts run them: ``java`` with the flags bin/kafka-run-class.sh gives
every tool when no environment variable overrides them (``KAFKA_TOOL_JVM_OPTS``), and its
default heap (-Xmx256M) except for the metadata shell, which cannot hold a large snapshot in
256M (its loader dies of OutOfMemoryError and the shell waits forever): ``kafka_heap`` is then
what an operator would put in KAFKA_HEAP_OPTS. Every figure is of a whole process, started
fresh: wall seconds from its start, CPU seconds and peak memory of all its threads.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import multiprocessing
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from engine.common.errors import ConfigError
from engine.bench.peer_attach import AttachUnavailable, bench_attach_rows
from engine.bench.peer_files import BenchFiles, bench_files
from engine.bench.peer_report import Figure, table
from engine.bench.peer_shells import PeerError, Question, Sample, Session, questions, run_session

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
# a side's line in the summary of `kraftd bench controller`
CONTROLLER_SUMMARY = re.compile(r"  (?P<side>kraftd|Kafka [0-9.]+): create [0-9,]+ partitions (?P<seconds>[0-9.]+) s;"
                                r".*?(?:; peak RSS [0-9,]+ - (?P<peak>[0-9,]+) MB)?")




@dataclass(frozen=True, slots=True)
class KafkaTools:
    """One Kafka version's jars, the java to run them, and where its dump tool's main lives."""

    version: str
    libs: Path
    java: str
    dump_main: str

    def command(self, main: str, heap: str, log4j: Path, *args: str) -> list[str]:
        # java.io.tmpdir beside the log4j file, in the bench's own temporary directory: Kafka's
        # MetadataShell makes a MetadataShell<N> directory there and leaves it when it is killed
        return [self.java, f"-Xmx{heap}", *KAFKA_TOOL_JVM_OPTS, f"-Dlog4j2.configurationFile={log4j}",
                f"-Djava.io.tmpdir={log4j.parent}", "-cp", str(self.libs / "*"), main, *args]


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


def timed(command: Sequence[str], stdout: Path | None = None) -> Sample:
    """Run ``command`` to its end, its standard output to ``stdout`` (default /dev/null): wall
    seconds to the exit, and the CPU seconds and peak memory the kernel accounted to it."""
    with tempfile.TemporaryFile() as err, open(stdout or os.devnull, "wb") as sink:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stderr=err, stdout=sink)
        killer = threading.Timer(RUN_TIMEOUT_S, process.kill)
        killer.start()
        try:
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
                why = f"killed after {RUN_TIMEOUT_S:.0f} s"
            raise PeerError(f"{shlex.join(command[:1] + list(command[-4:]))} exited {code}: {why}")
    return Sample(ended, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def bench_peer(kafka_libs: Sequence[Path], partitions: int = 1_000_000, log_partitions: int = 300_000,
               rounds: int = 3, kafka_heap: str = "2G", directory: Path | None = None, controller: bool = False,
               controller_heap: str = "4G", attach_seconds: float = 0.0,
               out: Callable[[str], None] = print) -> list[Figure]:
    """Every row against the Kafka jars in each of ``kafka_libs``; files in ``directory`` (kept),
    else a temporary one. Returns the figures it printed."""
    kafkas = [kafka_tools(Path(libs)) for libs in kafka_libs]
    if len({k.version for k in kafkas}) != len(kafkas):
        raise ConfigError("--kafka-libs: the same Kafka version twice")
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="kraftd-bench-peer-") as tmp:
        work = Path(directory) if directory else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        files = _files_made_apart(work, partitions, log_partitions, out)
        log4j = Path(tmp) / "tools-log4j2.properties"
        log4j.write_text(LOG4J2_TOOLS)
        names = ["metashell"] + [f"Kafka {k.version}" for k in kafkas]
        shells = [[python, "-m", "metashell.cli", "--snapshot", str(files.snapshot)]] + [
            k.command(SHELL_MAIN, kafka_heap, log4j, "--snapshot", str(files.snapshot)) for k in kafkas]
        dumps = [[python, "-m", "engine.tools.cli", "dump-log", *map(str, files.segments)]] + [
            k.command(k.dump_main, KAFKA_DEFAULT_HEAP, log4j, "--cluster-metadata-decoder",
                      "--files", ",".join(map(str, files.segments))) for k in kafkas]
        out(f"{', '.join(f'Kafka {k.version} ({k.libs})' for k in kafkas)}, {kafkas[0].java}; metashell on "
            f"{python} {sys.version.split()[0]}; {rounds} counted rounds after one warm-up, "
            f"{' '.join(n.split()[-1] for n in names)} in turn; machine: {os.cpu_count()} cpus, load average "
            f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for command in shells + dumps:
            out(f"$ {shlex.join(command)}")
        # The dumps first: a child's peak memory as the kernel accounts it (wait4's ru_maxrss) is
        # at least this process's resident size when it was spawned, and the shells' answers
        # (a million paths to check) make this process large.
        figures = _bench_dumps(files, dumps, names, rounds, Path(tmp), out)
        asked = questions(files.manifest)
        figures = _bench_shells(files, asked, shells, names, rounds, kafka_heap, out) + figures
    if controller:
        try:
            figures += _bench_controller(partitions, kafkas[-1], controller_heap, out)
        except PeerError as err:  # the rows measured so far still stand
            out(f"the controller's rows are left out: {err}")
    if attach_seconds:
        try:
            figures += bench_attach_rows(partitions, kafkas[-1].version, str(kafkas[-1].libs), attach_seconds, out)
        except AttachUnavailable as err:  # the rows measured so far still stand
            out(f"the attach's rows are left out: {err}")
    else:
        out(f"attach to a quorum of {partitions:,} partitions: not asked (--attach runs `metashell bench attach "
            f"--partitions {partitions}` against the last Kafka given)")
    out(f"load average after: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    out("ratios are metashell/Kafka: the ratio of the medians, then the range of the pairs' own ratios")
    for line in table(figures, [n.removeprefix("Kafka ") for n in names[1:]]):
        out(line)
    return figures


def _bench_shells(files: BenchFiles, asked: list[Question], commands: list[list[str]], names: list[str],
                  rounds: int, kafka_heap: str, out: Callable[[str], None]) -> list[Figure]:
    size = files.snapshot.stat().st_size
    out(f"the shells, snapshot of {files.manifest.partitions:,} partitions in {len(files.manifest.topics):,} topics "
        f"({size / 1e6:.0f} MB, as Kafka 4.x writes it); Kafka's shell with -Xmx{kafka_heap}; each asked, until "
        f"its answer is right: " + "; ".join(f"{q.name}: {q.command}" for q in asked))
    sessions: list[list[Session]] = [[] for _ in names]
    for round_number in range(0, rounds + 1):
        for side, (name, command) in enumerate(zip(names, commands)):
            session = run_session(command, asked, name, RUN_TIMEOUT_S)
            label = "warm-up" if round_number == 0 else f"round {round_number}"
            out(f"  {label} {name}: " + "; ".join(
                f"{q.name} {s.seconds:.2f} s (cpu {s.cpu_seconds:.2f} s, peak {s.peak_mb:,.0f} MiB"
                + (f", asked {session.reasked[q.name] + 1} times" if session.reasked[q.name] else "") + ")"
                for q, s in ((q, session.answers[q.name]) for q in asked))
                + f"; exit {session.exit.seconds:.2f} s")
            if round_number:
                sessions[side].append(session)
    first, whole = asked[0].name, asked[-1].name
    rows = [("first answer, wall", first, "seconds", "s"), ("first answer, CPU", first, "cpu_seconds", "s"),
            ("first answer, peak memory", first, "peak_mb", "MiB"), ("a partition's cat, wall", asked[1].name,
                                                                      "seconds", "s"),
            ("whole-image answer, wall", whole, "seconds", "s"), ("whole-image answer, CPU", whole, "cpu_seconds", "s"),
            ("whole-image answer, peak memory", whole, "peak_mb", "MiB")]
    figures = []
    for label, question, figure, unit in rows:
        values = [[getattr(s.answers[question], figure) for s in side] for side in sessions]
        figures.append(Figure(label, unit, values[0], {n.removeprefix("Kafka "): v
                                                       for n, v in zip(names[1:], values[1:])}))
    return figures


def _bench_dumps(files: BenchFiles, commands: list[list[str]], names: list[str], rounds: int, tmp: Path,
                 out: Callable[[str], None]) -> list[Figure]:
    size = sum(s.stat().st_size for s in files.segments)
    records = files.log_records
    out(f"dump-log, {records:,} records ({size / 1e6:.0f} MB) in {len(files.segments)} segment(s), "
        f"output to /dev/null (this process's peak RSS {_own_peak_mb():,.0f} MiB: no child's peak below it can be seen):")
    digests = [_check_dump(name, command, tmp / "dump.txt", records) for name, command in zip(names, commands)]
    for name, digest in zip(names[1:], digests[1:]):
        out(f"  metashell and {name} printed every record; their outputs are "
            f"{'identical' if digest == digests[0] else 'DIFFERENT'}")
    runs: list[list[Sample]] = [[] for _ in names]
    for round_number in range(1, rounds + 1):
        for side, (name, command) in enumerate(zip(names, commands)):
            run = timed(command)
            runs[side].append(run)
            out(f"  round {round_number} {name}: {run.seconds:.2f} s, cpu {run.cpu_seconds:.2f} s, "
                f"peak {run.peak_mb:,.0f} MiB")
    rates = [[records / r.seconds for r in side] for side in runs]
    kafka = [n.removeprefix("Kafka ") for n in names[1:]]
    return [Figure("dump-log, records/s", "records/s", rates[0], dict(zip(kafka, rates[1:])), higher_is_better=True),
            Figure("dump-log, CPU", "s", *_sides([[r.cpu_seconds for r in side] for side in runs], kafka)),
            Figure("dump-log, peak memory", "MiB", *_sides([[r.peak_mb for r in side] for side in runs], kafka))]


def _own_peak_mb() -> float:
    """This process's peak RSS: the floor of every child's ru_maxrss (exec keeps the high-water
    mark of the address space the child was spawned with)."""
    with open("/proc/self/status") as status:
        return next((int(line.split()[1]) / 1024 for line in status if line.startswith("VmHWM:")), float("nan"))


def _files_made_apart(directory: Path, partitions: int, log_partitions: int, out: Callable[[str], None]) -> BenchFiles:
    """The bench's files, generated (when missing) in a process of their own, so that generating
    a million partitions does not raise this process's peak, which every child's peak memory
    figure starts from."""
    if not _files_there(directory, partitions, log_partitions):
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            for line in pool.submit(_make_files, directory, partitions, log_partitions).result():
                out(line)
    return bench_files(directory, partitions, log_partitions, out)  # now only read


def _files_there(directory: Path, partitions: int, log_partitions: int) -> bool:
    return (directory / f"kafka4-snapshot-{partitions}").is_dir() and (directory / f"kafka4-log-{log_partitions}").is_dir()


def _make_files(directory: Path, partitions: int, log_partitions: int) -> list[str]:
    said: list[str] = []
    bench_files(directory, partitions, log_partitions, said.append)
    return said


def _sides(values: list[list[float]], kafka: list[str]) -> tuple[list[float], dict[str, list[float]]]:
    return values[0], dict(zip(kafka, values[1:]))


def _bench_controller(partitions: int, kafka: KafkaTools, heap: str, out: Callable[[str], None]) -> list[Figure]:
    """``kraftd bench controller`` as it is, ours then Kafka's, for the same number of partitions:
    run as its own command (its figures are its own; the two modules import nothing of each
    other's), its lines passed on, the creation time and peak memory read from its summary."""
    topics = -(-partitions // 100)
    command = [sys.executable, "-m", "engine.tools.cli", "bench", "controller", "--topics", str(topics),
               "--partitions-per-topic", "100", "--kafka-libs", str(kafka.libs), "--kafka-heap", heap,
               "--failovers", "0"]  # the row is the creation; failover has its own figures
    out(f"the controller, its own command and output: $ {shlex.join(command)}")
    summary: dict[str, tuple[float, float | None]] = {}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        for line in process.stdout:
            out("  " + line.rstrip())
            found = CONTROLLER_SUMMARY.fullmatch(line.rstrip())
            if found:
                peak = float(found["peak"].replace(",", "")) if found["peak"] else None
                summary[found["side"]] = (float(found["seconds"]), peak)
    if process.returncode != 0 or len(summary) != 2:
        raise PeerError(f"kraftd bench controller exited {process.returncode} without its summary (see above)")
    (ours, ours_peak), (theirs, theirs_peak) = summary["kraftd"], summary[f"Kafka {kafka.version}"]
    figures = [Figure(f"controller: create {topics * 100:,} partitions, wall", "s", [ours], {kafka.version: [theirs]})]
    if ours_peak is not None and theirs_peak is not None:
        figures.append(Figure("controller: peak memory, largest controller", "MiB", [ours_peak],
                              {kafka.version: [theirs_peak]}))
    return figures


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
