"""The record types ``records --type`` knows, in both of Kafka's spellings, and the filter it builds.

Kafka names a metadata record type two ways: the enum constant (``MetadataRecordType``,
``BROKER_REGISTRATION_CHANGE_RECORD``, what kafka-dump-log prints as ``"type"``) and the message
class (``BrokerRegistrationChangeRecord``, what its schemas and KIPs say). Control records are
``ControlRecordType`` constants (``LEADER_CHANGE``) or the dump tool's labels (``LeaderChange``).
Both spellings of a type fold to one key (lower case, no underscores), so either is typed, in any
case, and globs match keys too (``PARTITION_*`` and ``Partition*`` are the same pattern).
"""

from __future__ import annotations

import fnmatch
import re
from typing import Callable

from engine.records import metadata_records
from engine.records.metadata_record_serde import CONTROL_TYPE_NAMES
from engine.records.record_json import CONTROL_LABELS
from metashell.shell.registry import ShellError
from metashell.shell.suggest import close_names, did_you_mean
from metashell.tree.nodes import has_glob

# the names a record this tool cannot read carries (engine.records.metadata_record_serde.UnknownRecord)
UNREADABLE = {"UNKNOWN_RECORD": "UnknownRecord", "UNKNOWN_CONTROL_RECORD": "UnknownControlRecord"}


def _spellings() -> list[tuple[str, str]]:
    """(constant, class-like name) of every type, metadata then control then unreadable."""
    metadata = {cls.type_name: cls.record_name for cls in metadata_records.RECORD_CLASSES.values()}
    control = {name: CONTROL_LABELS.get(name, name.title().replace("_", "")).rstrip(":")
               for name in CONTROL_TYPE_NAMES.values()}
    return [*metadata.items(), *control.items(), *UNREADABLE.items()]


SPELLINGS: list[tuple[str, str]] = _spellings()


def fold(name: str) -> str:
    """The key both spellings of a name share: ``brokerregistrationchangerecord``."""
    return name.replace("_", "").lower()


KEYS = {fold(constant) for constant, _ in SPELLINGS}


def key_of(type_name: str) -> str:
    """A record's key from its ``type_name`` (``UNKNOWN_RECORD(99)`` is an UNKNOWN_RECORD)."""
    return fold(re.sub(r"\(\d+\)$", "", type_name))


def names_like(typed: str) -> list[str]:
    """Every type in the spelling ``typed`` uses: constants if it has ``_`` or no lower case."""
    constant = "_" in typed or typed == typed.upper()
    return [c if constant else n for c, n in SPELLINGS]


def display_name(typed: str) -> str:
    """A type as typed, in its own spelling's exact form (``fence_broker_record`` is
    FENCE_BROKER_RECORD); a glob as typed."""
    if has_glob(typed):
        return typed
    key = fold(typed)
    return next((name for name in names_like(typed) if fold(name) == key), typed)


def type_filter(patterns: list[str] | None) -> Callable[[str], bool] | None:
    """A test of a record's ``type_name`` for ``--type PATTERN...``; None for every record. A
    name that is no type, or a glob that matches none, is a ShellError naming close ones."""
    if not patterns:
        return None
    folded = []
    for pattern in patterns:
        key = fold(pattern)
        if not any(fnmatch.fnmatchcase(k, key) for k in KEYS):
            raise ShellError(f"--type {pattern}: {'matches no' if has_glob(pattern) else 'no such'} record type"
                             f"{_hint(pattern) or ' (help: man records)'}")
        folded.append(key)
    return lambda type_name: any(fnmatch.fnmatchcase(key_of(type_name), key) for key in folded)


def _hint(pattern: str) -> str:
    names = names_like(pattern)
    body = pattern.rstrip("*")
    if body != pattern and not has_glob(body):  # a prefix glob: compare prefixes of the same length
        prefixes = {n[:len(body) + d] + "*" for n in names for d in (-1, 0, 1)}
        return did_you_mean(close_names(pattern, prefixes, limit=1))
    return did_you_mean(close_names(pattern, names))


def type_list(width: int = 88, indent: str = "    ") -> str:
    """The types' constants, wrapped, for ``man records``."""
    import textwrap

    return textwrap.fill(", ".join(c for c, _ in SPELLINGS), width, initial_indent=indent, subsequent_indent=indent)
