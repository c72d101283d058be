"""The SASL exchange of a Kafka connection, framed as Kafka frames it: SaslHandshake (api key 17) names
the mechanism, then SaslAuthenticate (36) requests carry the mechanism's tokens until it completes.

Server side, as Kafka's SaslServerAuthenticator: before authentication only ApiVersions, SaslHandshake
and SaslAuthenticate are read; anything else closes the connection. A mechanism not enabled is answered
UNSUPPORTED_SASL_MECHANISM (with the enabled list) and the connection closed; a failed login is answered
SASL_AUTHENTICATION_FAILED with Kafka's error message, then closed.

We serve SaslHandshake v1 only. v0 asks for Kafka's pre-1.0 raw-token mode (tokens as bare size-prefixed
frames rather than SaslAuthenticate requests); every client that speaks KRaft-era Kafka (the Java client
since 1.0, librdkafka, kafka-python) uses v1 when the listener lists it, so a v0 request is refused like
any version we do not serve (one log line, the connection closed). Re-authentication (KIP-368) is not
offered: SaslAuthenticate answers a session lifetime of 0, which tells clients not to re-authenticate.

Client side: after ApiVersions, SaslHandshake v1 then SaslAuthenticate rounds; any refusal is an
AuthenticationError with Kafka's message, never retried as if the network had failed.
"""

from __future__ import annotations

import datetime
from typing import Any, Awaitable, Callable

from engine.common.api_keys import ApiKeys
from engine.records.kio_codec import ErrorCode
from engine.net.channel_security import ClientSecurity, KafkaPrincipal, ListenerSecurity
from engine.net.errors import AuthenticationError
from engine.net.kafka_protocol import ApiSpec, request_class, response_class
from engine.net.sasl_mechanisms import SaslServer, sasl_client, sasl_server

SASL_APIS: dict[int, ApiSpec] = {
    ApiKeys.SASL_HANDSHAKE: ApiSpec(ApiKeys.SASL_HANDSHAKE, "sasl_handshake", 1, 1),
    ApiKeys.SASL_AUTHENTICATE: ApiSpec(ApiKeys.SASL_AUTHENTICATE, "sasl_authenticate", 0, 2),
}


class SaslRefused(Exception):
    """The exchange ends: ``response`` (if any) is sent, then the connection closes; ``reason`` is logged."""

    def __init__(self, reason: str, response: Any = None):
        super().__init__(reason)
        self.reason = reason
        self.response = response


class SaslServerAuthenticator:
    """One connection's server side; ``principal`` is set once the login succeeded."""

    def __init__(self, security: ListenerSecurity):
        self.security = security
        self.mechanism: str | None = None
        self._server: SaslServer | None = None
        self.principal: KafkaPrincipal | None = None

    def answer(self, api_key: int, version: int, request: Any) -> Any:
        """The response to a SaslHandshake or SaslAuthenticate request, or SaslRefused."""
        if api_key == ApiKeys.SASL_HANDSHAKE:
            return self._handshake(version, request)
        return self._authenticate(version, request)

    def _handshake(self, version: int, request: Any) -> Any:
        enabled = tuple(self.security.sasl_mechanisms)
        if self.mechanism is not None:
            raise SaslRefused("a second SaslHandshake during the SASL exchange")
        cls = response_class(ApiKeys.SASL_HANDSHAKE, version)
        if request.mechanism not in enabled:
            raise SaslRefused(f"SASL mechanism {request.mechanism!r} is not enabled (enabled: {', '.join(enabled)})",
                              cls(error_code=ErrorCode.unsupported_sasl_mechanism, mechanisms=enabled))
        self.mechanism = request.mechanism
        self._server = sasl_server(request.mechanism, plain_users=self.security.plain_users,
                                   scram_credentials=self.security.scram_credentials)
        return cls(error_code=ErrorCode.none, mechanisms=enabled)

    def _authenticate(self, version: int, request: Any) -> Any:
        cls = response_class(ApiKeys.SASL_AUTHENTICATE, version)
        extra = {"session_lifetime": datetime.timedelta(0)} if version >= 1 else {}
        if self._server is None:
            raise SaslRefused("SaslAuthenticate before SaslHandshake")
        try:
            challenge = self._server.evaluate(bytes(request.auth_bytes))
        except AuthenticationError as err:
            message = err.reason
            raise SaslRefused(f"SASL authentication failed ({self.mechanism}): {message}",
                              cls(error_code=ErrorCode.sasl_authentication_failed, error_message=message,
                                  auth_bytes=b"", **extra)) from None
        if self._server.complete:
            self.principal = KafkaPrincipal("User", self._server.username or "")
        return cls(error_code=ErrorCode.none, error_message=None, auth_bytes=challenge, **extra)


Call = Callable[[Any], Awaitable[Any]]


async def authenticate_client(call: Call, peer_ranges: dict[int, tuple[int, int]], security: ClientSecurity,
                              name: str) -> None:
    """Log in over a connection whose ApiVersions came back as ``peer_ranges``; ``call`` sends one
    request and returns its response. AuthenticationError ("cannot connect to NAME: ...") on refusal."""
    def refused(reason: str) -> AuthenticationError:
        return AuthenticationError(f"cannot connect to {name}: {reason}")

    handshake = peer_ranges.get(ApiKeys.SASL_HANDSHAKE)
    authenticate = peer_ranges.get(ApiKeys.SASL_AUTHENTICATE)
    if handshake is None or authenticate is None or handshake[1] < 1:
        raise refused("the peer does not offer SASL v1 (SaslHandshake v1 and SaslAuthenticate): "
                      "is it a SASL listener?")
    mechanism = security.sasl_mechanism
    response = await call(request_class(ApiKeys.SASL_HANDSHAKE, 1)(mechanism=mechanism))
    if response.error_code != ErrorCode.none:
        offered = ", ".join(response.mechanisms) or "none"
        raise refused(f"SASL mechanism {mechanism} is not enabled there (it offers {offered})")
    version = min(authenticate[1], SASL_APIS[ApiKeys.SASL_AUTHENTICATE].max_version)
    client = sasl_client(mechanism, security.username or "", security.password or "")
    token: bytes | None = client.first()
    while token is not None:
        response = await call(request_class(ApiKeys.SASL_AUTHENTICATE, version)(auth_bytes=token))
        if response.error_code != ErrorCode.none:
            reason = response.error_message or ErrorCode(response.error_code).name
            raise refused(f"SASL authentication failed: {reason}")
        try:
            token = client.evaluate(bytes(response.auth_bytes))
        except AuthenticationError as err:
            raise refused(f"SASL authentication failed: {err.reason}") from None
    if not client.complete:
        raise refused(f"SASL authentication failed: the {mechanism} exchange did not complete")


__all__ = ["SASL_APIS", "SaslRefused", "SaslServerAuthenticator", "authenticate_client"]
