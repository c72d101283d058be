"""The quorum controller on the wire: the edge between the pure core and a node's sockets.

The controller's APIs are served on the controller listener, beside Raft's, through the Raft
driver (``RaftDriver.serve``). A request is converted to the version its command reads, given
to ``QuorumController.submit`` with the offset the next appended record will take, and its
future is answered when the core releases the response (at once for reads and refusals; once
committed for writes). After every poll of the Raft core the controller is polled too: it
claims a leadership it caught up with, runs its periodic tasks and releases what got
committed. What the core asks to append goes to the Raft leader under its epoch, in order;
a refused append (the leadership went) makes the core step down.

Envelope (KIP-590): a broker forwards its clients' admin requests wrapped in an Envelope with
the client's principal. The inner request is served like any other (DescribeQuorum and the
voter changes by the Raft layer), and its response goes back inside the EnvelopeResponse, as
Kafka's ControllerApis does; an answer carrying NOT_CONTROLLER anywhere makes the Envelope's own
error NOT_CONTROLLER, which is how a broker learns to go to the active controller.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import logging
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from engine.controller import api_permissions
from engine.controller.controller_config import ControllerConfig
from engine.controller.controller_result import Command
from engine.controller.quorum_controller import ControllerOutput, PeriodicTask, QuorumController
from engine.controller.delegation_token_control import TOKEN_API_KEYS, not_allowed_response
from engine.controller.standard_authorizer import Caller
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_version import feature_levels_for, parse_release_version
from engine.net.channel_security import PLAINTEXT_CLIENT, ClientSecurity, KafkaPrincipal
from engine.net.errors import ProtocolError, UnsupportedRequestError
from engine.net.kafka_protocol import (
    ApiSpec, decode_request_frame, encode_response, request_class, response_class,
)
from engine.net.kafka_server import RequestContext
from engine.server.controller_registration import CONTROLLER_REGISTRATION_KEY, ControllerRegistrar, spawn
from engine.server.request_upgrades import upgrade_fields
from engine.net.message_versions import convert_message
from engine.raft.raft_driver import RaftDriver, served_apis
from engine.records.bounds_check import decode_entity
from engine.records import metadata_records as m
from engine.records.kio_codec import DECODE_ERRORS, ErrorCode, i16, protocol_module
from engine.records.metadata_records import MetadataRecord
from engine.server.unclean_recovery_queries import UncleanRecoveryQueries
from engine.storage.log_reader import read_file
from engine.storage.snapshot_writer import BOOTSTRAP_FILE_NAME

log = logging.getLogger("engine.server.controller")

ENVELOPE_KEY = 58
DESCRIBE_CLUSTER_KEY = 60
DESCRIBE_QUORUM_KEY = 55
# what a broker forwards to the controller besides the commands: the quorum's own admin RPCs
FORWARDED_RAFT_KEYS = (DESCRIBE_QUORUM_KEY, 80, 81)
ENVELOPE_SPEC = ApiSpec(ENVELOPE_KEY, "envelope", 0, 0)
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


def read_principal(data: bytes | None) -> str:
    """The client's principal of an Envelope: Kafka's DefaultPrincipalData, version-prefixed
    (ProtocolError for a version other than 0, the only one there is)."""
    return read_principal_data(data)[0]


def read_principal_data(data: bytes | None) -> tuple[str, bool]:
    """The Envelope's principal and whether it authenticated with a delegation token."""
    if not data or len(data) < 2:
        return ANONYMOUS, False
    version = int.from_bytes(data[:2], "big")
    if version != 0:
        raise ProtocolError(f"a principal of version {version} (DefaultPrincipalData has version 0 only)")
    module = protocol_module("default_principal_data", version, "data")
    principal, _ = decode_entity(module.DefaultPrincipalData, data, 2)
    return f"{principal.type_}:{principal.name}", bool(principal.token_authenticated)


class ControllerServer:
    """Serves a QuorumController's commands through one RaftDriver."""

    def __init__(self, driver: RaftDriver, committed_image: Callable[[], MetadataImage], config: ControllerConfig,
                 bootstrap_records: Sequence[Any], commands: Mapping[int, Command],
                 periodic: Sequence[PeriodicTask] = (), soft: Any = None,
                 supported_features: Mapping[str, tuple[int, int]] | None = None,
                 activation_hooks: Sequence[Callable[[Any, MetadataImage, int], None]] = (),
                 registrar: ControllerRegistrar | None = None, broker_listener: str | None = None,
                 broker_security: ClientSecurity | None = PLAINTEXT_CLIENT, broker_problem: str | None = None):
        self.driver = driver
        self.authorizer = config.authorizer
        self._acls: tuple[Any, tuple[Any, ...]] = (None, ())  # the committed ACL map and its records
        self._acls_loaded = False  # once True, for good: Kafka completes the authorizer's initial load once
        # DescribeCluster stays the Raft driver's answer (the voters' endpoints, the Raft leader as
        # controller id), which holds before a metadata.version with registrations and while a
        # controller is still unregistered; `kraftd quorum` and Kafka's admin clients find the
        # leader with it.
        self.commands = {key: c for key, c in commands.items() if key != DESCRIBE_CLUSTER_KEY}
        self.core = QuorumController(config, committed_image, bootstrap_records, self.commands, periodic, soft,
                                     activation_hooks)
        self._logged_active: int | None = None
        self.registrar = registrar
        self._tasks: set[asyncio.Task] = set()
        driver.register(self.core)  # after the node's metadata listener: the committed image is current
        apis = {key: ApiSpec(key, c.name, c.min_version, c.max_version) for key, c in self.commands.items()}
        apis[ENVELOPE_KEY] = ENVELOPE_SPEC
        self._forwardable = {key: spec for key, spec in {**served_apis(), **apis}.items()
                             if key in self.commands or key in FORWARDED_RAFT_KEYS}
        driver.serve(apis, self.handle, self.finalized_features, dict(supported_features or {}))
        if self.authorizer.enabled:
            driver.authorize = self._authorize_raft
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
            return await self.serve_command(CONTROLLER_REGISTRATION_KEY, 0, request, ANONYMOUS)
        client = self.driver.client
        leader = client.quorum.leader_id if client is not None else -1
        voter = client.control.latest_voters().voters if client is not None else ()
        address = next((v.endpoint(self.driver.config.listener_name) for v in voter if v.key.node_id == leader), None)
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

    def _apply(self, out: ControllerOutput) -> None:
        for append in out.appends:
            records = list(append.records)
            offset = self.driver.append_atomic(records) if append.atomic else self.driver.schedule_append(records)
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

    def _authorize_raft(self, ctx: RequestContext) -> Any:
        """The Raft driver's hook: the error code refusing a Raft API (CLUSTER_ACTION for the
        quorum's own RPCs, DESCRIBE for DescribeQuorum, ALTER for the voter changes), or None."""
        denial = api_permissions.cluster_denial(self.caller(str(ctx.principal), ctx.peer[0]), ctx.api_key)
        if denial is None:
            return None
        spec = served_apis().get(ctx.api_key)
        log.info("node %d: %s refused to %s from %s: %s", self.core.node_id, spec.name if spec else ctx.api_key,
                 ctx.principal, ctx.peer[0], denial[1])
        return denial[0]

    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        caller = self.caller(str(ctx.principal), ctx.peer[0])
        if ctx.api_key == ENVELOPE_KEY:
            return await self._envelope(ctx, request, caller)
        return await self.serve_command(ctx.api_key, ctx.api_version, request, caller.principal, forwarded=False,
                                        caller=caller)

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
            self._apply(self.core.submit(self.driver.now_ms(), self.driver.next_append_offset(), api_key,
                                         verdict.request, future, principal))
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

    async def _envelope(self, ctx: RequestContext, envelope: Any, caller: Caller) -> Any:
        module = protocol_module("envelope", 0, "response")
        denial = api_permissions.cluster_denial(caller, ENVELOPE_KEY)
        if denial is not None:
            # only a broker (CLUSTER_ACTION) may speak for its clients; and none before the ACLs are loaded
            log.info("node %d: an Envelope from %s refused to %s: %s", self.core.node_id, ctx.peer[0],
                     caller.principal, denial[1])
            return module.EnvelopeResponse(response_data=None, error_code=denial[0])
        try:
            info, inner = decode_request_frame(bytes(envelope.request_data), self._forwardable)
            principal, token_authenticated = read_principal_data(envelope.request_principal)
        except UnsupportedRequestError as err:
            log.warning("an Envelope carried a request we do not serve: %s", err)
            return module.EnvelopeResponse(response_data=None, error_code=ErrorCode.invalid_request)
        except (ProtocolError, *DECODE_ERRORS) as err:
            log.warning("an Envelope carried an unreadable request: %s", err)
            return module.EnvelopeResponse(response_data=None, error_code=ErrorCode.invalid_request)
        # the inner request is authorized as the client the broker forwarded, from its address
        client = (client_host(envelope.client_host_address) or ctx.peer[0], 0)
        if info.api_key in self.commands:
            response = await self.serve_command(info.api_key, info.api_version, inner, principal,
                                                token_authenticated=token_authenticated,
                                                caller=self.caller(principal, client[0]))
        else:  # DescribeQuorum, AddRaftVoter, RemoveRaftVoter: the Raft layer's
            kind, _, name = principal.partition(":")
            response = await self.driver.handle_request(RequestContext(
                info.api_key, info.api_version, info.correlation_id, info.client_id, client, ctx.listener_name,
                principal=KafkaPrincipal(kind, name), security_protocol=ctx.security_protocol), inner)
        if _has_error(response, ErrorCode.not_leader_or_follower if info.api_key == DESCRIBE_QUORUM_KEY
                      else ErrorCode.not_controller):
            # As Kafka's RequestChannel: the broker learns at the Envelope level that it asked the
            # wrong controller, so it reconnects to the active one and sends the request again.
            return module.EnvelopeResponse(response_data=None, error_code=ErrorCode.not_controller)
        frame = encode_response(response, info.correlation_id, info.api_key)
        return module.EnvelopeResponse(response_data=frame[4:], error_code=ErrorCode.none)


def java_host_address(host: str) -> str:
    """The address as Java's InetAddress.getHostAddress writes it, which ACL hosts are compared
    with: IPv4 dotted, IPv6 as eight uncompressed hex groups (0:0:0:0:0:0:0:1)."""
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return host
    if address.version == 4:
        return str(address)
    groups = address.packed
    return ":".join(f"{int.from_bytes(groups[i:i + 2], 'big'):x}" for i in range(0, 16, 2))


def client_host(address: bytes | None) -> str:
    """The forwarded client's IP address (4 or 16 bytes), or "" when absent or unreadable."""
    try:
        return str(ipaddress.ip_address(bytes(address))) if address else ""
    except ValueError:
        return ""


def _has_error(message: Any, code: Any) -> bool:
    """Whether ``code`` is any error code of the message, at the top or in any item (Kafka's errorCounts)."""
    if getattr(message, "error_code", None) == code:
        return True
    for f in dataclasses.fields(message):
        value = getattr(message, f.name)
        items = value if isinstance(value, tuple) else (value,)
        if any(dataclasses.is_dataclass(item) and _has_error(item, code) for item in items):
            return True
    return False


__all__ = ["ControllerServer", "ENVELOPE_KEY", "read_bootstrap_records", "read_principal", "read_principal_data"]
