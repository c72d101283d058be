"""The quorum's settings, under Kafka's config names and with Kafka's defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from engine.common.errors import ConfigError
from engine.common.server_config import parse_list
from engine.raft.voter_set import Address, VoterSet, parse_bootstrap_servers, parse_quorum_voters

# Kafka's QuorumConfig names and defaults.
VOTERS = "controller.quorum.voters"
BOOTSTRAP_SERVERS = "controller.quorum.bootstrap.servers"
ELECTION_TIMEOUT_MS = "controller.quorum.election.timeout.ms"
FETCH_TIMEOUT_MS = "controller.quorum.fetch.timeout.ms"
ELECTION_BACKOFF_MAX_MS = "controller.quorum.election.backoff.max.ms"
APPEND_LINGER_MS = "controller.quorum.append.linger.ms"
REQUEST_TIMEOUT_MS = "controller.quorum.request.timeout.ms"
RETRY_BACKOFF_MS = "controller.quorum.retry.backoff.ms"
AUTO_JOIN_ENABLE = "controller.quorum.auto.join.enable"
# Kafka 4.3's: what a fetcher asks for per Fetch and per FetchSnapshot (Kafka 4.1 had neither
# setting). A Kafka 4.3 leader cuts its Fetch answer at the size asked, even inside a batch.
FETCH_MAX_BYTES = "controller.quorum.fetch.max.bytes"
FETCH_SNAPSHOT_MAX_BYTES = "controller.quorum.fetch.snapshot.max.bytes"

_INT_DEFAULTS = {
    ELECTION_TIMEOUT_MS: 1000,
    FETCH_TIMEOUT_MS: 2000,
    ELECTION_BACKOFF_MAX_MS: 1000,
    APPEND_LINGER_MS: 25,
    REQUEST_TIMEOUT_MS: 2000,
    RETRY_BACKOFF_MS: 20,
}
JAVA_INT_MAX = 2**31 - 1

# Not configurable in Kafka either: how long a leader holds a Fetch with nothing new,
# and the largest batch / fetch / snapshot chunk it hands out.
FETCH_MAX_WAIT_MS = 500
MAX_BATCH_SIZE_BYTES = 8 * 1024 * 1024
MAX_FETCH_SIZE_BYTES = MAX_BATCH_SIZE_BYTES
SNAPSHOT_CHUNK_BYTES = 1024 * 1024
DEFAULT_FETCH_MAX_BYTES = 1024 * 1024  # Kafka 4.3's default for controller.quorum.fetch.max.bytes
_SIZE_DEFAULTS = {FETCH_MAX_BYTES: DEFAULT_FETCH_MAX_BYTES, FETCH_SNAPSHOT_MAX_BYTES: SNAPSHOT_CHUNK_BYTES}
MAX_BATCH_RECORDS = 10_000


@dataclass(frozen=True)
class RaftConfig:
    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    append_linger_ms: int = 25
    request_timeout_ms: int = 2000
    retry_backoff_ms: int = 20
    auto_join_enable: bool = False
    static_voters: VoterSet = field(default_factory=VoterSet)
    bootstrap_servers: tuple[Address, ...] = ()
    listener_name: str = "CONTROLLER"
    fetch_max_wait_ms: int = FETCH_MAX_WAIT_MS
    snapshot_chunk_bytes: int = SNAPSHOT_CHUNK_BYTES  # the most a leader hands out per FetchSnapshot
    fetch_max_bytes: int = DEFAULT_FETCH_MAX_BYTES  # what a fetcher asks for per Fetch
    fetch_snapshot_max_bytes: int = SNAPSHOT_CHUNK_BYTES  # ... and per FetchSnapshot

    @classmethod
    def from_properties(cls, props: Mapping[str, str], *, where: str | None = None) -> "RaftConfig":
        """Read the quorum settings of a Kafka server config; ConfigError names the key."""
        ints = {key: int_property(props, key, default, where) for key, default in _INT_DEFAULTS.items()}
        for key, default in _SIZE_DEFAULTS.items():
            ints[key] = int_property(props, key, default, where)
            if not 1 <= ints[key] <= JAVA_INT_MAX:
                raise ConfigError(f"{key} must be from 1 to {JAVA_INT_MAX}, got {ints[key]}", path=where)
        listeners = parse_list(props.get("controller.listener.names"))
        listener = listeners[0] if listeners else "CONTROLLER"
        try:
            voters = parse_quorum_voters(props.get(VOTERS, ""), listener)
            bootstrap = parse_bootstrap_servers(props.get(BOOTSTRAP_SERVERS, ""))
        except ConfigError as e:
            raise ConfigError(e.reason, path=where) from None
        if not bootstrap:
            # Kafka falls back to the static voters' addresses.
            bootstrap = tuple(n.endpoints[0][1] for n in voters.voters)
        auto_join = props.get(AUTO_JOIN_ENABLE, "false").strip().lower()
        if auto_join not in ("true", "false"):
            raise ConfigError(f"{AUTO_JOIN_ENABLE} must be true or false, got {auto_join!r}", path=where)
        return cls(
            election_timeout_ms=ints[ELECTION_TIMEOUT_MS], fetch_timeout_ms=ints[FETCH_TIMEOUT_MS],
            election_backoff_max_ms=ints[ELECTION_BACKOFF_MAX_MS], append_linger_ms=ints[APPEND_LINGER_MS],
            request_timeout_ms=ints[REQUEST_TIMEOUT_MS], retry_backoff_ms=ints[RETRY_BACKOFF_MS],
            auto_join_enable=auto_join == "true", static_voters=voters, bootstrap_servers=bootstrap,
            listener_name=listener, fetch_max_bytes=ints[FETCH_MAX_BYTES],
            fetch_snapshot_max_bytes=ints[FETCH_SNAPSHOT_MAX_BYTES],
        )


def int_property(props: Mapping[str, str], key: str, default: int, where: str | None, low: int = 0) -> int:
    """An integer setting (``default`` when absent); ConfigError naming ``where`` when it is not
    one or is below ``low``."""
    text = props.get(key)
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise ConfigError(f"{key} must be an integer, got {text!r}", path=where) from None
    if value < low:
        raise ConfigError(f"{key} must not be negative, got {value}" if low == 0 else
                          f"{key} must be at least {low}, got {value}", path=where)
    return value
