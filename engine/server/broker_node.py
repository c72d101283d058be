"""``kraftd start`` with ``process.roles=broker``: one simulated broker process.

It plays a Kafka broker's whole part toward the controller quorum and holds no message data:

- the metadata log as a Raft observer (Fetch and FetchSnapshot from the leader, the same
  RaftDriver and log files as a controller's, no Raft listener of its own), replayed into the
  broker's own MetadataImage (engine.server.metadata_listener, snapshots included);
- registration and heartbeats (engine.broker.broker_lifecycle) through the channel to the
  active controller (engine.broker.controller_channel): STARTING until the controller says it
  caught up, RECOVERY until unfenced, RUNNING; SIGTERM is a controlled shutdown;
- the client listeners (engine.broker.broker_apis): admin reads from the image, writes forwarded
  to the controller in an Envelope; each served with its own security (TLS, SASL), a SCRAM login
  checked against the broker's own image at each handshake, as Kafka's broker does;
- simulated replicas: followers fetch from leaders over the wire, leaders shrink and expand the
  ISR by AlterPartition (engine.broker.replica_sim), replicas get directories by
  AssignReplicasToDirs (engine.broker.dir_assignments);
- faults from ``kraftd.sim.faults.file`` (a fetch delay, failed log dirs: OfflineLogDirs in the
  next heartbeat).

Logs go to stderr, one line per state change. A config or storage problem is one line and exit 1;
so is a broker the controller never registered (``initial.broker.registration.timeout.ms``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from dataclasses import replace
from typing import Any

from engine.broker.broker_lifecycle import BrokerLifecycle, BrokerState, LifecycleConfig, registration_needs_refresh
from engine.broker.controller_channel import ControllerChannel
from engine.broker.replica_sim import ReplicaConfig
from engine.common.errors import ConfigError
from engine.controller.feature_control import supported_feature_ranges
from engine.image.image_entries import image_entries
from engine.image.metadata_image import MetadataImage
from engine.net.errors import NetError
from engine.net.kafka_client import KafkaClient
from engine.net.kafka_server import KafkaServer
from engine.raft.raft_client import LeaderAndEpoch
from engine.raft.voter_set import ReplicaKey
from engine.server.broker_settings import (
    BrokerSettings, Faults, check_broker_storage, directory_ids, read_clean_shutdown,
    read_faults, write_clean_shutdown,
)
from engine.server.broker_replicas import BrokerReplicas
from engine.server.metadata_listener import MetadataListener
from engine.server.scram_credentials import scram_lookup
from engine.server.snapshot_policy import SnapshotPolicy
from engine.storage.log_reader import METADATA_PARTITION_DIR
from engine.storage.snapshot_writer import SnapshotId

QUORUM_STATE_FILE = "quorum-state"
FAULTS_POLL_MS = 500
FORWARD_TIMEOUT_MS = 30_000  # Kafka's request.timeout.ms, for a forwarded admin request


class _Wakeup:
    """A RaftListener that wakes the broker's loops when the metadata moves or the leader changes."""

    def __init__(self, node: "BrokerNode"):
        self.node = node

    def handle_commit(self, batches: Any) -> None:
        self.node.wake()

    def handle_load_snapshot(self, snapshot_id: Any, batches: Any) -> None:
        self.node.wake()

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        if self.node.channel is not None:
            self.node.channel.leader_changed()
        self.node.wake()


class BrokerNode:
    """One simulated broker: storage, the metadata observer, the lifecycle, the listeners."""

    def __init__(self, settings: BrokerSettings, *, logger: logging.Logger | None = None,
                 shared: Any = None):
        """``shared``: a node whose metadata log and image this broker uses instead of its own
        observer (a ControllerNode in combined mode; the first broker of a process hosting many),
        started first and stopped after."""
        self.settings = settings
        self.shared = shared
        self.metas = check_broker_storage(settings)
        self.cluster_id = self.metas[settings.metadata_log_dir].cluster_id
        self.dir_ids = directory_ids(self.metas)
        self.prefix = f"[kraftd broker {settings.node_id}]"
        self.log = logger or logging.getLogger(f"kraftd.broker{settings.node_id}")
        self.incarnation_id = uuid.uuid4()
        self.metadata: MetadataListener | None = None
        self.driver = None
        self.raft_log = None
        self.channel: ControllerChannel | None = None
        self.lifecycle: BrokerLifecycle | None = None
        self.apis = None
        self.replicas: BrokerReplicas | None = None
        self.servers: list[KafkaServer] = []
        self.faults = Faults()
        self.failure: str | None = None  # why the broker shut itself down
        self.stopped = asyncio.Event()
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self._requests: set[asyncio.Task] = set()
        self._logged_state: tuple | None = None
        self._controlled = False  # a controlled shutdown was asked (its end is no failure)
        self._closed = False

    # -- start ------------------------------------------------------------------------------

    async def start(self) -> None:
        from engine.broker.broker_apis import BrokerApis
        from engine.broker.data_answers import LogDir
        from engine.raft.election_store import FileElectionStore
        from engine.raft.file_raft_log import FileRaftLog
        from engine.raft.raft_driver import RaftDriver

        s = self.settings
        if self.shared is None:
            self.raft_log = FileRaftLog.open(s.metadata_log_dir)
            store = FileElectionStore(s.metadata_log_dir / METADATA_PARTITION_DIR / QUORUM_STATE_FILE,
                                      data_version=1 if s.dynamic else 0, static_voter_ids=s.raft.static_voters.ids)
            self.driver = driver = RaftDriver(
                config=s.raft, cluster_id=self.cluster_id,
                local=ReplicaKey(s.node_id, self.dir_ids[s.metadata_log_dir]), endpoints=(), log=self.raft_log,
                store=store, client_id=f"raft-client-{s.node_id}",
                client_security=s.controller_security)
            self.metadata = MetadataListener(self.log, self.prefix, SnapshotPolicy(s.snapshots, driver.now_ms()),
                                             driver.now_ms, self._snapshot_due)
            driver.register(self.metadata)
        else:  # a combined node's controller, or the first broker of a process: its log and image
            if self.shared.driver is None:
                raise RuntimeError("start the node whose metadata log is shared first")
            self.driver = driver = self.shared.driver
            self.metadata = self.shared.metadata
        driver.register(_Wakeup(self))
        self.channel = ControllerChannel(self._active_controller, KafkaClient(
            client_id=f"broker-{s.node_id}-to-controller", request_timeout_ms=s.session_timeout_ms // 2,
            security=s.controller_security))
        self.replicas = BrokerReplicas(
            ReplicaConfig(s.node_id, tuple(self.dir_ids[d] for d in s.log_dirs),
                          fetch_interval_ms=s.replica_fetch_wait_max_ms,
                          replica_lag_time_max_ms=s.replica_lag_time_max_ms),
            image=lambda: self.image, broker_epoch=lambda: self.lifecycle.broker_epoch, channel=self.channel,
            inter_broker_listener=s.inter_broker_listener, inter_broker_security=s.inter_broker_security,
            now_ms=driver.now_ms,
            controller_timeout_ms=s.session_timeout_ms)
        self.apis = BrokerApis(broker_id=s.node_id, cluster_id=self.cluster_id, image=lambda: self.image,
                               send_to_controller=self._forward, listener_name=s.inter_broker_listener,
                               authorizer=s.authorizer, replica_fetch=self.replicas.handle_fetch,
                               config=s.static_configs,
                               log_dirs=lambda: [LogDir(str(d), self.dir_ids[d], d not in self.faults.failed_dirs)
                                                 for d in s.log_dirs])
        advertised = []
        scram = scram_lookup(lambda: self.image)  # the credentials this broker has replayed, at each login
        for index, ((name, bind), listener) in enumerate(zip(s.binds, s.advertised)):
            security = replace(s.listener_security(index), scram_credentials=scram)
            server = KafkaServer(self.apis.handle, host=bind[0], port=bind[1], apis=self.apis.apis,
                                 listener_name=name, features=supported_feature_ranges(),
                                 finalized_features=self._finalized_features, security=security)
            try:
                address = await server.start()
            except OSError as err:
                why = os.strerror(err.errno) if err.errno else str(err)
                raise ConfigError(f"cannot listen on {bind[0]}:{bind[1]} ({name}): {why}", path=str(s.path)) from None
            self.servers.append(server)
            # a listener on port 0 advertises the port it got
            advertised.append(listener if listener.port else type(listener)(listener.name, listener.host, address[1],
                                                                              listener.security_protocol))
            self.log.info("%s listening on %s:%d (%s, %s)", self.prefix, address[0], address[1], name,
                          security.protocol.name)
        self.lifecycle = BrokerLifecycle(LifecycleConfig(
            broker_id=s.node_id, cluster_id=self.cluster_id, incarnation_id=self.incarnation_id,
            listeners=tuple(advertised), supported_features=supported_feature_ranges(),
            log_dir_ids=tuple(self.dir_ids[d] for d in s.log_dirs), rack=s.rack,
            heartbeat_interval_ms=s.heartbeat_interval_ms, session_timeout_ms=s.session_timeout_ms,
            initial_registration_timeout_ms=s.initial_registration_timeout_ms))
        if self.shared is None:
            driver.start_core()
        previous_epoch = read_clean_shutdown(s.log_dirs)
        self.lifecycle.start(driver.now_ms(), previous_epoch)
        log = self.driver.raft_log
        self.log.info("%s started (cluster %s, incarnation %s, previous clean broker epoch %d, metadata log from "
                      "offset %d to %d%s)", self.prefix, self.cluster_id, self.incarnation_id, previous_epoch,
                      log.start_offset, log.end_offset, "" if self.shared is None else ", shared")
        self._tasks.append(asyncio.create_task(self._lifecycle_loop(), name="broker lifecycle"))
        self.replicas.start()
        self._tasks.append(asyncio.create_task(self._faults_loop(), name="broker faults"))

    # -- what the parts read ----------------------------------------------------------------

    @property
    def image(self) -> MetadataImage:
        return self.metadata.image if self.metadata is not None else MetadataImage()

    @property
    def state(self) -> BrokerState:
        return self.lifecycle.state if self.lifecycle is not None else BrokerState.NOT_RUNNING

    def now_ms(self) -> int:
        return self.driver.now_ms()

    def wake(self) -> None:
        self._wake.set()
        if self.replicas is not None:
            self.replicas.wake()

    def _active_controller(self) -> tuple[int, tuple[str, int] | None]:
        client = self.driver.client if self.driver is not None else None
        if client is None or client.quorum.leader_id < 0:
            return -1, None
        leader = client.quorum.leader_id
        voter = next((v for v in client.control.latest_voters().voters if v.key.node_id == leader), None)
        return leader, voter.endpoint(self.settings.raft.listener_name) if voter is not None else None

    def _finalized_features(self) -> tuple[int, dict[str, int]]:
        image = self.image
        features = dict(image.features)
        client = self.driver.client if self.driver is not None else None
        if client is not None:
            features["kraft.version"] = client.control.kraft_version
        return image.provenance.last_offset, features

    async def _forward(self, request: Any) -> Any:
        return await self.channel.send(request, timeout_ms=FORWARD_TIMEOUT_MS)

    def _snapshot_due(self, end_offset: int, image: MetadataImage, timestamp_ms: int, reason: str) -> bool:
        def done(snapshot_id: SnapshotId) -> None:
            self.log.info("%s created snapshot %s because %s", self.prefix, snapshot_id.file_name, reason)

        return self.driver.request_snapshot(end_offset, image_entries(image),
                                            last_contained_log_timestamp_ms=timestamp_ms, on_done=done)

    # -- the lifecycle toward the controller --------------------------------------------------

    async def _lifecycle_loop(self) -> None:
        lifecycle = self.lifecycle
        while True:
            now = self.now_ms()
            lifecycle.metadata_offset(self.metadata.last_committed_offset)
            if lifecycle.state == BrokerState.RECOVERY and not lifecycle.ready_to_unfence:
                lifecycle.set_ready_to_unfence(now)  # nothing to recover: no data
            if lifecycle.state == BrokerState.RUNNING and lifecycle.registered and \
                    registration_needs_refresh(self.image, self.settings.node_id):
                lifecycle.resend_registration(now)
            for request in lifecycle.poll(now):
                task = asyncio.create_task(self._send_lifecycle(request), name="broker lifecycle request")
                self._requests.add(task)
                task.add_done_callback(self._requests.discard)
            self._log_state()
            if lifecycle.state == BrokerState.SHUTTING_DOWN:
                if lifecycle.shutdown_reason and not self._controlled:
                    self.failure = lifecycle.shutdown_reason
                self.stopped.set()
                return
            due = lifecycle.next_poll_ms(now)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(None if due is None else max(0, due - now) / 1000):
                    await self._wake.wait()

    async def _send_lifecycle(self, request: Any) -> None:
        lifecycle = self.lifecycle
        try:
            response = await self.channel.send(request, timeout_ms=lifecycle.config.request_timeout_ms)
        except NetError as err:
            self.log.debug("%s %s failed: %s", self.prefix, type(request).__name__, err)
            lifecycle.handle_failure(request, self.now_ms())
        else:
            lifecycle.handle_response(request, response, self.now_ms())
        self.wake()

    def _log_state(self) -> None:
        lifecycle = self.lifecycle
        state = (lifecycle.state, lifecycle.broker_epoch)
        if state != self._logged_state:
            self._logged_state = state
            self.log.info("%s is %s (broker epoch %d, metadata offset %d)", self.prefix, lifecycle.state.name,
                          lifecycle.broker_epoch, self.metadata.last_committed_offset)

    # -- faults ----------------------------------------------------------------------------

    async def _faults_loop(self) -> None:
        path = self.settings.faults_file
        seen = None
        while True:
            try:
                stamp = path.stat().st_mtime_ns if path is not None else None
            except OSError:
                stamp = None
            if stamp != seen:
                seen = stamp
                try:
                    self._apply_faults(read_faults(path, str(self.settings.path)))
                except (ConfigError, OSError) as err:
                    self.log.warning("%s ignoring the faults file: %s", self.prefix, err)
            await asyncio.sleep(FAULTS_POLL_MS / 1000)

    def _apply_faults(self, faults: Faults) -> None:
        if faults == self.faults:
            return
        now = self.now_ms()
        failed = {d for d in self.settings.log_dirs if d in faults.failed_dirs}
        unknown = faults.failed_dirs - set(self.settings.log_dirs)
        if unknown:
            self.log.warning("%s the faults file fails %s, not a log dir of this broker", self.prefix,
                             ", ".join(map(str, sorted(unknown))))
        newly = failed - self.faults.failed_dirs
        self.faults = Faults(faults.fetch_delay_ms, frozenset(failed), faults.fetch_failure_rate)
        for directory in sorted(newly):
            self.log.info("%s log dir %s failed (directory id %s)", self.prefix, directory, self.dir_ids[directory])
        if self.settings.metadata_log_dir in failed:
            # as Kafka's broker: without its metadata log dir it cannot go on
            self.lifecycle.begin_shutdown(f"the metadata log dir {self.settings.metadata_log_dir} failed")
        elif newly:
            self.lifecycle.set_offline_dirs({self.dir_ids[d] for d in failed}, now)
            self.replicas.set_failed_dirs(self.dir_ids[d] for d in failed)
        self.replicas.set_fetch_delay_ms(faults.fetch_delay_ms)
        self.replicas.set_fetch_failure_rate(faults.fetch_failure_rate)
        self.log.info("%s faults now: replica fetch delay %d ms, fetch failure rate %g, failed log dirs: %s",
                      self.prefix, faults.fetch_delay_ms, faults.fetch_failure_rate,
                      ", ".join(map(str, sorted(failed))) or "none")
        self.wake()

    # -- stop ------------------------------------------------------------------------------

    async def controlled_shutdown(self, stop_now: asyncio.Event | None = None) -> None:
        """Kafka's broker shutdown: ask the controller to move leadership away (WantShutDown),
        wait until it allows the shutdown (at most ``controlled_shutdown_wait_ms``, or until
        ``stop_now``), then stop."""
        lifecycle = self.lifecycle
        if lifecycle is not None and lifecycle.state not in (BrokerState.SHUTTING_DOWN, BrokerState.NOT_RUNNING):
            self._controlled = True
            self.log.info("%s starting a controlled shutdown", self.prefix)
            lifecycle.begin_controlled_shutdown(self.now_ms())
            self.wake()
            waiters = [asyncio.create_task(self.stopped.wait())]
            if stop_now is not None:
                waiters.append(asyncio.create_task(stop_now.wait()))
            try:
                await asyncio.wait(waiters, timeout=self.settings.controlled_shutdown_wait_ms / 1000,
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in waiters:
                    task.cancel()
            if lifecycle.state != BrokerState.SHUTTING_DOWN:
                self.log.warning("%s the controlled shutdown did not complete; stopping anyway", self.prefix)
        await self.stop()

    async def stop(self) -> None:
        if self._closed:
            return
        self._closed = True
        for task in (*self._tasks, *self._requests):
            task.cancel()
        await asyncio.gather(*self._tasks, *self._requests, return_exceptions=True)
        for server in self.servers:
            await server.close()
        if self.replicas is not None:
            await self.replicas.close()
        if self.driver is not None and self.shared is None:
            await self.driver.stop()
        if self.channel is not None:
            await self.channel.close()
        if self.raft_log is not None:
            try:
                self.raft_log.flush()
            finally:
                self.raft_log.close()
        epoch = self.lifecycle.broker_epoch if self.lifecycle is not None else -1
        if epoch >= 0 and self.failure is None:
            write_clean_shutdown(self.settings.log_dirs, epoch)
        self.stopped.set()
        if self.driver is not None:
            self.log.info("%s stopped (broker epoch %d, last committed offset %d)", self.prefix, epoch,
                          self.metadata.last_committed_offset)


__all__ = ["BrokerNode"]
