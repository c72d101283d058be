"""``kraftd fuzz TARGET``: coverage-guided fuzzing of our decoders (engine.fuzz.targets).

Two engines. With atheris installed, libFuzzer drives the target in a child process
(``python -m engine.fuzz.fuzzer --atheris-worker``): the engine's and kio's modules are
instrumented, a hang (-timeout) or a runaway allocation (-rss_limit_mb) ends the child with
libFuzzer's own artifact. Without atheris, Hypothesis drives a mutation loop over the seed
corpus, keeping the inputs that reach new lines of engine/ (traced with sys.settrace): a
per-input time budget (SIGALRM) stands in for -timeout and the process's peak RSS for
-rss_limit_mb.

Either way a finding is an input the target did not take quietly (see engine.fuzz.targets); each
distinct one (by exception type and the engine line it came from) is saved under the
findings directory for a regression test.
"""

from __future__ import annotations

import hashlib
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from engine.common.errors import ConfigError

ENGINE_DIR = Path(__file__).resolve().parents[1]
FUZZ_DIR = str(Path(__file__).resolve().parent)  # engine/fuzz: never counted as the code under test
CORPUS_ROOT = ENGINE_DIR.parent / "tests" / "fuzz_corpus"  # the checked-in seeds (a source checkout)
RSS_LIMIT_MB = 2048
INPUT_TIMEOUT_S = 10  # per input: a decoder that takes longer on a few KB hangs
FINDING_PREFIX = "kraftd-fuzz finding: "
SUMMARY_PREFIX = "kraftd-fuzz summary: "  # the atheris worker's target summary lines (the last set wins)
SUMMARY_EVERY = 100  # inputs between two of them
CHUNK_EXAMPLES = 100


@dataclass
class FuzzReport:
    target: str
    engine: str
    seconds: float = 0.0
    executions: int = 0
    coverage: str = "n/a"
    findings: list[str] = field(default_factory=list)  # "PATH: what happened"
    notes: list[str] = field(default_factory=list)  # the target's own summary (FuzzTarget.summary)

    def lines(self) -> list[str]:
        rate = f" ({self.executions / self.seconds:.0f}/s)" if self.seconds > 0 else ""
        return [f"target: {self.target}", f"engine: {self.engine}", f"seconds: {self.seconds:.1f}",
                f"executions: {self.executions}{rate}", f"coverage: {self.coverage}",
                *self.notes, f"findings: {len(self.findings)}", *(f"finding: {f}" for f in self.findings)]


def target_names() -> list[str]:
    from engine.fuzz.targets import TARGETS

    return list(TARGETS)


def get_target(name: str):
    from engine.fuzz.targets import TARGETS

    if name not in TARGETS:
        raise ConfigError(f"unknown fuzz target {name!r} (targets: {', '.join(TARGETS)})")
    return TARGETS[name]


def default_corpus(target: str) -> Path | None:
    path = CORPUS_ROOT / target
    return path if path.is_dir() else None


def corpus_inputs(corpus: Path | None) -> list[bytes]:
    if corpus is None:
        return []
    if not corpus.is_dir():
        raise ConfigError(f"{corpus}: fuzz corpus is not a directory")
    return [p.read_bytes() for p in sorted(corpus.iterdir()) if p.is_file()]


def atheris_version() -> str | None:
    import importlib.util
    from importlib.metadata import PackageNotFoundError, version

    if importlib.util.find_spec("atheris") is None:
        return None
    try:
        return version("atheris")
    except PackageNotFoundError:
        return "(unknown version)"


# ---------------------------------------------------------------- findings

class FindingLog:
    """Distinct findings of a run, each input saved once under ``directory``."""

    def __init__(self, directory: Path, target: str):
        self.directory, self.target = directory, target
        self.seen: dict[str, str] = {}

    def record(self, data: bytes, exc: BaseException) -> str | None:
        """``exc.input``, when the exception names one, is kept instead of ``data``: a served node
        found broken before a case was broken by the case before."""
        own = getattr(exc, "input", None)
        data = own if isinstance(own, bytes) else data
        signature = _signature(exc)
        if signature in self.seen:
            return None
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{self.target}-{hashlib.sha1(data).hexdigest()[:12]}"
        path.write_bytes(data)
        text = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        line = f"{path}: {text} (at {signature.split('|')[1]})"
        self.seen[signature] = line
        return line


def _signature(exc: BaseException) -> str:
    """Exception type and the innermost line of our code it passed through (or the exception's
    own ``signature``: a served node's broken invariant, raised by the fuzzer's checks)."""
    own = getattr(exc, "signature", None)
    if isinstance(own, str):
        return own
    where = "?"
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        filename = frame.f_code.co_filename
        if filename.startswith(str(ENGINE_DIR)) and not filename.startswith(FUZZ_DIR):  # the code fuzzed, not the fuzzer
            where = f"{Path(filename).relative_to(ENGINE_DIR.parent)}:{lineno}"
    if where == "?" and exc.__traceback__ is not None:
        frame, lineno = list(traceback.walk_tb(exc.__traceback__))[-1]
        where = f"{Path(frame.f_code.co_filename).name}:{lineno}"
    return f"{type(exc).__name__}|{where}"


def run_one(run: Callable[[bytes], None], data: bytes, findings: FindingLog) -> str | None:
    """The target on one input; a new finding's line, if it made one."""
    try:
        run(data)
    except Exception as exc:  # noqa: BLE001 - whatever escapes the target is the finding
        return findings.record(data, exc)
    return None


def rerun(target: str, data: bytes) -> None:
    """The target on one input, its exception (if any) left to rise: for regression tests."""
    get_target(target).run(data)


# ---------------------------------------------------------------- the fallback engine

class _InputTimeout(BaseException):
    """Raised by SIGALRM inside a decoder (a BaseException: no `except Exception` swallows it)."""


class LineCoverage:
    """Distinct (file, line) pairs of engine/ executed, by sys.settrace."""

    def __init__(self) -> None:
        self.lines: set[tuple[str, int]] = set()
        self._prefix = str(ENGINE_DIR)
        self._new = 0

    def _local(self, frame, event, arg):
        if event == "line":
            key = (frame.f_code.co_filename, frame.f_lineno)
            if key not in self.lines:
                self.lines.add(key)
                self._new += 1
        return self._local

    def _global(self, frame, event, arg):
        filename = frame.f_code.co_filename
        if filename.startswith(self._prefix) and not filename.startswith(FUZZ_DIR):
            return self._local
        return None

    def run(self, work: Callable[[], None]) -> int:
        """Run ``work`` traced; how many lines it covered first."""
        self._new = 0
        sys.settrace(self._global)
        try:
            work()
        finally:
            sys.settrace(None)
        return self._new


_INTERESTING = (b"\x00", b"\xff", b"\x7f", b"\x80", b"\x01", b"\x00\x00\x00\x00", b"\xff\xff\xff\xff",
                b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\x00\x00\x00\x01", b"\xff\xff", b"\x80\x00")


def _mutate(draw, data: bytes, pool: list[bytes]) -> bytes:
    """One Hypothesis-chosen mutation, libFuzzer's usual kinds. Every draw has fixed bounds (taken
    modulo what the input allows): Hypothesis wants the same draws for the same choices, while the
    inputs and the pool they come from change."""
    from hypothesis import strategies as st

    def pick(n: int) -> int:
        return draw(st.integers(0, 0xFFFF)) % n if n > 0 else 0

    buf = bytearray(data)
    kind, at = pick(7), pick(len(buf) + 1)
    if kind == 0 and buf:  # flip a bit
        buf[min(at, len(buf) - 1)] ^= 1 << pick(8)
    elif kind == 1:  # overwrite with an interesting value
        value = _INTERESTING[pick(len(_INTERESTING))]
        buf[at:at + len(value)] = value
    elif kind == 2:  # insert bytes
        buf[at:at] = draw(st.binary(min_size=1, max_size=16))
    elif kind == 3:  # delete a range
        del buf[at:at + 1 + pick(64)]
    elif kind == 4:  # duplicate a range
        end = min(len(buf), at + 1 + pick(64))
        buf[end:end] = buf[at:end]
    elif kind == 5:  # splice another input in
        other = pool[pick(len(pool))]
        buf = buf[:at] + bytearray(other[pick(len(other) + 1):])
    elif buf:  # a random byte
        buf[min(at, len(buf) - 1)] = pick(256)
    else:
        buf = bytearray(draw(st.binary(max_size=64)))
    return bytes(buf)


def fuzz_with_hypothesis(target: str, *, seconds: float, runs: int | None, corpus: Path | None,
                         findings_dir: Path, timeout_s: float = INPUT_TIMEOUT_S,
                         rss_limit_mb: int = RSS_LIMIT_MB, seed: int | None = None) -> FuzzReport:
    from hypothesis import HealthCheck, Phase, given, settings, strategies as st
    from hypothesis import seed as hypothesis_seed

    import hypothesis

    run = get_target(target).run
    from engine.fuzz.targets import MAX_INPUT_BYTES

    findings = FindingLog(findings_dir, target)
    coverage = LineCoverage()
    pool = corpus_inputs(corpus) or [b""]
    report = FuzzReport(target, f"hypothesis {hypothesis.__version__} (mutations of the corpus, "
                                f"kept when they reach new lines)")
    use_alarm = threading.current_thread() is threading.main_thread()
    deadline = time.monotonic() + seconds
    started = time.monotonic()
    try:  # the target's imports run here, untraced: the coverage figure counts decoding, not imports
        run(b"")
    except Exception:  # noqa: BLE001 - a finding on no bytes is found again below, traced
        pass
    for data in list(pool):  # the seeds first, as libFuzzer reads its corpus first
        coverage.run(lambda: _one_input(run, data, findings, report, timeout_s, use_alarm))
    over_memory = False

    def one(draw_data) -> None:
        nonlocal over_memory
        draw = draw_data.draw
        data = pool[draw(st.integers(0, 0xFFFF)) % len(pool)]
        for _ in range(draw(st.integers(1, 8))):
            data = _mutate(draw, data, pool)
        data = data[:MAX_INPUT_BYTES]
        if coverage.run(lambda: _one_input(run, data, findings, report, timeout_s, use_alarm)):
            pool.append(data)
        if resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024 > rss_limit_mb and not over_memory:
            findings.record(data, MemoryError(f"peak RSS over {rss_limit_mb} MB"))
            over_memory = True

    # chunks of examples, the clock and the run count checked between them (a test that returned
    # early would draw less than Hypothesis expects)
    while not over_memory:
        left = CHUNK_EXAMPLES if runs is None else min(CHUNK_EXAMPLES, runs - report.executions)
        if left <= 0 or (runs is None and time.monotonic() >= deadline):
            break
        chunk = settings(max_examples=left, deadline=None, database=None, phases=[Phase.generate],
                         suppress_health_check=list(HealthCheck))(lambda draw_data: one(draw_data))
        test = given(st.data())(chunk)
        if seed is not None:  # each chunk its own seed, derived from the run's: the same run again
            test = hypothesis_seed(seed * 1_000_003 + report.executions)(test)
        test()
    report.seconds = time.monotonic() - started
    report.coverage = f"{len(coverage.lines)} distinct lines of engine/ (sys.settrace), {len(pool)} inputs kept"
    summary = get_target(target).summary
    report.notes = summary() if summary is not None else []
    report.findings = list(findings.seen.values())
    return report


def _one_input(run, data: bytes, findings: FindingLog, report: FuzzReport, timeout_s: float,
               use_alarm: bool) -> None:
    def on_alarm(signum, frame):
        raise _InputTimeout()

    report.executions += 1
    began = time.monotonic()
    if use_alarm:
        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        run_one(run, data, findings)
    except _InputTimeout:
        findings.record(data, TimeoutError(f"input ran over the {timeout_s} s budget"))
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    if time.monotonic() - began > timeout_s:
        findings.record(data, TimeoutError(f"input took {time.monotonic() - began:.1f} s"))


# ---------------------------------------------------------------- the atheris engine

_STATS = re.compile(r"#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+)")
_DONE = re.compile(r"Done (\d+) runs in (\d+) second")


def fuzz_with_atheris(target: str, *, seconds: float, runs: int | None, corpus: Path | None,
                      findings_dir: Path, timeout_s: float = INPUT_TIMEOUT_S,
                      rss_limit_mb: int = RSS_LIMIT_MB, seed: int | None = None) -> FuzzReport:
    get_target(target)
    findings_dir.mkdir(parents=True, exist_ok=True)
    report = FuzzReport(target, f"atheris {atheris_version()} (libFuzzer)")
    with tempfile.TemporaryDirectory(prefix="kraftd-fuzz-corpus-") as work_corpus:
        args = [sys.executable, "-m", "engine.fuzz.fuzzer", "--atheris-worker", target, str(findings_dir),
                f"-timeout={int(timeout_s)}", f"-rss_limit_mb={rss_limit_mb}",
                f"-artifact_prefix={findings_dir}{os.sep}", "-print_final_stats=1", work_corpus]
        if corpus is not None:
            args.append(str(corpus))
        if seed is not None:
            args.append(f"-seed={seed}")
        args.append(f"-runs={runs}" if runs is not None else f"-max_total_time={max(1, round(seconds))}")
        started = time.monotonic()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ENGINE_DIR.parent),
                                                                         os.environ.get("PYTHONPATH")]))}
        proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace", env=env)
        report.seconds = time.monotonic() - started
    output = proc.stdout
    stats = _STATS.findall(output)
    if stats:
        executions, cov, ft = stats[-1]
        report.executions = int(executions)
        report.coverage = f"cov: {cov} ft: {ft} (libFuzzer's edges and features)"
    done = _DONE.search(output)
    if done:
        report.executions = max(report.executions, int(done.group(1)))
    report.findings = [line[len(FINDING_PREFIX):] for line in output.splitlines() if line.startswith(FINDING_PREFIX)]
    report.notes = _last_summary(output)
    for artifact in sorted(findings_dir.glob("*-*")):  # libFuzzer's own: crash-, timeout-, oom-, leak-
        if artifact.name.split("-")[0] in ("crash", "timeout", "oom", "leak", "slow"):
            report.findings.append(f"{artifact}: libFuzzer {artifact.name.split('-')[0]}")
    if proc.returncode != 0 and not report.findings:
        tail = " | ".join(output.strip().splitlines()[-3:])
        report.findings.append(f"the atheris worker exited {proc.returncode}: {tail}")
    return report


def _last_summary(output: str) -> list[str]:
    """The worker's last set of summary lines (each "PREFIX COUNT LINE")."""
    lines = [line[len(SUMMARY_PREFIX):].split(" ", 1) for line in output.splitlines() if line.startswith(SUMMARY_PREFIX)]
    if not lines:
        return []
    last = lines[-1][0]
    return [text for count, text in lines if count == last]


def _atheris_worker(argv: list[str]) -> None:
    """The child: instrument our modules and kio's, then hand the target to libFuzzer."""
    import atheris

    target, findings_dir, libfuzzer_args = argv[0], Path(argv[1]), argv[2:]
    with atheris.instrument_imports(include=["engine", "kio"]):
        from engine.fuzz import targets as fuzz_targets
        run = fuzz_targets.TARGETS[target].run
        findings = FindingLog(findings_dir, target)
        run_one(run, b"", findings)  # imports what the target reads with, inside the instrumentation

    summary = fuzz_targets.TARGETS[target].summary
    count = 0

    def one_input(data: bytes) -> None:
        nonlocal count
        line = run_one(run, data[:fuzz_targets.MAX_INPUT_BYTES], findings)
        if line is not None:
            sys.stdout.write(f"{FINDING_PREFIX}{line}\n")
        count += 1
        if summary is not None and count % SUMMARY_EVERY == 0:  # libFuzzer exits without Python's atexit
            sys.stdout.write("".join(f"{SUMMARY_PREFIX}{count} {note}\n" for note in summary()))
        sys.stdout.flush()

    atheris.Setup([sys.argv[0], *libfuzzer_args], one_input)
    atheris.Fuzz()


# ---------------------------------------------------------------- the command

def run_fuzz(target: str, *, seconds: float, runs: int | None, corpus: Path | None, findings_dir: Path,
             engine: str = "auto", out: Callable[[str], None], seed: int | None = None) -> int:
    get_target(target)
    if seconds <= 0:
        raise ConfigError(f"--seconds must be positive, got {seconds}")
    if corpus is not None and not corpus.is_dir():
        raise ConfigError(f"{corpus}: fuzz corpus is not a directory")
    corpus = corpus if corpus is not None else default_corpus(target)
    if engine == "auto":
        engine = "atheris" if atheris_version() else "hypothesis"
    if engine == "atheris" and not atheris_version():
        raise ConfigError("--engine atheris: atheris is not installed (pip install 'metashell[fuzz]')")
    fuzz = fuzz_with_atheris if engine == "atheris" else fuzz_with_hypothesis
    report = fuzz(target, seconds=seconds, runs=runs, corpus=corpus, findings_dir=findings_dir, seed=seed)
    for line in report.lines():
        out(line)
    return 1 if report.findings else 0


if __name__ == "__main__" and sys.argv[1:2] == ["--atheris-worker"]:
    _atheris_worker(sys.argv[2:])
