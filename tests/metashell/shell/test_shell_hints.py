"""What the shell says when a name is mistyped or an answer is empty: "did you mean" for commands,
man topics, options, paths and record types; records --type in both of Kafka's spellings; no
empty answer left silent (records --type, find). By captured output, as test_shell does, and one
pass through a pseudo-terminal."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from metashell.demo.shell_demo import write_demo_log_dir
from metashell.shell.completion import complete
from metashell.shell.record_types import SPELLINGS, fold
from metashell.shell.session import Session
from metashell.source import Source
from tests.pty_terminal import Terminal


@pytest.fixture()
def session(tmp_path: Path) -> Session:
    lines: list[str] = []
    s = Session(Source(log_dir=write_demo_log_dir(tmp_path)), out=lines.append)
    s.load()
    s.lines = lines
    return s


def run(session: Session, line: str) -> tuple[int, list[str]]:
    session.lines.clear()
    status = session.run_line(line)
    return status, list(session.lines)


def _types(lines: list[str]) -> set[str]:
    return {json.loads(line.split("\t")[3])["type"] for line in lines}


@pytest.mark.parametrize("line,expected", [
    ("lss", "metashell: unknown command: lss (did you mean ls?)"),
    ("sumary", "metashell: unknown command: sumary (did you mean summary?)"),
    ("frobnicate", "metashell: unknown command: frobnicate (try: help)"),
    ("man lss", "metashell: man: lss: no such command (did you mean ls?)"),
    ("man frobnicate", "metashell: man: frobnicate: no such command (try: help)"),
    ("cat --jsn /brokers/1/state", "metashell: cat: unrecognized arguments: --jsn (did you mean --json?)"),
    ("ls --bogus", "metashell: ls: unrecognized arguments: --bogus"),
    ("cd /brokrs", "metashell: cd: /brokrs: no such node (did you mean /brokers?)"),
    ("cat /brokers/1/stat", "metashell: cat: /brokers/1/stat: no such node (did you mean /brokers/1/state?)"),
    ("cat /topcs/orders/0", "metashell: cat: /topcs: no such node (did you mean /topics/orders/0?)"),
    ("cat /topics/order/9", "metashell: cat: /topics/order: no such node (did you mean /topics/orders?)"),
    ("ls /Brokers", "metashell: ls: /Brokers: no such node (did you mean /brokers?)"),
    ("ls /topcs/*", "metashell: ls: /topcs/*: no match (did you mean /topics/* or /topic-ids/*?)"),
    ("cat /nope", "metashell: cat: /nope: no such node"),
])
def test_a_mistyped_name_gets_one_line_naming_the_close_ones(session: Session, line: str, expected: str) -> None:
    assert run(session, line) == (1, [expected])
    assert run(session, "pwd") == (0, ["/"])  # the shell goes on where it was


def test_records_type_takes_both_of_kafkas_spellings_in_any_case(session: Session) -> None:
    status, constant = run(session, "records --type BROKER_REGISTRATION_CHANGE_RECORD")
    assert status == 0 and [line.split("\t")[0] for line in constant] == ["7", "8", "9", "18", "20"]
    assert _types(constant) == {"BROKER_REGISTRATION_CHANGE_RECORD"}
    for spelling in ("BrokerRegistrationChangeRecord", "brokerRegistrationChangeRecord",
                     "broker_registration_change_record"):
        assert run(session, f"records --type {spelling}") == (0, constant), spelling
    assert _types(run(session, "records --type LeaderChange")[1]) == {"LEADER_CHANGE"}  # a control record


def test_records_type_globs_match_either_spelling(session: Session) -> None:
    status, snake = run(session, "records --type PARTITION_*")
    assert status == 0 and _types(snake) == {"PARTITION_RECORD", "PARTITION_CHANGE_RECORD"}
    assert run(session, "records --type Partition*") == (0, snake)
    assert _types(run(session, "records --type *CHANGE*")[1]) == {
        "PARTITION_CHANGE_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD", "LEADER_CHANGE"}


@pytest.mark.parametrize("line,expected", [
    ("records --type BrokerRegistrationChange",
     "--type BrokerRegistrationChange: no such record type (did you mean BrokerRegistrationChangeRecord?)"),
    ("records --type PARTITON_RECORD", "--type PARTITON_RECORD: no such record type (did you mean "
                                       "PARTITION_RECORD or PARTITION_CHANGE_RECORD?)"),
    ("records --type PARTITON_*", "--type PARTITON_*: matches no record type (did you mean PARTITION_*?)"),
    ("records --type Qwerty", "--type Qwerty: no such record type (help: man records)"),
    ("records --from 99", "--from 99 is past the last record: offsets 0..23"),
    ("records --from 20 --to 10", "--from 20 is after --to 10"),
])
def test_records_refuses_what_names_nothing(session: Session, line: str, expected: str) -> None:
    assert run(session, line) == (1, [f"metashell: records: {expected}"])


def test_an_empty_answer_says_so(session: Session) -> None:
    assert run(session, "records --type FenceBrokerRecord --from 3 --to 9") == (
        0, ["metashell: records: no FenceBrokerRecord records at offsets 3..9"])
    assert run(session, "records --type ZK_MIGRATION_STATE_RECORD") == (
        0, ["metashell: records: no ZK_MIGRATION_STATE_RECORD records at offsets 0..23"])
    status, lines = run(session, "records --from 22 --to 40")
    assert status == 0 and [line.split("\t")[0] for line in lines[:-1]] == ["22", "23"]
    assert lines[-1] == "metashell: records: the records end at offset 23, before --to 40"
    assert run(session, "find /topics -name zz*") == (0, ["metashell: find: no node under /topics matches -name zz*"])
    assert run(session, "find /brokers/1 -type d -name x") == (
        0, ["metashell: find: no node under /brokers/1 matches -name x -type d"])


@pytest.mark.parametrize("before,expected", [
    ("man sum", ["summary"]),
    ("records --type PARTITION_", ["PARTITION_CHANGE_RECORD", "PARTITION_RECORD"]),
    ("records --type Partition", ["PartitionChangeRecord", "PartitionRecord"]),
    ("records --type NO_OP_RECORD fence", ["FenceBrokerRecord"]),
    ("records --type leader_c", ["LEADER_CHANGE"]),
])
def test_completion_of_man_topics_and_record_types(session: Session, before: str, expected: list[str]) -> None:
    assert [c.text for c in complete(session, before)] == expected


def test_man_records_lists_the_types_and_help_takes_a_command(session: Session) -> None:
    manual = "\n".join(run(session, "man records")[1])
    assert all(constant in manual for constant, _ in SPELLINGS)
    assert run(session, "help records") == (0, run(session, "man records")[1])
    assert run(session, "help lss") == (1, ["metashell: help: lss: no such command (did you mean ls?)"])


def test_every_type_name_spells_two_ways_onto_one_key() -> None:
    """Kafka's constant and class name fold to the same key, and no two types share one."""
    keys = [fold(constant) for constant, _ in SPELLINGS]
    assert all(fold(constant) == fold(name) for constant, name in SPELLINGS)
    assert len(keys) == len(set(keys))


def test_did_you_mean_in_a_terminal(tmp_path: Path) -> None:
    env = {**os.environ, "TERM": "xterm", "NO_COLOR": "1", "PROMPT_TOOLKIT_NO_CPR": "1",
           "METASHELL_HISTORY": str(tmp_path / "history")}
    env.pop("CI", None)
    terminal = Terminal(["--demo"], env)
    try:
        row, _ = terminal.expect(r"^metashell:/>$")
        terminal.type("lss\r")
        assert terminal.expect(r"^metashell: unknown command: lss \(did you mean ls\?\)$", row)[0] == row + 1
        terminal.type("records --type BrokerRegistrationChangeRecord --to 8\r")
        at, _ = terminal.expect(r"^7\t1\t\d+\t\{\"type\":\"BROKER_REGISTRATION_CHANGE_RECORD\"", row + 2)
        terminal.expect(r"^8\t1\t", at + 1)
        terminal.type("exit\r")
        assert terminal.close() == 0
    finally:
        terminal.kill()
