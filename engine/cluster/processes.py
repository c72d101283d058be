"""Controller processes on 127.0.0.1, formatted as one dynamic quorum: for benchmarks and tests.

``launch()`` writes each voter's config (Kafka's names, plus the settings given), formats the
directories as ``kraftd storage format --initial-controllers`` does and starts the processes; it
returns once every one of them logs that it listens. Ports are chosen ahead
(``engine.net.ports.pick_ports``: outside the ephemeral range, free a moment before), because
they go into the configs and the voter set; if a node still finds its port taken ("address
already in use" in its log), every process is killed and the whole cluster is formatted and
started again on new ports. ``add_node()`` does the same for one more controller (formatted
with ``--no-initial-controllers``), ``restart()`` starts a stopped node again on its port.

Each node's stdout and stderr go to ``controllerN.log`` under the root; ``logs()`` returns them
all, for a failure message. ``kill()`` and ``stop()`` end every process still running.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Mapping

import engine
from engine.common.errors import MetadataError
from engine.common.kafka_uuid import random_kafka_uuid, uuid_to_kafka
from engine.net.ports import is_address_in_use, pick_ports
from engine.admin.storage_format import format_storage

PORT_ATTEMPTS = 5
LISTEN_TIMEOUT_S = 60.0  # a safety net: a loaded machine may take seconds to start Python
POLL_S = 0.02
SOURCE_ROOT = Path(engine.__file__).resolve().parents[1]  # children import the same engine as we do

Command = Callable[[int, Path], list[str]]  # (node id, config) -> argv


class ClusterError(MetadataError):
    pass


class PortTaken(ClusterError):
    """A node could not listen: its port was taken between the choice and the bind."""


def kraftd_start(node_id: int, config: Path) -> list[str]:
    return [sys.executable, "-m", "engine.tools.cli", "start", "--config", str(config)]


def kraftd(*args: str, timeout_s: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.tools.cli", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, cwd=SOURCE_ROOT, timeout=timeout_s)


class ProcessCluster:
    def __init__(self, root: Path, settings: Mapping[str, object] | None = None, *, voters: int = 3):
        self.root = Path(root)
        self.settings = dict(settings or {})
        self.voters = voters
        self.cluster_id = uuid_to_kafka(random_kafka_uuid())
        self.ports: dict[int, int] = {}
        self.configs: dict[int, Path] = {}
        self.procs: dict[int, subprocess.Popen] = {}
        self._commands: dict[int, Command] = {}
        self._log_marks: dict[int, int] = {}  # where in its log a node's latest start begins

    # -- where things are -------------------------------------------------------------

    def address(self, node_id: int) -> tuple[str, int]:
        return "127.0.0.1", self.ports[node_id]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.ports[i]}" for i in range(1, self.voters + 1))

    def log_path(self, node_id: int) -> Path:
        return self.root / f"controller{node_id}.log"

    def log_text(self, node_id: int) -> str:
        path = self.log_path(node_id)
        return path.read_text(errors="replace") if path.exists() else ""

    def _latest_log(self, node_id: int) -> str:
        """What the node logged since its latest start."""
        try:
            with open(self.log_path(node_id), "rb") as log:
                log.seek(self._log_marks.get(node_id, 0))
                return log.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def logs(self) -> str:
        """Every node's whole log, each under a heading."""
        return "\n".join(f"--- controller {i} ({self.log_path(i)}) ---\n{self.log_text(i)}" for i in sorted(self.ports))

    def running(self) -> list[int]:
        return [i for i, p in self.procs.items() if p.poll() is None]

    # -- configuring and starting -----------------------------------------------------------

    def _configure(self, node_id: int, port: int) -> None:
        self.ports[node_id] = port
        path = self.root / f"controller{node_id}.properties"
        path.write_text("\n".join([
            "process.roles=controller", f"node.id={node_id}", f"listeners=CONTROLLER://127.0.0.1:{port}",
            "controller.listener.names=CONTROLLER", f"controller.quorum.bootstrap.servers={self.bootstrap}",
            f"metadata.log.dir={self.root / f'meta{node_id}'}", *(f"{k}={v}" for k, v in self.settings.items()),
        ]) + "\n")
        self.configs[node_id] = path
        shutil.rmtree(self.root / f"meta{node_id}", ignore_errors=True)  # left by an attempt on other ports

    def _format(self, node_id: int, **how: object) -> None:
        """``kraftd storage format`` through its Python API: the same files, one process fewer."""
        format_storage(self.configs[node_id], self.cluster_id, out=lambda line: None, **how)

    def start_node(self, node_id: int, command: Command | None = None) -> subprocess.Popen:
        """Start a configured node (not waiting for it); ``command`` defaults to ``kraftd start``."""
        command = command or self._commands.get(node_id, kraftd_start)
        self._commands[node_id] = command
        path = self.log_path(node_id)
        self._log_marks[node_id] = path.stat().st_size if path.exists() else 0
        with open(path, "ab") as log:
            proc = subprocess.Popen(command(node_id, self.configs[node_id]), stdout=log, stderr=log,
                                    stdin=subprocess.DEVNULL, cwd=SOURCE_ROOT)
        self.procs[node_id] = proc
        return proc

    def wait_listening(self, node_id: int, timeout_s: float = LISTEN_TIMEOUT_S) -> None:
        """Until the node's latest start logs that it listens. PortTaken if it could not bind;
        ClusterError if it exited otherwise or never said so."""
        marker = f"[kraftd node {node_id}] listening on "
        deadline = time.monotonic() + timeout_s
        while True:
            code = self.procs[node_id].poll()  # before reading: a line logged before exiting is seen
            text = self._latest_log(node_id)
            if marker in text:
                return
            if code is not None:
                if is_address_in_use(text):
                    raise PortTaken(f"controller {node_id} could not listen on port {self.ports[node_id]}")
                raise ClusterError(f"controller {node_id} exited with code {code} before listening: "
                                   f"{text.strip()[-500:]}")
            if time.monotonic() > deadline:
                raise ClusterError(f"controller {node_id} did not log that it listens within {timeout_s:.0f} s")
            time.sleep(POLL_S)

    def launch(self, command: Command | None = None) -> None:
        """Format and start the voters 1..N; all of them listen on return."""
        self.root.mkdir(parents=True, exist_ok=True)
        ids = list(range(1, self.voters + 1))
        for attempt in range(1, PORT_ATTEMPTS + 1):
            self.kill()
            self.ports.clear()
            for node_id, port in zip(ids, pick_ports(len(ids))):
                self.ports[node_id] = port
            for node_id in ids:
                self._configure(node_id, self.ports[node_id])
            directory_ids = {i: uuid_to_kafka(random_kafka_uuid()) for i in ids}
            initial = ",".join(f"{i}@127.0.0.1:{self.ports[i]}:{directory_ids[i]}" for i in ids)
            for node_id in ids:
                self._format(node_id, initial_controllers=initial)
            for node_id in ids:
                self.start_node(node_id, command)
            try:
                for node_id in ids:
                    self.wait_listening(node_id)
                return
            except PortTaken:
                if attempt == PORT_ATTEMPTS:
                    raise

    def add_node(self, command: Command | None = None) -> int:
        """One more controller, formatted to join later (``--no-initial-controllers``), listening."""
        node_id = max(self.ports, default=0) + 1
        for attempt in range(1, PORT_ATTEMPTS + 1):
            self._configure(node_id, pick_ports(1)[0])
            self._format(node_id, no_initial_controllers=True)
            self.start_node(node_id, command)
            try:
                self.wait_listening(node_id)
                return node_id
            except PortTaken:
                if attempt == PORT_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    def restart(self, node_id: int) -> None:
        """Start a stopped node again, on its disk and port, as it was started before."""
        if node_id in self.running():
            raise ClusterError(f"controller {node_id} is still running")
        self.start_node(node_id)
        self.wait_listening(node_id)  # its port is in the voter set: no other port would do

    # -- stopping ---------------------------------------------------------------------

    def kill(self) -> None:
        """SIGKILL every process still running and reap them all."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
        for proc in self.procs.values():
            proc.wait()

    def stop(self, timeout_s: float = 10) -> dict[int, int]:
        """SIGTERM to every process still running; those not gone within ``timeout_s`` are
        killed. The exit codes."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return {i: p.returncode for i, p in self.procs.items()}


__all__ = ["ClusterError", "PortTaken", "ProcessCluster", "kraftd", "kraftd_start"]
