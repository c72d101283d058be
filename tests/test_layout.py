"""The layout docs/architecture.md draws holds in the code: no import cycles, the layers, one door to kio.

Every import counts, including those inside functions and under ``TYPE_CHECKING``: a cycle
hidden in a function body still ties two files together for a reader.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "metashell", "themes")

# package -> the packages it may import (besides itself). The engine's layers, bottom up:
# common < records < storage < image, net < raft < controller < broker < server; admin (the quorum
# client and storage formatting, as libraries) over the controller; tools (the kraftd commands) on top.
PRODUCT = {
    "engine.common": set(),
    "engine.records": {"engine.common"},
    "engine.storage": {"engine.common", "engine.records"},
    "engine.image": {"engine.common", "engine.records", "engine.storage"},
    "engine.net": {"engine.common", "engine.records"},
    "engine.raft": {"engine.common", "engine.records", "engine.storage", "engine.net"},
    # the controller's core is pure: no sockets, no Raft, only images and records
    "engine.controller": {"engine.common", "engine.records", "engine.storage", "engine.image"},
    # the simulated broker: its lifecycle core is pure as the controller's; its node edge uses Raft
    # (a metadata observer) and the network. It writes only by RPC to the controller, but answers
    # its clients' Describe* with the controller's own read-only commands over its image (one
    # reading of configs and ACLs, as Kafka's broker and controller share the metadata module)
    "engine.broker": {"engine.common", "engine.records", "engine.storage", "engine.image", "engine.net",
                      "engine.raft", "engine.controller"},
    "engine.server": {"engine.common", "engine.records", "engine.storage", "engine.image", "engine.net",
                      "engine.raft", "engine.controller", "engine.broker"},
    # Kafka's clients/admin and metadata/storage: libraries the tools, metashell and the harness share
    "engine.admin": {"engine.common", "engine.records", "engine.storage", "engine.image", "engine.net",
                     "engine.raft", "engine.controller"},
}
# The harness: what measures, simulates, fuzzes or runs the product locally. Nothing in the product
# imports it; the kraftd command line on top dispatches to it.
HARNESS = {
    "engine.cluster": set(PRODUCT),  # it starts `python -m engine.tools.cli start` as a process, never imports it
    "engine.sim": set(PRODUCT),
    "engine.bench": set(PRODUCT) | {"engine.cluster", "engine.sim"},
    "engine.fuzz": set(PRODUCT),
}
ALLOWED = {
    **PRODUCT,
    **HARNESS,
    "engine.tools": set(PRODUCT) | set(HARNESS),
}

# metashell's packages, over the engine (any of it): tree and source at the bottom, then the
# export, then the shell (whose `export` command uses it); the dashboard beside them; the
# benchmarks over them; the command line (metashell.cli, metashell.demo.shell_demo) on top may use everything.
ALLOWED_METASHELL = {
    "metashell.tree": set(),
    "metashell.live": set(),
    "metashell.source": {"metashell.live"},
    # the history asked by path (change items, log and diff's sources, the index): over the tree's layout
    "metashell.history": {"metashell.tree"},
    # the export's history front end (history_dataframe, --history) reads through the kraft data source
    "metashell.export": {"metashell.tree", "metashell.source", "metashell.history", "metashell.spark"},
    # the kraft data source: the export's schemas and row printers (its modules, not its front end:
    # no module cycle), metadata transactions, and the recorder's follower for the live stream
    "metashell.spark": {"metashell.export", "metashell.history", "metashell.live", "metashell.record"},
    "metashell.shell": {"metashell.tree", "metashell.source", "metashell.export", "metashell.history"},
    "metashell.dashboard": {"metashell.tree", "metashell.source", "metashell.live", "metashell.history"},
    # the flight recorder: the live attachment's follower and settings, writing an archive (and
    # keeping its history index, metashell.history's)
    "metashell.record": {"metashell.live", "metashell.history"},
    # the demo histories, written by driving the engine
    "metashell.demo": set(),
    # benchmarks that span the others (the attach bench: a seeded quorum, a load, an attached tool)
    "metashell.bench": {"metashell.tree", "metashell.source", "metashell.live", "metashell.export",
                        "metashell.dashboard", "metashell.history", "metashell.shell", "metashell.record",
                        "metashell.spark"},
}


def _modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            modules[name.removesuffix(".__init__")] = path
    return modules


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


MODULES = _modules()
GRAPH = {name: {dep for dep in _imports(path) if dep in MODULES and dep != name} for name, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_modules() -> None:
    assert _cycles(GRAPH) == []


def test_the_engine_never_imports_metashell() -> None:
    offenders = [(name, dep) for name, deps in GRAPH.items() if name.startswith("engine")
                 for dep in deps if dep.startswith("metashell")]
    assert offenders == []


def test_only_kio_codec_imports_kio() -> None:
    importers = sorted(name for name, path in MODULES.items()
                       if any(dep == "kio" or dep.startswith("kio.") for dep in _imports(path)))
    assert importers == ["engine.records.kio_codec"]


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_engine_packages_import_only_the_layers_below(package: str) -> None:
    used = {".".join(dep.split(".")[:2]) for name, deps in GRAPH.items()
            if name == package or name.startswith(package + ".") for dep in deps if dep.startswith("engine.")}
    assert used - {package} <= ALLOWED[package]


def test_every_engine_package_is_placed_in_a_layer() -> None:
    packages = {".".join(name.split(".")[:2]) for name in MODULES if name.count(".") >= 1 and name.startswith("engine.")}
    assert packages <= set(ALLOWED), "a new engine package needs its place in ALLOWED and in docs/architecture.md"


def test_modules_are_packages_a_kafka_engineer_would_guess() -> None:
    """Nothing sits loose in engine/: every module lives in a package named after Kafka's modules."""
    loose = sorted(p.name for p in (ROOT / "engine").glob("*.py") if p.name != "__init__.py")
    assert loose == []


@pytest.mark.parametrize("package", sorted(ALLOWED_METASHELL))
def test_metashell_packages_import_only_the_layers_below(package: str) -> None:
    used = {".".join(dep.split(".")[:2]) for name, deps in GRAPH.items()
            if name == package or name.startswith(package + ".") for dep in deps if dep.startswith("metashell.")}
    assert used - {package} <= ALLOWED_METASHELL[package]


# metashell's product: what an operator runs. Its harness (benchmarks, demo histories) sits apart.
METASHELL_HARNESS = ("metashell.bench", "metashell.demo")
ENGINE_HARNESS = tuple(sorted(HARNESS))


def _harness_imports(module: str, graph: dict[str, set[str]]) -> list[str]:
    """The harness modules ``module`` imports (its own package's aside)."""
    harness = ENGINE_HARNESS + METASHELL_HARNESS
    return sorted(dep for dep in graph[module] if dep.startswith(harness) and dep.split(".")[:2] != module.split(".")[:2])


@pytest.mark.parametrize("module", sorted(name for name in MODULES
                                          if name.startswith(tuple(PRODUCT)) or name.startswith(
                                              tuple(p for p in ALLOWED_METASHELL if p not in METASHELL_HARNESS))))
def test_the_product_never_imports_its_harness(module: str) -> None:
    """Benchmarks, simulations, fuzzing, local clusters and demos are built on the product, never under it."""
    assert _harness_imports(module, GRAPH) == [], f"{module} imports the harness"


def test_the_harness_rule_sees_a_breach() -> None:
    """The rule above on a made-up graph: a product module importing a bench or demo module is
    caught; one importing the product, or a harness module its own package's, is not."""
    graph = {"engine.raft.raft_client": {"engine.bench.replay", "engine.raft.raft_log"},
             "metashell.shell.session": {"metashell.demo.shell_demo", "metashell.tree.nodes"},
             "engine.bench.replay": {"engine.bench.peer"}}
    assert _harness_imports("engine.raft.raft_client", graph) == ["engine.bench.replay"]
    assert _harness_imports("metashell.shell.session", graph) == ["metashell.demo.shell_demo"]
    assert _harness_imports("engine.bench.replay", graph) == []
