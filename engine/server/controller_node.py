"""``kraftd start --config controller.properties``: one KRaft controller process.

Reads a Kafka server config (Kafka's names), opens the formatted metadata log directory,
and runs the Raft core behind the asyncio driver (engine.raft.raft_driver) on the
controller listener. As Kafka's active controller does (KIP-835), the leader appends a
NoOpRecord every ``metadata.max.idle.interval.ms`` (default 500) in which nothing else
was appended, so the high watermark keeps moving and followers see commits. There is no
controller state machine yet: a small listener tracks the last committed offset.

Logs go to stderr, one line per role or leader change and per commit milestone. SIGTERM
and SIGINT stop the node gracefully: a leader resigns (EndQuorumEpoch, up to ~1 s), the
listener closes, the log is flushed and closed, exit 0. A config or storage problem at
startup is one line and exit 1.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from engine.common.errors import ConfigError, StorageError
from engine.common.java_properties import load_properties
from engine.storage.log_reader import METADATA_PARTITION_DIR
from engine.storage.meta_properties import META_PROPERTIES_FILE, MetaProperties, read_meta_properties
from engine.raft.raft_config import RaftConfig
from engine.raft.voter_set import Address, ReplicaKey

MAX_IDLE_INTERVAL_MS = "metadata.max.idle.interval.ms"
DEFAULT_MAX_IDLE_INTERVAL_MS = 500
RESIGN_WAIT_MS = 1000
QUORUM_STATE_FILE = "quorum-state"


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

    @property
    def dynamic(self) -> bool:
        """kraft.version 1: the voters live in the log, not in controller.quorum.voters."""
        return not self.raft.static_voters.voters


def _parse_listeners(text: str, key: str, where: str) -> dict[str, tuple[str, int]]:
    out = {}
    for item in (part.strip() for part in text.split(",") if part.strip()):
        name, sep, rest = item.partition("://")
        host, colon, port = rest.rpartition(":")
        if not sep or not colon or not port.isdigit() or not name or int(port) > 65535:
            raise ConfigError(f"bad {key} entry {item!r} (expected NAME://HOST:PORT)", path=where)
        out[name.strip().upper()] = (host.strip("[]"), int(port))
    return out


def load_controller_settings(path: Path) -> ControllerSettings:
    """Read and check a controller's config; ConfigError (one line) names what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError("no such config file", path=str(path))
    props = load_properties(path)
    where = str(path)
    roles = [r.strip() for r in props.get("process.roles", "").split(",") if r.strip()]
    if "broker" in roles:
        raise ConfigError("broker role is not supported yet (process.roles must be controller)", path=where)
    if roles != ["controller"]:
        raise ConfigError(f"process.roles must be controller, got {props.get('process.roles')!r}", path=where)
    node_text = props.get("node.id", "").strip()
    if not node_text.isdigit():
        raise ConfigError("missing node.id" if not node_text else f"node.id must be a non-negative integer, "
                          f"got {node_text!r}", path=where)
    metadata_dir = props.get("metadata.log.dir", "").strip() or next(
        (d.strip() for d in (props.get("log.dirs") or props.get("log.dir") or "").split(",") if d.strip()), "")
    if not metadata_dir:
        raise ConfigError("neither metadata.log.dir nor log.dirs is set", path=where)
    names = [n.strip() for n in props.get("controller.listener.names", "").split(",") if n.strip()]
    if not names:
        raise ConfigError("controller.listener.names is not set", path=where)
    listeners = _parse_listeners(props.get("listeners", ""), "listeners", where)
    advertised = _parse_listeners(props.get("advertised.listeners", ""), "advertised.listeners", where)
    for name in names:
        if name.upper() not in listeners:
            raise ConfigError(f"the controller listener {name} (controller.listener.names) is not in listeners "
                              f"{props.get('listeners', '')!r}", path=where)
    endpoints = []
    for name in names:
        host, port = advertised.get(name.upper(), listeners[name.upper()])
        if not host or host in ("0.0.0.0", "::"):
            host = socket.getfqdn()  # Kafka advertises the canonical host name of a wildcard listener
        endpoints.append((name, (host, port)))
    bind_host, bind_port = listeners[names[0].upper()]
    raft = RaftConfig.from_properties(props, where=where)
    if not raft.static_voters.voters and not raft.bootstrap_servers:
        raise ConfigError("set controller.quorum.bootstrap.servers (or controller.quorum.voters)", path=where)
    idle = props.get(MAX_IDLE_INTERVAL_MS, str(DEFAULT_MAX_IDLE_INTERVAL_MS)).strip()
    if not idle.isdigit() or int(idle) < 1:
        raise ConfigError(f"{MAX_IDLE_INTERVAL_MS} must be a positive integer, got {idle!r}", path=where)
    return ControllerSettings(path=path, node_id=int(node_text), metadata_log_dir=Path(metadata_dir),
                              listener_name=names[0], bind=(bind_host or "0.0.0.0", bind_port),
                              endpoints=tuple(endpoints), raft=raft, max_idle_interval_ms=int(idle))


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


class CommitTracker:
    """The controller's stand-in state machine: the last committed offset, and log lines."""

    def __init__(self, logger: logging.Logger, prefix: str):
        self.log = logger
        self.prefix = prefix
        self.last_committed_offset = -1
        self.commits = 0  # handle_commit calls
        self.leader = None
        self._next_milestone = 0

    def handle_commit(self, batches) -> None:
        self.commits += 1
        self.last_committed_offset = batches[-1].last_offset
        if self.last_committed_offset >= self._next_milestone:
            self.log.info("%s committed up to offset %d", self.prefix, self.last_committed_offset)
            m = self.last_committed_offset + 1
            self._next_milestone = 10 ** len(str(m)) if m < 10_000 else (m // 10_000 + 1) * 10_000

    def handle_load_snapshot(self, snapshot_id, batches) -> None:
        self.last_committed_offset = snapshot_id.end_offset - 1
        self.log.info("%s loaded snapshot %d-%d", self.prefix, snapshot_id.end_offset, snapshot_id.epoch)

    def handle_leader_change(self, leader) -> None:
        self.leader = leader
        if leader.leader_id >= 0:  # no leader: the role line ("prospective in epoch 4") says it
            self.log.info("%s leader is %d in epoch %d", self.prefix, leader.leader_id, leader.epoch)


@dataclass(frozen=True)
class LoadOptions:
    rate: float
    batch: int = 1
    report: Path | None = None


class ControllerNode:
    """One controller: storage, the Raft driver, the idle NoOps, the optional benchmark load."""

    def __init__(self, settings: ControllerSettings, *, load: LoadOptions | None = None,
                 logger: logging.Logger | None = None):
        self.settings = settings
        self.meta = check_storage(settings)
        self.prefix = f"[kraftd node {settings.node_id}]"
        self.log = logger or logging.getLogger(f"kraftd.node{settings.node_id}")
        self.tracker = CommitTracker(self.log, self.prefix)
        self.load_options = load
        self.load = None
        self.raft_log = None
        self.driver = None
        self._tasks: list[asyncio.Task] = []
        self._closed = False
        self._started = False

    async def start(self) -> None:
        from engine.raft.election_store import FileElectionStore
        from engine.raft.file_raft_log import FileRaftLog
        from engine.raft.raft_driver import RaftDriver

        s = self.settings
        self.raft_log = FileRaftLog.open(s.metadata_log_dir)
        store = FileElectionStore(s.metadata_log_dir / METADATA_PARTITION_DIR / QUORUM_STATE_FILE,
                                  data_version=1 if s.dynamic else 0, static_voter_ids=s.raft.static_voters.ids)
        self.driver = RaftDriver(config=s.raft, cluster_id=self.meta.cluster_id,
                                 local=ReplicaKey(s.node_id, self.meta.directory_id), endpoints=s.endpoints,
                                 log=self.raft_log, store=store, bind=s.bind,
                                 client_id=f"raft-client-{s.node_id}")
        self.driver.register(self.tracker)
        self.driver.on_state_change(self._state_changed)
        if self.load_options is not None:
            from engine.tools.load_generator import LoadGenerator

            self.load = LoadGenerator(self.load_options.rate, self.load_options.batch, node_id=s.node_id)
            self.driver.register(self.load)
        try:
            await self.driver.start_listening()
        except OSError as err:  # the log is closed by stop()
            raise ConfigError(f"cannot listen on {s.bind[0]}:{s.bind[1]} ({s.listener_name}): "
                              f"{err.strerror or err}", path=str(s.path)) from None
        address = self.driver.address
        self.log.info("%s listening on %s:%d as %s (cluster %s, %s quorum, log end offset %d)", self.prefix,
                      address[0], address[1], ReplicaKey(s.node_id, self.meta.directory_id), self.meta.cluster_id,
                      "dynamic" if s.dynamic else "static", self.raft_log.end_offset)
        self.driver.start_core()
        self._started = True
        self._tasks.append(asyncio.create_task(self._idle_noops(), name="idle noops"))
        if self.load is not None:
            self._tasks.append(asyncio.create_task(self._load_loop(), name="load"))
            if self.load_options.report is not None:
                self._tasks.append(asyncio.create_task(self._report_loop(), name="load report"))

    def _state_changed(self, role: str, leader) -> None:
        if role not in ("leader", "follower"):  # those are said by the listener's "leader is N in epoch E"
            self.log.info("%s %s in epoch %d", self.prefix, role, leader.epoch)

    @property
    def last_committed_offset(self) -> int:
        return self.tracker.last_committed_offset

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

    async def _load_loop(self) -> None:
        while True:
            await asyncio.sleep(self.load.interval_s)
            self.load.tick(self.driver.is_leader, self.driver.schedule_append)

    async def _report_loop(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            self._write_report()

    def _write_report(self) -> None:
        if self.load is not None and self.load_options.report is not None:
            try:
                self.load.write_report(self.load_options.report)
            except OSError as err:
                self.log.warning("%s cannot write the load report %s: %s", self.prefix, self.load_options.report,
                                 err.strerror or err)

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
        if self.driver is not None:
            if self.driver.is_leader:
                self.log.info("%s resigning the leadership", self.prefix)
            await self.driver.resign(RESIGN_WAIT_MS)
            await self.driver.stop()
        self._write_report()
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


def _setup_logging(node_id: int) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LineFormatter("%(asctime)s.%(msecs)03d %(message)s", datefmt="%H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)


async def _serve(node: ControllerNode) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        await node.start()
        await node.wait(stop)
    finally:
        await node.stop()
    failure = node.driver.failure
    if failure is not None:
        raise RuntimeError(f"the Raft core failed: {type(failure).__name__}: {failure}")
    return 0


def run_start(config: Path, *, load_rate: float | None = None, load_batch: int = 1,
              load_report: Path | None = None) -> int:
    settings = load_controller_settings(config)
    load = LoadOptions(load_rate, load_batch, load_report) if load_rate else None
    node = ControllerNode(settings, load=load)
    _setup_logging(settings.node_id)
    return asyncio.run(_serve(node))


def cmd_start(args) -> int:
    if args.load_rate is not None and args.load_rate <= 0:
        raise ConfigError(f"--load-rate must be positive, got {args.load_rate}")
    return run_start(Path(args.config), load_rate=args.load_rate, load_batch=args.load_batch,
                     load_report=Path(args.load_report) if args.load_report else None)


__all__: Sequence[str] = ["CommitTracker", "ControllerNode", "ControllerSettings", "LoadOptions", "check_storage",
                          "load_controller_settings", "run_start"]
