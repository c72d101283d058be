"""metadata.version levels and the feature levels a new cluster is formatted with.

Levels are Kafka's MetadataVersion feature levels (3.3-IV3 = 7 ... 4.4-IV2 = 33, and 4.5-IV0 = 34,
not yet production in Kafka 4.4.0), read off Kafka's own MetadataVersion and Feature classes.
"""

from __future__ import annotations

import functools

from dataclasses import dataclass
from typing import NamedTuple

from engine.common.errors import ConfigError

_LEVELS = [
    ("3.3-IV3", 7), ("3.4-IV0", 8), ("3.5-IV0", 9), ("3.5-IV1", 10), ("3.5-IV2", 11),
    ("3.6-IV0", 12), ("3.6-IV1", 13), ("3.6-IV2", 14), ("3.7-IV0", 15), ("3.7-IV1", 16),
    ("3.7-IV2", 17), ("3.7-IV3", 18), ("3.7-IV4", 19), ("3.8-IV0", 20), ("3.9-IV0", 21),
    ("4.0-IV0", 22), ("4.0-IV1", 23), ("4.0-IV2", 24), ("4.0-IV3", 25), ("4.1-IV0", 26),
    ("4.1-IV1", 27), ("4.2-IV0", 28), ("4.2-IV1", 29), ("4.3-IV0", 30), ("4.4-IV0", 31),
    ("4.4-IV1", 32), ("4.4-IV2", 33), ("4.5-IV0", 34),
]
# What `kraftd storage format` writes without --release-version: the newest release the test suite
# runs end to end against Apache Kafka itself (4.3; Kafka's 4.4 tools are not on Maven Central yet).
# A node refuses a metadata.version newer than it knows, so this stays at a release we prove.
LATEST_PRODUCTION = "4.3-IV0"


@dataclass(frozen=True, slots=True)
class MetadataVersion:
    name: str  # e.g. "3.7-IV4"
    level: int

    @property
    def release(self) -> str:
        return self.name.split("-")[0]


BY_NAME = {name: MetadataVersion(name, level) for name, level in _LEVELS}
BY_LEVEL = {level: MetadataVersion(name, level) for name, level in _LEVELS}


def parse_release_version(text: str | None) -> MetadataVersion:
    """"3.7" (its newest sub-version), "3.7-IV2", or None for the latest production version."""
    if text is None:
        return BY_NAME[LATEST_PRODUCTION]
    text = text.strip()
    if text in BY_NAME:
        return BY_NAME[text]
    matches = [mv for name, mv in BY_NAME.items() if mv.release == text]
    if matches:
        return matches[-1]
    known = ", ".join(sorted({mv.release for mv in BY_NAME.values()}, key=_release_key))
    raise ConfigError(f"unknown release version {text!r} (known: {known})")


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


def version_name(level: int) -> str:
    mv = BY_LEVEL.get(level)
    return mv.name if mv else f"unknown({level})"


# Features a formatter may set with --feature (Kafka's Feature enum, plus metadata.version).
KNOWN_FEATURES = ("metadata.version", "kraft.version", "group.version", "transaction.version",
                  "eligible.leader.replicas.version", "share.version", "streams.version")
KRAFT_VERSION_1_MINIMUM = "3.9-IV0"  # dynamic quorums (KIP-853) need this metadata.version


def check_feature_names(features: dict[str, int]) -> None:
    for name in features:
        if name not in KNOWN_FEATURES:
            raise ConfigError(f"unsupported feature {name!r} (supported: {', '.join(KNOWN_FEATURES)})")


def resolve_metadata_version(release_version: str | None, features: dict[str, int]) -> MetadataVersion:
    """``--feature metadata.version=N`` wins over ``--release-version``, as in Kafka's formatter."""
    if "metadata.version" not in features:
        return parse_release_version(release_version)
    level = features["metadata.version"]
    if level not in BY_LEVEL:
        raise ConfigError(f"unknown metadata.version level {level} "
                          f"(known: {min(BY_LEVEL)} to {max(BY_LEVEL)})")
    return BY_LEVEL[level]


def default_feature_levels(mv: MetadataVersion) -> dict[str, int]:
    """The other finalized features a new cluster at ``mv`` starts with, as Kafka's formatter sets them."""
    levels = {}
    if mv.level >= BY_NAME["4.0-IV0"].level:
        levels["group.version"] = 1
    if mv.level >= BY_NAME["4.0-IV2"].level:
        levels["transaction.version"] = 2
    if mv.level >= BY_NAME["4.1-IV0"].level:
        levels["eligible.leader.replicas.version"] = 1
    if mv.level >= BY_NAME["4.2-IV0"].level:
        levels["share.version"] = 2 if mv.level >= BY_NAME["4.4-IV0"].level else 1
    if mv.level >= BY_NAME["4.2-IV1"].level:
        levels["streams.version"] = 1
    return levels


def feature_levels_for(mv: MetadataVersion, overrides: dict[str, int] | None = None) -> list[tuple[str, int]]:
    """(name, level) records for bootstrap.checkpoint: metadata.version first, then the rest by
    name. Level 0 means "not enabled" and gets no record; kraft.version is never a record here
    (it lives in the KRaftVersionRecord of the first snapshot)."""
    levels = default_feature_levels(mv)
    levels.update(overrides or {})
    for name in ("metadata.version", "kraft.version"):
        levels.pop(name, None)
    return [("metadata.version", mv.level)] + sorted((k, v) for k, v in levels.items() if v > 0)


class RecordVersions(NamedTuple):
    """The record versions and abilities a metadata.version level writes with, read off Kafka's
    MetadataVersion (registerBrokerRecordVersion, partitionRecordVersion, ...): a controller
    writes at the finalized level so that every node of that level can read the log."""

    level: int
    register_broker: int  # RegisterBrokerRecord: 1 (3.3), 2 (3.4, migration flag), 3 (3.7-IV2, log dirs), 4 (4.3, cordoned)
    broker_registration_change: int  # 1 (in controlled shutdown), 2 (3.7-IV2, log dirs), 3 (4.3, cordoned)
    partition: int  # PartitionRecord: 0, 1 (3.7-IV2, directories), 2 (4.0-IV1, ELR)
    partition_change: int  # PartitionChangeRecord: 0, 1 (3.7-IV2), 2 (4.0-IV1)
    metadata_transactions: bool  # KIP-868 Begin/EndTransactionRecord (3.6-IV1)
    directory_assignment: bool  # KIP-858 (3.7-IV2)
    elr: bool  # KIP-966 records (4.0-IV1); whether ELR is on is the eligible.leader.replicas.version feature
    scram: bool  # UserScramCredentialRecord (3.5-IV2)
    delegation_tokens: bool  # (3.6-IV2)
    controller_registration: bool  # KIP-919 RegisterControllerRecord (3.7-IV0)
    leader_epoch_bump_on_isr_shrink: bool  # before 3.6-IV0 an ISR shrink bumps the leader epoch
    cordoned_log_dirs: bool  # KIP-1066 (4.3-IV0)


@functools.cache  # asked per record on a controller's hot paths; a pure function of the level
def record_versions(level: int) -> RecordVersions:
    """What a controller writes at metadata.version ``level`` (7 = 3.3-IV3 and up)."""
    def at_least(name: str) -> bool:
        return level >= BY_NAME[name].level

    dirs, elr, cordoned = at_least("3.7-IV2"), at_least("4.0-IV1"), at_least("4.3-IV0")
    return RecordVersions(
        level=level,
        register_broker=4 if cordoned else 3 if dirs else 2 if at_least("3.4-IV0") else 1,
        broker_registration_change=3 if cordoned else 2 if dirs else 1,
        partition=2 if elr else 1 if dirs else 0,
        partition_change=2 if elr else 1 if dirs else 0,
        metadata_transactions=at_least("3.6-IV1"), directory_assignment=dirs, elr=elr,
        scram=at_least("3.5-IV2"), delegation_tokens=at_least("3.6-IV2"),
        controller_registration=at_least("3.7-IV0"), leader_epoch_bump_on_isr_shrink=not at_least("3.6-IV0"),
        cordoned_log_dirs=cordoned)
