"""Apache Kafka's own brokers in a ``kraftd cluster`` (``up --kafka-brokers VERSION``).

The brokers are Kafka's server, unmodified (``java ... kafka.Kafka server.properties``), on our
controllers: the ports, racks and two log dirs of the simulated brokers, Kafka's config names,
``controller.quorum.bootstrap.servers`` naming our controllers, formatted by Kafka's own
kafka-storage. The jars are found once, at ``up`` (engine.cluster.kafka_dist), and their directory
is kept in the registry, so every later start runs the same ones. SIGTERM is Kafka's controlled
shutdown, so ``stop``/``down`` need nothing of their own.

``lag`` and ``disk-fail`` act through the simulated broker's faults file; Kafka's broker has no
such hook, so they are refused. Making a log dir unwritable is no honest stand-in: a root user
ignores the permission, and Kafka marks a dir offline only when an I/O on it fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
from pathlib import Path
from typing import Any

from engine.image.metadata_version import parse_release_version
from engine.cluster.kafka_dist import (
    SERVER_JVM_OPTS, KafkaDistribution, KafkaUnavailable, find_distribution, server_version, version_key,
)
from engine.cluster.processes import ClusterError, Command

# engine.cluster.layout's Layout, Node and Settings: that module imports this one, so no import back
Layout = Node = Settings = Any

LOG4J_DIR = "kafka-log4j"
FORMAT_TIMEOUT_S = 180.0  # a safety net: a JVM on a loaded 2-core machine starts slowly
# Kafka's server and tools log INFO to standard output, which the cluster appends to the node's log.
_LOG4J = """status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = {level}
rootLogger.appenderRef.out.ref = OUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


def release_for(kafka_version: str) -> str:
    """The release our controllers are formatted at for Kafka brokers of ``kafka_version``: its own
    major.minor (a broker refuses a metadata.version newer than it knows), capped at ours."""
    ours = parse_release_version(None).release
    theirs = ".".join(kafka_version.split(".")[:2])
    return min(ours, theirs, key=version_key)


def resolve(version: str, home: str | None) -> KafkaDistribution:
    """Kafka ``version``'s jars for a new cluster (KafkaUnavailable, saying how to get them)."""
    return find_distribution(version, Path(home).expanduser() if home else None)


def with_kafka(settings: Settings, args: argparse.Namespace) -> Settings:
    """``settings`` for a new cluster, with the Kafka brokers ``up`` was asked for (found now,
    before anything is written), and the release our controllers are formatted at for them."""
    version = getattr(args, "kafka_brokers", None)
    if not version:
        return settings
    if (getattr(args, "brokers_per_process", None) or 1) > 1:
        raise ClusterError("--brokers-per-process is for simulated brokers: each Kafka broker is its own JVM")
    dist = resolve(version, getattr(args, "kafka_home", None))
    return dataclasses.replace(settings, kafka_version=version, kafka_libs=str(dist.libs),
                               release_version=settings.release_version or release_for(version))


def is_kafka(layout: Layout, node: Node) -> bool:
    return node.role == "broker" and layout.settings.kafka_version is not None


def distribution(layout: Layout) -> KafkaDistribution:
    """The jars the cluster was made with, logging through the cluster's log4j2 configs."""
    version, libs = layout.settings.kafka_version, Path(layout.settings.kafka_libs or "")
    if server_version(libs) != version:
        raise KafkaUnavailable(f"Kafka {version}'s jars are no longer in {libs}, where this cluster found them")
    return KafkaDistribution(version, libs, layout.root / LOG4J_DIR)


def broker_lines(layout: Layout) -> list[str]:
    """The config a Kafka broker needs beyond what every broker of the cluster gets."""
    brokers = len(layout.of_role("broker"))
    return [
        # the StandardAuthorizer (as the simulated brokers) without ACLs lets everyone, brokers too
        "allow.everyone.if.no.acl.found=true",
        # Kafka's defaults (3, 3, 2) would leave the internal topics uncreatable on fewer brokers
        f"offsets.topic.replication.factor={min(3, brokers)}",
        f"transaction.state.log.replication.factor={min(3, brokers)}",
        f"transaction.state.log.min.isr={min(2, brokers)}",
    ]


def write_log4j(layout: Layout) -> None:
    directory = layout.root / LOG4J_DIR
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "log4j2-server.properties").write_text(_LOG4J.format(level="INFO"))
    (directory / "log4j2-tools.properties").write_text(_LOG4J.format(level="WARN"))


def format_brokers(layout: Layout, nodes: list[Node]) -> None:
    """Kafka's ``kafka-storage format`` for each broker, side by side (one JVM each)."""
    write_log4j(layout)
    dist = distribution(layout)
    release = layout.settings.release_version or release_for(dist.version)
    running = [(node, subprocess.Popen(
        dist.command("kafka-storage", "format", "-t", layout.cluster_id, "-c", str(layout.config_path(node)),
                     "--release-version", release),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, errors="replace"))
        for node in nodes]
    failed = []
    for node, process in running:
        try:
            output, _ = process.communicate(timeout=FORMAT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        if process.returncode != 0:
            last = output.strip().splitlines()[-1] if output.strip() else "no output"
            failed.append(f"{node.name}: {last}")
    if failed:
        raise ClusterError(f"Kafka {dist.version}'s kafka-storage format failed: {'; '.join(failed)}")


def start_command(layout: Layout) -> Command:
    """How a Kafka broker of the cluster starts: Kafka's server main on its server.properties."""
    dist = distribution(layout)
    return lambda node_id, config: dist.command("kafka-server-start", str(config), jvm_opts=SERVER_JVM_OPTS)


def refuse_simulated_only(layout: Layout, node: Node) -> None:
    if is_kafka(layout, node):
        raise ClusterError(f"{node.name} is an Apache Kafka {layout.settings.kafka_version} broker: lag and disk-fail "
                           "are faults of the simulated brokers only (kill, stop and pause work on it)")


__all__ = ["LOG4J_DIR", "broker_lines", "distribution", "format_brokers", "is_kafka", "refuse_simulated_only",
           "release_for", "resolve", "start_command", "with_kafka", "write_log4j"]
