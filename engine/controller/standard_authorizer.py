"""Kafka's StandardAuthorizer (KIP-801) over the ACLs of a metadata image: who may do what.

The rules of org.apache.kafka.metadata.authorizer.StandardAuthorizerData, for one action
(an operation on a LITERAL resource: a type and a name) by one principal from one host:

- a principal listed in ``super.users`` may do anything;
- otherwise the ACLs that apply to the resource are those of its type that are LITERAL with its
  exact name, LITERAL with the wildcard name "*", or PREFIXED with a prefix of its name;
- of those, an ACL counts when its principal is the caller's or the wildcard ``User:*``, its
  host is the caller's address or "*", and its operation is the action's, ALL, or (for ALLOW
  ACLs only) one that implies it: READ, WRITE, DELETE and ALTER imply DESCRIBE, ALTER_CONFIGS
  implies DESCRIBE_CONFIGS;
- a DENY that counts wins over any ALLOW; an ALLOW that counts allows;
- when no ACL at all applies to the resource (whoever it names), the answer is
  ``allow.everyone.if.no.acl.found`` (default false); when some apply but none counts, deny.

Pure: the ACLs are read from whatever image the caller gives, so an ACL committed a moment ago
counts at the next request.

Until the ACLs are loaded (the owner says when: Kafka's AclPublisher completes the initial load once
the metadata has caught up with the high watermark), only super users are answered; anyone else's
action is "not ready", which Kafka's StandardAuthorizer throws as AuthorizerNotReadyException and its
request handlers answer as UNKNOWN_SERVER_ERROR, a retriable error. Judging by a log still being
replayed could allow what a later record denies, or deny a broker for good what it may do.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from engine.common.errors import ConfigError

AUTHORIZER_CLASS_NAME_KEY = "authorizer.class.name"
SUPER_USERS_KEY = "super.users"
ALLOW_EVERYONE_KEY = "allow.everyone.if.no.acl.found"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

# Kafka's AclOperation, ResourceType, PatternType and AclPermissionType codes
ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 2, 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, CREATE_TOKENS = 9, 10, 11, 13
TOPIC, GROUP, CLUSTER, USER = 2, 3, 4, 7
LITERAL, PREFIXED = 3, 4
DENY, ALLOW = 2, 3
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"

_IMPLIES_DESCRIBE = frozenset({DESCRIBE, READ, WRITE, DELETE, ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({DESCRIBE_CONFIGS, ALTER_CONFIGS})


@dataclass(frozen=True, slots=True)
class AuthorizerConfig:
    """``authorizer.class.name`` (empty: no authorization, everything allowed), ``super.users``
    and ``allow.everyone.if.no.acl.found``."""

    enabled: bool = False
    super_users: frozenset[str] = field(default_factory=frozenset)
    allow_everyone_if_no_acl_found: bool = False

    @classmethod
    def from_properties(cls, props: Mapping[str, str], where: str = "") -> "AuthorizerConfig":
        class_name = props.get(AUTHORIZER_CLASS_NAME_KEY, "").strip()
        if class_name and class_name != STANDARD_AUTHORIZER:
            raise ConfigError(f"{AUTHORIZER_CLASS_NAME_KEY} {class_name!r} is not supported (only "
                              f"{STANDARD_AUTHORIZER})", path=where)
        return cls(enabled=bool(class_name), super_users=parse_super_users(props.get(SUPER_USERS_KEY, ""), where),
                   allow_everyone_if_no_acl_found=_boolean(props.get(ALLOW_EVERYONE_KEY, ""), where))


def parse_super_users(text: str, where: str = "") -> frozenset[str]:
    """``super.users``: principals separated by semicolons (not commas: a principal such as a
    certificate's distinguished name holds commas), each "Type:name"."""
    users = set()
    for item in text.split(";"):
        principal = item.strip()
        if not principal:
            continue
        if ":" not in principal:
            raise ConfigError(f"{SUPER_USERS_KEY}: {principal!r} is not a principal (Type:name, e.g. User:admin)",
                              path=where)
        users.add(principal)
    return frozenset(users)


def _boolean(text: str, where: str) -> bool:
    value = text.strip().lower()
    if value not in ("", "true", "false"):
        # Kafka reads anything but "true" as false; a typo silently denying everyone is worse than a refusal
        raise ConfigError(f"{ALLOW_EVERYONE_KEY} must be true or false, got {text.strip()!r}", path=where)
    return value == "true"


def _applies_to(acl: Any, resource_type: int, resource_name: str) -> bool:
    """Whether the ACL's resource pattern covers this LITERAL resource."""
    if acl.resource_type != resource_type:
        return False
    if acl.pattern_type == LITERAL:
        return acl.resource_name == resource_name or acl.resource_name == WILDCARD
    if acl.pattern_type == PREFIXED:
        return resource_name.startswith(acl.resource_name)
    return False


_IPV4 = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})", re.ASCII)  # Java's \d: ASCII
_IPV4_CIDR = re.compile(_IPV4.pattern + r"/(\d{1,2})", re.ASCII)
_PREFIX = re.compile(r"[+-]?\d+")  # Integer.parseInt's


def _ipv4(text: str, pattern: re.Pattern[str] = _IPV4) -> tuple[int, ...] | None:
    match = pattern.fullmatch(text)
    if match is None or any(int(octet) > 255 for octet in match.groups()[:4]):
        return None
    return tuple(int(part) for part in match.groups())


def _ipv6(text: str) -> int | None:
    """An IPv6 address as Java's InetAddress.getByName reads one, as an int; None for anything
    else, an IPv4-mapped address included (Java makes that an Inet4Address)."""
    try:
        address = ipaddress.IPv6Address(text)
    except ValueError:
        return None
    return None if address.ipv4_mapped is not None else int(address)


def cidr_contains(cidr: str, host: str) -> bool:
    """Kafka 4.4's CidrUtils.isInRange(host, cidr): whether an ACL host written as a
    CIDR block covers the client's address; false for whatever does not parse. IPv4 as Apache
    commons-net's SubnetUtils reads it with the network and broadcast addresses included
    (leading zeros allowed; 0.0.0.0 is in no range), IPv6 when the block's text has a ':'."""
    if "/" not in cidr:
        return False
    if ":" in cidr:
        address_text, _, bits_text = cidr.partition("/")
        network, address = _ipv6(address_text), _ipv6(host)
        if network is None or address is None or not _PREFIX.fullmatch(bits_text):
            return False
        bits = int(bits_text)
        if not 0 <= bits <= 128:
            return False
        mask = ((1 << 128) - 1) ^ ((1 << (128 - bits)) - 1)
        return network & mask == address & mask
    block, address_parts = _ipv4(cidr, _IPV4_CIDR), _ipv4(host)
    if block is None or address_parts is None or block[4] > 32:
        return False
    network, address = (int.from_bytes(bytes(parts[:4]), "big") for parts in (block, address_parts))
    mask = (0xFFFFFFFF << (32 - block[4])) & 0xFFFFFFFF
    return address != 0 and network & mask == address & mask


def _operation_matches(acl: Any, operation: int) -> bool:
    if acl.operation == ALL or acl.operation == operation:
        return True
    if acl.permission_type != ALLOW:
        return False  # implication is for ALLOW only: a DENY of READ does not deny DESCRIBE
    if operation == DESCRIBE:
        return acl.operation in _IMPLIES_DESCRIBE
    if operation == DESCRIBE_CONFIGS:
        return acl.operation in _IMPLIES_DESCRIBE_CONFIGS
    return False


def authorize(acls: Iterable[Any], config: AuthorizerConfig, principal: str, host: str, operation: int,
              resource_type: int, resource_name: str, *, cidr: bool = False) -> bool:
    """Whether ``principal`` ("User:alice") from ``host`` (an IP address) may do ``operation`` on
    the resource; ``acls`` are StandardAcl bindings (a MetadataImage's ``acls.values()``).
    Without an authorizer configured, everything is allowed. With ``cidr`` an ACL host may be a
    CIDR block, as Kafka 4.4's authorizer reads them (cidr_contains); before 4.4 such a host is
    a string like any other, matching no address."""
    if not config.enabled or principal in config.super_users:
        return True
    applies = allowed = False
    for acl in acls:
        if not _applies_to(acl, resource_type, resource_name):
            continue
        applies = True
        if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
            continue
        if acl.host != WILDCARD and acl.host != host and not (cidr and cidr_contains(acl.host, host)):
            continue
        if not _operation_matches(acl, operation):
            continue
        if acl.permission_type == DENY:
            return False
        if acl.permission_type == ALLOW:
            allowed = True
    if allowed:
        return True
    return not applies and config.allow_everyone_if_no_acl_found


@dataclass(frozen=True, slots=True)
class Caller:
    """One request's authorizer: who asks, from where, against which ACLs; ``loaded`` False while
    those ACLs are not yet all there (see the module's docstring)."""

    config: AuthorizerConfig
    acls: tuple[Any, ...]
    principal: str
    host: str
    loaded: bool = True

    @property
    def not_ready(self) -> bool:
        """Whether this caller must be told the authorizer is not ready (a super user never is)."""
        return self.config.enabled and not self.loaded and self.principal not in self.config.super_users

    def allows(self, operation: int, resource_type: int, resource_name: str = CLUSTER_NAME) -> bool:
        return authorize(self.acls, self.config, self.principal, self.host, operation, resource_type, resource_name)

    def allowed_names(self, operation: int, resource_type: int, names: Iterable[str]) -> set[str]:
        return {name for name in set(names) if self.allows(operation, resource_type, name)}


__all__ = ["ALLOW_EVERYONE_KEY", "AUTHORIZER_CLASS_NAME_KEY", "AuthorizerConfig", "Caller", "STANDARD_AUTHORIZER",
           "SUPER_USERS_KEY", "authorize", "parse_super_users"]
