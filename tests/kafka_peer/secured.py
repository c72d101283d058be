"""Kafka controller quorums whose controller listener is secured, for the issue-15 attach tests.

    quorum = SecuredQuorum.sasl_ssl(dist, root).start()    # SASL_SSL, SCRAM-SHA-512
    quorum = SecuredQuorum.mutual_tls(dist, root).start()  # SSL with ssl.client.auth=required
    quorum.client_config(...)                              # a --command-config file for a client
    quorum.describe_status(config_path)                    # kafka-metadata-quorum describe --status

Controller-only KRaft nodes (one: every JVM costs seconds of the suite's budget, and SCRAM
cannot be used between Kafka's controllers, see ``sasl_ssl``), Kafka's or ours (``controllers=
"kraftd"``), optionally with Kafka brokers that reach them through the secured listener, built by
kafka_peer.cluster.KafkaCluster with the security settings as overrides, all Kafka's config names. Certificates are made at test time (tests/tls_material.py); the SCRAM users are
bootstrapped into the metadata log by ``kafka-storage format --add-scram`` on every controller,
as a real cluster's would be before its first start (the controllers must authenticate each
other before there is a quorum to write a credential through).

The SASL_SSL quorum runs Kafka's StandardAuthorizer: the controllers' own user and ``admin`` are
super users, ``nobody`` authenticates but holds no ACL, so the tests can tell an authorization
failure from an authentication one.

Readiness cannot be asked with our PLAINTEXT DescribeQuorum (kafka_peer.nodes.quorum_leader):
a Kafka controller is started when its log says so, the quorum is ready when Kafka's own
``kafka-metadata-quorum --command-config`` names a leader through the secured listener (its
answer kept in ``status`` for the tests), a broker when its own Metadata answer lists it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from engine.net.ports import pick_ports
from tests.tls_material import Leaf, PemFiles, TestCA, write_pem

from .cluster import KafkaCluster
from .distribution import KafkaDistribution
from .nodes import KafkaNode, metadata_brokers, wait_until

SCRAM = "SCRAM-SHA-512"
CONTROLLER_USER = "controller"  # the controllers' own login on their listener
ADMIN_USER = "admin"  # a super user for the tools and metashell
NOBODY_USER = "nobody"  # authenticates, but no ACL grants it anything
KEY_PASSWORD = "key-secret-7f3a"  # ssl.key.password of every keystore here
STARTED = "Kafka Server started"  # KafkaRaftServer's line once its listeners are bound
TOOL_TIMEOUT_S = 120


def jaas(username: str, password: str) -> str:
    """sasl.jaas.config for SCRAM as Kafka's clients and listeners read it."""
    return (f'org.apache.kafka.common.security.scram.ScramLoginModule required '
            f'username="{username}" password="{password}";')


def write_java_pem(directory: Path, name: str, leaf: Leaf, *, trust: tuple[TestCA, ...] | None = None) -> PemFiles:
    """``write_pem`` with the key encrypted as Java 17 can read it (PKCS#5 v1.5/PKCS#12 PBE,
    PBEWithSHA1AndDESede, by openssl): Kafka decrypts a PEM key with the JCE algorithm its
    EncryptedPrivateKeyInfo names, and JDK 17 has no SecretKeyFactory for the PBES2 that
    cryptography's BestAvailableEncryption writes ("PBES2 SecretKeyFactory not available").
    Without openssl on PATH the key stays unencrypted (no ssl.key.password), which Kafka reads too."""
    pem = write_pem(directory, name, leaf, trust=trust)
    if shutil.which("openssl") is None:
        return pem
    encrypted = subprocess.run(["openssl", "pkcs8", "-topk8", "-v1", "PBE-SHA1-3DES", "-passout", "env:KEY_PASSWORD"],
                               input=leaf.key_pem(), capture_output=True, check=True,
                               env={**os.environ, "KEY_PASSWORD": KEY_PASSWORD}).stdout
    pem.keystore.write_bytes(encrypted + leaf.cert_pem())
    return PemFiles(pem.keystore, pem.truststore, KEY_PASSWORD)


def ssl_store_config(pem: PemFiles, *, keystore: bool = True, prefix: str = "") -> dict[str, str]:
    """The ssl.* settings for ``pem`` in Kafka's PEM store format (``prefix`` for listener.name.x.)."""
    config = {f"{prefix}ssl.truststore.type": "PEM", f"{prefix}ssl.truststore.location": str(pem.truststore)}
    if keystore:
        config.update({f"{prefix}ssl.keystore.type": "PEM", f"{prefix}ssl.keystore.location": str(pem.keystore)})
        if pem.key_password:
            config[f"{prefix}ssl.key.password"] = pem.key_password
    return config


@dataclass
class SecuredQuorum:
    """A running Kafka controller quorum and what a client needs to reach it."""

    dist: KafkaDistribution
    root: Path
    protocol: str  # the controller listener's security protocol: SASL_SSL or SSL
    voters: int = 1
    controllers: str = "kafka"  # whose controllers: Kafka's, or ours ("kraftd": kraftd start, same config)
    brokers: int = 0  # Kafka broker-only nodes: PLAINTEXT for clients, the secured listener to the controllers
    ca: TestCA = field(default_factory=TestCA)
    passwords: dict[str, str] = field(default_factory=dict)  # SCRAM user -> password (SASL_SSL only)
    cluster: KafkaCluster | None = None
    status: dict[str, str] = field(default_factory=dict)  # Kafka's describe --status once ready

    @classmethod
    def sasl_ssl(cls, dist: KafkaDistribution, root: Path, *, controllers: str = "kafka",
                 brokers: int = 0) -> "SecuredQuorum":
        """One controller: Kafka's controllers cannot use SCRAM between themselves. Its server
        side reads credentials from the metadata image, which a controller loads only once it
        knows the high watermark, so no vote is ever authenticated (tried here with three:
        "invalid credentials with SASL mechanism SCRAM-SHA-512" forever; Confluent's
        cp-ansible refuses the setup for the same reason). Clients and brokers can use it."""
        return cls(dist, root, "SASL_SSL", 1, controllers, brokers,
                   passwords={CONTROLLER_USER: "controller-secret-51c2", ADMIN_USER: "admin-secret-9d04",
                              NOBODY_USER: "nobody-secret-e6b8"})

    @classmethod
    def mutual_tls(cls, dist: KafkaDistribution, root: Path, voters: int = 1) -> "SecuredQuorum":
        return cls(dist, root, "SSL", voters)

    # ------------------------------------------------------------------ the quorum
    def server_config(self) -> dict[str, str]:
        server = write_java_pem(self.root / "tls", "server", self.ca.issue("controller"))
        config = {"listener.security.protocol.map": f"CONTROLLER:{self.protocol},PLAINTEXT:PLAINTEXT",
                  **ssl_store_config(server)}
        if self.protocol == "SSL":
            # the controllers present their own certificate to each other: also as clients
            config["ssl.client.auth"] = "required"
            return config
        config.update({
            "sasl.enabled.mechanisms": SCRAM,
            "listener.name.controller.sasl.enabled.mechanisms": SCRAM,
            "sasl.mechanism.controller.protocol": SCRAM,
            # the listener's JAAS is also the login of a controller or broker calling a controller
            f"listener.name.controller.{SCRAM.lower()}.sasl.jaas.config":
                jaas(CONTROLLER_USER, self.passwords[CONTROLLER_USER]),
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": f"User:{CONTROLLER_USER};User:{ADMIN_USER}",
        })
        if self.brokers:
            # the brokers' PLAINTEXT listener (clients of the tests) authenticates nobody: ANONYMOUS,
            # which only that listener can be, may do anything there
            config["super.users"] += ";User:ANONYMOUS"
        return config

    def start(self) -> "SecuredQuorum":
        scram = [f"{SCRAM}=[name={user},password={password}]" for user, password in self.passwords.items()]
        self.cluster = _Cluster(self.dist, self.root / "cluster", voters=self.voters, brokers=self.brokers,
                                controllers=self.controllers, config=self.server_config(), quorum=self, scram=scram)
        self.cluster.start()
        return self

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.close()

    @property
    def bootstrap_controllers(self) -> str:
        assert self.cluster is not None
        return self.cluster.bootstrap_controllers

    @property
    def cluster_id(self) -> str:
        assert self.cluster is not None
        return self.cluster.cluster_id

    # ------------------------------------------------------------------ clients
    def client_config(self, name: str, *, user: str = ADMIN_USER, password: str | None = None,
                      trust: TestCA | None = None, certificate: str | None = "client",
                      expired: bool = False) -> Path:
        """A --command-config file ``name``.properties for this quorum. SASL_SSL: ``user`` with its
        password (or ``password``); SSL: a client certificate for ``certificate`` (None: none),
        ``expired`` or not. ``trust``: the CA the client trusts (default: this quorum's)."""
        directory = self.root / "clients"
        leaf = self.ca.issue(certificate or "unused", expired=expired)
        pem = write_java_pem(directory, name, leaf, trust=(trust or self.ca,))
        config = {"security.protocol": self.protocol,
                  **ssl_store_config(pem, keystore=self.protocol == "SSL" and certificate is not None)}
        if self.protocol == "SASL_SSL":
            config.update({"sasl.mechanism": SCRAM,
                           "sasl.jaas.config": jaas(user, self.passwords[user] if password is None else password)})
        path = directory / f"{name}.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in config.items()))
        return path

    def describe_status(self, command_config: Path, *, check: bool = True):
        """Kafka's ``kafka-metadata-quorum --bootstrap-controller ... --command-config FILE describe --status``."""
        return self.dist.run("kafka-metadata-quorum", "--bootstrap-controller", self.bootstrap_controllers,
                             "--command-config", str(command_config), "describe", "--status",
                             timeout_s=TOOL_TIMEOUT_S, check=check)

    def kafka_status(self, command_config: Path) -> dict[str, str]:
        """``describe --status`` as its "Name: value" lines (ClusterId, LeaderId, CurrentVoters...)."""
        return parse_status(self.describe_status(command_config).stdout)


class Quorums:
    """A test module's secured quorums by name: each started on first use (again when one of its
    nodes died), all killed by ``close`` (the module's end: idle JVMs take CPU from the rest)."""

    def __init__(self) -> None:
        self.made: dict[str, SecuredQuorum] = {}

    def get(self, name: str, make: Callable[[], SecuredQuorum]) -> SecuredQuorum:
        quorum = self.made.get(name)
        if quorum is None or not all(n.alive for n in quorum.cluster.nodes):
            if quorum is not None:
                quorum.close()
            quorum = self.made[name] = make().start()
        return quorum

    def close(self) -> None:
        for quorum in self.made.values():
            quorum.close()


def parse_status(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^(\w+):\s*(.*)$", text, re.MULTILINE)}


class _Cluster(KafkaCluster):
    """KafkaCluster with SCRAM users at format time and readiness asked through the secured listener.

    Kafka brokers under our SASL_SSL controller also listen on SECURE (SASL_SSL, SCRAM): the
    listener our controller's ``inter.broker.listener.name`` names, which unclean recovery's
    questions go to, logged in as the controllers' user (a super user there too)."""

    def __init__(self, *args, quorum: SecuredQuorum, scram: list[str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.secured, self.scram = quorum, scram
        self.secure_ports: dict[int, int] = {}  # broker id -> its SECURE listener's port

    def _plan(self) -> None:
        self.secure_ports.clear()  # a start again after a taken port picks every port anew
        super()._plan()

    def node_config(self, node: KafkaNode, voter_set: bool = True) -> dict[str, str]:
        config = super().node_config(node, voter_set)
        quorum = self.secured
        if quorum.protocol != "SASL_SSL" or not quorum.brokers or quorum.controllers != "kraftd":
            return config
        config["listener.security.protocol.map"] += ",SECURE:SASL_SSL"
        config[f"listener.name.secure.{SCRAM.lower()}.sasl.jaas.config"] = \
            jaas(CONTROLLER_USER, quorum.passwords[CONTROLLER_USER])
        if node.is_broker:
            if node.node_id not in self.secure_ports:
                planned = {p for n in self.nodes for p in (n.broker_port, n.controller_port)}
                planned |= set(self.secure_ports.values())
                self.secure_ports[node.node_id] = next(p for p in iter(lambda: pick_ports(1)[0], None)
                                                       if p not in planned)
            port = self.secure_ports[node.node_id]
            config["listeners"] += f",SECURE://127.0.0.1:{port}"
            config["advertised.listeners"] += f",SECURE://127.0.0.1:{port}"
            config["listener.name.secure.sasl.enabled.mechanisms"] = SCRAM
        else:
            config["inter.broker.listener.name"] = "SECURE"
            config["sasl.mechanism.inter.broker.protocol"] = SCRAM
        return config

    def format_args(self, node: KafkaNode) -> list[str]:
        args = super().format_args(node)
        for credential in self.scram:
            args += ["--add-scram", credential]
        return args

    def has_leader(self) -> bool:
        """Kafka's kafka-metadata-quorum through the secured listener names a leader (a JVM a
        call: asked once Kafka's controllers say they started)."""
        if not all(STARTED in n.output_path.read_text(errors="replace") for n in self.voters if not n.kraftd):
            return False
        ready = self.secured.client_config("readiness", certificate="readiness")
        status = parse_status(self.secured.describe_status(ready, check=False).stdout)
        if int(status.get("LeaderId", "-1")) < 0:
            return False
        self.secured.status = status  # what Kafka's own tool reports: the tests compare with it
        return True

    def wait_ready(self, nodes: list[KafkaNode] | None = None) -> None:
        """A leader, then each broker in ``nodes`` unfenced (its own PLAINTEXT Metadata answer lists it):
        the broker registered and heartbeats through the secured controller listener."""
        if not self.secured.status:  # else asked already, before the brokers started
            wait_until(self.has_leader, "a quorum leader (kafka-metadata-quorum through the secured listener)",
                       self.live_nodes())
        for node in nodes or self.nodes:
            if node.is_broker:
                wait_until(lambda node=node: node.node_id in metadata_brokers(node.broker_address),
                           f"broker {node.node_id} unfenced", self.live_nodes())
