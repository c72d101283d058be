"""Spark's classes kept in a class-data-sharing archive, so a local session starts in about half the time.

A fresh Spark JVM spends most of its first seconds loading and verifying the same few thousand
classes (SparkContext, Arrow, Parquet, Hadoop). The JDK can keep them, already parsed and
verified, in a dynamic CDS archive (JDK 13 and later) that a later JVM maps at start-up with
``-XX:SharedArchiveFile``. docs/performance.md ("A small export") has the figures.

- **Built once, in the background.** Recording an archive slows its JVM down about twice, so no
  export of the user's records one. After a local export whose JVM had no archive, a detached
  process (metashell.export.class_archive_build, niced) starts its own session, exports a
  table of every kind in every format, and dumps the classes the JVM loaded.
- **One per runtime.** The archive's name is a digest of what it depends on: the java binary and
  its JDK's ``release`` file, pyspark's version and jars, Spark's environment. A new JDK or pyspark
  makes a new archive; the old one is simply not used again.
- **Checked before use.** A JVM that maps a truncated archive dies of SIGBUS before Spark starts.
  So the archive is renamed into place whole, a sidecar records its size, and an archive whose size
  disagrees is not used. A JVM that still fails to start with one gets it removed and is started
  again without it, with one warning line.
- ``METASHELL_SPARK_CLASS_ARCHIVE=off`` neither uses nor builds one.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

ENV = "METASHELL_SPARK_CLASS_ARCHIVE"
# The JDK's CDS log warns about every class it cannot archive ("Skipping ...: Not linked") and about
# an archive it cannot use: none of it is for the user; an unusable archive only costs time.
QUIET_CDS = "-Xlog:cds=off -Xlog:cds+dynamic=off"
# A failed build is tried again after this long: a JDK or disk problem does not cost every export a build.
RETRY_FAILED_S = 24 * 3600
# A build that holds its lock longer than this has died without removing it.
STALE_BUILD_S = 15 * 60


def enabled() -> bool:
    return os.environ.get(ENV, "").strip().lower() not in ("off", "0", "false", "no")


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "metashell" / "spark-classes"


def archive_key() -> str:
    """A digest of what an archive depends on: the JVM that maps it and the classpath it was dumped with."""
    from pyspark.version import __version__ as pyspark_version

    import pyspark

    from metashell.export.java_runtime import find_java

    java = find_java().resolve()
    release = java.parent.parent / "release"
    parts = [str(java), release.read_text(errors="replace") if release.is_file() else _stat_line(java),
             pyspark_version, str(Path(pyspark.__file__).parent)]
    jars = Path(pyspark.__file__).parent / "jars"
    parts += sorted(p.name for p in jars.glob("*.jar")) if jars.is_dir() else []
    parts += [f"{name}={os.environ.get(name, '')}" for name in ("SPARK_HOME", "SPARK_CONF_DIR", "SPARK_DIST_CLASSPATH")]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _stat_line(path: Path) -> str:
    stat = path.stat()
    return f"{stat.st_size} {stat.st_mtime_ns}"


def archive_path() -> Path:
    return cache_dir() / f"{archive_key()}.jsa"


def sidecar(archive: Path) -> Path:
    return archive.with_suffix(".json")


def usable(archive: Path) -> bool:
    """Whether ``archive`` is whole: there, with the size its sidecar recorded when it was renamed into place."""
    try:
        recorded = json.loads(sidecar(archive).read_text())
        return archive.stat().st_size == recorded["size"] > 0
    except (OSError, ValueError, KeyError, TypeError):
        return False


def java_options(archive: Path) -> str:
    """The JVM options that map ``archive``; a crash report, should one come, goes beside it, not into the
    user's working directory."""
    return f"{_quoted(f'-XX:SharedArchiveFile={archive}')} {QUIET_CDS} {_quoted(f'-XX:ErrorFile={archive.parent}/hs_err_pid%p.log')}"


def _quoted(option: str) -> str:
    # Spark's launcher splits java options on spaces, honouring double quotes
    return f'"{option}"' if " " in option else option


def discard(archive: Path) -> None:
    """Remove an archive a JVM could not start with, and its sidecar."""
    for path in (sidecar(archive), archive):
        try:
            path.unlink()
        except OSError:
            pass


def build_in_background(archive: Path, say: Callable[[str], None]) -> bool:
    """Start the detached builder for ``archive`` unless one is already at work; say so in one line
    (to ``say``, as ``note: ...`` or ``warning: ...``)."""
    if _failed_lately(archive, say):
        return False
    lock = archive.with_suffix(".building")
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
        if lock.exists() and time.time() - lock.stat().st_mtime > STALE_BUILD_S:
            lock.unlink()
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False  # another export started one
    except OSError as exc:
        say(f"warning: cannot keep Spark's classes for quicker exports in {archive.parent}: {exc.strerror}")
        return False
    os.close(fd)
    try:
        subprocess.Popen([sys.executable, "-m", "metashell.export.class_archive_build", str(archive)],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True)
    except OSError as exc:
        lock.unlink(missing_ok=True)
        say(f"warning: cannot start keeping Spark's classes for quicker exports: {exc.strerror}")
        return False
    say(f"note: keeping Spark's classes for quicker exports, once per Java and pyspark, in the background: {archive}")
    return True


def _failed_lately(archive: Path, say: Callable[[str], None]) -> bool:
    """Whether a build failed within RETRY_FAILED_S; the first export after the failure says why."""
    failed, said = archive.with_suffix(".failed"), archive.with_suffix(".failed-said")
    for marker in (failed, said):
        try:
            if time.time() - marker.stat().st_mtime > RETRY_FAILED_S:
                marker.unlink()
        except OSError:
            pass
    if failed.exists():
        reason = (failed.read_text(errors="replace").strip().splitlines() or ["no reason recorded"])[0]
        say(f"warning: keeping Spark's classes for quicker exports failed: {reason} (tried again after a day)")
        os.replace(failed, said)
    return said.exists()
