"""``kraftd start --config controller.properties``: one KRaft controller process.

Reads a Kafka server config (Kafka's names), opens the formatted metadata log directory,
and runs the Raft core behind the asyncio driver (engine.raft.raft_driver), serving its RPCs
and the controller's on the controller listener (engine.server.controller_apis). As Kafka's
active controller does (KIP-835), the leader appends a
NoOpRecord every ``metadata.max.idle.interval.ms`` (default 500) in which nothing else
was appended, so the high watermark keeps moving and followers see commits. There is no
controller logic yet: the state machine (engine.server.metadata_listener) replays the
committed log into a MetadataImage and snapshots it as Kafka's SnapshotGenerator does
(engine.server.snapshot_policy), after which the core deletes the segments the snapshot
covers. Segments roll at ``metadata.log.segment.bytes`` (``internal.metadata.log.segment.bytes``
overrides it, as in Kafka, for tests).

Logs go to stderr, one line per role or leader change, per commit milestone and per snapshot.
SIGTERM and SIGINT stop the node gracefully: a leader resigns (EndQuorumEpoch, up to ~1 s), the
listener closes, the log is flushed and closed, exit 0. A config or storage problem at
startup is one line and exit 1.

Benchmarks attach their load through ``ControllerNode.attach`` (engine.bench.node);
``kraftd start`` itself has no benchmark options.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Awaitable, Callable, Mapping, Sequence

from engine.common.errors import ConfigError, StorageError
from engine.common.server_config import JAVA_INT_MAX, read_server_config
from engine.storage.log_reader import METADATA_PARTITION_DIR
from engine.storage.meta_properties import META_PROPERTIES_FILE, MetaProperties, read_meta_properties
from engine.controller import commands as controller_commands
from engine.controller.controller_config import ControllerConfig
from engine.controller.feature_control import supported_feature_ranges
from engine.image.image_entries import image_entries
from engine.image.metadata_image import MetadataImage
from engine.net.channel_security import (
    PLAINTEXT_CLIENT, PLAINTEXT_LISTENER, ClientSecurity, ListenerSecurity, SecurityProtocol,
)
from engine.net.security_config import client_security, controller_client_security, listener_security
from engine.raft.raft_client import RaftListener
from engine.raft.raft_config import RaftConfig
from engine.raft.voter_set import Address, ReplicaKey
from engine.server.controller_registration import ControllerRegistrar
from engine.server.node_config import advertised_host, quorum_settings, snapshot_limits
from engine.server.controller_apis import ControllerApis
from engine.server.controller_server import ControllerServer, read_bootstrap_records
from engine.server.scram_credentials import scram_lookup
from engine.server.metadata_listener import MetadataListener
from engine.server.snapshot_policy import SnapshotLimits, SnapshotPolicy
from engine.storage.metadata_log import DEFAULT_SEGMENT_BYTES
from engine.storage.snapshot_writer import SnapshotId

MAX_IDLE_INTERVAL_MS = "metadata.max.idle.interval.ms"
DEFAULT_MAX_IDLE_INTERVAL_MS = 500
SEGMENT_BYTES_KEY = "metadata.log.segment.bytes"
MIN_SEGMENT_BYTES = 8 * 1024 * 1024  # Kafka's lower bound for metadata.log.segment.bytes
INTERNAL_SEGMENT_BYTES_KEY = "internal.metadata.log.segment.bytes"  # Kafka's, "only for testing": no bound
RESIGN_WAIT_MS = 1000
QUORUM_STATE_FILE = "quorum-state"


def raft_failed(failure: BaseException) -> str:
    return f"the Raft core failed: {type(failure).__name__}: {failure}"


@dataclass(frozen=True)
class ControllerSettings:
    """What ``kraftd start`` reads from the config file."""

    path: Path
    node_id: int
    metadata_log_dir: Path
    listener_name: str
    bind: Address  # where to listen
    endpoints: tuple[tuple[str, Address], ...]  # the advertised controller endpoints
    raft: RaftConfig
    max_idle_interval_ms: int = DEFAULT_MAX_IDLE_INTERVAL_MS
    snapshots: SnapshotLimits = field(default_factory=SnapshotLimits)
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    controller: ControllerConfig = field(default_factory=ControllerConfig)
    # the controller listener's security (its SCRAM lookup is added at start, over the node's image),
    # and how this node reaches the other controllers: the same listener's client side, as in Kafka
    listener_security: ListenerSecurity = PLAINTEXT_LISTENER
    client_security: ClientSecurity = PLAINTEXT_CLIENT
    # the brokers' listener unclean recovery asks (inter.broker.listener.name; None: a PLAINTEXT
    # one), and how: as a broker reaches another broker there; None when this controller-only
    # node's inter-broker settings are not ones it can log in with (``broker_problem`` says why)
    broker_listener: str | None = None
    broker_security: ClientSecurity | None = PLAINTEXT_CLIENT
    broker_problem: str | None = None

    @property
    def dynamic(self) -> bool:
        """kraft.version 1: the voters live in the log, not in controller.quorum.voters."""
        return not self.raft.static_voters.voters


def load_controller_settings(path: Path) -> ControllerSettings:
    """Read and check a controller's config; ConfigError (one line) names what is wrong."""
    config = read_server_config(path)
    if "controller" not in config.roles:
        raise config.error(f"process.roles must be controller (or broker,controller), got "
                           f"{config.props.get('process.roles')!r}")
    endpoints = [(name, (advertised_host(host), port)) for name, (host, port) in config.controller_endpoints()]
    listener_name = config.controller_listener_names[0]
    bind_host, bind_port = config.listeners[listener_name]
    raft = quorum_settings(config)
    idle = config.integer(MAX_IDLE_INTERVAL_MS, DEFAULT_MAX_IDLE_INTERVAL_MS, 1, JAVA_INT_MAX)
    segment_bytes = config.integer(SEGMENT_BYTES_KEY, DEFAULT_SEGMENT_BYTES, MIN_SEGMENT_BYTES, JAVA_INT_MAX)
    if config.props.get(INTERNAL_SEGMENT_BYTES_KEY, "").strip():
        segment_bytes = config.integer(INTERNAL_SEGMENT_BYTES_KEY, segment_bytes, 1, JAVA_INT_MAX)
    protocol = config.security_protocols.get(listener_name)
    if protocol is None:
        raise config.error(f"the controller listener {listener_name} has no entry in listener.security.protocol.map")
    props, where = config.props, config.path
    security = listener_security(props, listener_name, SecurityProtocol(protocol), where)
    broker_problem = None
    try:
        broker_listener, broker_security = broker_client(props, where)
    except ConfigError as exc:
        if "broker" in config.roles:  # a combined node's broker side needs them anyway
            raise
        # Kafka's controllers never read the inter-broker settings (a config shared with the
        # brokers may name GSSAPI there): start, and say unclean recovery cannot ask the brokers
        broker_listener, broker_security, broker_problem = None, None, str(exc)
    return ControllerSettings(path=Path(path), node_id=config.node_id, metadata_log_dir=config.metadata_log_dir,
                              listener_name=listener_name, bind=(bind_host or "0.0.0.0", bind_port),
                              endpoints=tuple(endpoints), raft=raft, max_idle_interval_ms=idle,
                              snapshots=snapshot_limits(config), segment_bytes=segment_bytes,
                              controller=ControllerConfig.from_properties(config.node_id, props, where),
                              listener_security=security, client_security=controller_client_security(props, where),
                              broker_listener=broker_listener, broker_security=broker_security,
                              broker_problem=broker_problem)


def broker_client(props: Mapping[str, str], where: str) -> tuple[str | None, ClientSecurity]:
    """The brokers' listener a controller asks (unclean recovery's questions), and its client
    security. Kafka's controllers never call a broker, so no setting of theirs names one; the
    broker's own names do: ``inter.broker.listener.name`` (or ``security.inter.broker.protocol``,
    a listener named after its protocol), with ``sasl.mechanism.inter.broker.protocol``."""
    listener = props.get("inter.broker.listener.name", "").strip().upper()
    protocol = props.get("security.inter.broker.protocol", "").strip().upper()
    if listener and protocol:
        raise ConfigError("set inter.broker.listener.name or security.inter.broker.protocol, not both "
                          "(as Kafka requires)", path=where)
    listener = listener or protocol
    if not listener:
        return None, PLAINTEXT_CLIENT
    return listener, client_security(props, where, listener_name=listener,
                                     mechanism_key="sasl.mechanism.inter.broker.protocol")


def check_storage(settings: ControllerSettings) -> MetaProperties:
    """The metadata directory's meta.properties, checked against the config."""
    directory = settings.metadata_log_dir
    if not (directory / META_PROPERTIES_FILE).is_file():
        raise StorageError(f"not formatted (no {META_PROPERTIES_FILE}): run `kraftd storage format "
                           f"--config {settings.path} --cluster-id ID ...` first", path=str(directory))
    meta = read_meta_properties(directory)
    if meta.version != 1 or meta.cluster_id is None:
        raise StorageError(f"{META_PROPERTIES_FILE} is not a KRaft (version 1) one", path=str(directory))
    if meta.node_id != settings.node_id:
        raise StorageError(f"{META_PROPERTIES_FILE} has node.id {meta.node_id} but the config says "
                           f"{settings.node_id}", path=str(directory))
    if meta.directory_id is None and settings.dynamic:
        raise StorageError(f"{META_PROPERTIES_FILE} has no directory.id (needed with dynamic voters)",
                           path=str(directory))
    return meta


@dataclass
class _Attachment:
    listener: RaftListener
    task: Callable[[], Awaitable[None]] | None
    on_stop: Callable[[], None] | None


class ControllerNode:
    """One controller: storage, the Raft driver, the image and its snapshots, the idle NoOps."""

    def __init__(self, settings: ControllerSettings, *, logger: logging.Logger | None = None):
        self.settings = settings
        self.meta = check_storage(settings)
        self.prefix = f"[kraftd node {settings.node_id}]"
        self.log = logger or logging.getLogger(f"kraftd.node{settings.node_id}")
        self.metadata: MetadataListener | None = None
        self.controller: ControllerServer | None = None
        self.controller_apis: ControllerApis | None = None  # the controller listener
        self.raft_log = None
        self.driver = None
        self.snapshots_taken = 0
        self._attachments: list[_Attachment] = []
        self._tasks: list[asyncio.Task] = []
        self._closed = False
        self._started = False

    def attach(self, listener: RaftListener, task: Callable[[], Awaitable[None]] | None = None,
               on_stop: Callable[[], None] | None = None) -> None:
        """Before ``start``: one more RaftListener, a task run while the node runs (cancelled at
        stop) and a callback once stopped. How a benchmark adds its load (engine.bench.node)
        without options in the production command."""
        if self.driver is not None:
            raise RuntimeError("attach before start")
        self._attachments.append(_Attachment(listener, task, on_stop))

    async def start(self) -> None:
        from engine.raft.election_store import FileElectionStore
        from engine.raft.file_raft_log import FileRaftLog
        from engine.raft.raft_driver import RaftDriver

        s = self.settings
        self.raft_log = FileRaftLog.open(s.metadata_log_dir, segment_bytes=s.segment_bytes)
        store = FileElectionStore(s.metadata_log_dir / METADATA_PARTITION_DIR / QUORUM_STATE_FILE,
                                  data_version=1 if s.dynamic else 0, static_voter_ids=s.raft.static_voters.ids)
        self.driver = RaftDriver(config=s.raft, cluster_id=self.meta.cluster_id,
                                 local=ReplicaKey(s.node_id, self.meta.directory_id), endpoints=s.endpoints,
                                 log=self.raft_log, store=store, client_id=f"raft-client-{s.node_id}",
                                 client_security=s.client_security)
        driver = self.driver
        self.metadata = MetadataListener(self.log, self.prefix, SnapshotPolicy(s.snapshots, driver.now_ms()),
                                         driver.now_ms, self._snapshot_due)
        driver.register(self.metadata)
        config = replace(s.controller, cluster_id=self.meta.cluster_id)
        self.controller = ControllerServer(
            driver, lambda: self.metadata.image, config, read_bootstrap_records(s.metadata_log_dir),
            controller_commands.all_commands(), controller_commands.all_periodic(),
            soft=controller_commands.new_soft_state(config), activation_hooks=controller_commands.activation_hooks(),
            registrar=ControllerRegistrar(s.node_id, lambda: driver.endpoints, supported_feature_ranges(),
                                          int(s.listener_security.protocol)),
            broker_listener=s.broker_listener, broker_security=s.broker_security, broker_problem=s.broker_problem)
        self.controller_apis = ControllerApis(
            driver, self.controller, bind=s.bind, supported_features=supported_feature_ranges(),
            # SCRAM logins are checked against this node's image at each handshake
            security=replace(s.listener_security, scram_credentials=scram_lookup(self._image)))
        for attachment in self._attachments:
            driver.register(attachment.listener)
        driver.on_state_change(self._state_changed)
        try:
            await self.controller_apis.start()
        except OSError as err:  # the log is closed by stop()
            why = os.strerror(err.errno) if err.errno else str(err)  # asyncio's own text repeats the address
            raise ConfigError(f"cannot listen on {s.bind[0]}:{s.bind[1]} ({s.listener_name}): {why}",
                              path=str(s.path)) from None
        address = driver.address
        self.log.info("%s listening on %s:%d as %s (cluster %s, %s quorum, log from offset %d to %d)", self.prefix,
                      address[0], address[1], ReplicaKey(s.node_id, self.meta.directory_id), self.meta.cluster_id,
                      "dynamic" if s.dynamic else "static", self.raft_log.start_offset, self.raft_log.end_offset)
        driver.start_core()
        self._started = True
        self._tasks.append(asyncio.create_task(self._idle_noops(), name="idle noops"))
        for attachment in self._attachments:
            if attachment.task is not None:
                self._tasks.append(asyncio.create_task(attachment.task(), name="attached task"))

    def _image(self) -> MetadataImage:
        return self.metadata.image if self.metadata is not None else MetadataImage()

    def _state_changed(self, role: str, leader) -> None:
        if role not in ("leader", "follower"):  # those are said by the listener's "leader is N in epoch E"
            self.log.info("%s %s in epoch %d", self.prefix, role, leader.epoch)

    @property
    def last_committed_offset(self) -> int:
        return self.metadata.last_committed_offset if self.metadata is not None else -1

    @property
    def image(self) -> MetadataImage:
        """The image of what this node has committed (empty before start)."""
        return self.metadata.image if self.metadata is not None else MetadataImage()

    def _snapshot_due(self, end_offset: int, image: MetadataImage, timestamp_ms: int, reason: str) -> bool:
        def done(snapshot_id: SnapshotId) -> None:
            self.snapshots_taken += 1
            self.log.info("%s created snapshot %s because %s; the log now starts at offset %d", self.prefix,
                          snapshot_id.file_name, reason, self.raft_log.start_offset)

        return self.driver.request_snapshot(end_offset, image_entries(image),
                                            last_contained_log_timestamp_ms=timestamp_ms, on_done=done)

    async def _idle_noops(self) -> None:
        """KIP-835: a leader with nothing to append for an interval appends a NoOpRecord."""
        from engine.records.metadata_records import NoOpRecordV0

        interval = self.settings.max_idle_interval_ms
        driver = self.driver
        while True:
            now = driver.now_ms()
            last = driver.last_append_ms
            due = interval if last is None else max(1, last + interval - now)
            await asyncio.sleep(due / 1000)
            last = driver.last_append_ms
            if driver.is_leader and (last is None or driver.now_ms() - last >= interval):
                driver.schedule_append([NoOpRecordV0()])

    async def wait(self, stop: asyncio.Event) -> None:
        """Until ``stop`` is set or the driver stops by itself (a core failure)."""
        waiters = [asyncio.create_task(stop.wait()), asyncio.create_task(self.driver.done.wait())]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waiters:
                task.cancel()

    async def stop(self) -> None:
        """Resign if leading, close the listener and connections, flush and close the log."""
        if self._closed:
            return
        self._closed = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.controller is not None:
            await self.controller.close()
        if self.driver is not None:
            if self.driver.is_leader:
                self.log.info("%s resigning the leadership", self.prefix)
            await self.driver.resign(RESIGN_WAIT_MS)
            if self.controller_apis is not None:
                await self.controller_apis.close()  # before the driver: requests still arriving are served
            await self.driver.stop()
        for attachment in self._attachments:
            if attachment.on_stop is not None:
                attachment.on_stop()
        if self.raft_log is not None:
            try:
                self.raft_log.flush()
            finally:
                self.raft_log.close()
        if self._started:
            self.log.info("%s stopped (last committed offset %d)", self.prefix, self.last_committed_offset)


# -- the command ------------------------------------------------------------------------------

class _LineFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return text if record.name.startswith("kraftd") else f"{text} ({record.name})"


def setup_logging() -> None:
    """One line per record on stderr, with the time (every kraftd node process)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LineFormatter("%(asctime)s.%(msecs)03d %(message)s", datefmt="%H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)


__all__: Sequence[str] = ["ControllerNode", "ControllerSettings", "check_storage", "load_controller_settings",
                          "raft_failed", "setup_logging"]
