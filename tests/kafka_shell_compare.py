"""metashell's ``/image`` against Kafka's ``kafka-metadata-shell``, command by command and byte for
byte (no tests here; test_kafka_metadata_shell.py and test_kafka_shell_corpus.py use it).

Kafka's side (``kafka_transcript``): one interactive JVM per file (tests/kafka_shell_tree.py
drives it through pipes), walked from what Kafka itself lists: ``cat /image/provenance``,
``ls /image``, ``ls`` of each directory under it, ``find`` and ``tree`` of each of their
children, and an ``ls`` and a ``cat`` of several targets. Every answer is kept as Kafka printed
it. The walk needs nothing of ours, so it can run in the background beside a history being
written (kafka_peer.fixtures.after_history).

Our side (``our_transcript``): the same command lines through metashell's shell on the same file.
The answers must be the same characters, but for what docs/shell.md lists as ours on purpose:

* an error's wording: Kafka's ``find: PATH: no such file or directory.`` and ours both mean the
  path opens nothing, and compare as that;
* names Kafka prints raw and ours encodes (nodes.encode_name) compare decoded;
* a quota entity with a default part: Kafka names it without that part (the empty name, when all
  are default: its shell lists it and opens nothing); ours ``clientId(<default>)``. Its ``ls``
  compares under Kafka's names, and Kafka's walk skips the empty name.

And for a Kafka release older than 4.3 (``OLDER_SHELL``), what that release prints otherwise
(``expected_of_older``), exactly: it lists ``/image/features/zkMigrationState`` (and opens
nothing there), keeps every config (4.3 drops those its version does not define:
metashell.tree.kafka_shell_configs), its BrokerRegistration has no ``cordonedDirectories``, and
its StandardAcl, a class then (a record since), prints ``StandardAcl(...)``, not ``StandardAcl[...]``.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator
from unittest import mock

from engine.cluster.kafka_dist import version_key
from metashell.shell.session import Session
from metashell.source import Source
from metashell.tree.image_layout import kafka_quota_entity_name, quota_node_name
from metashell.tree.kafka_text import java_order
from metashell.tree.nodes import decode_name
from tests.kafka_shell_tree import _start_shell, last_batches, provenance_of, shell_copy

PROVENANCE = "cat /image/provenance"
OLDER_SHELL = (4, 3)  # releases before this one print what expected_of_older says
_KAFKA_NOT_FOUND = re.compile(r"(?:ls|cat|find|tree): (.*): [Nn]o such file or directory\.")
_OUR_NOT_FOUND = re.compile(r"metashell: (?:ls|cat|find|tree): (.*?): no such node(?: \(did you mean .*\?\))?")
_CORDONED = re.compile(r"^(\s*BrokerRegistration\(.*), cordonedDirectories=null\)$", re.MULTILINE)
_RECORD_ACL = re.compile(r"^(\s*)StandardAcl\[(.*)\]$", re.MULTILINE)

Answers = dict[str, str]  # command line -> what it printed (every line with its end)


def quoted(path: str) -> str | None:
    """``path`` as one word of a command line, for both shells; None if it cannot be one."""
    return None if "'" in path or "\n" in path else f"'{path}'"


def _lines(answer: str) -> list[str]:
    return answer.split("\n")[:-1]


# -- Kafka's side -----------------------------------------------------------------------------------

def walk_commands(ask) -> Answers:
    """Kafka's answers to the walk (see the top), ``ask(command) -> answer`` in one shell."""
    answers: Answers = {"ls /image": ask("ls /image")}
    for top in _lines(answers["ls /image"]):
        if top == "provenance":
            continue
        listing = f"ls /image/{top}"
        answers[listing] = ask(listing)
        for child in _lines(answers[listing]):
            word = quoted(f"/image/{top}/{child}")
            if not child or word is None:
                continue  # the empty name opens nothing (nor would the parent's path it spells)
            for command in ("find", "tree"):
                answers[f"{command} {word}"] = ask(f"{command} {word}")
    for command in SEVERAL_TARGETS:
        answers[command] = ask(command)
    return answers


# a file and directories (an empty one among them, often), and several files: each command's own
# form; and names Kafka's shell opens without listing them (any finalized_<name>; Integer.valueOf's 01, +1)
SEVERAL_TARGETS = ("ls /image/producerIds/nextProducerId /image/cluster /image/delegationToken /image/acls",
                   "cat /image/features/metadataVersion /image/producerIds/nextProducerId",
                   "cat /image/features/finalized_metadata.version", "cat /image/features/finalized_nope",
                   "cat /image/cluster/brokers/+1", "cat /image/cluster/brokers/01")


def kafka_transcript(dist, path: Path, scratch: Path) -> Answers:
    """Kafka's shell on one file (a copy cut after its last data batch: kafka_shell_tree.shell_copy),
    in one JVM. The shell answers before its loader has read the whole file, so the provenance is
    asked until it shows the file's last data batch."""
    copy = shell_copy(path, scratch / "files")
    expected = last_batches(copy)[0]
    shell = _start_shell(dist, copy, scratch / "kafka-shell.err")
    try:
        while provenance_of(text := shell.ask(PROVENANCE, raw=True))[0] < expected[0]:
            assert time.monotonic() < shell.deadline, f"Kafka's shell never loaded {path}: {text!r}"
        answers = {PROVENANCE: text}
        answers.update(walk_commands(lambda command: shell.ask(command, raw=True)))
        if version_key(dist.version) < OLDER_SHELL:
            answers["cat /image/features/zkMigrationState"] = shell.ask("cat /image/features/zkMigrationState",
                                                                       raw=True)
    finally:
        shell.close()
    return answers


# -- ours -------------------------------------------------------------------------------------------------

@contextmanager
def every_config_shown() -> Iterator[None]:
    """Ours as Kafka before 4.3 keeps configs: all of them."""
    with mock.patch("metashell.tree.image_layout.shown_in_kafka_shell", lambda resource_type, name: True):
        yield


def our_transcript(source: Source, commands: list[str], older: bool = False,
                   offset: int | None = None) -> tuple[Answers, dict[str, str]]:
    """Our answers to ``commands`` on ``source`` (at ``offset``, for a log directory; secrets shown,
    as Kafka's shell shows them), and our quota entity names with the names Kafka gives them."""
    session = Session(source, show_secrets=True)
    session.load(offset=offset)
    quota_names = {quota_node_name(e): kafka_quota_entity_name(e) for e in session.image.client_quotas}
    answers: Answers = {}
    with every_config_shown() if older else _nothing():
        for command in commands:
            lines: list[str] = []
            session.out = session.err = lines.append
            session.run_line(command)
            answers[command] = "".join(f"{line}\n" for line in lines)
    return answers, quota_names


@contextmanager
def _nothing() -> Iterator[None]:
    yield


# -- the comparison ---------------------------------------------------------------------------------------

def _decoded(name: str) -> str:
    return decode_name(name) if ("%" in name or "<" in name) and decode_name(name) is not None else name


def in_kafka_names(command: str, answer: str, quota_names: dict[str, str]) -> str:
    """Our answer with our encoded names and quota entity names as Kafka prints them."""
    if command == "ls /image/clientQuotas":
        names = sorted((quota_names.get(n, _decoded(n)) for n in _lines(answer)), key=java_order)
        return "".join(f"{n}\n" for n in names)
    if command.startswith(("ls ", "find ")):
        return "".join("/".join(map(_decoded, line.split("/"))) + "\n" for line in _lines(answer))
    if command.startswith("tree "):
        return "".join((line[:len(line) - len(line.lstrip(" "))] + _decoded(line.strip(" ")[:-1]) + ":"
                        if line.endswith(":") and "%" in line else line) + "\n" for line in _lines(answer))
    return answer


def expected_of_older(command: str, answer: str) -> str:
    """What a Kafka release before 4.3 prints where ours prints ``answer`` (the newest's form)."""
    if command == "ls /image/features":
        return "".join(f"{n}\n" for n in sorted([*_lines(answer), "zkMigrationState"], key=java_order))
    return _RECORD_ACL.sub(r"\1StandardAcl(\2)", _CORDONED.sub(r"\1)", answer))


def same_meaning(kafka: str, ours: str) -> bool:
    if kafka == ours:
        return True
    theirs, mine = _KAFKA_NOT_FOUND.fullmatch(kafka.rstrip("\n")), _OUR_NOT_FOUND.fullmatch(ours.rstrip("\n"))
    return bool(theirs and mine and theirs.group(1).strip("'") == mine.group(1))


@dataclass
class Comparison:
    label: str
    differences: list[str] = field(default_factory=list)
    compared: Counter = field(default_factory=Counter)  # commands and leaf kinds compared


LEAF_KINDS = {"broker": "BrokerRegistration(", "controller": "ControllerRegistration(",
              "partition": "PartitionRegistration(", "acl": "StandardAcl", "scram": "ScramCredentialData(",
              "token": "DelegationTokenData", "metadata version": "Optional["}
# the rarer states a leaf can show, counted so that a coverage check can ask for them
NOTABLE = {"partition with ELR": re.compile(r"PartitionRegistration\(.*(elr|lastKnownElr)=\[\d"),
           "partition being reassigned": re.compile(r"PartitionRegistration\(.*(adding|removing)Replicas=\[\d"),
           "fenced broker": re.compile(r"BrokerRegistration\(.*, fenced=true"),
           "broker shutting down": re.compile(r"BrokerRegistration\(.*inControlledShutdown=true")}


def compare(label: str, kafka: Answers, ours: Answers, quota_names: dict[str, str], older: bool,
            skip: frozenset[str] = frozenset()) -> Comparison:
    """Every command's answers, Kafka's against ours (as Kafka's release prints them)."""
    comparison = Comparison(label)
    for command, theirs in kafka.items():
        if command in skip:
            continue
        if command not in ours:
            comparison.differences.append(f"{label}: {command}: not asked of ours")
            continue
        mine = in_kafka_names(command, ours[command], quota_names)
        mine = expected_of_older(command, mine) if older else mine
        comparison.compared["command"] += 1
        if not same_meaning(theirs, mine):
            comparison.differences.append(f"{label}: {command}: {_first_difference(theirs, mine)}")
            continue
        if command.startswith("tree "):
            for line in _lines(theirs):
                comparison.compared["line"] += 1
                for kind, mark in LEAF_KINDS.items():
                    comparison.compared[kind] += mark in line
                for state, pattern in NOTABLE.items():
                    comparison.compared[state] += bool(pattern.search(line))
                comparison.compared["config"] += command.startswith("tree '/image/configs/") and not line.endswith(":")
                comparison.compared["quota"] += command.startswith("tree '/image/clientQuotas/") \
                    and not line.endswith(":")
    return comparison


def _first_difference(kafka: str, ours: str) -> str:
    theirs, mine = _lines(kafka) or [kafka], _lines(ours) or [ours]
    for index, (k, o) in enumerate(zip(theirs, mine)):
        if k != o:
            return f"line {index + 1}:\n  kafka:     {k!r}\n  metashell: {o!r}"
    return f"kafka printed {len(theirs)} lines, metashell {len(mine)}: {kafka[-300:]!r} / {ours[-300:]!r}"
