"""Apache Kafka's own jars, fetched by Maven from Maven Central into a cache outside the repository.

The pom beside the tests (tests/kafka/pom.xml) names kafka_2.13 (the server, kafka-storage and
kafka-dump-log), kafka-tools (kafka-metadata-quorum, the admin commands), kafka-shell
(kafka-metadata-shell) and a log4j2 runtime. ``mvn dependency:copy-dependencies`` copies their
jars into ``CACHE/VERSION/libs`` once; later runs find the ``READY`` stamp and reuse them. Finding
the jars and running Kafka's mains is engine.cluster.kafka_dist's (``kraftd cluster up --kafka-brokers``
uses the same cache); this module fetches, and adds the tests' log4j2 configs and ``run``.

Which versions: 4.1.2 (the first with ELR on by default) and the newest release for which every
artifact of the pom is served. That one is asked of Maven Central's metadata at run time, so the
suite follows Kafka's releases without an edit (the server jar is often published before the tools).
``METASHELL_KAFKA_VERSIONS`` (comma separated) overrides the choice.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from engine.cluster import kafka_dist as engine_dist
from engine.cluster.kafka_dist import TOOL_JVM_OPTS, KafkaUnavailable, cache_root, version_key

from . import class_sharing

POM = Path(__file__).resolve().parents[1] / "kafka" / "pom.xml"
LOG4J_DIR = POM.parent
PINNED_VERSION = "4.1.2"
ARTIFACTS = ("kafka_2.13", "kafka-tools", "kafka-shell")
CENTRAL = "https://repo.maven.apache.org/maven2/org/apache/kafka"
RELEASE = re.compile(r"^\d+\.\d+\.\d+$")  # no -rc, no snapshots
FETCH_TIMEOUT_S = 900
METADATA_TIMEOUT_S = 20


def missing_programs() -> list[str]:
    return [name for name in ("java", "mvn") if shutil.which(name) is None]


def served_versions(artifact: str) -> set[str]:
    """Release versions of one org.apache.kafka artifact listed by Maven Central."""
    url = f"{CENTRAL}/{artifact}/maven-metadata.xml"
    with urllib.request.urlopen(url, timeout=METADATA_TIMEOUT_S) as answer:
        text = answer.read().decode()
    return {v for v in re.findall(r"<version>([^<]+)</version>", text) if RELEASE.match(v)}


def newest_served_version() -> str:
    """The newest release whose server, tools and shell are all on Maven Central."""
    served: set[str] | None = None
    for artifact in ARTIFACTS:
        versions = served_versions(artifact)
        served = versions if served is None else served & versions
    if not served:
        raise KafkaUnavailable("Maven Central lists no Kafka release with server, tools and shell")
    return max(served, key=version_key)


def server_only_versions(full: list[str]) -> list[str]:
    """A newer release whose server is served before its tools (Kafka 4.4.0 on 2026-11-23), or none.
    Its nodes run and write; its files are checked with our tools and the newest full release's."""
    explicit = os.environ.get("METASHELL_KAFKA_SERVER_ONLY_VERSIONS")
    if explicit is not None:
        return [v.strip() for v in explicit.split(",") if v.strip()]
    try:
        newest = max(served_versions("kafka_2.13"), key=version_key)
    except (OSError, ValueError):
        return []
    return [newest] if version_key(newest) > max(version_key(v) for v in full) else []


def tested_versions() -> list[str]:
    """The Kafka versions the suite runs against: 4.1.2 and the newest served (once, if equal)."""
    explicit = os.environ.get("METASHELL_KAFKA_VERSIONS")
    if explicit:
        return [v.strip() for v in explicit.split(",") if v.strip()]
    stamp = cache_root() / "newest-version"
    try:
        newest = newest_served_version()
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(newest)
    except (OSError, ValueError, KafkaUnavailable):
        # Offline: the newest version fetched before, else only the pinned one (the fetch will say why).
        newest = stamp.read_text().strip() if stamp.is_file() else PINNED_VERSION
    return sorted({PINNED_VERSION, newest}, key=version_key)


@dataclass(frozen=True)
class KafkaDistribution(engine_dist.KafkaDistribution):
    """One version's jars, its nodes and tools logging as the tests want (tests/kafka/log4j2-*)."""

    log4j_dir: Path | None = LOG4J_DIR

    def command(self, tool: str, *args: str, jvm_opts: tuple[str, ...] = TOOL_JVM_OPTS) -> list[str]:
        """Kafka's command line, mapping this version's class archive once there is one (class_sharing)."""
        return super().command(tool, *args, jvm_opts=(*class_sharing.jvm_opts(self.libs), *jvm_opts))

    def run(self, tool: str, *args: str, timeout_s: float = 180, check: bool = True,
            input_text: str | None = None, jvm_opts: tuple[str, ...] = TOOL_JVM_OPTS) -> subprocess.CompletedProcess:
        """Run one tool to its end; a non-zero exit (with ``check``) raises with its output."""
        done = subprocess.run(self.command(tool, *args, jvm_opts=jvm_opts), capture_output=True, text=True,
                              timeout=timeout_s, input=input_text if input_text is not None else "",
                              errors="replace")
        if check and done.returncode != 0:
            raise AssertionError(f"Kafka {self.version} {tool} {' '.join(args)} exited {done.returncode}:\n"
                                 f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
        return done


def fetch(version: str, root: Path | None = None, *, tools: bool = True) -> KafkaDistribution:
    """Kafka ``version``'s jars, copied by Maven into the cache on first use (one fetch at a time).
    ``tools=False``: the server alone (kafka_2.13, with kafka-storage), for a release whose tools
    are not on Maven Central yet."""
    missing = missing_programs()
    if missing:
        raise KafkaUnavailable(f"{' and '.join(missing)} not found on PATH, so Apache Kafka cannot be fetched or run")
    root = root or cache_root()
    home = root / (version if tools else f"{version}-server")
    libs = home / "libs"
    ready = home / "READY"
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two pytest runs at once share one fetch
        if not ready.is_file():
            staging = home / "libs.partial"
            shutil.rmtree(staging, ignore_errors=True)
            try:
                done = subprocess.run(
                    ["mvn", "-B", "-q", "-f", str(POM), f"-Dkafka.version={version}", *([] if tools else ["-P", "!tools"]),
                     "dependency:copy-dependencies", f"-DoutputDirectory={staging}"],
                    capture_output=True, text=True, timeout=FETCH_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise KafkaUnavailable(f"Maven did not fetch Kafka {version} within {FETCH_TIMEOUT_S} s") from None
            if done.returncode != 0:
                lines = [ln for ln in (done.stdout + done.stderr).splitlines() if "ERROR" in ln]
                raise KafkaUnavailable(f"Maven could not fetch Kafka {version}: "
                                       f"{(lines or ['no error text'])[0].strip()}")
            shutil.rmtree(libs, ignore_errors=True)
            staging.rename(libs)
            ready.write_text(version + "\n")
        dist = KafkaDistribution(version, libs)
        class_sharing.ensure_archive(dist)  # under the lock: one training per version across runs
    return dist
