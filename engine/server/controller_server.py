"""The quorum controller in a node: the edge between the pure core, the Raft driver and the
controller listener.

The controller listener (``engine.server.controller_apis``) hands each of the controller's
commands to ``serve_command``: the request is converted to the version its command reads,
authorized, given to ``QuorumController.submit`` with the offset the next appended record will
take, and its future is answered when the core releases the response (at once for reads and
refusals; once committed for writes). After every poll of the Raft core the controller is
polled too: it claims a leadership it caught up with, runs its periodic tasks and releases what
got committed. What the core asks to append goes to the Raft leader under its epoch, in order;
a refused append (the leadership went) makes the core step down.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from engine.common.api_keys import ApiKeys
from engine.controller import api_permissions
from engine.controller.controller_config import ControllerConfig
from engine.controller.controller_result import Command
from engine.controller.quorum_controller import USER_OPERATIONS, ControllerOutput, PeriodicTask, QuorumController
from engine.controller.delegation_token_control import TOKEN_API_KEYS, not_allowed_response
from engine.controller.standard_authorizer import Caller
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_version import feature_levels_for, parse_release_version
from engine.net.channel_security import PLAINTEXT_CLIENT, ClientSecurity
from engine.net.kafka_protocol import request_class, response_class
from engine.server.controller_registration import ControllerRegistrar, spawn
from engine.server.request_upgrades import upgrade_fields
from engine.net.message_versions import convert_message
from engine.raft.raft_driver import RaftDriver
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i16
from engine.records.metadata_records import MetadataRecord
from engine.server.unclean_recovery_queries import UncleanRecoveryQueries
from engine.storage.log_reader import read_file
from engine.storage.snapshot_writer import BOOTSTRAP_FILE_NAME

log = logging.getLogger("engine.server.controller")

ANSWER_WAIT_S = 30.0  # a safety net: a write is answered when committed or when the leadership goes
ANONYMOUS = "User:ANONYMOUS"


def read_bootstrap_records(metadata_log_dir: Path) -> list[Any]:
    """The metadata records of ``bootstrap.checkpoint`` in the metadata log directory (what
    ``kafka-storage format`` wrote); without one, a new cluster's records at the latest
    production metadata.version, as Kafka's BootstrapDirectory falls back to."""
    path = metadata_log_dir / BOOTSTRAP_FILE_NAME
    if not path.is_file():
        mv = parse_release_version(None)
        return [m.FeatureLevelRecordV0(name=name, feature_level=i16(level)) for name, level in feature_levels_for(mv)]
    return [entry.record for entry in read_file(path, snapshot=True) if isinstance(entry.record, MetadataRecord)]


class ControllerServer:
    """Serves a QuorumController's commands through one RaftDriver (the controller listener,
    ControllerApis, hands them to ``serve_command``)."""

    def __init__(self, driver: RaftDriver, committed_image: Callable[[], MetadataImage], config: ControllerConfig,
                 bootstrap_records: Sequence[Any], commands: Mapping[int, Command],
                 periodic: Sequence[PeriodicTask] = (), soft: Any = None,
                 activation_hooks: Sequence[Callable[[Any, MetadataImage, int], None]] = (),
                 registrar: ControllerRegistrar | None = None, broker_listener: str | None = None,
                 broker_security: ClientSecurity | None = PLAINTEXT_CLIENT, broker_problem: str | None = None):
        self.driver = driver
        self.authorizer = config.authorizer
        self._acls: tuple[Any, tuple[Any, ...]] = (None, ())  # the committed ACL map and its records
        self._acls_loaded = False  # once True, for good: Kafka completes the authorizer's initial load once
        # DescribeCluster stays the controller listener's answer from the quorum (the voters'
        # endpoints, the Raft leader as controller id), which holds before a metadata.version with
        # registrations and while a controller is still unregistered; `kraftd quorum` and Kafka's
        # admin clients find the leader with it.
        self.commands = {key: c for key, c in commands.items() if key != ApiKeys.DESCRIBE_CLUSTER}
        self.core = QuorumController(config, committed_image, bootstrap_records, self.commands, periodic, soft,
                                     activation_hooks)
        self._logged_active: int | None = None
        # One admin operation per turn of the event loop: a CreateTopics of 10,000 partitions is
        # a tenth of a second of CPU, and four pipelined ones run back to back kept the Raft
        # fetches waiting past the fetch timeout on a starved machine (the quorum churned). Kafka
        # runs its controller's events on a thread of their own, beside Raft's I/O thread.
        self._admin_turn = asyncio.Lock()
        self.registrar = registrar
        self._tasks: set[asyncio.Task] = set()
        driver.register(self.core)  # after the node's metadata listener: the committed image is current
        # KIP-966 unclean recovery: the core's questions to brokers, their answers back to the core
        # (over the brokers' listener that inter.broker.listener.name names, secured as it asks)
        self.recovery_queries = UncleanRecoveryQueries(lambda: self.core, self.pump, listener=broker_listener,
                                                       security=broker_security, problem=broker_problem)
        driver.after_pump(self.pump)

    # -- the edge's loop -------------------------------------------------------------------

    def pump(self) -> None:
        """Poll the core (after each Raft poll, and on the node's timer)."""
        if self.driver.client is None:
            return
        self._apply(self.core.poll(self.driver.now_ms(), self.driver.next_append_offset()))
        self.recovery_queries.send_pending()
        self._note_activity()
        registrar = self.registrar
        if registrar is not None and registrar.due(self.core.committed_image(), self.driver.now_ms()):
            spawn(registrar.register(self._register, self.driver.now_ms), self._tasks)

    async def _register(self, request: Any) -> Any:
        """A ControllerRegistration: through our own core when active, else to the active controller."""
        if self.core.is_active:
            return await self.serve_command(ApiKeys.CONTROLLER_REGISTRATION, 0, request, ANONYMOUS)
        leader = self.driver.leader_id
        address = next((address for node_id, address in self.driver.voter_endpoints() if node_id == leader), None)
        if leader < 0 or address is None or leader == self.core.node_id:
            return None
        return await self.driver.net.send(address, request, timeout_ms=self.driver.config.request_timeout_ms)

    def _note_activity(self) -> None:
        active = self.core.active_epoch
        if active != self._logged_active:
            self._logged_active = active
            if active is None:
                log.info("node %d: no longer the active controller", self.core.node_id)
            else:
                log.info("node %d: the active controller in epoch %d (image at offset %d)", self.core.node_id,
                         active, self.core.image.provenance.last_offset)

    def _submit(self, api_key: int, request: Any, future: asyncio.Future, principal: str) -> None:
        if self.driver.client is None:  # stopped while it waited for its turn
            future.set_result(self.commands[api_key].error_response(request, ErrorCode.not_controller,
                                                                    "the controller is stopping"))
            return
        self._apply(self.core.submit(self.driver.now_ms(), self.driver.next_append_offset(), api_key, request,
                                     future, principal))

    def _apply(self, out: ControllerOutput) -> None:
        for append in out.appends:
            records = list(append.records)
            # Lingered as Kafka's controller does (scheduleAtomicAppend): the appends of a busy
            # moment share one batch flush, not one fsync each on the loop that answers fetches.
            offset = self.driver.schedule_append(records, atomic=append.atomic)
            if offset is None:
                log.info("node %d: an append was refused (no longer the leader); stepping down",
                         self.core.node_id)
                out.responses.extend(self.core.append_failed().responses)
                self._note_activity()
                break
        for token, response in out.responses:
            if isinstance(token, asyncio.Future) and not token.done():
                token.set_result(response)

    async def close(self) -> None:
        """Cancel what is in flight (a controller registration, unclean recovery's questions)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.recovery_queries.close()

    def finalized_features(self) -> tuple[int, dict[str, int]]:
        """What ApiVersions tells of the finalized features: the committed image's, at its offset,
        and kraft.version as the quorum has it (it is no FeatureLevelRecord, KAFKA-18979)."""
        image = self.core.committed_image()
        features = dict(image.features)
        client = self.driver.client
        if client is not None:
            features["kraft.version"] = client.control.kraft_version
        return image.provenance.last_offset, features

    # -- requests ------------------------------------------------------------------------

    def caller(self, principal: str, host: str) -> Caller:
        """The authorizer for one request, over the ACLs committed so far."""
        if not self.authorizer.enabled:
            return Caller(self.authorizer, (), principal, host)
        acls = self.core.committed_image().acls
        if self._acls[0] is not acls:  # a new image shares its ACL map until the ACLs change
            self._acls = (acls, tuple(acls.values()))
        return Caller(self.authorizer, self._acls[1], principal, java_host_address(host), self.acls_loaded())

    def acls_loaded(self) -> bool:
        """Whether the committed image has caught up with the high watermark once, as Kafka's
        MetadataLoader must before its AclPublisher completes the authorizer's initial load. Before
        that (a restarted controller that has not heard from the leader, a new one still fetching)
        the image's ACLs are those of a log being replayed, and only super users are served."""
        if not self._acls_loaded:
            client = self.driver.client
            high_watermark = client.high_watermark if client is not None else None
            if high_watermark is not None and self.core.committed_offset + 1 >= high_watermark:
                self._acls_loaded = True
                log.info("node %d: the authorizer loaded the ACLs (%d, at offset %d)", self.core.node_id,
                         len(self.core.committed_image().acls), self.core.committed_offset)
        return self._acls_loaded

    async def serve_command(self, api_key: int, version: int, request: Any, principal: str, *,
                            forwarded: bool = True, token_authenticated: bool = False,
                            caller: Caller | None = None) -> Any:
        """Serve one command; ``caller`` is who asks (None: this controller itself, trusted)."""
        command = self.commands[api_key]
        if version != command.max_version:
            request = convert_message(request, request_class(api_key, command.max_version),
                                      upgrade_fields(api_key, version, request))
        future = asyncio.get_running_loop().create_future()
        # Kafka's ControllerApis.allowTokenRequests, before any authorization: never with a token's
        # own authentication, and on a PLAINTEXT listener (ours) only when a broker forwarded it
        token_refused = api_key in TOKEN_API_KEYS and (token_authenticated or not forwarded)
        verdict = api_permissions.Verdict(request)
        if caller is not None and not token_refused:
            verdict = api_permissions.authorize_request(caller, command, request, self.core.committed_image(),
                                                        self.core.config)
        if token_refused:
            response = not_allowed_response(api_key, request, principal)
        elif verdict.request is None:
            response = verdict.answer  # refused whole by the authorizer
        elif self.driver.client is None:
            response = command.error_response(request, ErrorCode.not_controller, "the controller is starting")
        else:
            if api_key in USER_OPERATIONS:
                async with self._admin_turn:
                    await asyncio.sleep(0)  # the loop's other ready work (Raft's fetches) first
                    self._submit(api_key, verdict.request, future, principal)
            else:
                self._submit(api_key, verdict.request, future, principal)
            try:
                async with asyncio.timeout(ANSWER_WAIT_S):
                    response = await future
            except TimeoutError:
                response = command.error_response(verdict.request, ErrorCode.request_timed_out,
                                                  "the records were not committed in time")
            response = verdict.finish(response)  # the items the authorizer took out, answered
        if version != command.max_version:
            extra = command.legacy_fields(request, response) if command.legacy_fields is not None else None
            response = convert_message(response, response_class(api_key, version), extra)
        return response


def java_host_address(host: str) -> str:
    """The address as Java's InetAddress.getHostAddress writes it, which ACL hosts are compared
    with: IPv4 dotted, IPv6 as eight uncompressed hex groups (0:0:0:0:0:0:0:1). An IPv4-mapped
    IPv6 address (an IPv4 client of a dual-stack listener, ::ffff:10.0.0.1) is the IPv4 one, as
    Java makes it an Inet4Address."""
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return host
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.version == 4:
        return str(address)
    groups = address.packed
    return ":".join(f"{int.from_bytes(groups[i:i + 2], 'big'):x}" for i in range(0, 16, 2))


__all__ = ["ANONYMOUS", "ControllerServer", "java_host_address", "read_bootstrap_records"]
