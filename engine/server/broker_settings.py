"""What ``kraftd start`` reads from a broker's config (Kafka's names), and its storage check.

A simulated broker holds no message data, yet its log directories are a Kafka broker's: every
one formatted (``meta.properties`` with the cluster id, the node id and its own directory id),
the metadata log in ``metadata.log.dir`` (by default the first of ``log.dirs``), and Kafka's
``.kafka_cleanshutdown`` file in each after a clean stop, carrying the broker epoch that the next
registration names (KIP-966: a broker back from a clean shutdown keeps its place in the ELR).

Our own key ``kraftd.sim.faults.file`` names a properties file the broker watches, through which
``kraftd cluster lag`` and ``disk-fail`` inject faults: ``replica.fetch.delay.ms``,
``replica.fetch.failure.rate`` (the probability that a follower's fetch is lost) and
``failed.log.dirs``.

Security is Kafka's config names throughout (engine.net.security_config): each broker listener is
served with its own ListenerSecurity (``listener.security.protocol.map``, ssl.*, sasl.*, per-listener
overrides); the channel to the controllers (the metadata observer and the requests to the active
controller) is the first controller listener's client side with ``sasl.mechanism.controller.protocol``;
the replica fetcher reaches other brokers on the inter-broker listener with
``sasl.mechanism.inter.broker.protocol``, as Kafka's ReplicaFetcherBlockingSend does.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from engine.common.errors import ConfigError, StorageError
from engine.common.file_io import write_bytes_atomically
from engine.common.java_properties import load_properties
from engine.common.server_config import JAVA_INT_MAX, int_setting, parse_list, read_server_config
from engine.broker.broker_lifecycle import Listener
from engine.controller.controller_config import ControllerConfig
from engine.net.channel_security import (
    PLAINTEXT_CLIENT, PLAINTEXT_LISTENER, ClientSecurity, ListenerSecurity, SecurityProtocol,
)
from engine.net.security_config import client_security, controller_client_security, listener_security
from engine.raft.raft_config import RaftConfig
from engine.server.node_config import advertised_host, quorum_settings, snapshot_limits
from engine.server.snapshot_policy import SnapshotLimits
from engine.storage.meta_properties import META_PROPERTIES_FILE, MetaProperties, read_meta_properties

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"  # Kafka's CleanShutdownFileHandler
FAULTS_FILE_KEY = "kraftd.sim.faults.file"
FETCH_DELAY_KEY = "replica.fetch.delay.ms"
FETCH_FAILURE_RATE_KEY = "replica.fetch.failure.rate"
FAILED_DIRS_KEY = "failed.log.dirs"


@dataclass(frozen=True)
class BrokerSettings:
    path: Path
    node_id: int
    log_dirs: tuple[Path, ...]
    metadata_log_dir: Path
    binds: tuple[tuple[str, tuple[str, int]], ...]  # (listener name, where to listen), broker listeners
    advertised: tuple[Listener, ...]
    inter_broker_listener: str
    raft: RaftConfig
    rack: str | None = None
    heartbeat_interval_ms: int = 2000
    session_timeout_ms: int = 9000
    initial_registration_timeout_ms: int = 60000
    replica_lag_time_max_ms: int = 30000
    replica_fetch_wait_max_ms: int = 500
    controlled_shutdown_wait_ms: int = 300_000  # Kafka waits up to 5 minutes for its controlled shutdown
    authorizer: bool = False
    faults_file: Path | None = None
    snapshots: SnapshotLimits = field(default_factory=SnapshotLimits)
    roles: tuple[str, ...] = ("broker",)
    # the static settings DescribeConfigs reports for this broker (min.insync.replicas, ...)
    static_configs: ControllerConfig = field(default_factory=ControllerConfig)
    # each broker listener's server side, in the order of ``binds`` (SCRAM lookups are added at start,
    # over the broker's own image); the client side toward the controllers and toward the other
    # brokers' inter-broker listener
    listener_securities: tuple[ListenerSecurity, ...] = ()
    controller_security: ClientSecurity = PLAINTEXT_CLIENT
    inter_broker_security: ClientSecurity = PLAINTEXT_CLIENT

    def listener_security(self, index: int) -> ListenerSecurity:
        return self.listener_securities[index] if index < len(self.listener_securities) else PLAINTEXT_LISTENER

    @property
    def dynamic(self) -> bool:
        return not self.raft.static_voters.voters


def load_broker_settings(path: Path) -> BrokerSettings:
    """Read and check a broker's config; ConfigError (one line) names what is wrong."""
    config = read_server_config(path)
    props, where = config.props, config.path
    if "broker" not in config.roles:
        raise config.error(f"process.roles must name broker, got {props.get('process.roles')!r}")
    if not config.log_dirs:
        raise config.error("log.dirs is not set")
    if not config.controller_listener_names:
        raise config.error("controller.listener.names is not set")
    # Kafka looks a broker's controller listeners up by their upper-cased names
    controller_names = {name.upper() for name in config.controller_listener_names}
    broker_names = [name for name in config.listeners if name not in controller_names]
    if not broker_names:
        raise config.error(f"listeners {props.get('listeners', '')!r} has no broker listener (one not in "
                           f"controller.listener.names)")
    advertised = []
    securities = []
    for name in broker_names:
        protocol = config.security_protocols.get(name)
        if protocol is None:
            raise config.error(f"listener {name} has no entry in listener.security.protocol.map")
        securities.append(listener_security(props, name, SecurityProtocol(protocol), where))
        host, port = config.advertised(name)
        advertised.append(Listener(name, advertised_host(host), port, protocol))
    inter_broker = props.get("inter.broker.listener.name", "").strip().upper() or \
        ("PLAINTEXT" if "PLAINTEXT" in broker_names else broker_names[0])
    if inter_broker not in broker_names:
        raise config.error(f"inter.broker.listener.name {inter_broker} is not one of the broker listeners "
                           f"{', '.join(broker_names)}")
    raft = quorum_settings(config)
    inter_broker_security = client_security(props, where, listener_name=inter_broker,
                                            mechanism_key="sasl.mechanism.inter.broker.protocol")
    faults = props.get(FAULTS_FILE_KEY, "").strip()

    def setting(key: str, default: int, minimum: int = 1, maximum: int = JAVA_INT_MAX) -> int:
        return config.integer(key, default, minimum, maximum)

    return BrokerSettings(
        path=Path(path), node_id=config.node_id, log_dirs=config.log_dirs, metadata_log_dir=config.metadata_log_dir,
        binds=tuple((name, (config.listeners[name][0] or "0.0.0.0", config.listeners[name][1]))
                    for name in broker_names),
        advertised=tuple(advertised), inter_broker_listener=inter_broker, raft=raft,
        rack=props.get("broker.rack", "").strip() or None,
        heartbeat_interval_ms=setting("broker.heartbeat.interval.ms", 2000),
        session_timeout_ms=setting("broker.session.timeout.ms", 9000),
        initial_registration_timeout_ms=setting("initial.broker.registration.timeout.ms", 60000),
        replica_lag_time_max_ms=setting("replica.lag.time.max.ms", 30000),
        replica_fetch_wait_max_ms=setting("replica.fetch.wait.max.ms", 500, 0),
        authorizer=bool(props.get("authorizer.class.name", "").strip()),
        faults_file=Path(faults) if faults else None, snapshots=snapshot_limits(config),
        roles=config.roles, static_configs=ControllerConfig.from_properties(config.node_id, props, where),
        listener_securities=tuple(securities), controller_security=controller_client_security(props, where),
        inter_broker_security=inter_broker_security)


def check_broker_storage(settings: BrokerSettings) -> dict[Path, MetaProperties]:
    """Every log directory's meta.properties, checked against the config and one another."""
    metas: dict[Path, MetaProperties] = {}
    for directory in dict.fromkeys((*settings.log_dirs, settings.metadata_log_dir)):
        if not (directory / META_PROPERTIES_FILE).is_file():
            raise StorageError(f"not formatted (no {META_PROPERTIES_FILE}): run `kraftd storage format "
                               f"--config {settings.path} --cluster-id ID` first", path=str(directory))
        meta = read_meta_properties(directory)
        if meta.version != 1 or meta.cluster_id is None:
            raise StorageError(f"{META_PROPERTIES_FILE} is not a KRaft (version 1) one", path=str(directory))
        if meta.node_id != settings.node_id:
            raise StorageError(f"{META_PROPERTIES_FILE} has node.id {meta.node_id} but the config says "
                               f"{settings.node_id}", path=str(directory))
        if meta.directory_id is None:
            raise StorageError(f"{META_PROPERTIES_FILE} has no directory.id", path=str(directory))
        metas[directory] = meta
    clusters = {meta.cluster_id for meta in metas.values()}
    if len(clusters) > 1:
        raise StorageError(f"the log directories belong to different clusters ({', '.join(sorted(clusters))})",
                           path=str(settings.metadata_log_dir))
    ids = [meta.directory_id for meta in metas.values()]
    if len(set(ids)) != len(ids):
        raise StorageError("two log directories have the same directory.id", path=str(settings.metadata_log_dir))
    return metas


def read_clean_shutdown(directories: tuple[Path, ...]) -> int:
    """The broker epoch of the last clean shutdown (-1 if any directory lacks the file, as a
    crash leaves them), and the files deleted: the next stop writes them anew."""
    epochs = []
    for directory in directories:
        path = directory / CLEAN_SHUTDOWN_FILE
        try:
            epochs.append(int(json.loads(path.read_text())["brokerEpoch"]))
        except (OSError, ValueError, KeyError, TypeError):
            epochs.append(None)
    for directory in directories:
        try:
            os.unlink(directory / CLEAN_SHUTDOWN_FILE)
        except FileNotFoundError:
            pass
    return epochs[0] if epochs and None not in epochs and len(set(epochs)) == 1 else -1


def write_clean_shutdown(directories: tuple[Path, ...], broker_epoch: int) -> None:
    text = json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":"))
    for directory in directories:
        write_bytes_atomically(directory / CLEAN_SHUTDOWN_FILE, text.encode())


@dataclass(frozen=True)
class Faults:
    """What the faults file injects: a follower's extra delay per fetch, the share of its
    fetches lost, and failed log dirs."""

    fetch_delay_ms: int = 0
    failed_dirs: frozenset[Path] = frozenset()
    fetch_failure_rate: float = 0.0


def read_faults(path: Path | None, where: str) -> Faults:
    """The faults file (missing: no faults); ConfigError for a bad value."""
    if path is None or not path.is_file():
        return Faults()
    props: Mapping[str, str] = load_properties(path)
    delay = int_setting(props, FETCH_DELAY_KEY, 0, 0, JAVA_INT_MAX, str(path))
    failed = frozenset(Path(d) for d in parse_list(props.get(FAILED_DIRS_KEY)))
    text = props.get(FETCH_FAILURE_RATE_KEY, "").strip() or "0"
    try:
        rate = float(text)
    except ValueError:
        rate = -1.0
    if not 0.0 <= rate <= 1.0:
        raise ConfigError(f"{FETCH_FAILURE_RATE_KEY} must be a probability from 0 to 1, got {text!r}", path=str(path))
    return Faults(delay, failed, rate)


def directory_ids(metas: Mapping[Path, MetaProperties]) -> dict[Path, uuid.UUID]:
    return {path: meta.directory_id for path, meta in metas.items()}


__all__ = ["BrokerSettings", "CLEAN_SHUTDOWN_FILE", "FAULTS_FILE_KEY", "Faults", "check_broker_storage",
           "directory_ids", "load_broker_settings", "read_clean_shutdown", "read_faults", "write_clean_shutdown"]
