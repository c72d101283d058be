"""Apache Kafka's own jars on disk, and the java command lines of Kafka's mains.

Where the jars are: a Kafka release unpacked anywhere (``HOME/libs/kafka_2.13-VERSION.jar``, as
Kafka's binary tarball lays it out), or the cache the test suite fills with Maven
(``CACHE/VERSION/libs``, or ``CACHE/VERSION-server/libs`` for a release whose tools are not on
Maven Central yet; CACHE is $METASHELL_KAFKA_CACHE, else $XDG_CACHE_HOME/metashell/kafka). Nothing
here downloads: tests/kafka_peer/distribution.py fetches into that cache.

A main is started the way Kafka's scripts start it (``java OPTS -cp LIBS/* MAIN ARGS``), with the
class found in this version's jars, since some moved between releases.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

from engine.cluster.processes import ClusterError

# Kafka's tool mains, by the script name an operator types; where a class moved between releases,
# each place it has lived (the first found in the jars wins).
MAINS = {
    "kafka-server-start": ("kafka.Kafka",),
    "kafka-storage": ("kafka.tools.StorageTool", "org.apache.kafka.tools.StorageTool"),
    "kafka-dump-log": ("kafka.tools.DumpLogSegments", "org.apache.kafka.tools.DumpLogSegments"),
    "kafka-metadata-quorum": ("org.apache.kafka.tools.MetadataQuorumCommand",),
    "kafka-metadata-shell": ("org.apache.kafka.shell.MetadataShell",),
    "kafka-configs": ("kafka.admin.ConfigCommand", "org.apache.kafka.tools.ConfigCommand"),
    "kafka-reassign-partitions": ("org.apache.kafka.tools.reassign.ReassignPartitionsCommand",),
    "kafka-leader-election": ("org.apache.kafka.tools.LeaderElectionCommand",),
    "kafka-acls": ("org.apache.kafka.tools.AclCommand",),
    "kafka-topics": ("org.apache.kafka.tools.TopicCommand",),
    "kafka-features": ("org.apache.kafka.tools.FeatureCommand",),
}

# Short-lived tools: a small heap, one GC thread, no C2 (a tool's run is over before C2 pays off).
TOOL_JVM_OPTS = ("-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")
# A broker of a local cluster: several JVMs share a laptop's cores (Kafka's scripts use G1 and 1 GiB).
SERVER_JVM_OPTS = ("-Xmx384m", "-Xms96m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                   "-XX:CICompilerCount=1", "-Djava.awt.headless=true")
SERVER_LOG4J = "log4j2-server.properties"
TOOLS_LOG4J = "log4j2-tools.properties"
POM_HINT = "tests/kafka/pom.xml"  # the test suite's Maven project that copies Kafka's jars
_SERVER_JAR = re.compile(r"^kafka_2\.1[0-9]-(\d+\.\d+\.\d+)\.jar$")


class KafkaUnavailable(ClusterError):
    """Java or Kafka's jars are missing (one sentence saying how to get them)."""


def cache_root() -> Path:
    explicit = os.environ.get("METASHELL_KAFKA_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "metashell" / "kafka"


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@dataclass(frozen=True)
class KafkaDistribution:
    """One Kafka version's jars on disk, and how to run its mains. ``log4j_dir`` holds the log4j2
    configs the server and the tools are started with (none: log4j2's own default, errors only)."""

    version: str
    libs: Path
    log4j_dir: Path | None = None

    @property
    def classpath(self) -> str:
        return str(self.libs / "*")

    def has(self, tool: str) -> bool:
        return any(name in _classes(self.libs) for name in MAINS[tool])

    def main_class(self, tool: str) -> str:
        """The class behind one of Kafka's scripts in this version's jars."""
        for name in MAINS[tool]:
            if name in _classes(self.libs):
                return name
        raise KafkaUnavailable(f"Kafka {self.version} has no main for {tool} (looked for {', '.join(MAINS[tool])})")

    def command(self, tool: str, *args: str, jvm_opts: tuple[str, ...] = TOOL_JVM_OPTS) -> list[str]:
        """The java command line of one of Kafka's tools (``MAINS``), as its script would run it."""
        log4j = []
        if self.log4j_dir is not None:
            name = SERVER_LOG4J if tool == "kafka-server-start" else TOOLS_LOG4J
            log4j = [f"-Dlog4j2.configurationFile={self.log4j_dir / name}"]
        return ["java", *jvm_opts, *log4j, "-cp", self.classpath, self.main_class(tool), *args]


@functools.lru_cache(maxsize=None)
def _classes(libs: Path) -> frozenset[str]:
    """Every class name in the Kafka jars under ``libs`` (only Kafka's own jars are read)."""
    names = set()
    for jar in libs.glob("kafka*.jar"):
        with zipfile.ZipFile(jar) as archive:
            names.update(n[:-6].replace("/", ".") for n in archive.namelist() if n.endswith(".class"))
    return frozenset(names)


def server_version(libs: Path) -> str | None:
    """The Kafka version of the server jar in ``libs`` (kafka_2.13-VERSION.jar), or None."""
    if not libs.is_dir():
        return None
    found = [m.group(1) for p in libs.iterdir() if (m := _SERVER_JAR.match(p.name))]
    return max(found, key=version_key) if found else None


def find_distribution(version: str, home: Path | None = None) -> KafkaDistribution:
    """Kafka ``version``'s jars: in ``home`` (an unpacked release, or its libs directory) when
    given, else in the cache. KafkaUnavailable, saying how to get them, when Java or the jars are
    missing (or ``home`` holds another version)."""
    if shutil.which("java") is None:
        raise KafkaUnavailable("java not found on PATH: Kafka brokers need a Java 17 or newer runtime")
    if home is not None:
        for libs in (Path(home) / "libs", Path(home)):
            found = server_version(libs)
            if found == version:
                return KafkaDistribution(version, libs.resolve())
            if found is not None:
                raise KafkaUnavailable(f"{libs} holds Kafka {found}, not {version}")
        raise KafkaUnavailable(f"no Kafka server jar (kafka_2.13-{version}.jar) in {home} or {Path(home) / 'libs'}")
    root = cache_root()
    for libs in (root / version / "libs", root / f"{version}-server" / "libs"):
        if server_version(libs) == version:
            return KafkaDistribution(version, libs)
    target = root / version / "libs"
    raise KafkaUnavailable(
        f"Kafka {version}'s jars are not in {target}: give --kafka-home DIR (an unpacked Kafka {version} release), "
        f"or fetch them with `mvn -B -q -f {POM_HINT} -Dkafka.version={version} dependency:copy-dependencies "
        f"-DoutputDirectory={target}` (or set METASHELL_KAFKA_CACHE to a cache holding them)")


__all__ = ["KafkaDistribution", "KafkaUnavailable", "MAINS", "SERVER_JVM_OPTS", "TOOL_JVM_OPTS", "cache_root",
           "find_distribution", "server_version", "version_key"]
