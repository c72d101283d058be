"""Which Java runtime Spark would run, and whether the installed pyspark runs on it (no JVM
started: the JDK's release file says its version)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metashell.export.java_runtime import JavaProblem, check_java, find_java, java_major, needed_major, runtime_version


@pytest.mark.parametrize("version, major", [
    ("1.8.0_292", 8), ("1.7.0_80", 7), ("11.0.2", 11), ("17.0.15", 17), ("21", 21), ("25-ea", 25), ("x", None),
])
def test_java_major(version: str, major: int | None) -> None:
    assert java_major(version) == major


@pytest.mark.parametrize("pyspark, needed", [("3.5.1", 8), ("4.0.0", 17), ("4.3.0", 17), ("4.3.0.dev1", 17)])
def test_needed_major(pyspark: str, needed: int) -> None:
    assert needed_major(pyspark) == needed


def fake_jdk(root: Path, version: str | None) -> Path:
    """A directory laid out as a JDK: bin/java (never run here) and, with ``version``, a release file."""
    (root / "bin").mkdir(parents=True)
    java = root / "bin" / "java"
    java.write_text("#!/bin/sh\nexit 3\n")
    java.chmod(0o755)
    if version is not None:
        (root / "release").write_text(f'IMPLEMENTOR="test"\nJAVA_VERSION="{version}"\n')
    return java


def test_java_home_wins_and_its_release_file_gives_the_version(tmp_path: Path, monkeypatch) -> None:
    java = fake_jdk(tmp_path / "jdk", "21.0.1")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert find_java() == java
    assert runtime_version(java) == 21
    assert check_java("4.3.0").major == 21


def test_java_home_pointing_nowhere_is_named_even_with_java_on_path(tmp_path: Path, monkeypatch) -> None:
    fake_jdk(tmp_path / "other", "17.0.1")
    monkeypatch.setenv("PATH", str(tmp_path / "other" / "bin"))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    # Spark's launcher runs $JAVA_HOME/bin/java whenever JAVA_HOME is set: PATH does not save it
    with pytest.raises(JavaProblem, match=f"JAVA_HOME={tmp_path / 'nowhere'} has no bin/java"):
        find_java()


def test_java_from_path_when_java_home_is_unset(tmp_path: Path, monkeypatch) -> None:
    java = fake_jdk(tmp_path / "jdk", "17.0.15")
    link_dir = tmp_path / "path"
    link_dir.mkdir()
    os.symlink(java, link_dir / "java")  # as /usr/bin/java -> /usr/lib/jvm/.../bin/java
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(link_dir))
    assert find_java() == link_dir / "java"
    assert runtime_version(link_dir / "java") == 17
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaProblem, match="no java on PATH and JAVA_HOME is not set"):
        find_java()


def test_too_old_a_java_for_pyspark_4(tmp_path: Path, monkeypatch) -> None:
    java = fake_jdk(tmp_path / "jdk", "11.0.2")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert check_java("3.5.1").major == 11
    with pytest.raises(JavaProblem) as info:
        check_java("4.3.0")
    assert str(info.value) == f"{java} is Java 11, pyspark 4.3.0 needs Java 17 or newer"


def test_without_a_release_file_java_is_asked(tmp_path: Path) -> None:
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text('#!/bin/sh\necho \'openjdk version "1.8.0_292" 2021-04-20\' >&2\n')
    java.chmod(0o755)
    assert runtime_version(java) == 8
