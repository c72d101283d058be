"""One reader of a Kafka server config (``server.properties``), by Kafka's rules.

``kraftd storage format``, ``kraftd start`` (controller and broker), the quorum tool and the
security settings read a node's file through this module, so one file means one thing to all of
them:

- a list value as Kafka reads it (``Csv.parseCsvList``, the LIST type): the value trimmed, split at
  the commas together with the blanks around them, empty entries dropped;
- ``listeners`` and ``advertised.listeners`` as ``SocketServerConfigs.listenerListToEndPoints``
  and ``CoreUtils.listenerListToEndPoints`` read them: ``NAME://HOST:PORT``, the name upper-cased
  (``ListenerName.normalised``), an IPv6 host with or without its brackets, an empty host the
  wildcard, a port from 0 to 65535; one listener per name, and in ``listeners`` one per port
  unless one is an IPv4 address and the other IPv6 (port 0, "any free port", excepted);
- ``listener.security.protocol.map``: names upper-cased, protocols in any case
  (``SecurityProtocol.forName``), the last entry for a name winning (a HashMap's put). Over it, a
  listener named after a protocol uses that protocol, and when the key is not set at all the
  controller listeners are PLAINTEXT (KRaft's default mapping);
- ``controller.listener.names`` as written: Kafka compares them, as they are, with the upper-cased
  listener names, so a controller's names must be upper-case to be found;
- ``log.dirs``, else ``log.dir``; ``metadata.log.dir`` (trimmed, as a STRING is), else the first
  log dir; ``process.roles`` broker and/or controller, each once; ``node.id`` not negative.

A problem is one ConfigError naming the key and the file.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from engine.common.errors import ConfigError
from engine.common.java_properties import load_properties

JAVA_INT_MAX = 2**31 - 1
JAVA_LONG_MAX = 2**63 - 1
MAX_PORT = 65535
# Kafka's security protocol ids (SecurityProtocol), as broker and controller registrations carry them
SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
ROLES = ("broker", "controller")

LISTENERS = "listeners"
ADVERTISED_LISTENERS = "advertised.listeners"
PROTOCOL_MAP = "listener.security.protocol.map"
CONTROLLER_LISTENER_NAMES = "controller.listener.names"

# Java's String.trim() drops every char up to U+0020; Java's \s is these six
_JAVA_TRIMMED = "".join(map(chr, range(0x21)))
_COMMA = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")
# SocketServerConfigs' URI_PARSE_REGEXP, matched against the whole entry
_LISTENER = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")
_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+")  # what Java's Integer.parseInt and Long.parseLong take

Address = tuple[str, int]  # (host, port); host "" is the wildcard (Kafka's null host)


def parse_list(text: str | None) -> list[str]:
    """A list-valued setting as Kafka reads it: trimmed, split at commas (the blanks around them
    dropped), empty entries dropped. None or blank is the empty list."""
    trimmed = (text or "").strip(_JAVA_TRIMMED)
    return [item for item in _COMMA.split(trimmed) if item] if trimmed else []


def parse_endpoints(text: str | None, key: str, where: str | None) -> list[tuple[str, str, int]]:
    """``NAME://HOST:PORT,...`` -> [(NAME, host, port)], as SocketServerConfigs parses it (no check
    across entries: that is ``parse_listeners``)."""
    endpoints = []
    for item in parse_list(text):
        match = _LISTENER.fullmatch(item)
        if match is None:
            raise ConfigError(f"bad {key} entry {item!r} (expected NAME://HOST:PORT)", path=where)
        name, host, port = match.group(1).upper(), match.group(2), int(match.group(3))
        if not name.strip(_JAVA_TRIMMED):
            raise ConfigError(f"bad {key} entry {item!r}: no listener name", path=where)
        if not 0 <= port <= MAX_PORT:
            raise ConfigError(f"bad {key} entry {item!r}: port {port} is not from 0 to {MAX_PORT}", path=where)
        endpoints.append((name, host, port))
    return endpoints


def parse_listeners(text: str | None, key: str, where: str | None, *,
                    distinct_ports: bool = True) -> dict[str, Address]:
    """``NAME://HOST:PORT,...`` -> {NAME: (host, port)}, in order, checked as Kafka checks
    ``listeners`` (``distinct_ports``) and ``advertised.listeners`` (one listener may advertise
    another's address)."""
    endpoints = parse_endpoints(text, key, where)
    out: dict[str, Address] = {}
    for name, host, port in endpoints:
        if name in out:
            raise ConfigError(f"{key} names listener {name} twice: each listener needs its own name", path=where)
        out[name] = (host, port)
    if distinct_ports:
        _check_ports(endpoints, key, where)
    return out


def _check_ports(endpoints: list[tuple[str, str, int]], key: str, where: str | None) -> None:
    """Kafka lets two listeners share a port only when one binds an IPv4 address and the other an
    IPv6 one (two stacks, two sockets); port 0 is any free port, so never shared."""
    by_port: dict[int, list[str]] = {}
    for _, host, port in endpoints:
        if port:
            by_port.setdefault(port, []).append(host)
    for port, hosts in by_port.items():
        if len(hosts) > 1 and sorted(map(_ip_version, hosts)) != [4, 6]:
            raise ConfigError(f"{key} has {len(hosts)} listeners on port {port}: listeners need their own ports, "
                              f"unless exactly two share one, an IPv4 and an IPv6 address", path=where)


def _ip_version(host: str) -> int:
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return 0  # a host name or the wildcard: it may stand for either stack


def security_protocol_map(props: Mapping[str, str], where: str | None) -> dict[str, int]:
    """The effective ``listener.security.protocol.map``: {LISTENER: protocol id}."""
    out = dict(SECURITY_PROTOCOLS)
    text = props.get(PROTOCOL_MAP, "")
    if not text.strip():
        # KRaft's default mapping: a controller listener is PLAINTEXT when no map is set
        out.update((name.upper(), SECURITY_PROTOCOLS["PLAINTEXT"])
                   for name in parse_list(props.get(CONTROLLER_LISTENER_NAMES)))
        return out
    for item in parse_list(text):
        name, sep, protocol = item.rpartition(":")  # Kafka splits at the last colon
        name, protocol = name.strip(_JAVA_TRIMMED).upper(), protocol.strip(_JAVA_TRIMMED).upper()
        if not sep or not name or protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(f"bad {PROTOCOL_MAP} entry {item!r} (expected LISTENER:PROTOCOL, the protocol one of "
                              f"{', '.join(SECURITY_PROTOCOLS)})", path=where)
        out[name] = SECURITY_PROTOCOLS[protocol]
    return out


def int_setting(props: Mapping[str, str], key: str, default: int, minimum: int, maximum: int,
                where: str | None) -> int:
    """A whole-number setting within [minimum, maximum] (Java's INT or LONG bound), ``default``
    when absent or blank."""
    text = props.get(key, "").strip()
    if not text:
        return default
    value = int(text) if _WHOLE_NUMBER.fullmatch(text) else None
    if value is None or not minimum <= value <= maximum:
        raise ConfigError(f"{key} must be a whole number from {minimum} to {maximum}, got {text!r}", path=where)
    return value


@dataclass(frozen=True)
class ServerConfig:
    """The settings every reader of a node's config shares, read once; ``props`` holds the rest."""

    path: str  # the file, named in every error
    props: Mapping[str, str]
    node_id: int
    roles: tuple[str, ...]
    log_dirs: tuple[Path, ...]  # log.dirs, else log.dir (may be empty: a controller needs none)
    metadata_log_dir: Path  # metadata.log.dir, else the first log dir
    listeners: dict[str, Address]
    advertised_listeners: dict[str, Address]  # advertised.listeners as written (may be empty)
    controller_listener_names: tuple[str, ...]  # as written
    security_protocols: dict[str, int]  # the effective listener.security.protocol.map

    def error(self, reason: str) -> ConfigError:
        return ConfigError(reason, path=self.path)

    def integer(self, key: str, default: int, minimum: int, maximum: int) -> int:
        return int_setting(self.props, key, default, minimum, maximum, self.path)

    def advertised(self, name: str) -> Address:
        """Where listener ``name`` is reached: its advertised.listeners entry, else its listeners one."""
        return self.advertised_listeners.get(name, self.listeners[name])

    def controller_endpoints(self) -> list[tuple[str, Address]]:
        """Each controller listener and where it is reached (Kafka's
        effectiveAdvertisedControllerListeners), every name checked to be one of ``listeners``."""
        if not self.controller_listener_names:
            raise self.error(f"{CONTROLLER_LISTENER_NAMES} is not set")
        for name in self.controller_listener_names:
            if name not in self.listeners:
                hint = f" (listener names are upper-case: write {name.upper()})" if name.upper() in self.listeners \
                    else ""
                raise self.error(f"the controller listener {name} ({CONTROLLER_LISTENER_NAMES}) is not in "
                                 f"{LISTENERS} {self.props.get(LISTENERS, '')!r}{hint}")
        return [(name, self.advertised(name)) for name in self.controller_listener_names]


def read_server_config(path: Path | str) -> ServerConfig:
    """Read and check the node config at ``path``; ConfigError (one line) names what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError("no such file", path=str(path))
    return server_config(load_properties(path), str(path))


def server_config(props: Mapping[str, str], where: str) -> ServerConfig:
    roles = parse_list(props.get("process.roles"))
    if not roles or any(r not in ROLES for r in roles) or len(set(roles)) != len(roles):
        raise ConfigError(f"process.roles must be broker, controller or both, got {props.get('process.roles')!r}",
                          path=where)
    if not props.get("node.id", "").strip():
        raise ConfigError("missing node.id", path=where)
    node_id = int_setting(props, "node.id", -1, 0, JAVA_INT_MAX, where)  # KRaft needs a node.id, not negative
    # log.dir (Kafka's default /tmp/kafka-logs, which we do not assume) only when log.dirs is absent
    log_dirs = tuple(Path(d) for d in parse_list(props["log.dirs"] if "log.dirs" in props else props.get("log.dir")))
    metadata_dir = props.get("metadata.log.dir", "").strip(_JAVA_TRIMMED)
    if not metadata_dir and not log_dirs:
        raise ConfigError("neither metadata.log.dir nor log.dirs (or log.dir) is set", path=where)
    return ServerConfig(
        path=where, props=props, node_id=node_id, roles=tuple(roles), log_dirs=log_dirs,
        metadata_log_dir=Path(metadata_dir) if metadata_dir else log_dirs[0],
        listeners=parse_listeners(props.get(LISTENERS), LISTENERS, where),
        advertised_listeners=parse_listeners(props.get(ADVERTISED_LISTENERS), ADVERTISED_LISTENERS, where,
                                             distinct_ports=False),
        controller_listener_names=tuple(parse_list(props.get(CONTROLLER_LISTENER_NAMES))),
        security_protocols=security_protocol_map(props, where))


__all__ = ["ADVERTISED_LISTENERS", "Address", "CONTROLLER_LISTENER_NAMES", "JAVA_INT_MAX", "JAVA_LONG_MAX",
           "LISTENERS", "PROTOCOL_MAP", "ROLES", "SECURITY_PROTOCOLS", "ServerConfig", "int_setting",
           "parse_endpoints", "parse_list", "parse_listeners", "read_server_config", "security_protocol_map",
           "server_config"]
