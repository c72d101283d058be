"""Real Apache Kafka nodes on 127.0.0.1: configs, ``kafka-storage format``, start, readiness, stop.

A cluster is built from voters (controller-only or combined nodes, ids 1..n) and broker-only
nodes (ids after them), on a static quorum (``controller.quorum.voters``) or a dynamic one
(``controller.quorum.bootstrap.servers``, formatted with ``--initial-controllers``). Every node
writes its output to ``NODE_DIR/server.log``; ``REGISTRY`` knows every process started, so the
test session kills them all at its end, whatever happened, and shows their logs on a failure.

Readiness is asked, never waited for: a voter is ready when a DescribeQuorum answer names a
leader, a broker when its own Metadata answer lists it (registered and unfenced). Deadlines
there are a guard against a hang, not a speed claim.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from engine.net.ports import ADDRESS_IN_USE
from engine.cluster.kafka_dist import SERVER_JVM_OPTS  # small heaps, a light JIT: CI's two cores

from .distribution import KafkaDistribution

REPO = Path(__file__).resolve().parents[2]  # where `python -m engine.tools.cli` runs

READY_TIMEOUT_S = 120.0
POLL_INTERVAL_S = 0.2
PORT_ATTEMPTS = 4

# Timings a test cluster can afford to shorten (all Kafka configs); the rest keep Kafka's defaults.
FAST = {
    "controller.quorum.election.timeout.ms": "1000",
    "controller.quorum.fetch.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "4000",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "3",
    "log.index.size.max.bytes": "65536",  # each partition maps less memory: thousands of partitions
    "num.network.threads": "2",
    "num.io.threads": "2",
    "background.threads": "2",
    "log.cleaner.threads": "1",
}


class NodeFailed(AssertionError):
    """A Kafka node exited or never became ready; the message ends with its log's tail."""


@dataclass
class KafkaNode:
    dist: KafkaDistribution
    node_id: int
    roles: tuple[str, ...]
    home: Path
    broker_port: int | None
    controller_port: int | None
    config: dict[str, str] = field(default_factory=dict)
    directory_id: str | None = None
    process: subprocess.Popen | None = None
    kraftd: bool = False  # ours (`kraftd start`) instead of Kafka's server: a controller only
    extra_jvm_opts: tuple[str, ...] = ()  # after SERVER_JVM_OPTS (class_sharing's training)

    @property
    def is_voter(self) -> bool:
        return "controller" in self.roles

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def log_dir(self) -> Path:
        """The node's only log directory, which also holds __cluster_metadata-0."""
        return self.home / "data"

    @property
    def metadata_dir(self) -> Path:
        return self.log_dir / "__cluster_metadata-0"

    @property
    def config_path(self) -> Path:
        return self.home / "server.properties"

    @property
    def output_path(self) -> Path:
        return self.home / "server.log"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def write_config(self) -> Path:
        self.home.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.config.items()))
        return self.config_path

    def start(self) -> "KafkaNode":
        assert not self.alive, f"node {self.node_id} is already running"
        out = open(self.output_path, "ab")
        command = ([sys.executable, "-m", "engine.tools.cli", "start", "--config", str(self.config_path)]
                   if self.kraftd else
                   self.dist.command("kafka-server-start", str(self.config_path),
                                     jvm_opts=(*SERVER_JVM_OPTS, *self.extra_jvm_opts)))
        self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True, preexec_fn=_node_preexec, cwd=REPO)
        out.close()
        REGISTRY.append(self)
        return self

    def signal(self, signum: int) -> None:
        if self.alive:
            os.killpg(self.process.pid, signum)

    def kill(self) -> None:
        """SIGKILL: the node vanishes without a word (no controlled shutdown, nothing flushed)."""
        self.signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait(timeout=30)

    def stop(self, timeout_s: float = 60) -> None:
        """SIGTERM and wait: Kafka's own shutdown (a broker's controlled shutdown first)."""
        self.signal(signal.SIGTERM)
        if self.process is not None:
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
                raise NodeFailed(f"node {self.node_id} did not stop within {timeout_s} s\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.output_path.read_text(errors="replace").splitlines()
        except OSError:
            return f"(node {self.node_id} wrote no log)"
        return "\n".join(f"  node {self.node_id}| {line}" for line in text[-lines:])

    def check_running(self) -> None:
        if not self.alive:
            code = None if self.process is None else self.process.returncode
            what = "kraftd controller" if self.kraftd else f"Kafka {self.dist.version} node"
            raise NodeFailed(f"{what} {self.node_id} exited ({code})\n{self.log_tail()}")

    @property
    def bind_failed(self) -> bool:
        try:
            return ADDRESS_IN_USE in self.output_path.read_text(errors="replace")
        except OSError:
            return False

    @property
    def broker_address(self) -> tuple[str, int]:
        assert self.broker_port is not None
        return ("127.0.0.1", self.broker_port)

    @property
    def controller_address(self) -> tuple[str, int]:
        assert self.controller_port is not None
        return ("127.0.0.1", self.controller_port)


REGISTRY: list[KafkaNode] = []


def _die_with_parent() -> None:
    """In the child before exec: the kernel kills the node when the test process dies, even by
    SIGKILL or a CI timeout, where no cleanup of ours can run (Linux's PR_SET_PDEATHSIG)."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the session's own cleanup still kills the nodes


def _node_preexec() -> None:
    """In a node before exec, which is a session of its own: gone with its parent, and as nice as it.
    Linux's autogroup scheduling gives a new session an autogroup at nice 0, so a node started by
    a niced process (a history written in the background, kafka_peer.fixtures) gets that niceness
    back for its autogroup, to stay in the background."""
    _die_with_parent()
    niceness = os.nice(0)
    if niceness > 0:
        try:
            with open("/proc/self/autogroup", "w") as autogroup:
                autogroup.write(str(niceness))
        except OSError:
            pass  # no autogroups (the process's own niceness, inherited, is what counts)


def kill_all() -> None:
    """Kill every process the harness started (the session's end, or an interrupted run)."""
    for node in REGISTRY:
        try:
            node.kill()
        except Exception:  # noqa: BLE001 — a cleanup must go on to the next node whatever happens
            pass


def wait_until(check: Callable[[], Any], what: str, nodes: Iterable[KafkaNode],
               timeout_s: float = READY_TIMEOUT_S) -> Any:
    """Poll ``check`` until it holds (its value); fail early when a node dies, with the logs of ``nodes``.

    An exception from ``check`` counts as "not yet" (a node not answering yet is what we wait
    through), but the last one is kept: on the deadline the failure names it, with where it was
    raised, so a check that can never hold (a wrong name, a refused request) says why."""
    nodes = list(nodes)
    deadline = time.monotonic() + timeout_s
    last_error: BaseException | None = None
    last_value: Any = None
    last_value_after_error = False
    while True:
        for node in nodes:
            node.check_running()
        try:
            value = check()
            if value:
                return value
            last_value, last_value_after_error = value, last_error is not None
        except Exception as exc:  # noqa: BLE001 — not answering yet is what we are waiting through
            last_error, last_value_after_error = exc, False
        if time.monotonic() > deadline:
            raise NodeFailed(f"{what}: not within {timeout_s} s; "
                             + _last_outcome(last_error, last_value, last_value_after_error) + "\n"
                             + "\n".join(n.log_tail() for n in nodes))
        time.sleep(POLL_INTERVAL_S)


def _last_outcome(error: BaseException | None, value: Any, value_after_error: bool) -> str:
    """What the check did last: the exception it raised (type, message, the line that raised it),
    or the false value it gave (and the last exception before that, if any)."""
    if error is None:
        return f"the check gave {value!r:.200}"
    frame = traceback.extract_tb(error.__traceback__)[-1]
    kind = type(error).__qualname__ if type(error).__module__ == "builtins" else \
        f"{type(error).__module__}.{type(error).__qualname__}"
    raised = (f"{kind}: {str(error):.500} "
              f"(raised at {frame.filename}:{frame.lineno} in {frame.name})")
    if value_after_error:
        return f"the check gave {value!r:.200} last, and before that raised {raised}"
    return f"the check raised {raised}"


def quorum_leader(addresses: list[tuple[str, int]]) -> int:
    """The leader id a DescribeQuorum answer names (through any of ``addresses``), or -1."""
    from engine.admin.quorum_client import QuorumToolError, default_send, find_leader

    try:
        _, info = find_leader(addresses, default_send(5000))  # a loaded machine answers late
    except QuorumToolError:
        return -1
    return info.leader_id


def metadata_brokers(address: tuple[str, int]) -> set[int]:
    """The broker ids a broker's Metadata answer lists: the registered, unfenced brokers."""
    from engine.net.kafka_client import request_once
    from engine.records.kio_codec import protocol_module

    req = protocol_module("metadata", 12, "request")
    answer = request_once(address, req.MetadataRequest(
        topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False), timeout_ms=2000)
    return {int(b.node_id) for b in answer.brokers}
