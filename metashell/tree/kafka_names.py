"""Kafka's enums by the names Kafka's own tools print, for output read by people.

The tree's values keep Kafka's numbers (``cat --json``, the export, ``records``); these turn
them into names where a person reads them (``cat``, ``ls -l``, the dashboard's node browser,
``summary``). A number Kafka has no name for stays a number.
"""

from __future__ import annotations

from typing import Any

from engine.common.directory_id import RESERVED_TEXTS
from engine.image.metadata_version import BY_LEVEL

SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}  # SecurityProtocol ids
LEADER_RECOVERY_STATES = {0: "RECOVERED", 1: "RECOVERING"}  # LeaderRecoveryState
SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}  # ScramMechanism
ZK_MIGRATION_STATES = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION"}
# AclBinding's parts: ResourceType, PatternType, AclOperation, AclPermissionType
ACL_RESOURCE_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID",
                      6: "DELEGATION_TOKEN", 7: "USER"}
ACL_PATTERN_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
ACL_OPERATIONS = {0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER",
                  8: "DESCRIBE", 9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS",
                  12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
ACL_PERMISSIONS = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}

_ACL_FIELDS = {"resourceType": ACL_RESOURCE_TYPES, "patternType": ACL_PATTERN_TYPES,
               "operation": ACL_OPERATIONS, "permissionType": ACL_PERMISSIONS}


def enum_name(names: dict[int, str], value: Any) -> Any:
    """Kafka's name for ``value``; the value itself when Kafka has none."""
    return names.get(value, value) if isinstance(value, int) else value


def metadata_version_text(level: int) -> str:
    """``4.1-IV1 (27)``: the name operators know and the level the records carry."""
    known = BY_LEVEL.get(level)
    return f"{known.name} ({level})" if known else str(level)


def named_fields(data: Any, fields: dict[str, dict[int, str]]) -> Any:
    """A JSON object (or a list of them) with the enum ``fields`` named."""
    if isinstance(data, list):
        return [named_fields(item, fields) for item in data]
    if not isinstance(data, dict):
        return data
    return {key: enum_name(fields[key], value) if key in fields else value for key, value in data.items()}


def human_endpoints(endpoints: Any) -> Any:
    """Broker and controller endpoints, their ``securityProtocol`` named."""
    return named_fields(endpoints, {"securityProtocol": SECURITY_PROTOCOLS})


def human_directories(texts: Any) -> Any:
    """Log directory ids with the reserved ones named: MIGRATING, UNASSIGNED, LOST (KIP-858)."""
    return [RESERVED_TEXTS.get(t, t) for t in texts] if isinstance(texts, list) else texts


def human_partition(data: Any) -> Any:
    data = named_fields(data, {"leaderRecoveryState": LEADER_RECOVERY_STATES})
    if isinstance(data, dict) and "directories" in data:
        data["directories"] = human_directories(data["directories"])
    return data


def human_acl(data: Any) -> Any:
    return named_fields(data, _ACL_FIELDS)


def human_scram(data: Any) -> Any:
    return named_fields(data, {"mechanism": SCRAM_MECHANISMS})


def human_feature(name: str, level: Any) -> Any:
    return metadata_version_text(level) if name == "metadata.version" and isinstance(level, int) else level
