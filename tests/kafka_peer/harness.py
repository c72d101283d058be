"""Kafka's own classes as a test peer: tests/kafka/harness/*.java, compiled at test time with the
JDK's ``javac`` against one Kafka version's cached jars, run as one JVM for the test session and
asked over stdin/stdout, one JSON message per line.

A request is ``{"op": NAME, ...}``; the Java class ``NAMEOp`` (tests/kafka/harness/NAMEOp.java)
answers it with ``{"result": ...}``, or ``{"error": ...}`` when Kafka's code threw (raised here
as ``KafkaRefused`` with Kafka's exception, which a differential test may compare with our
own refusal). The classes are compiled once per version and source digest into the cache
beside the jars, under a lock, so parallel runs share one compilation.

``DIFF_EXAMPLES`` is the Hypothesis budget of every differential property: 2,000 examples, or
``METASHELL_DIFF_EXAMPLES`` for a longer hunt.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from engine.cluster.kafka_dist import KafkaUnavailable

from .distribution import LOG4J_DIR, KafkaDistribution

SOURCES = LOG4J_DIR / "harness"
DIFF_EXAMPLES = int(os.environ.get("METASHELL_DIFF_EXAMPLES", "2000"))
COMPILE_TIMEOUT_S = 300
ANSWER_TIMEOUT_S = 60


class KafkaRefused(Exception):
    """Kafka's code threw on this input; ``kafka_error`` is its exception's toString()."""

    def __init__(self, op: str, kafka_error: str, trace: str = "") -> None:
        super().__init__(f"{op}: Kafka threw {kafka_error}")
        self.kafka_error = kafka_error
        self.trace = trace


def _digest() -> str:
    sha = hashlib.sha256()
    for path in sorted(SOURCES.glob("*.java")):
        sha.update(path.name.encode() + b"\0" + path.read_bytes())
    return sha.hexdigest()[:16]


def compile_harness(dist: KafkaDistribution) -> Path:
    """The harness's classes for ``dist``, compiled once per source digest."""
    if shutil.which("javac") is None:
        raise KafkaUnavailable("javac not found on PATH, so Kafka's classes cannot be compiled against")
    home = dist.libs.parent / "harness"
    classes = home / _digest()
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (classes / "READY").is_file():
            staging = Path(tempfile.mkdtemp(prefix="classes.", dir=home))
            done = subprocess.run(["javac", "-nowarn", "-encoding", "UTF-8", "-d", str(staging),
                                   "-cp", f"{dist.libs}/*", *map(str, sorted(SOURCES.glob("*.java")))],
                                  capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
            if done.returncode != 0:
                shutil.rmtree(staging, ignore_errors=True)
                raise AssertionError(f"the Kafka harness does not compile against Kafka {dist.version}:\n"
                                     f"{done.stdout[-4000:]}{done.stderr[-4000:]}")
            (staging / "READY").write_text(dist.version + "\n")
            shutil.rmtree(classes, ignore_errors=True)
            staging.rename(classes)
    return classes


class KafkaClasses:
    """One JVM serving Kafka ``dist.version``'s classes; ``call`` is thread-safe."""

    def __init__(self, dist: KafkaDistribution) -> None:
        self.version = dist.version
        classes = compile_harness(dist)
        self._stderr = tempfile.TemporaryFile(mode="w+", prefix="kafka-harness-")
        self._lock = threading.Lock()
        log4j = LOG4J_DIR / "log4j2-tools.properties"
        self._process = subprocess.Popen(
            ["java", "-Xshare:auto", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", f"-Dlog4j2.configurationFile={log4j}",
             "-cp", f"{classes}{os.pathsep}{dist.libs}/*", "KafkaHarness"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True, encoding="utf-8", bufsize=1)

    def call(self, op: str, **args: Any) -> Any:
        """Kafka's answer to one request; ``KafkaRefused`` when Kafka's code threw."""
        line = json.dumps({"op": op, **args})
        with self._lock:
            if self._process.poll() is not None:
                raise AssertionError(f"the Kafka {self.version} harness exited {self._process.returncode}: "
                                     f"{self._stderr_tail()}")
            self._process.stdin.write(line + "\n")
            self._process.stdin.flush()
            answer = self._process.stdout.readline()
        if not answer:
            raise AssertionError(f"the Kafka {self.version} harness closed its answers: {self._stderr_tail()}")
        message = json.loads(answer)
        if "error" in message:
            raise KafkaRefused(op, message["error"], message.get("trace", ""))
        return message["result"]

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()[-4000:] or "nothing on stderr"

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.stdin.close()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._stderr.close()
