"""The Java runtime Spark would start, found and versioned before anything else runs.

Spark's launcher (``bin/spark-class``) runs ``$JAVA_HOME/bin/java`` when JAVA_HOME is set, even
if nothing is there, and ``java`` from PATH otherwise: the same rule is followed here, so the
answer is about the runtime Spark would really use. The version comes from the JDK's ``release``
file (no process started); a runtime without one is asked with ``java -version``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

VERSION_TIMEOUT_S = 10.0


class JavaRuntime(NamedTuple):
    java: Path           # the java binary Spark would run
    major: int | None    # 8, 11, 17, 21, ...; None when it could not be told


class JavaProblem(Exception):
    """No usable Java runtime; ``str()`` says what was looked at and what was found."""


def find_java() -> Path:
    """The java binary Spark's launcher would run, or JavaProblem saying where it looked."""
    home = os.environ.get("JAVA_HOME")
    if home:
        java = Path(home) / "bin" / "java"
        if not os.access(java, os.X_OK):
            raise JavaProblem(f"JAVA_HOME={home} has no bin/java")
        return java
    found = shutil.which("java")
    if found is None:
        raise JavaProblem("no java on PATH and JAVA_HOME is not set")
    return Path(found)


def java_major(version: str) -> int | None:
    """The major version of a Java version string: "1.8.0_292" is 8, "17.0.15" is 17, "21" is 21."""
    match = re.match(r"\s*(\d+)(?:\.(\d+))?", version)
    if match is None:
        return None
    first = int(match.group(1))
    return int(match.group(2) or 0) if first == 1 else first


def runtime_version(java: Path) -> int | None:
    """The major version of ``java``: its JDK's release file, else what ``java -version`` says."""
    home = java.resolve().parent.parent
    release = home / "release"
    if release.is_file():
        found = re.search(r'^JAVA_VERSION="([^"]+)"', release.read_text(errors="replace"), re.M)
        if found:
            return java_major(found.group(1))
    try:
        done = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaProblem(f"{java} does not run ({exc.__class__.__name__})") from None
    found = re.search(r'version "([^"]+)"', done.stderr + done.stdout)
    return java_major(found.group(1)) if found else None


def needed_major(pyspark_version: str) -> int:
    """The oldest Java a pyspark release runs on: 17 from Spark 4.0, 8 before."""
    return 17 if (java_major(pyspark_version) or 0) >= 4 else 8


def check_java(pyspark_version: str) -> JavaRuntime:
    """The runtime Spark would use, or JavaProblem naming what is missing or too old."""
    java = find_java()
    major = runtime_version(java)
    needed = needed_major(pyspark_version)
    if major is not None and major < needed:
        raise JavaProblem(f"{java} is Java {major}, pyspark {pyspark_version} needs Java {needed} or newer")
    return JavaRuntime(java, major)
