"""Who may connect, and how: the security protocol, TLS and SASL settings of one listener (the
server side) or of one client, and the principal a connection authenticated as.

This module holds only the shapes; building them from Kafka's config names lives beside it
(``security_config``), and the handshakes in ``kafka_server`` and ``kafka_client``.
"""

from __future__ import annotations

import enum
import ssl
from dataclasses import dataclass, field
from typing import Callable, Mapping


class SecurityProtocol(enum.IntEnum):
    """Kafka's SecurityProtocol ids, as broker and controller registrations carry them."""

    PLAINTEXT = 0
    SSL = 1
    SASL_PLAINTEXT = 2
    SASL_SSL = 3

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """``User:name``, as Kafka's KafkaPrincipal prints and ACLs name it."""

    principal_type: str = "User"
    name: str = "ANONYMOUS"

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


ANONYMOUS = KafkaPrincipal()


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """One user's SCRAM credential for one mechanism, as a UserScramCredentialRecord holds it."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


# (mechanism, user name) -> the credential, or None for an unknown user. A controller looks in its
# current metadata image at every handshake, so a credential altered since start counts.
ScramCredentialLookup = Callable[[str, str], "ScramCredential | None"]


@dataclass(frozen=True)
class ListenerSecurity:
    """The server side of one listener. ``ssl_context`` is a server context (its verify mode says
    ssl.client.auth); ``plain_users`` are PLAIN's user -> password from the listener's JAAS config;
    ``scram_credentials`` answers SCRAM's lookups; ``principal_name`` maps a client certificate's
    subject to its principal's name on an SSL listener (ssl.principal.mapping.rules; None: the subject
    itself), raising ValueError when no rule maps it."""

    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanisms: tuple[str, ...] = ()
    plain_users: Mapping[str, str] = field(default_factory=dict)
    scram_credentials: ScramCredentialLookup | None = None
    principal_name: Callable[[str], str] | None = None


@dataclass(frozen=True)
class ClientSecurity:
    """The client side: how to reach a listener. ``ssl_context`` is a client context (it checks the
    host name when ssl.endpoint.identification.algorithm is https); SASL logs in as
    ``username``/``password`` with ``sasl_mechanism``."""

    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str = "PLAIN"
    username: str | None = None
    password: str | None = field(default=None, repr=False)


PLAINTEXT_LISTENER = ListenerSecurity()
PLAINTEXT_CLIENT = ClientSecurity()

__all__ = ["ANONYMOUS", "ClientSecurity", "KafkaPrincipal", "ListenerSecurity", "PLAINTEXT_CLIENT",
           "PLAINTEXT_LISTENER", "SASL_MECHANISMS", "ScramCredential", "ScramCredentialLookup", "SecurityProtocol"]
