"""Errors of the network layer, each one line naming the peer or message concerned."""

from __future__ import annotations

from engine.common.errors import MetadataError


class NetError(MetadataError):
    """Base of every network-layer error (a MetadataError, so CLIs print it as one line)."""


class ProtocolError(NetError):
    """Bytes that are not a valid Kafka frame, header or message."""


class UnsupportedRequestError(ProtocolError):
    """A well-framed request for an API or version we do not serve.

    It still carries the header fields read so far: the server needs the correlation
    id to answer an ApiVersions request of a version it does not know.
    """

    def __init__(self, reason: str, *, api_key: int = -1, api_version: int = -1, correlation_id: int = -1,
                 path: str | None = None, byte_offset: int | None = None):
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        super().__init__(reason, path=path, byte_offset=byte_offset)


class NetworkError(NetError):
    """A connection that could not be made, or was closed with requests in flight."""


class RequestTimeoutError(NetworkError):
    """No response within the request timeout (the connection is dropped, as Kafka does)."""


class UnsupportedVersionError(NetError):
    """The peer does not serve the API version of a request we were asked to send."""


class AuthenticationError(NetError):
    """The peer refused who we are, or we refused who it is: a SASL failure, a TLS handshake that
    failed verification, a peer that is not speaking the security protocol we expect. Not worth
    retrying with the same settings, so callers report it instead of reconnecting forever."""


class ConnectError(NetworkError):
    """A connection that could not be set up (resolving, connecting, the handshake, ApiVersions):
    ``address`` and ``why`` in words ("connection refused", "unknown host", "timed out after
    9512 ms"), for a caller that reports each bootstrap server's failure."""

    def __init__(self, address: tuple[str, int], why: str):
        self.address = (address[0], int(address[1]))
        self.why = why
        host, port = self.address
        super().__init__(f"cannot connect to {f'[{host}]' if ':' in host else host}:{port}: {why}")
