"""The state directory of ``kraftd cluster``: node configs, formatting, and a registry of nodes.

A cluster lives in one directory D::

    D/cluster.json                  the registry: cluster id, settings, every node's role, id, port, pid
    D/controller-K/server.properties
    D/controller-K/metadata/        its metadata log (metadata.log.dir)
    D/broker-K/server.properties
    D/broker-K/data-1, data-2/      its log.dirs (the metadata log lives in the first, as Kafka's default)
    D/broker-K/faults.properties    kraftd.sim.faults.file: the broker re-reads it when it changes
    D/logs/NAME.log                 the node's stdout and stderr, appended on every start
    D/logs/brokers-G.log            the same for a process hosting a group of brokers
    D/kafka-log4j/                  the log4j2 configs of Apache Kafka's brokers (up --kafka-brokers)

Node ids follow Kafka's test kit: broker-K is node K, controller-K is node 3000+K. The processes
are detached (their own session, so they outlive the CLI that started them); the registry keeps
each pid with the process's start time, so a pid the system gave to another process since is
not taken for ours.

Brokers may share processes (``--brokers-per-process K``: one ``kraftd start --config ...
--config ...`` per group of K, named ``brokers-G``), so a thousand brokers load the controller
as a big cluster would without a thousand Python processes. The nodes of a group share one pid:
whatever is done to one process is done to all of its brokers.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from engine.common.file_io import write_bytes_atomically, write_private
from engine.common.java_properties import load_properties
from engine.common.kafka_uuid import random_kafka_uuid, uuid_to_kafka
from engine.cluster import kafka_brokers as cluster_kafka
from engine.cluster import security as cluster_security
from engine.cluster.processes import SOURCE_ROOT, ClusterError, kraftd_start
from engine.admin.storage_format import format_storage

REGISTRY_FILE = "cluster.json"
CONTROLLER_ID_BASE = 3000  # Kafka's KafkaClusterTestKit numbers controllers from 3000
HOST = "127.0.0.1"
BROKER_LOG_DIRS = ("data-1", "data-2")  # two, so a failed disk leaves the broker one
FAULTS_FILE = "faults.properties"
FETCH_DELAY_KEY = "replica.fetch.delay.ms"
FETCH_FAILURE_RATE_KEY = "replica.fetch.failure.rate"
FAILED_DIRS_KEY = "failed.log.dirs"
ROLES = ("controller", "broker")
# Brokers per process when `up` is not told: one each for a small cluster (a kill is one
# broker's), else few enough processes that one stays under this many brokers. 2-core
# measurement (docs/performance.md, "Simulated brokers at scale") decides the figure.
SOLO_BROKERS_MAX = 10
BROKERS_PER_PROCESS_MAX = 200


@dataclass(frozen=True)
class Settings:
    """What `up` was asked for; kept so a restart writes nothing new."""
    release_version: str | None = None
    heartbeat_interval_ms: int = 2000  # Kafka's defaults
    session_timeout_ms: int = 9000
    replica_lag_time_max_ms: int = 30000
    kafka_version: str | None = None  # --kafka-brokers: the brokers are Apache Kafka's (engine.cluster.kafka_brokers)
    kafka_libs: str | None = None  # where that version's jars were found
    security_protocol: str = "PLAINTEXT"  # --security: every listener's (engine.cluster.security)


@dataclass
class Node:
    name: str  # controller-K / broker-K
    role: str
    node_id: int
    port: int
    rack: str | None = None
    pid: int | None = None
    started: str | None = None  # the process's start time (/proc stat field 22), against pid reuse
    process: str | None = None  # brokers-G when the broker shares a process with others; None: its own

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"


def node_name(role: str, index: int) -> str:
    return f"{role}-{index}"


def node_id_of(role: str, index: int) -> int:
    return CONTROLLER_ID_BASE + index if role == "controller" else index


@dataclass
class Layout:
    """The registry of one cluster directory."""
    root: Path
    cluster_id: str
    settings: Settings = field(default_factory=Settings)
    nodes: list[Node] = field(default_factory=list)

    # -- where things are ------------------------------------------------------------------
    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        names = ", ".join(n.name for n in self.nodes) or "none"
        raise ClusterError(f"no node {name!r} in the cluster at {self.root} (nodes: {names})")

    def of_role(self, role: str) -> list[Node]:
        return [n for n in self.nodes if n.role == role]

    def node_dir(self, node: Node) -> Path:
        return self.root / node.name

    def config_path(self, node: Node) -> Path:
        return self.node_dir(node) / "server.properties"

    def process_name(self, node: Node) -> str:
        return node.process or node.name

    def group(self, node: Node) -> list[Node]:
        """The nodes sharing ``node``'s process (``node`` alone when it has its own)."""
        return [n for n in self.nodes if n.process == node.process] if node.process else [node]

    def log_path(self, node: Node) -> Path:
        return self.root / "logs" / f"{self.process_name(node)}.log"

    def metadata_dir(self, node: Node) -> Path:
        return self.node_dir(node) / ("metadata" if node.role == "controller" else BROKER_LOG_DIRS[0])

    def data_dirs(self, node: Node) -> list[Path]:
        return [self.node_dir(node) / d for d in BROKER_LOG_DIRS] if node.role == "broker" else []

    def faults_path(self, node: Node) -> Path:
        return self.node_dir(node) / FAULTS_FILE

    def bootstrap(self, role: str) -> str:
        return ",".join(n.address for n in self.of_role(role))

    # -- the registry file -----------------------------------------------------------------
    def save(self) -> None:
        data = {"cluster_id": self.cluster_id, "settings": asdict(self.settings),
                "nodes": [asdict(n) for n in self.nodes]}
        write_bytes_atomically(self.root / REGISTRY_FILE, (json.dumps(data, indent=1) + "\n").encode(), fsync=False)


def load_layout(root: Path) -> Layout:
    """The cluster registered in ``root``; ClusterError when there is none (or it is unreadable)."""
    path = Path(root) / REGISTRY_FILE
    if not path.is_file():
        raise ClusterError(f"no cluster in {root} (run `kraftd cluster up --dir {root}` first)")
    try:
        data = json.loads(path.read_text())
        return Layout(Path(root), data["cluster_id"], Settings(**data["settings"]),
                      [Node(**n) for n in data["nodes"]])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ClusterError(f"unreadable cluster registry: {exc}", path=str(path)) from None


# ------------------------------------------------------------------ creating and formatting
def default_brokers_per_process(brokers: int) -> int:
    if brokers <= SOLO_BROKERS_MAX:
        return 1
    processes = -(-brokers // BROKERS_PER_PROCESS_MAX)
    return -(-brokers // processes)  # spread evenly over the fewest processes


def plan_layout(root: Path, *, controllers: int, brokers: int, racks: int, ports: Sequence[int],
                settings: Settings, brokers_per_process: int = 1) -> Layout:
    """Nodes on the given ports (controllers first), racks dealt round-robin to brokers,
    brokers grouped ``brokers_per_process`` to a process (1: each its own)."""
    if controllers < 1:
        raise ClusterError("a cluster needs at least one controller")
    roles = [("controller", i) for i in range(1, controllers + 1)] + [("broker", i) for i in range(1, brokers + 1)]
    per = max(1, brokers_per_process)
    nodes = [Node(node_name(role, i), role, node_id_of(role, i), port,
                  rack=f"rack-{(i - 1) % racks + 1}" if role == "broker" and racks > 0 else None,
                  process=f"brokers-{(i - 1) // per + 1}" if role == "broker" and per > 1 else None)
             for (role, i), port in zip(roles, ports)]
    return Layout(Path(root), uuid_to_kafka(random_kafka_uuid()), settings, nodes)


def write_configs(layout: Layout) -> None:
    """Every node's server.properties (Kafka's names) and every broker's empty faults file."""
    quorum = layout.bootstrap("controller")
    s = layout.settings
    for node in layout.nodes:
        layout.node_dir(node).mkdir(parents=True, exist_ok=True)
        common = [f"node.id={node.node_id}", "controller.listener.names=CONTROLLER",
                  f"controller.quorum.bootstrap.servers={quorum}",
                  f"broker.heartbeat.interval.ms={s.heartbeat_interval_ms}",
                  f"broker.session.timeout.ms={s.session_timeout_ms}"]
        security = cluster_security.node_lines(layout, node)
        if node.role == "controller":
            lines = ["process.roles=controller", f"listeners=CONTROLLER://{node.address}", *common,
                     f"metadata.log.dir={layout.metadata_dir(node)}", *security]
        else:
            name = cluster_security.broker_listener(layout)
            listener = f"{name}://{node.address}"
            lines = ["process.roles=broker", f"listeners={listener}", f"advertised.listeners={listener}",
                     f"inter.broker.listener.name={name}", *security, *common,
                     f"log.dirs={','.join(map(str, layout.data_dirs(node)))}",
                     *([f"broker.rack={node.rack}"] if node.rack else []),
                     f"replica.lag.time.max.ms={s.replica_lag_time_max_ms}",
                     "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"]
            if cluster_kafka.is_kafka(layout, node):
                lines += cluster_kafka.broker_lines(layout)
            else:
                write_faults(layout, node, {})
                lines.append(f"kraftd.sim.faults.file={layout.faults_path(node)}")
        text = ("\n".join(lines) + "\n").encode()
        if s.security_protocol == "PLAINTEXT":
            layout.config_path(node).write_bytes(text)
        else:  # its JAAS lines hold the nodes' password
            write_private(layout.config_path(node), text)


def format_nodes(layout: Layout) -> None:
    """``kraftd storage format`` for every node: the controllers as one dynamic quorum
    (--initial-controllers), the brokers with the same cluster id."""
    controllers = layout.of_role("controller")
    directory_ids = {n.node_id: uuid_to_kafka(random_kafka_uuid()) for n in controllers}
    initial = ",".join(f"{n.node_id}@{HOST}:{n.port}:{directory_ids[n.node_id]}" for n in controllers)
    kafka = [n for n in layout.nodes if cluster_kafka.is_kafka(layout, n)]
    credentials = cluster_security.credentials(layout)
    if kafka:  # Kafka's brokers by Kafka's own formatter
        cluster_kafka.format_brokers(layout, kafka)
    for node in layout.nodes:
        if node in kafka:
            continue
        how: dict = {"initial_controllers": initial} if node.role == "controller" else {}
        if node.role == "controller" and credentials is not None:
            how["add_scram"] = credentials.scram_arguments()  # the logins exist before any quorum does
        format_storage(layout.config_path(node), layout.cluster_id, release_version=layout.settings.release_version,
                       out=lambda line: None, **how)


def remove_state(layout: Layout) -> None:
    """Everything ``create`` wrote (a retry on other ports starts clean)."""
    for node in layout.nodes:
        shutil.rmtree(layout.node_dir(node), ignore_errors=True)
    if layout.settings.security_protocol != "PLAINTEXT":  # else write_material made none of it
        shutil.rmtree(layout.root / cluster_security.TLS_DIR, ignore_errors=True)
        cluster_security.client_config_path(layout).unlink(missing_ok=True)
    (layout.root / REGISTRY_FILE).unlink(missing_ok=True)


# ------------------------------------------------------------------ the faults file of a broker
def read_faults(layout: Layout, node: Node) -> dict[str, str]:
    path = layout.faults_path(node)
    return load_properties(path) if path.is_file() else {}


def write_faults(layout: Layout, node: Node, faults: dict[str, str]) -> None:
    """Atomically, so the broker polling it never reads half a file."""
    text = "".join(f"{key}={value}\n" for key, value in sorted(faults.items()) if value != "")
    write_bytes_atomically(layout.faults_path(node), text.encode(), fsync=False)


# ------------------------------------------------------------------ processes
def _proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def process_start_time(pid: int) -> str | None:
    fields = _proc_stat(pid)
    return fields[19] if fields and len(fields) > 19 else None  # stat field 22


def _reap(pid: int) -> None:
    """A child of this very process (chaos, up) that exited is a zombie until waited for."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def process_state(node: Node) -> str:
    """'running', 'paused' (SIGSTOP) or 'down' for the process the registry names."""
    if node.pid is None:
        return "down"
    _reap(node.pid)
    fields = _proc_stat(node.pid)
    if fields is None:
        if Path("/proc/self/stat").exists():
            return "down"
        try:  # no /proc (macOS): only whether the pid exists
            os.kill(node.pid, 0)
        except ProcessLookupError:
            return "down"
        except PermissionError:
            return "down"  # someone else's process has the pid now
        return "running"
    if fields[0] in "ZX" or (node.started is not None and fields[19] != node.started):
        return "down"
    return "paused" if fields[0] in "Tt" else "running"


def is_alive(node: Node) -> bool:
    return process_state(node) != "down"


GroupCommand = Callable[[Sequence[Path]], list[str]]  # the configs of a group's brokers -> argv


def kraftd_start_group(configs: Sequence[Path]) -> list[str]:
    return [sys.executable, "-m", "engine.tools.cli", "start", *(a for c in configs for a in ("--config", str(c)))]


def spawn(layout: Layout, node: Node, command: Callable[[int, Path], list[str]] = kraftd_start,
          group_command: GroupCommand = kraftd_start_group) -> int:
    """Start the node's process detached (own session, stdin closed, output appended to its log),
    with every node of its group; the log's size before the start, so a caller can read what this
    start logged."""
    log_path = layout.log_path(node)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    mark = log_path.stat().st_size if log_path.exists() else 0
    group = layout.group(node)
    if cluster_kafka.is_kafka(layout, node):
        command = cluster_kafka.start_command(layout)
    argv = command(node.node_id, layout.config_path(node)) if node.process is None else \
        group_command([layout.config_path(n) for n in group])
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, cwd=SOURCE_ROOT,
                                start_new_session=True)
    started = process_start_time(proc.pid)
    for member in group:
        member.pid, member.started = proc.pid, started
    layout.save()
    return mark


def log_since(layout: Layout, node: Node, mark: int) -> str:
    try:
        with open(layout.log_path(node), "rb") as log:
            log.seek(mark)
            return log.read().decode(errors="replace")
    except FileNotFoundError:
        return ""


def send_signal(node: Node, signum: int) -> bool:
    """Signal the node's process if it is ours and alive; whether it was."""
    if not is_alive(node):
        return False
    try:
        os.kill(node.pid, signum)
    except ProcessLookupError:
        return False
    return True


def forget_dead(layout: Layout) -> None:
    """Clear the pids of processes that are gone."""
    changed = False
    for node in layout.nodes:
        if node.pid is not None and not is_alive(node):
            node.pid = node.started = None
            changed = True
    if changed:
        layout.save()


def kill_node(layout: Layout, node: Node, sleep: Callable[[float], None]) -> None:
    """SIGKILL, and wait until the process is gone."""
    send_signal(node, signal.SIGKILL)
    while is_alive(node):
        sleep(0.01)
    forget_dead(layout)


def stop_nodes(layout: Layout, nodes: Sequence[Node], *, timeout_s: float, sleep: Callable[[float], None],
               clock: Callable[[], float]) -> list[str]:
    """SIGTERM (and SIGCONT, so a paused node sees it) to each process, wait, SIGKILL the ones
    left at the deadline. The names of the nodes whose process had to be killed."""
    # one signal per process: a second SIGTERM would end a group's controlled shutdown at once
    by_pid = {n.pid: n for n in reversed(nodes) if n.pid is not None}
    alive = [n for n in by_pid.values() if send_signal(n, signal.SIGTERM)]
    for node in alive:
        send_signal(node, signal.SIGCONT)
    deadline = clock() + timeout_s
    while any(is_alive(n) for n in alive) and clock() < deadline:
        sleep(0.05)
    killed_pids = {n.pid for n in alive if send_signal(n, signal.SIGKILL)}
    killed = [n.name for n in nodes if n.pid in killed_pids]
    while any(is_alive(n) for n in alive):
        sleep(0.01)
    forget_dead(layout)
    return killed


__all__ = ["BROKERS_PER_PROCESS_MAX", "BROKER_LOG_DIRS", "CONTROLLER_ID_BASE", "default_brokers_per_process",
           "GroupCommand", "kraftd_start_group", "FAILED_DIRS_KEY", "FETCH_DELAY_KEY", "FETCH_FAILURE_RATE_KEY", "Layout", "Node",
           "REGISTRY_FILE", "Settings", "format_nodes", "forget_dead", "is_alive", "kill_node", "load_layout",
           "log_since", "plan_layout", "process_state", "read_faults", "remove_state", "send_signal", "spawn",
           "stop_nodes", "write_configs", "write_faults"]
