"""Class data sharing for Kafka's JVMs: each version's classes, as a server loaded them, mapped
from one archive by every later JVM of that version (servers and tools).

Why: the suite starts a few hundred Kafka JVMs on two cores, and a JVM's start is mostly the
loading and verifying of Kafka's classes. With the archive a three-node cluster starts in about
two thirds of the time and a tool (kafka-metadata-quorum, kafka-storage) in about half; what
the JVMs do once started is the same.

The archive is HotSpot's dynamic CDS archive (JDK 13+): written at the exit of one training
JVM, a single combined node started and stopped with SIGTERM (``-XX:ArchiveClassesAtExit``),
then given to every JVM as ``-XX:SharedArchiveFile``. It lives in the Kafka cache beside the
jars (``VERSION/cds/JAVA_KEY.jsa``), so a cache kept between runs trains once. It is written
under a temporary name, checked by a JVM that must map it (``-Xshare:on``), and only then
renamed into place: a torn archive crashes the JVM that maps it. A JVM that cannot use the
archive (another JDK, changed jars) runs without it; ``-Xlog:cds*=off`` keeps CDS's own warnings
out of the tools' output, which the tests compare. ``METASHELL_KAFKA_CDS=0`` turns it all off.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

QUIET = "-Xlog:cds*=off"
TRAIN_TIMEOUT_S = 180.0
_failed: set[Path] = set()  # trainings that failed in this session: not tried again
_lock = threading.Lock()


def enabled() -> bool:
    return os.environ.get("METASHELL_KAFKA_CDS", "1") != "0"


@functools.lru_cache(maxsize=None)
def _java_key() -> str:
    """The JDK the archive belongs to (an archive is only valid for the JVM build that wrote it)."""
    java = os.path.realpath(shutil.which("java") or "java")
    home = Path(java).parent.parent
    marks = [p for p in (home / "lib" / "server" / "libjvm.so", home / "release", Path(java)) if p.exists()]
    text = java + "".join(f"|{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in marks)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def archive_path(libs: Path) -> Path:
    return libs.parent / "cds" / f"{_java_key()}.jsa"


def jvm_opts(libs: Path) -> tuple[str, ...]:
    """The options that map this version's archive, or none while it does not exist."""
    if not enabled():
        return ()
    archive = archive_path(libs)
    return (f"-XX:SharedArchiveFile={archive}", QUIET) if archive.is_file() else ()


def ensure_archive(dist: Any) -> None:
    """Train ``dist``'s archive unless it exists (call under the cache's lock for this version:
    one training at a time across test runs). A failed training leaves no archive: the JVMs run
    without one, and the failure, if Kafka's, shows in the tests themselves."""
    archive = archive_path(dist.libs)
    if not enabled() or archive.is_file() or archive in _failed:
        return
    with _lock:
        if archive.is_file() or archive in _failed:
            return
        archive.parent.mkdir(parents=True, exist_ok=True)
        partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")
        try:
            _train(dist, partial)
            check = subprocess.run(["java", "-Xshare:on", f"-XX:SharedArchiveFile={partial}", QUIET,
                                    "-cp", dist.classpath, "-version"], capture_output=True, timeout=60)
            if check.returncode != 0:
                raise RuntimeError(f"the archive does not map: {check.stderr[-500:]!r}")
            os.replace(partial, archive)
        except Exception:  # noqa: BLE001 - no archive is slower, not wrong
            _failed.add(archive)
        finally:
            partial.unlink(missing_ok=True)


def _train(dist: Any, partial: Path) -> None:
    """One combined node, started until it leads and serves, then stopped: its classes at exit."""
    import tempfile

    from .cluster import KafkaCluster

    with tempfile.TemporaryDirectory(prefix="kafka-cds-") as root:
        cluster = KafkaCluster(dist, Path(root), voters=1, combined=True)
        cluster.server_jvm_opts = (f"-XX:ArchiveClassesAtExit={partial}", QUIET)
        try:
            cluster.start()
            cluster.stop(timeout_s=TRAIN_TIMEOUT_S)
        finally:
            cluster.close()
    if not partial.is_file():
        raise RuntimeError("the training node wrote no archive")
