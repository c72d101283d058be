"""What every ``kraftd start`` reads the same way, controller or broker: roles, listeners,
advertised endpoints, the listener security map and bounded whole-number settings, by Kafka's
names. A problem is one ConfigError naming the key and the file."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Mapping

from engine.common.errors import ConfigError
from engine.common.java_properties import load_properties

JAVA_INT_MAX = 2**31 - 1
JAVA_LONG_MAX = 2**63 - 1
# Kafka's security protocol ids (SecurityProtocol), as a broker registration carries them
SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


def read_config(path: Path) -> tuple[dict[str, str], str]:
    """A node's properties and the path to name in errors."""
    if not path.is_file():
        raise ConfigError("no such config file", path=str(path))
    return load_properties(path), str(path)


def parse_roles(props: Mapping[str, str]) -> list[str]:
    return [r.strip() for r in props.get("process.roles", "").split(",") if r.strip()]


def parse_listeners(text: str, key: str, where: str) -> dict[str, tuple[str, int]]:
    """NAME://HOST:PORT,... -> {NAME: (host, port)} (an IPv6 host without its brackets)."""
    out = {}
    for item in (part.strip() for part in text.split(",") if part.strip()):
        name, sep, rest = item.partition("://")
        host, colon, port = rest.rpartition(":")
        if not sep or not colon or not port.isdigit() or not name or int(port) > 65535:
            raise ConfigError(f"bad {key} entry {item!r} (expected NAME://HOST:PORT)", path=where)
        out[name.strip().upper()] = (host.strip("[]"), int(port))
    return out


def advertised_host(host: str) -> str:
    """Kafka advertises the canonical host name of a wildcard listener."""
    return socket.getfqdn() if not host or host in ("0.0.0.0", "::") else host


def security_protocol_map(props: Mapping[str, str], where: str) -> dict[str, int]:
    """listener.security.protocol.map, over Kafka's default (each protocol named after itself)."""
    out = dict(SECURITY_PROTOCOLS)
    text = props.get("listener.security.protocol.map", "")
    for item in (part.strip() for part in text.split(",") if part.strip()):
        name, sep, protocol = item.partition(":")
        if not sep or protocol.strip().upper() not in SECURITY_PROTOCOLS:
            raise ConfigError(f"bad listener.security.protocol.map entry {item!r} (expected LISTENER:PROTOCOL, "
                              f"the protocol one of {', '.join(SECURITY_PROTOCOLS)})", path=where)
        out[name.strip().upper()] = SECURITY_PROTOCOLS[protocol.strip().upper()]
    return out


def int_setting(props: Mapping[str, str], key: str, default: int, minimum: int, maximum: int, where: str) -> int:
    text = props.get(key, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not minimum <= value <= maximum:
        raise ConfigError(f"{key} must be a whole number from {minimum} to {maximum}, got {text!r}", path=where)
    return value


def node_id_setting(props: Mapping[str, str], where: str) -> int:
    text = props.get("node.id", "").strip()
    if not text.isdigit():
        raise ConfigError("missing node.id" if not text else f"node.id must be a non-negative integer, "
                          f"got {text!r}", path=where)
    return int(text)


__all__ = ["JAVA_INT_MAX", "JAVA_LONG_MAX", "SECURITY_PROTOCOLS", "advertised_host", "int_setting",
           "node_id_setting", "parse_listeners", "parse_roles", "read_config", "security_protocol_map"]
