"""Apache Kafka's own jars, fetched by Maven from Maven Central into a cache outside the repository.

The pom beside the tests (tests/kafka/pom.xml) names kafka_2.13 (the server, kafka-storage and
kafka-dump-log), kafka-tools (kafka-metadata-quorum, the admin commands), kafka-shell
(kafka-metadata-shell) and a log4j2 runtime. ``mvn dependency:copy-dependencies`` copies their
jars into ``CACHE/VERSION/libs`` once; later runs find the ``READY`` stamp and reuse them. Finding
the jars and running Kafka's mains is engine.cluster.kafka_dist's (``kraftd cluster up --kafka-brokers``
uses the same cache); this module fetches, and adds the tests' log4j2 configs and ``run``.

Which versions: 4.1.2 (the first with ELR on by default) and the newest release whose server and
tools are served. Maven Central often serves a release's parts days apart (Kafka 4.4.0: the server
on 2026-11-23, its tools later, its kafka-shell not yet on 2026-11-27), so the newest is chosen
part by part (``choose``): the server and tools of the newest release serving both, and
kafka-metadata-shell from the newest release serving kafka-shell, no newer than that one. While
a release's own kafka-shell is not served, the older one's jar joins its jars (Maven's
``kafka.shell.version``): the shell's commands are the older release's, the image it loads and
prints is this release's. The few classes the older shell names that the newer release moved
(4.4.0 moved AppInfoParser and Exit, dropped kafka.tools.TerseFailure) come from
tests/kafka/shell_bridge, which forwards to where they went. Once Maven Central serves the
release's own shell, the next fetch takes it and the bridge goes. A server served before its
tools is the "server-only" newest, run without the steps that need the tools. This is asked of
Maven Central's metadata at run time, so the suite follows Kafka's releases without an edit.
``METASHELL_KAFKA_VERSIONS`` (comma separated) overrides the tested versions,
``METASHELL_KAFKA_SERVER_ONLY_VERSIONS`` the server-only ones.
"""

from __future__ import annotations

import atexit
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from engine.cluster import kafka_dist as engine_dist
from engine.cluster.kafka_dist import TOOL_JVM_OPTS, KafkaUnavailable, cache_root, version_key

from . import class_sharing

POM = Path(__file__).resolve().parents[1] / "kafka" / "pom.xml"
LOG4J_DIR = POM.parent
SHELL_BRIDGE = POM.parent / "shell_bridge"
PINNED_VERSION = "4.1.2"
SERVER, TOOLS, SHELL = "kafka_2.13", "kafka-tools", "kafka-shell"
ARTIFACTS = (SERVER, TOOLS, SHELL)
CENTRAL = "https://repo.maven.apache.org/maven2/org/apache/kafka"
RELEASE = re.compile(r"^\d+\.\d+\.\d+$")  # no -rc, no snapshots
FETCH_TIMEOUT_S = 900
METADATA_TIMEOUT_S = 20
NEWEST_STAMP = "newest-parts.json"  # what Maven Central served when last asked, for offline runs


def missing_programs() -> list[str]:
    return [name for name in ("java", "mvn") if shutil.which(name) is None]


@functools.lru_cache(maxsize=None)  # one question per artifact and session
def served_versions(artifact: str) -> frozenset[str]:
    """Release versions of one org.apache.kafka artifact listed by Maven Central."""
    url = f"{CENTRAL}/{artifact}/maven-metadata.xml"
    with urllib.request.urlopen(url, timeout=METADATA_TIMEOUT_S) as answer:
        text = answer.read().decode()
    return frozenset(v for v in re.findall(r"<version>([^<]+)</version>", text) if RELEASE.match(v))


class Choice(NamedTuple):
    """The newest Kafka parts Maven Central serves: ``newest`` has server and tools, ``shell`` is the
    release whose kafka-metadata-shell goes with it (``newest`` once served), ``server_only`` a newer
    server whose tools are not served yet (or None)."""

    newest: str
    shell: str | None
    server_only: str | None


def choose(served: dict[str, set[str] | frozenset[str]]) -> Choice:
    """The newest version of each part, from the releases each artifact is served in."""
    full = set(served[SERVER]) & set(served[TOOLS])
    if not full:
        raise KafkaUnavailable("Maven Central lists no Kafka release with both its server and its tools")
    newest = max(full, key=version_key)
    shells = [v for v in served[SHELL] if version_key(v) <= version_key(newest)]
    server = max(served[SERVER], key=version_key)
    return Choice(newest, max(shells, key=version_key) if shells else None,
                  server if version_key(server) > version_key(newest) else None)


@functools.lru_cache(maxsize=1)  # once per session: the fixtures, the history's process and fetch ask
def newest_choice() -> Choice:
    """``choose`` on what Maven Central serves now; offline, on what it served when last asked
    (else only the pinned version, with its own shell: the fetch will say why it fails)."""
    stamp = cache_root() / NEWEST_STAMP
    try:
        served = {artifact: served_versions(artifact) for artifact in ARTIFACTS}
        choice = choose(served)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(json.dumps({artifact: sorted(versions, key=version_key) for artifact, versions in served.items()}))
        return choice
    except (OSError, ValueError, KafkaUnavailable):
        try:
            return choose(json.loads(stamp.read_text()))
        except (OSError, ValueError, KeyError, KafkaUnavailable):
            return Choice(PINNED_VERSION, PINNED_VERSION, None)


def server_only_versions(full: list[str]) -> list[str]:
    """A newer release whose server is served before its tools (Kafka 4.4.0 from 2026-11-23 to its
    tools' release), or none. Its nodes run and write; its files are checked with our tools and the
    newest full release's."""
    explicit = os.environ.get("METASHELL_KAFKA_SERVER_ONLY_VERSIONS")
    if explicit is not None:
        return [v.strip() for v in explicit.split(",") if v.strip()]
    server = newest_choice().server_only
    return [server] if server and version_key(server) > max(version_key(v) for v in full) else []


def tested_versions() -> list[str]:
    """The Kafka versions the suite runs against: 4.1.2 and the newest with server and tools served
    (once, if equal)."""
    explicit = os.environ.get("METASHELL_KAFKA_VERSIONS")
    if explicit:
        return [v.strip() for v in explicit.split(",") if v.strip()]
    return sorted({PINNED_VERSION, newest_choice().newest}, key=version_key)


def shell_version(version: str) -> str:
    """The release whose kafka-metadata-shell runs with ``version``'s server and tools: its own when
    Maven Central serves it (or said so when last asked), else the newest older one served."""
    shell = newest_choice().shell
    return version if shell is None or version_key(version) <= version_key(shell) else shell


@dataclass(frozen=True)
class KafkaDistribution(engine_dist.KafkaDistribution):
    """One version's jars, its nodes and tools logging as the tests want (tests/kafka/log4j2-*).
    ``shell_release``: the release of the kafka-shell jar among them when it is older than the
    rest (its own not served yet), and ``shell_bridge`` the classes it needs that this release
    moved (tests/kafka/shell_bridge), added to its classpath."""

    log4j_dir: Path | None = LOG4J_DIR
    shell_release: str | None = None
    shell_bridge: Path | None = None

    @property
    def shell_version(self) -> str:
        """The release of the kafka-metadata-shell this distribution runs."""
        return self.shell_release or self.version

    def command(self, tool: str, *args: str, jvm_opts: tuple[str, ...] = TOOL_JVM_OPTS) -> list[str]:
        """Kafka's command line, mapping this version's class archive once there is one (class_sharing)."""
        if tool == "kafka-metadata-shell":  # its MetadataShell<N> directory, left when it is killed, goes with ours
            jvm_opts = (*jvm_opts, f"-Djava.io.tmpdir={_shell_tmpdir()}")
        line = super().command(tool, *args, jvm_opts=(*class_sharing.jvm_opts(self.libs), *jvm_opts))
        if tool == "kafka-metadata-shell" and self.shell_bridge is not None:
            at = line.index("-cp") + 1  # after the jars: a class this release still has is its own
            line[at] += os.pathsep + str(self.shell_bridge)
        return line

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


@functools.cache
def _shell_tmpdir() -> str:
    """The java.io.tmpdir of every kafka-metadata-shell this process starts, removed at its exit."""
    path = tempfile.mkdtemp(prefix="metashell-tests-kafka-shell-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def fetch(version: str, root: Path | None = None, *, tools: bool = True) -> KafkaDistribution:
    """Kafka ``version``'s jars, copied by Maven into the cache on first use (one fetch at a time).
    ``tools=False``: the server alone (kafka_2.13, with kafka-storage), for a release whose tools
    are not on Maven Central yet. With its tools comes a kafka-shell: its own once served, else
    the newest older one's (``shell_version``), bridged; the jars are fetched again once its own is."""
    missing = missing_programs()
    if missing:
        raise KafkaUnavailable(f"{' and '.join(missing)} not found on PATH, so Apache Kafka cannot be fetched or run")
    root = root or cache_root()
    shell = shell_version(version) if tools else None
    home = root / (version if tools else f"{version}-server")
    libs = home / "libs"
    ready = home / "READY"
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two pytest runs at once share one fetch
        if not ready.is_file() or (shell is not None and not (libs / f"{SHELL}-{shell}.jar").is_file()):
            _maven_copy(version, shell, home)
            ready.write_text(version + "\n")
        older_shell = shell is not None and shell != version
        dist = KafkaDistribution(version, libs, shell_release=shell if older_shell else None,
                                 shell_bridge=_compile_bridge(libs) if older_shell else None)
        class_sharing.ensure_archive(dist)  # under the lock: one training per version across runs
    return dist


def _maven_copy(version: str, shell: str | None, home: Path) -> None:
    """Maven copies ``version``'s server, with its tools and ``shell``'s kafka-shell unless None,
    into ``home/libs`` (replaced whole)."""
    libs, staging = home / "libs", home / "libs.partial"
    shutil.rmtree(staging, ignore_errors=True)
    parts = ["-P", "tools,shell", f"-Dkafka.shell.version={shell}"] if shell else ["-P", "!tools,!shell"]
    try:
        done = subprocess.run(
            ["mvn", "-B", "-q", "-f", str(POM), f"-Dkafka.version={version}", *parts,
             "dependency:copy-dependencies", f"-DoutputDirectory={staging}"],
            capture_output=True, text=True, timeout=FETCH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise KafkaUnavailable(f"Maven did not fetch Kafka {version} within {FETCH_TIMEOUT_S} s") from None
    if done.returncode != 0:
        lines = [ln for ln in (done.stdout + done.stderr).splitlines() if "ERROR" in ln]
        raise KafkaUnavailable(f"Maven could not fetch Kafka {version}: {(lines or ['no error text'])[0].strip()}")
    shutil.rmtree(libs, ignore_errors=True)
    staging.rename(libs)
    shutil.rmtree(home / "cds", ignore_errors=True)  # an archive of other jars would never map again


def _compile_bridge(libs: Path) -> Path | None:
    """tests/kafka/shell_bridge compiled against ``libs`` beside them (once per source digest):
    the classes an older kafka-shell names that a newer server moved. None without javac (the
    shell then fails to start, saying which class it missed)."""
    if shutil.which("javac") is None:
        return None
    sources = sorted(SHELL_BRIDGE.rglob("*.java"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:16]
    classes = libs.parent / "shell-bridge" / digest
    if not (classes / "READY").is_file():
        shutil.rmtree(classes, ignore_errors=True)
        done = subprocess.run(["javac", "-nowarn", "-encoding", "UTF-8", "-d", str(classes), "-cp", f"{libs}/*",
                               *map(str, sources)], capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise AssertionError(f"tests/kafka/shell_bridge does not compile against {libs}:\n{done.stderr[-4000:]}")
        (classes / "READY").write_text("")
    return classes


def bootstrap_records(log_dir: Path) -> list:
    """The metadata records a formatter wrote for a new cluster in ``log_dir`` (feature levels, SCRAM
    users), without the control records around them: from bootstrap.checkpoint (Kafka up to 4.3,
    and kraftd), else from the first snapshot, where Kafka 4.4's formatter writes them instead."""
    from engine.storage.log_reader import read_file

    path = log_dir / "bootstrap.checkpoint"
    if not path.is_file():
        path = log_dir / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint"
    return [entry.record for entry in read_file(path, snapshot=True) if not entry.control]
