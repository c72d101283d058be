"""Fixtures shared by the test files.

What is costly or shared lives once per run (session scope): the Spark session, the generated
log directories. Tests only read them, and each test checks, as it ends, that it left them as
it found them, so no test can lean on another's leftovers (a failure names the test that wrote).
Objects that keep state as they are used (a History's frame cache) are built per test from the
shared directories.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import NoReturn

import pytest

# No test builds Spark's class archive in the user's cache by the way (a background process per
# run): the tests of the archive (test_class_archive.py) turn it on, each with a cache of its own.
os.environ["METASHELL_SPARK_CLASS_ARCHIVE"] = "off"

# Apache Kafka as the test peer: its jars, nodes, scripted history and their fixtures.
pytest_plugins = ["kafka_peer.fixtures"]

# The real Kafka metadata directories: ../shared/corpus beside the repository, or where
# $METASHELL_CORPUS says (test_corpus_required.py points it at nothing).
CORPUS = Path(os.environ.get("METASHELL_CORPUS") or Path(__file__).resolve().parents[2] / "shared" / "corpus")
NO_CORPUS = f"real Kafka corpus not found at {CORPUS} (../shared/corpus beside the repo, or $METASHELL_CORPUS)"


def corpus_unavailable(why: str = NO_CORPUS) -> NoReturn:
    """Skip (on a developer's machine) or fail (under CI=true) a test that needs the corpus, as
    the Kafka tests do (kafka_peer.fixtures.unavailable): CI must prove what the README claims."""
    from kafka_peer.fixtures import IN_CI  # the plugin's own reading of CI (imported once pytest loaded it)

    if IN_CI:
        pytest.fail(f"{why}. CI=true requires it.", pytrace=False)
    pytest.skip(why)


def corpus_file(*parts: str) -> Path:
    """A file or directory of the corpus, or the test skipped (failed under CI) saying it is missing."""
    path = CORPUS.joinpath(*parts)
    if not path.exists():
        corpus_unavailable(NO_CORPUS if not CORPUS.is_dir() else f"{path} is not in the Kafka corpus")
    return path


def corpus_params(paths: list) -> list:
    """Parameters for a test over corpus files, each marked ``corpus``; without a corpus, a single
    one (None), which ``pytest_runtest_setup`` below skips (fails under CI) saying why."""
    if not CORPUS.is_dir():
        return [pytest.param(None, marks=pytest.mark.corpus)]
    return [pytest.param(path, marks=pytest.mark.corpus) for path in paths]


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        corpus_unavailable()
    return CORPUS


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Every test marked ``corpus`` needs it, whatever else it asks for."""
    if item.get_closest_marker("corpus") is not None and not CORPUS.is_dir():
        corpus_unavailable()


def tree_digest(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` by relative path, with the SHA-256 of its bytes."""
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def _read_only(directory: Path):
    """Yield ``directory`` to one test, then fail that test if it changed anything in it."""
    before = tree_digest(directory)
    yield directory
    assert tree_digest(directory) == before, f"this test changed the shared directory {directory}"


@pytest.fixture(scope="session")
def _generated(tmp_path_factory: pytest.TempPathFactory):
    """Generated directories by name, each written on first use and kept for the run."""
    made: dict[str, Path] = {}

    def get(name: str, write) -> Path:
        if name not in made:
            made[name] = write(tmp_path_factory.mktemp(name))
        return made[name]
    return get


@pytest.fixture
def demo_log_dir(_generated):
    """metashell.demo.shell_demo's log directory (metashell --demo), written once per run; read only."""
    from metashell.demo.shell_demo import write_demo_log_dir

    yield from _read_only(_generated("demo", write_demo_log_dir))


@pytest.fixture
def dashboard_demo_dir(_generated):
    """The richer history of ``metashell demo`` (metashell.demo.dashboard_demo); read only."""
    from metashell.demo.dashboard_demo import write_dashboard_demo

    yield from _read_only(_generated("dashboard-demo", write_dashboard_demo))


@pytest.fixture
def bad_day(dashboard_demo_dir):
    """The dashboard demo's history (metashell.dashboard.history.History), opened from its files."""
    from metashell.dashboard.history import History

    return History.open_log_dir(dashboard_demo_dir)


@pytest.fixture(scope="session")
def _spark_session():
    from metashell.export.spark_session import ExportError, get_spark

    try:
        session = get_spark()
    except ExportError as exc:
        pytest.skip(str(exc))
    yield session
    session.stop()


@pytest.fixture
def spark(_spark_session):
    """One local SparkSession for the whole run (skipped, saying why, without pyspark or Java).
    The export front ends find it active and reuse it; a test must leave it active."""
    _keep_active(_spark_session)
    yield _spark_session
    from pyspark.sql import SparkSession

    _keep_active(_spark_session)
    assert SparkSession.getActiveSession() is _spark_session, "this test stopped or replaced the shared SparkSession"


def _keep_active(session) -> None:
    """The JVM keeps the active session per JVM thread, and py4j may hand this Python thread a new
    JVM thread after a long test (its connection replaced): there the shared session, still
    running, is not active. Make it active again; a session stopped by a test stays stopped (and
    the assertion after the test says so)."""
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is None and not session.sparkContext._jsc.sc().isStopped():
        SparkSession._get_j_spark_session_class(session._jvm).setActiveSession(session._jsparkSession)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that needs the Spark session is slow (a JVM starts for it): out of the fast tier,
    ``pytest -m "not slow and not kafka"``, whatever file it lives in. A test that asks for the
    corpus is marked ``corpus``, so ``-m "not corpus"`` leaves it out."""
    for item in items:
        if "_spark_session" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
        if "corpus" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.corpus)
