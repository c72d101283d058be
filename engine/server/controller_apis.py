"""The controller listener: what a KRaft controller serves on its socket, and who answers each
request (Kafka's ControllerApis on the controller's SocketServer).

One KafkaServer on the controller listener serves ApiVersions, Raft's RPCs, DescribeCluster,
the quorum controller's commands and Envelope:

- Raft's RPCs go to the Raft driver (``RaftDriver.handle_request``) once the authorizer, when
  one is configured, allows them: CLUSTER_ACTION for the quorum's own RPCs, DESCRIBE for
  DescribeQuorum, ALTER for the voter changes. A refusal is answered here, before the core
  sees the request, as Kafka's ControllerApis does.
- DescribeCluster is answered here from the quorum (KIP-919, controllers only): the cluster id,
  the Raft leader as controller id and the voters' endpoints. It holds before a metadata.version
  with controller registrations and while a controller is still unregistered; it is how
  ``kraftd quorum`` and Kafka's admin clients find the leader.
- The controller's commands go to the ControllerServer (``serve_command``), with the caller the
  authorizer judges.
- Envelope (KIP-590): a broker forwards its clients' admin requests wrapped in an Envelope with
  the client's principal. The inner request is served like any other (DescribeQuorum and the
  voter changes by the Raft driver), and its response goes back inside the EnvelopeResponse;
  an answer carrying NOT_CONTROLLER anywhere makes the Envelope's own error NOT_CONTROLLER,
  which is how a broker learns to go to the active controller.

ApiVersions (answered by the KafkaServer itself) tells the supported features (kraft.version
from the Raft layer, the rest from the node) and the committed image's finalized ones.
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import logging
from typing import Any, Callable, Mapping

from engine.common.api_keys import FORWARDABLE, ApiKeys, EndpointType
from engine.controller import api_permissions
from engine.controller.controller_result import Command
from engine.controller.standard_authorizer import Caller
from engine.net.channel_security import PLAINTEXT_LISTENER, KafkaPrincipal, ListenerSecurity
from engine.net.errors import ProtocolError
from engine.net.kafka_protocol import RAFT_APIS, ApiSpec, decode_request_frame, encode_response
from engine.net.kafka_server import KafkaServer, RequestContext
from engine.raft.raft_driver import SUPPORTED_FEATURES, RaftDriver, refused_response, served_apis
from engine.raft.voter_set import Address
from engine.records.bounds_check import decode_entity
from engine.records.kio_codec import API_NAMES, DECODE_ERRORS, ErrorCode, i8, i32, protocol_module
from engine.server.controller_server import ANONYMOUS, ControllerServer

log = logging.getLogger("engine.server.controller")

ENVELOPE_SPEC = ApiSpec(ApiKeys.ENVELOPE, "envelope", 0, 0)
NO_AUTHORIZED_OPERATIONS = -2147483648  # Kafka's default when they were not asked for


def controller_listener_apis(commands: Mapping[int, Command]) -> dict[int, ApiSpec]:
    """What the controller listener serves: ApiVersions, Raft's RPCs (at the versions the core
    reads, ``served_apis``), DescribeCluster, the controller's ``commands`` (the one for
    DescribeCluster aside: answered here) and Envelope."""
    apis = {ApiKeys.API_VERSIONS: RAFT_APIS[ApiKeys.API_VERSIONS], **served_apis(),
            ApiKeys.DESCRIBE_CLUSTER: RAFT_APIS[ApiKeys.DESCRIBE_CLUSTER]}
    apis.update({key: ApiSpec(key, c.name, c.min_version, c.max_version) for key, c in commands.items()
                 if key != ApiKeys.DESCRIBE_CLUSTER})
    apis[ApiKeys.ENVELOPE] = ENVELOPE_SPEC
    return apis


def forwardable_apis(apis: Mapping[int, ApiSpec], commands: Mapping[int, Command]) -> dict[int, ApiSpec]:
    """What an Envelope may carry: the controller's commands, and Raft's admin RPCs a broker
    forwards (DescribeQuorum, AddRaftVoter, RemoveRaftVoter)."""
    raft = served_apis()
    return {key: spec for key, spec in apis.items() if key in commands or (key in raft and key in FORWARDABLE)}


class ControllerApis:
    """The controller listener of one node: ``await start()``, then ``await close()`` (before the
    Raft driver stops)."""

    def __init__(self, driver: RaftDriver, controller: ControllerServer, *, bind: Address,
                 security: ListenerSecurity = PLAINTEXT_LISTENER,
                 supported_features: Mapping[str, tuple[int, int]] | None = None):
        self.driver = driver
        self.controller = controller
        self.bind = bind
        self.security = security
        self.supported_features = {**SUPPORTED_FEATURES, **(supported_features or {})}
        self.apis = controller_listener_apis(controller.commands)
        self._forwardable = forwardable_apis(self.apis, controller.commands)
        self.server: KafkaServer | None = None

    async def start(self) -> Address:
        """Bind the listener and tell the driver where (its requests wait for the Raft core)."""
        self.server = KafkaServer(self.handle, host=self.bind[0], port=self.bind[1], apis=self.apis,
                                  listener_name=self.driver.config.listener_name, features=self.supported_features,
                                  finalized_features=self.controller.finalized_features, security=self.security,
                                  direct=self.direct)
        address = await self.server.start()
        self.driver.listening_on(address)
        return address

    async def close(self) -> None:
        """Stop listening; requests still arriving meanwhile are served."""
        if self.server is not None:
            await self.server.close()

    # -- requests ------------------------------------------------------------------------

    async def handle(self, ctx: RequestContext, request: Any) -> Any:
        if ctx.api_key == ApiKeys.ENVELOPE:
            return await self._envelope(ctx, request, self.controller.caller(str(ctx.principal), ctx.peer[0]))
        if ctx.api_key in self.controller.commands:
            caller = self.controller.caller(str(ctx.principal), ctx.peer[0])
            return await self.controller.serve_command(ctx.api_key, ctx.api_version, request, caller.principal,
                                                       forwarded=False, caller=caller)
        return await self._quorum_request(ctx, request)

    def direct(self, ctx: RequestContext, request: Any, reply: Callable[[Any], None]) -> bool:
        """A Fetch, once allowed, straight into the Raft core (its answer written in the step the
        core makes it: a parked one where the high watermark moves); anything else, or a Fetch
        the authorizer refuses, takes the ordinary path."""
        if ctx.api_key != ApiKeys.FETCH:
            return False
        if self.controller.authorizer.enabled and api_permissions.cluster_denial(
                self.controller.caller(str(ctx.principal), ctx.peer[0]), ctx.api_key) is not None:
            return False  # refused on the ordinary path, which logs and answers it
        return self.driver.answer_directly(ctx, request, reply)

    async def _quorum_request(self, ctx: RequestContext, request: Any) -> Any:
        """Raft's RPCs and DescribeCluster, once the authorizer allows them."""
        if self.controller.authorizer.enabled:
            refused = self._cluster_denial(ctx)
            if refused is not None:
                return refused_response(ctx.api_key, ctx.api_version, refused)
        if ctx.api_key == ApiKeys.DESCRIBE_CLUSTER:
            return self.describe_cluster_response(request, ctx.api_version)
        return await self.driver.handle_request(ctx, request)

    def _cluster_denial(self, ctx: RequestContext) -> Any:
        """The error code refusing a quorum request (CLUSTER_ACTION for the quorum's own RPCs,
        DESCRIBE for DescribeQuorum, ALTER for the voter changes and DescribeCluster), or None."""
        denial = api_permissions.cluster_denial(self.controller.caller(str(ctx.principal), ctx.peer[0]), ctx.api_key)
        if denial is None:
            return None
        spec = self.apis.get(ctx.api_key)
        log.info("node %d: %s refused to %s from %s: %s", self.controller.core.node_id,
                 spec.name if spec else ctx.api_key, ctx.principal, ctx.peer[0], denial[1])
        return denial[0]

    def describe_cluster_response(self, request: Any, version: int) -> Any:
        """DescribeCluster as a KRaft controller answers it: controllers only (KIP-919)."""
        m = protocol_module("describe_cluster", version, "response")
        endpoint_type = int(getattr(request, "endpoint_type", EndpointType.BROKER))
        fields: dict[str, Any] = {"throttle_time": datetime.timedelta(0), "cluster_id": self.driver.cluster_id,
                                  "cluster_authorized_operations": i32(NO_AUTHORIZED_OPERATIONS)}
        if version >= 1:
            fields["endpoint_type"] = i8(endpoint_type)
        if endpoint_type != EndpointType.CONTROLLER:
            return m.DescribeClusterResponse(error_code=ErrorCode.mismatched_endpoint_type,
                                             error_message="a controller serves endpoint type 2 (controllers) only",
                                             controller_id=i32(-1), brokers=(), **fields)
        extra = {"is_fenced": False} if version >= 2 else {}
        brokers = tuple(m.DescribeClusterBroker(broker_id=i32(node_id), host=host, port=i32(port), rack=None, **extra)
                        for node_id, (host, port) in self.driver.voter_endpoints())
        return m.DescribeClusterResponse(error_code=ErrorCode.none, error_message=None,
                                         controller_id=i32(self.driver.leader_id), brokers=brokers, **fields)

    async def _envelope(self, ctx: RequestContext, envelope: Any, caller: Caller) -> Any:
        module = protocol_module("envelope", 0, "response")
        node_id = self.controller.core.node_id
        denial = api_permissions.cluster_denial(caller, ApiKeys.ENVELOPE)
        if denial is not None:
            # only a broker (CLUSTER_ACTION) may speak for its clients; and none before the ACLs are loaded
            log.info("node %d: an Envelope from %s refused to %s: %s", node_id, ctx.peer[0], caller.principal,
                     denial[1])
            return module.EnvelopeResponse(response_data=None, error_code=denial[0])
        try:
            principal, token_authenticated, info, inner = read_envelope(envelope, self._forwardable)
        except EnvelopeRefused as refused:
            log.warning("node %d: an Envelope from %s refused with %s: %s", node_id, ctx.peer[0],
                        ErrorCode(refused.code).name.upper(), refused)
            return module.EnvelopeResponse(response_data=None, error_code=refused.code)
        # the inner request is authorized as the client the broker forwarded, from its address
        client = (client_host(envelope.client_host_address) or ctx.peer[0], 0)
        if info.api_key in self.controller.commands:
            response = await self.controller.serve_command(info.api_key, info.api_version, inner, principal,
                                                           token_authenticated=token_authenticated,
                                                           caller=self.controller.caller(principal, client[0]))
        else:  # DescribeQuorum, AddRaftVoter, RemoveRaftVoter: the Raft layer's
            kind, _, name = principal.partition(":")
            response = await self._quorum_request(RequestContext(
                info.api_key, info.api_version, info.correlation_id, info.client_id, client, ctx.listener_name,
                principal=KafkaPrincipal(kind, name), security_protocol=ctx.security_protocol), inner)
        if _has_error(response, ErrorCode.not_leader_or_follower if info.api_key == ApiKeys.DESCRIBE_QUORUM
                      else ErrorCode.not_controller):
            # As Kafka's RequestChannel: the broker learns at the Envelope level that it asked the
            # wrong controller, so it reconnects to the active one and sends the request again.
            return module.EnvelopeResponse(response_data=None, error_code=ErrorCode.not_controller)
        frame = encode_response(response, info.correlation_id, info.api_key)
        return module.EnvelopeResponse(response_data=frame[4:], error_code=ErrorCode.none)


class EnvelopeRefused(Exception):
    """An Envelope answered with ``code`` and nothing inside."""

    def __init__(self, code: Any, problem: str):
        super().__init__(" ".join(problem.split()))
        self.code = code


def read_envelope(envelope: Any, forwardable: Mapping[int, ApiSpec]) -> tuple[str, bool, Any, Any]:
    """(principal, token authenticated, inner header, inner request) of an Envelope, or
    EnvelopeRefused. Kafka's EnvelopeUtils, in its order: a principal that does not read (none
    included) is PRINCIPAL_DESERIALIZATION_FAILURE; an inner request whose header does not read or
    whose API is unknown, UNSUPPORTED_VERSION; an API that is not forwarded (an Envelope in an
    Envelope, ApiVersions), INVALID_REQUEST; a version we do not serve or a body that does not
    read, UNSUPPORTED_VERSION."""
    try:
        principal, token_authenticated = read_principal_data(envelope.request_principal)
    except (ProtocolError, *DECODE_ERRORS) as err:
        raise EnvelopeRefused(ErrorCode.principal_deserialization_failure, f"its principal does not read: {err}")
    data = bytes(envelope.request_data)
    if not _header_reads(data):
        raise EnvelopeRefused(ErrorCode.unsupported_version, f"its request header does not read ({len(data)} bytes)")
    api_key = int.from_bytes(data[:2], "big", signed=True)
    if api_key in API_NAMES and api_key not in forwardable:
        raise EnvelopeRefused(ErrorCode.invalid_request, f"{API_NAMES[api_key]} is not forwarded to a controller")
    try:
        info, inner = decode_request_frame(data, forwardable)
    except (ProtocolError, *DECODE_ERRORS) as err:  # UnsupportedRequestError included
        raise EnvelopeRefused(ErrorCode.unsupported_version, f"its request does not read: {err}") from None
    return principal, token_authenticated, info, inner


def _header_reads(data: bytes) -> bool:
    """Whether a request header's api key, version, correlation id and client id are all there."""
    if len(data) < 10:
        return False
    client_id_length = int.from_bytes(data[8:10], "big", signed=True)
    return client_id_length == -1 or 0 <= client_id_length <= len(data) - 10


def read_principal(data: bytes | None) -> str:
    """The client's principal of an Envelope: Kafka's DefaultPrincipalData, version-prefixed
    (ProtocolError for a version other than 0, the only one there is)."""
    return read_principal_data(data)[0]


def read_principal_data(data: bytes | None) -> tuple[str, bool]:
    """The Envelope's principal and whether it authenticated with a delegation token (ProtocolError
    when there is none: Kafka's serde cannot read an absent principal either)."""
    if not data or len(data) < 2:
        raise ProtocolError("no principal" if not data else f"a principal of {len(data)} byte")
    version = int.from_bytes(data[:2], "big")
    if version != 0:
        raise ProtocolError(f"a principal of version {version} (DefaultPrincipalData has version 0 only)")
    module = protocol_module("default_principal_data", version, "data")
    principal, _ = decode_entity(module.DefaultPrincipalData, data, 2)
    return f"{principal.type_}:{principal.name}", bool(principal.token_authenticated)


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


__all__ = ["ControllerApis", "ENVELOPE_SPEC", "EnvelopeRefused", "client_host", "controller_listener_apis", "forwardable_apis",
           "read_envelope", "read_principal", "read_principal_data"]
