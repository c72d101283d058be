"""A Spark standalone cluster on 127.0.0.1 for ``metashell bench spark`` and the tests: a
master and workers, each a JVM started from pyspark's own launcher (``$SPARK_HOME/bin/spark-class``),
as an operator starts them with ``start-master.sh``/``start-worker.sh`` (which only wrap
spark-class in a daemon).

The executors import metashell from this environment: the workers get this interpreter as
PYSPARK_PYTHON and the directory that holds metashell on PYTHONPATH (ahead of an editable
install's finder, which may point at another checkout). ``StandaloneCluster.start`` says in one
line why a cluster did not come up (a daemon that exited, one that never said it was ready).

A driver cannot share a process with another SparkContext (one a process): drive the cluster
from a process of its own (``driver_env``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from engine.common.errors import MetadataError

REPO = Path(__file__).resolve().parents[2]  # the directory that holds metashell
START_TIMEOUT_S = 90.0  # two JVM starts each (the launcher, then the daemon) on a loaded 2-core CI box

MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"
MASTER_READY = "I have been elected leader"  # the master's line once it accepts workers
WORKER_READY = "Successfully registered with master"


class ClusterDidNotStart(MetadataError):
    """One line: which daemon, and what it said (or that it said nothing in time)."""


def spark_home() -> Path:
    """pyspark's package directory: it holds bin/spark-class and jars/, a whole Spark distribution."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Daemon:
    name: str
    process: subprocess.Popen
    log: Path
    lines: list[str] = field(default_factory=list)
    _seen: threading.Event = field(default_factory=threading.Event)

    def follow(self, ready: str) -> None:
        """Read the daemon's output in a thread (so its pipe never fills), into ``log``; set
        when ``ready`` appears."""

        def pump() -> None:
            with self.log.open("w") as out:
                for line in self.process.stdout:  # type: ignore[union-attr]
                    out.write(line)
                    out.flush()
                    self.lines.append(line.rstrip())
                    if ready in line:
                        self._seen.set()
            self._seen.set()  # the daemon exited: whoever waits looks at why

        threading.Thread(target=pump, name=f"spark-{self.name}-log", daemon=True).start()

    def wait_ready(self, deadline: float) -> None:
        self._seen.wait(max(0.0, deadline - time.monotonic()))
        if self.process.poll() is not None:
            raise ClusterDidNotStart(f"Spark {self.name} exited ({self.process.returncode}): {self.why()} (log {self.log})")
        if not self._seen.is_set():
            raise ClusterDidNotStart(f"Spark {self.name} did not say it was ready within {START_TIMEOUT_S:.0f} s: "
                                     f"{self.why()} (log {self.log})")

    def why(self) -> str:
        """The daemon's last line that reads like a reason (an error or exception), else its last line."""
        for line in reversed(self.lines):
            if "ERROR" in line or "Exception" in line or "Error:" in line:
                return line.strip()
        return self.lines[-1].strip() if self.lines else "no output"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


@dataclass
class StandaloneCluster:
    """A master and ``len(workers)`` workers; ``url`` is the master's spark://127.0.0.1:PORT."""

    url: str
    work: Path
    master: Daemon
    workers: list[Daemon]

    @classmethod
    def start(cls, work: Path, workers: int = 2, cores: int = 1, memory: str = "1g",
              pythonpath: Path | str | None = None) -> StandaloneCluster:
        """Start and wait for the master, then ``workers`` workers of ``cores`` cores each,
        registered. Everything they write goes under ``work``. ``pythonpath`` replaces
        the repository on the workers' PYTHONPATH (None: the repository)."""
        work.mkdir(parents=True, exist_ok=True)
        launcher = spark_home() / "bin" / "spark-class"
        if not launcher.is_file():
            raise ClusterDidNotStart(f"pyspark has no launcher at {launcher}")
        env = daemon_env(work, REPO if pythonpath is None else pythonpath)
        port = free_port()
        url = f"spark://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT_S
        master = _launch("master", [str(launcher), MASTER, "--host", "127.0.0.1", "--port", str(port),
                                    "--webui-port", "0"], env, work, MASTER_READY)
        cluster = cls(url, work, master, [])
        try:
            master.wait_ready(deadline)
            for n in range(workers):
                worker_dir = work / f"worker-{n}"
                worker_dir.mkdir(exist_ok=True)
                cluster.workers.append(_launch(
                    f"worker-{n}", [str(launcher), WORKER, "--host", "127.0.0.1", "--port", "0",
                                    "--webui-port", "0", "--cores", str(cores), "--memory", memory,
                                    "--work-dir", str(worker_dir), url], env, work, WORKER_READY))
            for worker in cluster.workers:
                worker.wait_ready(deadline)
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def stop(self) -> None:
        for daemon in [*self.workers, self.master]:
            daemon.stop()


def daemon_env(work: Path, pythonpath: Path | str) -> dict[str, str]:
    """The environment of the master and workers (the executors inherit the workers')."""
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(work / "logs"),
        "SPARK_CONF_DIR": str(work / "conf"),  # none of the user's spark-defaults or log4j
        "SPARK_DAEMON_MEMORY": "256m",  # master and worker heaps: they only schedule
        "SPARK_NO_DAEMONIZE": "1",
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": str(pythonpath),
    })
    (work / "conf").mkdir(exist_ok=True)
    return env


def driver_env(pythonpath: Path | str = REPO) -> dict[str, str]:
    """The environment of a child driver process: this interpreter on both sides."""
    env = dict(os.environ)
    env.update({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONPATH": str(pythonpath)})
    env.pop("SPARK_HOME", None)  # pyspark finds its own
    return env


def _launch(name: str, command: list[str], env: dict[str, str], work: Path, ready: str) -> Daemon:
    try:
        process = subprocess.Popen(command, env=env, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, errors="replace")
    except OSError as exc:
        raise ClusterDidNotStart(f"Spark {name} could not be started: {exc}") from None
    daemon = Daemon(name, process, work / f"{name}.log")
    daemon.follow(ready)
    return daemon
