"""What both ``kraftd start`` loaders, a controller's (engine.server.controller_node) and a broker's
(engine.server.broker_settings), read the same way on top of the one reader of a node's config
(engine.common.server_config): the quorum, the snapshot limits, the host a wildcard listener
advertises. A problem is one ConfigError naming the key and the file."""

from __future__ import annotations

import socket

from engine.common.server_config import JAVA_LONG_MAX, ServerConfig
from engine.raft.raft_config import RaftConfig
from engine.server.snapshot_policy import (
    DEFAULT_MAX_BYTES, DEFAULT_MAX_INTERVAL_MS, MAX_BYTES_KEY, MAX_INTERVAL_KEY, SnapshotLimits,
)


def advertised_host(host: str) -> str:
    """Kafka advertises the canonical host name of a wildcard listener."""
    return socket.getfqdn() if not host or host in ("0.0.0.0", "::") else host


def quorum_settings(config: ServerConfig) -> RaftConfig:
    """The quorum a node joins: static voters or bootstrap servers, one of them set."""
    raft = RaftConfig.from_properties(config.props, where=config.path)
    if not raft.static_voters.voters and not raft.bootstrap_servers:
        raise config.error("set controller.quorum.bootstrap.servers (or controller.quorum.voters)")
    return raft


def snapshot_limits(config: ServerConfig) -> SnapshotLimits:
    """When the node snapshots its metadata image (Kafka's LONG settings)."""
    return SnapshotLimits(max_bytes=config.integer(MAX_BYTES_KEY, DEFAULT_MAX_BYTES, 1, JAVA_LONG_MAX),
                          max_interval_ms=config.integer(MAX_INTERVAL_KEY, DEFAULT_MAX_INTERVAL_MS, 0, JAVA_LONG_MAX))


__all__ = ["advertised_host", "quorum_settings", "snapshot_limits"]
