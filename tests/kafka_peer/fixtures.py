"""pytest fixtures and hooks for the tests that run Apache Kafka (marker ``kafka``).

* ``kafka_dist``: one Kafka version's jars (fetched once into the cache), parametrised over
  ``tested_versions()`` so every Kafka test runs against 4.1.2 and the newest release with its
  server and tools served (its kafka-metadata-shell: the newest served, kafka_peer.distribution).
  Without Java or Maven the tests skip, saying why in one sentence; under ``CI=true`` that is a
  failure, because CI must prove what the README claims.
* ``kafka_history``: the scripted cluster's directories (tests/kafka_peer/history.py), written
  once per version and session; tests only read them (checked, as for the other shared dirs).
  The tests that run Kafka come after the others, and the histories are written meanwhile,
  each by a process of its own, begun with the session's first test (``_HISTORY_LANE``).
* ``ahead_of_version``: a test module's expensive Kafka setup, begun on a thread of its own
  with the first test of its Kafka version, so it is ready when that module's tests come.
* ``kafka_classes``: Kafka's own classes (tests/kafka_peer/harness.py), one JVM per version and
  session, parametrised over 4.1.2 and the newest server served: the differential tests ask it
  and ours the same inputs.
* ``kafka_quorum``: a running quorum of three controller-only nodes (dynamic) and one broker,
  shared by a module's tests that only ask it questions, and stopped when the module ends.

Every process started is killed when the session ends; a failing Kafka test shows the logs of
the nodes that ran during it.
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path
from typing import Any, Callable

import pytest

from .distribution import KafkaDistribution, KafkaUnavailable, fetch, server_only_versions, tested_versions
from .early import Lane
from .nodes import REGISTRY, kill_all

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
VERSIONS = tested_versions()
# The newest server on Maven Central when its tools are not there yet (else the newest tested release,
# 4.4.0 on 2026-11-27: then every newest-server test runs on the tested release's jars and history).
NEWEST_SERVERS = server_only_versions(VERSIONS) or VERSIONS[-1:]
atexit.register(kill_all)  # also after an interrupted or crashed run


def unavailable(why: str) -> None:
    """Skip (on a developer's machine) or fail (under CI=true) the Kafka tests, with one sentence."""
    message = f"Apache Kafka tests cannot run: {why}."
    if IN_CI:
        pytest.fail(message + " CI=true requires them.", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session", params=VERSIONS, ids=lambda v: f"kafka-{v}")
def kafka_dist(request: pytest.FixtureRequest) -> KafkaDistribution:
    return _fetch_or_unavailable(request.param, tools=True)


def _fetch_or_unavailable(version: str, tools: bool) -> KafkaDistribution:
    try:
        return fetch(version, tools=tools)
    except KafkaUnavailable as exc:
        why = str(exc)
    unavailable(why)  # outside the except block: the report shows the sentence, not a chain
    raise AssertionError("unreachable")  # pytest.skip/fail raise


@pytest.fixture(scope="session", params=NEWEST_SERVERS, ids=lambda v: f"kafka-{v}")
def kafka_newest_server(request: pytest.FixtureRequest) -> KafkaDistribution:
    """The newest Kafka server served, with its tools only if they are served too."""
    return _fetch_or_unavailable(request.param, tools=request.param in VERSIONS)


# the versions whose classes the differential tests ask: 4.1.2 and the newest server on Maven Central
HARNESS_VERSIONS = sorted({VERSIONS[0], *NEWEST_SERVERS}, key=lambda v: tuple(map(int, v.split("."))))


@pytest.fixture(scope="session", params=HARNESS_VERSIONS, ids=lambda v: f"kafka-{v}")
def kafka_classes(request: pytest.FixtureRequest):
    """One JVM serving Kafka's classes of this version, for the whole session."""
    from .harness import KafkaClasses

    dist = _fetch_or_unavailable(request.param, tools=request.param in VERSIONS)
    try:
        classes = KafkaClasses(dist)
    except KafkaUnavailable as exc:
        unavailable(str(exc))
        raise
    yield classes
    classes.close()


@pytest.fixture(scope="module")
def module_clusters() -> Any:
    """Kafka clusters a module's tests share (keyed as the module likes), closed when it ends."""
    clusters: dict[Any, Any] = {}
    yield clusters
    for cluster in clusters.values():
        cluster.close()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kafka: runs Apache Kafka itself (Java 17 and Maven)")


@pytest.fixture(scope="session")
def _kafka_histories():
    made: dict[tuple[str, bool], object] = {}
    return made


@pytest.fixture
def kafka_history(kafka_dist: KafkaDistribution, _kafka_histories, tmp_path_factory):
    """The scripted history's node directories for this Kafka version; read only."""
    yield from _shared_history(_kafka_histories, kafka_dist, True, tmp_path_factory)


@pytest.fixture
def kafka_newest_history(kafka_newest_server: KafkaDistribution, _kafka_histories, tmp_path_factory):
    """The scripted history written by the newest Kafka server (without the steps that need Kafka's
    tools when only the server is served); read only."""
    yield from _shared_history(_kafka_histories, kafka_newest_server, kafka_newest_server.version in VERSIONS,
                               tmp_path_factory)


def _shared_history(made: dict, dist: KafkaDistribution, tools: bool, tmp_path_factory: pytest.TempPathFactory):
    """The history of ``dist`` (its release with its tools or not), the one the history lane wrote
    or else written now, to one test, which must not change it."""
    from conftest import tree_digest

    key = (dist.version, tools)
    history = made.get(key)
    if history is None:
        history = made[key] = _HISTORY_LANE.take(  # the process's own timeout comes first
            key, lambda: _write_history(dist, _history_root(tmp_path_factory, key)), HISTORY_TIMEOUT_S + 60)
    before = tree_digest(history.root)
    yield history
    assert tree_digest(history.root) == before, f"this test changed the shared directory {history.root}"


def _param(item: pytest.Item, name: str) -> Any:
    callspec = getattr(item, "callspec", None)
    return None if callspec is None else callspec.params.get(name)


def _runs_kafka(item: pytest.Item) -> bool:
    """Marked ``kafka`` (a module's own Kafka fixtures too), or given a Kafka version."""
    return (item.get_closest_marker("kafka") is not None or _param(item, "kafka_dist") is not None
            or _param(item, "kafka_newest_server") is not None or _param(item, "kafka_classes") is not None)


@pytest.hookimpl(trylast=True)  # after pytest's own grouping by version and any deselection
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """What to begin ahead of whom; and the tests that run Kafka after the others, in the order
    pytest gave them, so that the histories they read are written meanwhile (``_HISTORY_LANE``)."""
    _AHEAD_NEEDED.clear()
    _AHEAD_NEEDED.update((name, _param(item, "kafka_dist")) for item in items for name in _AHEAD
                         if name in item.fixturenames and _param(item, "kafka_dist"))
    items[:] = [item for item in items if not _runs_kafka(item)] + [item for item in items if _runs_kafka(item)]
    _HISTORIES_NEEDED.clear()
    _AFTER_NEEDED.clear()
    for item in items:
        for fixture, dist_fixture in (("kafka_history", "kafka_dist"), ("kafka_newest_history", "kafka_newest_server")):
            version = _param(item, dist_fixture)
            if fixture in item.fixturenames and version is not None:
                key = (version, dist_fixture == "kafka_dist" or version in VERSIONS)
                if key not in _HISTORIES_NEEDED:
                    _HISTORIES_NEEDED.append(key)
                _AFTER_NEEDED.add((item.module.__name__, key))


# ------------------------------------------------------------------ histories written while other tests run
# The scripted histories (tests/kafka_peer/history.py, 50-95 s each in CI) are written while the
# tests that run no Kafka go (they come first: pytest_collection_modifyitems), begun with the
# session's first test. Those tests use one core of CI's two, and leave the other to the history.
# Each is written by a process of its own (``python -m kafka_peer.history``), not a thread of this
# one: a test may replace what a thread here would call (quorum_client.transport, builtins.__import__,
# the environment), and the GIL stays the tests'. It runs niced (its nodes too): it takes the core
# the tests leave idle, not theirs. A history not begun when its reader comes is written by that
# reader's fixture, as before.
_HISTORY_LANE = Lane("kafka-histories")
_HISTORIES_NEEDED: list[tuple[str, bool]] = []  # (version, with its tools), in the order of their first reader
_AFTER_HISTORY: list[Callable[[Any], None]] = []
_AFTER_NEEDED: set[tuple[str, tuple[str, bool]]] = set()  # (test module, history key) of the collected readers
HISTORY_TIMEOUT_S = 900.0
HISTORY_NICENESS = 5  # against three busy nodes on two cores, a single-threaded pytest keeps its core
TESTS_DIR = Path(__file__).resolve().parents[1]


def _write_history(dist: KafkaDistribution, root: Path) -> Any:
    """The scripted history under ``root``; a release served without its tools gets the steps that need none."""
    from .history import SERVER_ONLY_STEPS, STEPS, write_history

    return write_history(dist, root, STEPS if dist.has("kafka-metadata-quorum") else SERVER_ONLY_STEPS)


def _history_root(tmp_path_factory: pytest.TempPathFactory, key: tuple[str, bool]) -> Path:
    version, tools = key
    return tmp_path_factory.mktemp(f"kafka-history-{version}" + ("" if tools else "-server"))


def _with_paths(env: dict[str, str]) -> dict[str, str]:
    """``env`` with the repository, then tests/, first on PYTHONPATH: tests/engine and
    tests/metashell mirror the packages' names and must never answer ``import engine``."""
    import os

    paths = [str(TESTS_DIR.parent), str(TESTS_DIR), *filter(None, [env.get("PYTHONPATH")])]
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}


def _history_in_a_process(key: tuple[str, bool], root: Path, env: dict[str, str]) -> Any:
    """The history written by ``python -m kafka_peer.history``; its output beside ``root`` (``.log``)."""
    import subprocess
    import sys

    from .history import KafkaHistory
    from .nodes import _die_with_parent

    version, tools = key
    summary, log = root.with_name(f"{root.name}.json"), root.with_name(f"{root.name}.log")
    with open(log, "wb") as out:
        done = subprocess.run([sys.executable, "-m", "kafka_peer.history", version, str(root), "--json", str(summary),
                               *([] if tools else ["--server-only"])], cwd=TESTS_DIR.parent, env=_with_paths(env),
                              stdin=subprocess.DEVNULL,
                              stdout=out, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent, timeout=HISTORY_TIMEOUT_S)
    if done.returncode != 0 or not summary.is_file():
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-60:])
        raise AssertionError(f"writing the Kafka {version} history failed (exit {done.returncode}), {log}:\n{tail}")
    return KafkaHistory.from_json(summary.read_text())


def after_history(job: Callable[[Any], None]) -> Callable[[Any], None]:
    """Register ``job(history)``, a test module's work on a history that needs only Kafka's tools
    (processes) and text, to run on the history lane once that lane wrote a history the module
    reads. Its results are the module's to keep; a failure there is left for the module's own
    tests to meet again (and report)."""
    _AFTER_HISTORY.append(job)
    return job


def _in_the_background(key: tuple[str, bool], root: Path, env: dict[str, str]) -> Any:
    """The lane's job: this thread niced (on Linux, niceness is a thread's, and its children's:
    the history's process and nodes, Kafka's tools run after), the history, then the work
    registered with ``after_history`` by the modules that read it."""
    os.nice(max(0, HISTORY_NICENESS - os.nice(0)))
    history = _history_in_a_process(key, root, env)
    for job in _AFTER_HISTORY:
        if (job.__module__, key) in _AFTER_NEEDED:
            try:
                job(history)
            except Exception:  # noqa: BLE001 - the module's tests do it again, and say what failed
                pass
    return history


def _begin_histories(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Queue every history the session's tests read. The environment (the Kafka cache's place
    among it) is taken now, on the main thread: a later test may change it while the lane runs."""
    from engine.cluster.kafka_dist import cache_root

    env = {**os.environ, "METASHELL_KAFKA_CACHE": str(cache_root())}
    for key in _HISTORIES_NEEDED:
        root = _history_root(tmp_path_factory, key)
        _HISTORY_LANE.submit(key, lambda key=key, root=root: _in_the_background(key, root, env))
    _HISTORIES_NEEDED.clear()


# ------------------------------------------------------------------ begun ahead of a version's tests
_AHEAD: dict[str, Callable[[KafkaDistribution, Path], Any]] = {}
_AHEAD_NEEDED: set[tuple[str, str]] = set()  # (fixture name, version) of the collected tests
_AHEAD_LANE = Lane("kafka-ahead")


def ahead_of_version(fixture_name: str):
    """Register ``job(dist, root)`` to begin with the first test of each Kafka version whose
    tests use the fixture ``fixture_name``; that fixture gets the value by ``take_ahead``."""
    def register(job: Callable[[KafkaDistribution, Path], Any]):
        _AHEAD[fixture_name] = job
        return job
    return register


def _ahead_job(name: str, dist: KafkaDistribution, tmp_path_factory: pytest.TempPathFactory) -> Callable[[], Any]:
    root = tmp_path_factory.mktemp(f"{name}-{dist.version}")
    return lambda: _AHEAD[name](dist, root)


def take_ahead(fixture_name: str, dist: KafkaDistribution, tmp_path_factory: pytest.TempPathFactory,
               timeout_s: float) -> Any:
    """What ``ahead_of_version`` began for this version (waited for), else made now."""
    return _AHEAD_LANE.take((fixture_name, dist.version), lambda: _ahead_job(fixture_name, dist, tmp_path_factory)(),
                            timeout_s)


@pytest.fixture(autouse=True)
def _kafka_early(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Begins what the tests to come will need: the histories with the session's first test, a
    version's ahead jobs with its first test."""
    if _HISTORIES_NEEDED:
        _begin_histories(tmp_path_factory)
    version = _param(request.node, "kafka_dist")
    if version is not None:
        for name, needed_version in sorted(_AHEAD_NEEDED):
            if needed_version == version and not _AHEAD_LANE.submitted((name, version)):
                dist = request.getfixturevalue("kafka_dist")
                _AHEAD_LANE.submit((name, version), _ahead_job(name, dist, tmp_path_factory))


@pytest.fixture(scope="module")
def _kafka_quorums():  # per module: idle JVMs would take CPU from the rest of the session
    made: dict[str, object] = {}
    yield made
    for cluster in made.values():
        cluster.close()


@pytest.fixture
def kafka_quorum(kafka_dist: KafkaDistribution, _kafka_quorums, tmp_path_factory):
    """A running dynamic quorum of three controller-only nodes and one broker (shared; ask, don't change)."""
    from .cluster import KafkaCluster

    cluster = _kafka_quorums.get(kafka_dist.version)
    if cluster is None or not all(n.alive for n in cluster.nodes):
        if cluster is not None:
            cluster.close()
        cluster = _kafka_quorums[kafka_dist.version] = KafkaCluster(
            kafka_dist, tmp_path_factory.mktemp(f"kafka-quorum-{kafka_dist.version}"),
            voters=3, brokers=1, quorum="dynamic").start()
    return cluster


@pytest.fixture(scope="session", autouse=True)
def _kill_kafka_at_end():
    yield
    kill_all()


def pytest_runtest_setup(item: pytest.Item) -> None:
    item._kafka_nodes_before = len(REGISTRY)  # type: ignore[attr-defined]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed or item.get_closest_marker("kafka") is None:
        return
    first = getattr(item, "_kafka_nodes_before", 0)
    shown = {id(n): n for n in REGISTRY[first:]} | {id(n): n for n in REGISTRY if n.alive}
    for node in shown.values():
        report.sections.append((f"Kafka {node.dist.version} node {node.node_id} log ({node.output_path})",
                                node.log_tail(80)))


@pytest.fixture(scope="module")
def secured_quorums():
    """A test module's secured Kafka quorums (kafka_peer.secured.Quorums), each started on first use
    and all killed at the module's end."""
    from .secured import Quorums  # imported on use: it makes certificates with tests/tls_material

    quorums = Quorums()
    yield quorums
    quorums.close()
