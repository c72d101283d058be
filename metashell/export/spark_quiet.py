"""Spark's JVM with its output kept off the user's terminal; what matters comes back as our warnings.

A local SparkSession writes to the terminal it inherits: the JVM's own ``WARNING:`` lines, the
log4j banner ("Using Spark's default log4j profile"), and WARN lines about the hostname, native
Hadoop libraries or the UI port, before any ``setLogLevel`` can run. So the JVM is launched here
(``pyspark.java_gateway.launch_gateway``, Spark's own launcher) with

- a log4j2 configuration of ours: only ERROR and above, one line each, tagged so they can be told
  from anything else the process prints;
- stdout and stderr into a pipe read by a thread, which drops what is noise and hands the rest,
  as one line each, to a ``warn`` callback (``metashell: warning: Spark: ...`` by default).

Until the session is up the lines are held: a JVM that dies before its gateway is up is one
error, with the first line it printed.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

TAG = "metashell-spark "
LOG4J2 = f"""\
# metashell: Spark's log, ERROR and above, one line each, for metashell to read (spark_quiet.py)
status = error
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.alwaysWriteExceptions = false
appender.console.layout.pattern = {TAG}%p %c{{1}}: %replace{{%m %throwable{{short.message}}}}{{[\\r\\n]+}}{{ }}%n
"""
# Lines the JVM or Spark print outside log4j that never concern an export.
NOISE_PREFIXES = ("WARNING: ", "Using Spark's default log4j profile", "Setting default log level",
                  "To adjust logging level", "SLF4J: ")


def default_warn(line: str) -> None:
    sys.stderr.write(f"metashell: warning: {line}\n")
    sys.stderr.flush()


def log4j2_file() -> Path:
    """Our log4j2 configuration, written once per content into the user's cache directory
    ($XDG_CACHE_HOME or ~/.cache, metashell/), not a shared /tmp another user could write first;
    a private temporary directory when the cache cannot be written."""
    digest = hashlib.sha256(LOG4J2.encode()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "metashell"
    try:
        return _written(cache / f"log4j2-{digest}.properties")
    except OSError:
        return _written(Path(tempfile.mkdtemp(prefix="metashell-log4j2-")) / "log4j2.properties")


def _written(path: Path) -> Path:
    if path.is_file() and path.read_text() == LOG4J2:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, part = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".part")
    with os.fdopen(fd, "w") as out:
        out.write(LOG4J2)
    os.replace(part, path)  # atomic: a concurrent export reads the whole file or none
    return path


# A failing task is logged by the executor, the scheduler and the writer, each with the task's
# whole Python traceback, and then raised to the driver, where the export says it in one line
# (metashell.export.spark_failure): these loggers' lines about it are repeats.
TASK_FAILURE_LOGGERS = ("Executor:", "TaskSetManager:", "FileFormatWriter:", "Utils:", "DataWritingSparkTask:")
TASK_FAILURE_WORDS = ("Exception in task", "Aborting task", "Aborting job", "aborting job", "aborted.")


def spark_line(line: str) -> str | None:
    """What one line of the JVM's output tells the user, or None for noise."""
    line = line.rstrip()
    if not line or line.startswith(NOISE_PREFIXES):
        return None
    if line.startswith(TAG):
        level, _, rest = line[len(TAG):].partition(" ")
        if rest.startswith(TASK_FAILURE_LOGGERS) and any(word in rest for word in TASK_FAILURE_WORDS):
            return None
        return f"Spark {level.lower()}: {rest.strip()}"
    return f"Spark: {line}"


class OutputPump:
    """Reads the JVM's output until it closes. Until ``release()`` the lines that matter are only
    held (a JVM that fails to start is one error, with its first line); then each goes to ``warn``."""

    def __init__(self, warn: Callable[[str], None]):
        self.warn = warn
        self.held: list[str] = []
        self.released = False
        self.lock = threading.Lock()
        self.read_fd, self.write_fd = os.pipe()
        self.thread = threading.Thread(target=self._pump, name="metashell-spark-output", daemon=True)
        self.thread.start()

    def close_write_end(self) -> None:
        """The child holds its own copy; ours must go for the pipe to end when the JVM does."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def release(self) -> None:
        """The JVM is up: say what it said so far, and from now on as it comes."""
        with self.lock:
            held, self.held, self.released = self.held, [], True
        for said in held:
            self.warn(said)

    def _pump(self) -> None:
        with os.fdopen(self.read_fd, "r", errors="replace") as lines:
            for line in lines:
                said = spark_line(line)
                if said is None:
                    continue
                with self.lock:
                    if not self.released:
                        self.held.append(said)
                        continue
                self.warn(said)


def quiet_conf(conf: Any, java_options: str = "") -> Any:
    """``conf`` with the driver JVM reading our log4j2 configuration. It goes into the driver's
    *default* options, which Spark puts before ``spark.driver.extraJavaOptions``: the user's own
    options (``--driver-java-options``, spark-defaults.conf) stay, and a log4j configuration of
    theirs comes later and wins. ``java_options`` go there too."""
    option = f"-Dlog4j2.configurationFile={log4j2_file().as_uri()} {java_options}".strip()
    current = conf.get("spark.driver.defaultJavaOptions")
    return conf.set("spark.driver.defaultJavaOptions", f"{current} {option}" if current else option)


def _said(held: str) -> str:
    """A held line as the JVM said it; a fatal error's report starts with lines of a lone "#"."""
    return held.removeprefix("Spark: ").strip("# ")


class JvmDidNotStart(Exception):
    """Spark's JVM exited (or could not be run) before its gateway was up; ``str()`` is what it said first."""


def launch_quiet_gateway(conf: Any, warn: Callable[[str], None], java_options: str = "") -> tuple[Any, OutputPump]:
    """Spark's JVM and its py4j gateway, started by pyspark's own launcher with its output piped;
    call ``release()`` on the pump once the session is up."""
    from pyspark.java_gateway import launch_gateway

    pump = OutputPump(warn)
    try:
        gateway = launch_gateway(quiet_conf(conf, java_options), popen_kwargs={"stdout": pump.write_fd, "stderr": pump.write_fd})
    except Exception as exc:  # noqa: BLE001 - pyspark's own error says only that the JVM exited
        pump.close_write_end()
        pump.thread.join(2.0)  # all the JVM said, once its output ends
        # its first line is the cause ("Unrecognized VM option ..."); the last, "Error: ... will exit"
        said = next((line for line in map(_said, pump.held) if line), f"{type(exc).__name__}: {exc}")
        raise JvmDidNotStart(said) from None
    pump.close_write_end()
    return gateway, pump
