"""Kafka's wire protocol over asyncio TCP: framing, a server and a pooled client.

``kafka_protocol`` is pure (bytes in, kio messages out); ``kafka_server`` and
``kafka_client`` do the I/O. Every kio import still goes through engine.records.kio_codec.
"""

from engine.net.errors import NetError, NetworkError, ProtocolError, RequestTimeoutError, UnsupportedVersionError
from engine.net.kafka_protocol import RAFT_APIS, ApiSpec, RequestHeaderInfo

__all__ = [
    "ApiSpec", "NetError", "NetworkError", "ProtocolError", "RAFT_APIS", "RequestHeaderInfo",
    "RequestTimeoutError", "UnsupportedVersionError",
]
