"""Both shells driven the same way, on their standard input, and timed until their answer is right.

Kafka's one-shot form (``kafka-metadata-shell --snapshot F ls /``) may answer from a partly
published image: its loader's caught-up signal comes when the last batch is read, not when it is
applied. So both shells run interactively (commands on stdin, answers on stdout), each question
is followed by ``pwd`` (whose ``/`` marks the end of the answer: Kafka's interactive shell and ours
both have it), and a question is asked again until its answer is the one the file holds. The
clock runs from the start of the process to the right answer; CPU seconds and peak memory are
read from /proc at that moment (the whole process, every thread), and from the kernel's
accounting at the exit.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Sequence

from engine.common.errors import MetadataError
from engine.bench.peer_files import Manifest

PROMPT = ">> "  # Kafka's interactive prompt (JLine prints it on a dumb terminal too); ours prints none
END = "pwd"
END_ANSWER = "/"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
REASK_PAUSE_S = 0.02
KILL_GRACE_S = 10.0  # past the time limit, a shell that answers no more is killed


class PeerError(MetadataError):
    """One side of the comparison could not run or gave a wrong answer."""


class Sample(NamedTuple):
    """A moment of one process: wall seconds since its start, its CPU seconds and peak RSS so far."""

    seconds: float
    cpu_seconds: float
    peak_mb: float


@dataclass(frozen=True, slots=True)
class Question:
    """A command, and the judge of its answer's lines: None when right, else what is wrong."""

    name: str
    command: str
    judge: Callable[[list[str]], str | None]


@dataclass
class Session:
    """One shell process, its answers timed (``answers[name]``) and the number of times each was re-asked."""

    answers: dict[str, Sample] = field(default_factory=dict)
    reasked: dict[str, int] = field(default_factory=dict)
    exit: Sample | None = None


def questions(manifest: Manifest) -> list[Question]:
    """The three questions of the bench, in the order they are asked: the topic names (the first
    answer), one partition's registration, and every topic and partition path (the whole image)."""
    names = sorted(manifest.topics)
    probe = manifest.probe
    return [Question("first answer", "ls /image/topics/byName", lambda lines: judge_ls(lines, names)),
            Question("partition", f"cat {probe.path}", lambda lines: judge_cat(lines, manifest)),
            Question("whole image", "find /image/topics/byName", _find_judge(manifest))]


def judge_ls(lines: list[str], names: list[str]) -> str | None:
    # Kafka lays ls out in columns as wide as its terminal; ours one a line: compare the words
    words = sorted(word for line in lines for word in line.split())
    if words == names:
        return None
    missing = len(set(names) - set(words))
    return f"{len(words):,} names of {len(names):,} ({missing:,} missing): {' '.join(lines)[:80]!r}"


def judge_cat(lines: list[str], manifest: Manifest) -> str | None:
    p = manifest.probe
    text = " ".join(lines)
    wanted = [f"replicas=[{', '.join(map(str, p.replicas))}]", f"directories=[{', '.join(p.directories)}]",
              f"isr=[{', '.join(map(str, p.replicas))}]", f"leader={p.leader},", f"leaderEpoch={p.leader_epoch},",
              f"partitionEpoch={p.partition_epoch})"]
    if text.startswith("PartitionRegistration(") and all(w in text for w in wanted):
        return None
    return f"not the partition's registration: {text[:120]!r}"


def expected_find(manifest: Manifest) -> list[str]:
    """Every path under /image/topics/byName: each topic's directory, id, name and partitions."""
    root = "/image/topics/byName"
    paths = [root]
    for name, count in manifest.topics.items():
        paths += [f"{root}/{name}", f"{root}/{name}/id", f"{root}/{name}/name"]
        paths += [f"{root}/{name}/{p}" for p in range(count)]
    return paths


def judge_find(lines: list[str], expected: list[str]) -> str | None:
    """``expected`` sorted; the order of a find's lines is each shell's own."""
    if len(lines) == len(expected) and sorted(lines) == expected:
        return None
    return f"{len(lines):,} paths, expected {len(expected):,}: first {lines[:1]!r}"


def _find_judge(manifest: Manifest) -> Callable[[list[str]], str | None]:
    expected: list[list[str]] = []  # built at the first answer, kept for the next ones

    def judge(lines: list[str]) -> str | None:
        if not expected:
            expected.append(sorted(expected_find(manifest)))
        return judge_find(lines, expected[0])
    return judge


def _proc_sample(pid: int, started: float) -> Sample:
    """Now, for ``pid``: the wall seconds since ``started``, its CPU seconds (user + system, all
    threads, and its children it has reaped) and its peak RSS so far (VmHWM), from /proc."""
    seconds = time.perf_counter() - started
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        # utime, stime, and the reaped children's cutime, cstime (fields 14 - 17): a shell that
        # walks a snapshot with a forked helper spends that CPU too
        cpu = sum(int(f) for f in fields[11:15]) / CLOCK_TICKS
        with open(f"/proc/{pid}/status") as status:
            hwm = next((int(line.split()[1]) for line in status if line.startswith("VmHWM:")), 0)
    except (OSError, IndexError, ValueError):
        return Sample(seconds, float("nan"), float("nan"))
    return Sample(seconds, cpu, hwm / 1024)


def run_session(command: Sequence[str], asked: Sequence[Question], name: str, timeout_s: float,
                env: dict[str, str] | None = None) -> Session:
    """Start ``command``, ask each question until its answer is right, leave with ``exit``."""
    session = Session()
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env)
        # A JVM whose loader died of OutOfMemoryError waits forever: bound every session.
        killer = threading.Timer(timeout_s + KILL_GRACE_S, process.kill)
        killer.start()
        try:
            _ask(process, None, name, started)  # Kafka's banner and first prompt, up to the first "/"
            for question in asked:
                tries = 0
                while True:
                    lines, sample = _ask(process, question.command, name, started)
                    wrong = question.judge(lines)
                    if wrong is None:
                        session.answers[question.name] = sample
                        session.reasked[question.name] = tries
                        break
                    tries += 1
                    # a breath between tries: the asking must not take the cores the loader needs
                    time.sleep(REASK_PAUSE_S)
                    if time.perf_counter() - started > timeout_s:
                        raise PeerError(f"{name}: {question.command!r} still wrong after {tries} tries: {wrong}")
            process.stdin.write(b"exit\n")
            process.stdin.close()
            process.stdout.read()
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait again
            session.exit = Sample(time.perf_counter() - started, usage.ru_utime + usage.ru_stime,
                                  usage.ru_maxrss / 1024)
        except (BrokenPipeError, PeerError) as exc:
            err.seek(0)
            said = [ln for ln in err.read().decode(errors="replace").splitlines() if ln.strip()]
            why = said[-1].strip() if said else "no message"
            if time.perf_counter() - started >= timeout_s + KILL_GRACE_S:
                why = f"killed after {timeout_s + KILL_GRACE_S:.0f} s (for Kafka's shell: a heap too small? see --kafka-heap)"
            # a process already gone when we write is a broken pipe, else an empty read: the same line
            raise PeerError(f"{exc if isinstance(exc, PeerError) else name + ' exited before answering'}; "
                            f"its last words: {why}") \
                from None
        finally:
            killer.cancel()
            if process.returncode is None:
                process.kill()
                process.wait()
    if process.returncode != 0:
        raise PeerError(f"{name} exited {process.returncode}")
    return session


def _ask(process: subprocess.Popen, command: str | None, name: str, started: float) -> tuple[list[str], Sample]:
    """The lines ``command`` printed (those before the ``/`` of the ``pwd`` sent after it), and
    the process's sample when that ``/`` came (before the answer is judged)."""
    process.stdin.write(f"{command}\n{END}\n".encode() if command else f"{END}\n".encode())
    process.stdin.flush()
    lines: list[str] = []
    while True:
        raw = process.stdout.readline()
        if not raw:
            raise PeerError(f"{name} exited before answering {command or END!r}")
        line = raw.decode(errors="replace").rstrip()
        while line.startswith(PROMPT.rstrip()):  # the prompt before each command's first line
            line = line[len(PROMPT.rstrip()):].lstrip(" ")
        if line == END_ANSWER:
            return lines, _proc_sample(process.pid, started)
        if line or lines:
            lines.append(line)
