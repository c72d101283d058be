"""A Kafka cluster of real nodes for one test or one session: build, format, start, stop.

    cluster = KafkaCluster(dist, root, voters=3, combined=True, quorum="dynamic").start()
    cluster.bootstrap_servers        # "127.0.0.1:p1,127.0.0.1:p2,..." for clients
    cluster.bootstrap_controllers    # for kafka-metadata-quorum --bootstrap-controller
    cluster.close()                  # SIGKILL every node (the session also does, whatever happens)

Formatting is Kafka's own ``kafka-storage format``, one JVM per node run side by side. A start
whose port was taken between the choice and the bind is retried on new ports from scratch.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Mapping

from engine.common.kafka_uuid import random_kafka_uuid, uuid_to_kafka
from engine.net.ports import pick_ports

from .distribution import KafkaDistribution
from .nodes import FAST, PORT_ATTEMPTS, REPO, KafkaNode, NodeFailed, metadata_brokers, quorum_leader, wait_until


class KafkaCluster:
    def __init__(self, dist: KafkaDistribution, root: Path, *, voters: int = 1, brokers: int = 0,
                 combined: bool = False, quorum: str = "dynamic", config: Mapping[str, str] | None = None,
                 broker_config: Mapping[str, str] | None = None, formatter: str = "kafka-storage",
                 release_version: str | None = None, controllers: str | tuple[str, ...] = "kafka") -> None:
        if quorum not in ("static", "dynamic"):
            raise ValueError(f"quorum must be static or dynamic, not {quorum!r}")
        if formatter not in ("kafka-storage", "kraftd"):
            raise ValueError(f"formatter must be kafka-storage or kraftd, not {formatter!r}")
        kinds = (controllers,) * voters if isinstance(controllers, str) else tuple(controllers)
        if len(kinds) != voters or not set(kinds) <= {"kafka", "kraftd"}:
            raise ValueError(f"controllers must be kafka or kraftd, one or one per voter, not {controllers!r}")
        if "kraftd" in kinds and combined:
            raise ValueError("a kraftd controller is controller-only: combined nodes need Kafka's")
        self.dist, self.root, self.quorum, self.formatter = dist, root, quorum, formatter
        # whose controller process each voter is: Kafka's, or ours (`kraftd start`); mixed is allowed
        self.controller_kinds = kinds
        self.release_version = release_version  # format's --release-version (default: the tool's latest)
        self.voter_count, self.broker_count, self.combined = voters, brokers, combined
        self.overrides = dict(config or {})
        self.broker_overrides = dict(broker_config or {})
        self.cluster_id = uuid_to_kafka(random_kafka_uuid())
        self.nodes: list[KafkaNode] = []
        self.server_jvm_opts: tuple[str, ...] = ()  # given to every Kafka server node after the harness's

    # ------------------------------------------------------------------ layout
    @property
    def voters(self) -> list[KafkaNode]:
        return [n for n in self.nodes if n.is_voter]

    @property
    def brokers(self) -> list[KafkaNode]:
        return [n for n in self.nodes if n.is_broker]

    def node(self, node_id: int) -> KafkaNode:
        return next(n for n in self.nodes if n.node_id == node_id)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{n.broker_port}" for n in self.brokers)

    @property
    def bootstrap_controllers(self) -> str:
        return ",".join(f"127.0.0.1:{n.controller_port}" for n in self.voters)

    @property
    def controller_addresses(self) -> list[tuple[str, int]]:
        return [n.controller_address for n in self.voters]

    def _plan(self) -> None:
        ports = iter(pick_ports(2 * (self.voter_count + self.broker_count)))
        self.nodes = []
        for node_id in range(1, self.voter_count + 1):
            roles = ("broker", "controller") if self.combined else ("controller",)
            self.nodes.append(KafkaNode(self.dist, node_id, roles, self.root / f"node-{node_id}",
                                        next(ports) if self.combined else None, next(ports),
                                        directory_id=uuid_to_kafka(random_kafka_uuid()),
                                        kraftd=self.controller_kinds[node_id - 1] == "kraftd",
                                        extra_jvm_opts=self.server_jvm_opts))
        for i in range(self.broker_count):
            node_id = self.voter_count + 1 + i
            self.nodes.append(KafkaNode(self.dist, node_id, ("broker",), self.root / f"node-{node_id}",
                                        next(ports), None, extra_jvm_opts=self.server_jvm_opts))
        for node in self.nodes:
            node.config = self.node_config(node)

    def quorum_config(self) -> dict[str, str]:
        if self.quorum == "static":
            return {"controller.quorum.voters": ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}"
                                                           for n in self.voters)}
        return {"controller.quorum.bootstrap.servers": self.bootstrap_controllers}

    def node_config(self, node: KafkaNode, voter_set: bool = True) -> dict[str, str]:
        """One node's server.properties, with Kafka's names."""
        listeners, advertised, protocols = [], [], ["CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT"]
        if node.broker_port is not None:
            listeners.append(f"PLAINTEXT://127.0.0.1:{node.broker_port}")
            advertised.append(f"PLAINTEXT://127.0.0.1:{node.broker_port}")
        if node.controller_port is not None:
            listeners.append(f"CONTROLLER://127.0.0.1:{node.controller_port}")
            advertised.append(f"CONTROLLER://127.0.0.1:{node.controller_port}")
        config = {
            "process.roles": ",".join(node.roles),
            "node.id": str(node.node_id),
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(advertised),
            "listener.security.protocol.map": ",".join(protocols),
            "controller.listener.names": "CONTROLLER",
            "log.dirs": str(node.log_dir),
            **(self.quorum_config() if voter_set else {}),
            **FAST,
        }
        if node.is_broker:
            config["inter.broker.listener.name"] = "PLAINTEXT"
            brokers = max(1, min(3, self.voter_count if self.combined else 0) + self.broker_count)
            for name in ("offsets.topic.replication.factor", "transaction.state.log.replication.factor"):
                config[name] = str(min(3, brokers))
            config["transaction.state.log.min.isr"] = str(min(2, brokers))
            config.update(self.broker_overrides)
        config.update(self.overrides)
        return config

    # ------------------------------------------------------------------ formatting and starting
    def format_args(self, node: KafkaNode) -> list[str]:
        args = ["format", "-t", self.cluster_id, "-c", str(node.config_path)]
        if self.release_version:
            args += ["--release-version", self.release_version]
        if self.quorum == "dynamic" and node.is_voter:
            initial = ",".join(f"{v.node_id}@127.0.0.1:{v.controller_port}:{v.directory_id}" for v in self.voters)
            args += ["--initial-controllers", initial]
        return args

    def format_command(self, node: KafkaNode) -> list[str]:
        """Kafka's ``kafka-storage format``, or ours (``kraftd storage format``, the same flags)."""
        if self.formatter == "kraftd" or node.kraftd:
            return [sys.executable, "-m", "engine.tools.cli", "storage", *self.format_args(node)]
        return self.dist.command("kafka-storage", *self.format_args(node))

    def format(self, nodes: list[KafkaNode] | None = None) -> None:
        """Format each node's directory, side by side (one process each)."""
        running = []
        for node in nodes or self.nodes:
            node.write_config()
            running.append((node, subprocess.Popen(self.format_command(node), cwd=REPO,  # where engine is
                                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        for node, process in running:
            out, _ = process.communicate(timeout=180)
            if process.returncode != 0:
                raise NodeFailed(f"{self.formatter} format for node {node.node_id} exited {process.returncode}:\n{out}")

    def start(self) -> "KafkaCluster":
        for attempt in range(PORT_ATTEMPTS):
            shutil.rmtree(self.root, ignore_errors=True)
            self._plan()
            self.format()
            try:
                # Voters first, brokers once a leader stands: a broker-only node of Kafka 4.1 that
                # sees the leader change while it starts can keep asking the old one and never register.
                for node in self.voters:
                    node.start()
                if any(not n.is_voter for n in self.nodes):
                    wait_until(self.has_leader, "a quorum leader", self.live_nodes())
                for node in self.nodes:
                    if not node.is_voter:
                        node.start()
                self.wait_ready()
                return self
            except NodeFailed:
                taken = any(n.bind_failed for n in self.nodes)
                self.close()
                if not taken or attempt == PORT_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def wait_ready(self, nodes: list[KafkaNode] | None = None) -> None:
        """Until the quorum has a leader and every broker in ``nodes`` is registered and unfenced."""
        nodes = nodes or self.nodes
        wait_until(self.has_leader, "a quorum leader", self.live_nodes())
        for node in nodes:
            if node.is_broker:
                wait_until(lambda node=node: node.node_id in metadata_brokers(node.broker_address),
                           f"broker {node.node_id} unfenced", self.live_nodes())
        # each broker learns the others' unfencing from its own metadata fetches: wait until every
        # live broker has, so a test may ask any of them about all of them
        live = [n for n in self.brokers if n.alive]
        for node in live:
            wait_until(lambda node=node: {n.node_id for n in live} <= metadata_brokers(node.broker_address),
                       f"broker {node.node_id} seeing every live broker", self.live_nodes())

    def has_leader(self) -> bool:
        """Whether a DescribeQuorum answer names a leader (asked in PLAINTEXT; kafka_peer.secured asks otherwise)."""
        return quorum_leader(self.controller_addresses) >= 0

    def live_nodes(self) -> list[KafkaNode]:
        return [n for n in self.nodes if n.alive]

    def leader_id(self) -> int:
        """The leader a DescribeQuorum answer names now, or -1 (mid-election, or no answer in time)."""
        return quorum_leader([n.controller_address for n in self.voters if n.alive])

    def wait_leader(self) -> int:
        """The leader's id, once the quorum names one (node ids start at 1, so 0 is "not yet")."""
        return wait_until(lambda: max(self.leader_id(), 0), "a quorum leader", self.live_nodes())

    def restart(self, node: KafkaNode) -> None:
        node.start()
        self.wait_ready([node])

    def stop(self, timeout_s: float = 60) -> None:
        """SIGTERM every node: brokers one by one (controlled shutdowns while the quorum stands),
        then the voters together (one by one, the last would wait for a quorum that is gone)."""
        for node in self.nodes:
            if not node.is_voter:
                node.stop(timeout_s)
        voters = [n for n in self.nodes if n.is_voter and n.alive]
        for node in voters:
            node.signal(signal.SIGTERM)
        for node in voters:
            node.stop(timeout_s)

    def close(self) -> None:
        for node in self.nodes:
            node.kill()

    def logs(self) -> str:
        return "\n".join(n.log_tail() for n in self.nodes)
