"""``metashell --help`` lists every command the entry point takes (dash, demo, export, bench ...),
each of which answers --help; and docs/shell.md's command list and tree table stay in step with
the shell's registry and the tree's root."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from metashell import cli
from metashell.bench.commands import run_bench
from metashell.shell.registry import COMMANDS
from metashell.shell.session import Session
from metashell.source import Source

ROOT = Path(__file__).resolve().parents[3]


def _metashell(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "metashell.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, stdin=subprocess.DEVNULL, timeout=120)


def _dispatched() -> list[str]:
    """The commands run() dispatches by their first words, read from its source (so a new one
    that the help does not list fails here)."""
    source = inspect.getsource(cli.run)
    words = [*cli.DASHBOARD_COMMANDS, *re.findall(r'argv\[0\] == "([a-z-]+)"', source)]
    words += [f"{a} {b}" for a, b in re.findall(r'argv\[:2\] == \["([a-z-]+)", "([a-z-]+)"\]', source)]
    if "run_bench(" in source:  # the benchmarks, dispatched by their name in metashell.bench.commands
        words += [f"bench {b}" for b in re.findall(r'name == "([a-z-]+)"', inspect.getsource(run_bench))]
    return words


def test_every_dispatched_command_is_in_the_tables_the_help_reads() -> None:
    assert set(_dispatched()) == {*cli.DASHBOARD_COMMANDS, "export", "record",
                                  *(f"bench {b}" for b in cli.BENCH_COMMANDS)}


@pytest.mark.slow
def test_the_top_level_help_lists_every_command() -> None:
    done = _metashell("--help")
    assert done.returncode == 0 and done.stderr == ""
    for command in _dispatched():  # each on a line of its own (bench's share one)
        assert re.search(rf"^  metashell (.* \| )?{command}\b", done.stdout, re.MULTILINE), command
    assert "metashell dash (--log-dir DIR | --snapshot FILE | --bootstrap-controller HOST:PORT" in done.stdout
    assert "--command-config FILE" in done.stdout and "security.protocol" in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("command", _dispatched())
def test_each_command_answers_help(command: str) -> None:
    done = _metashell(*command.split(), "--help")
    assert done.returncode == 0 and done.stdout.startswith(f"usage: metashell {command} "), done.stderr


# -- docs/shell.md ----------------------------------------------------------------------------------

def _section(text: str, heading: str) -> str:
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def _first_cells(section: str) -> list[str]:
    return [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]


def test_docs_list_every_shell_command() -> None:
    section = _section((ROOT / "docs" / "shell.md").read_text(), "Commands")
    documented = {word for cell in _first_cells(section) for word in re.findall(r"`([a-z]+)\b", cell)}
    assert documented == set(COMMANDS)
    for name in COMMANDS:  # and each is in man's words too
        assert COMMANDS[name].man.startswith(name), name


def test_docs_tree_table_has_every_root_node() -> None:
    section = _section((ROOT / "docs" / "shell.md").read_text(), "The tree")
    documented = {name for cell in _first_cells(section) for name in re.findall(r"`/([a-z-]+)", cell)}
    assert documented == set(Session(Source()).root.child_names())


@pytest.mark.parametrize("argv, line", [
    (["dahs", "--log-dir", "/nonexistent"], "metashell: unknown command: dahs (did you mean dash?)"),
    (["exprt", "--demo", "/topics"], "metashell: unknown command: exprt (did you mean export?)"),
    (["bench"], "metashell: bench needs one of: dash, export, attach, log, spark (metashell bench dash --help)"),
    (["bench", "dsh"], "metashell: unknown bench: dsh (did you mean dash?); give one of: dash, export, attach, log, spark"),
])
def test_a_mistyped_subcommand_is_named_before_the_source_is_asked_for(argv: list[str], line: str) -> None:
    done = _metashell(*argv)
    assert (done.returncode, done.stdout, done.stderr.splitlines()) == (1, "", [line])


def test_a_shell_command_as_the_first_word_still_runs_in_the_shell() -> None:
    done = _metashell("pwd", "--demo")
    assert (done.returncode, done.stdout.strip()) == (0, "/"), done.stderr
