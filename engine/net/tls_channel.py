"""TLS on a Kafka connection: upgrading an accepted or opened TCP stream, the principal a client
certificate names, and one-line reasons for handshakes that fail.

Why upgrade a plain TCP stream (``StreamWriter.start_tls``) instead of ``asyncio.start_server(ssl=...)``:
with ``ssl=`` a failed handshake never reaches our code, so it cannot be one line naming the peer and the
listener; asyncio would log it itself, and a client that sends garbage would be invisible. Upgrading in
our own accept callback puts every handshake failure (a PLAINTEXT client on a TLS port, an unknown CA, an
expired certificate, a peer that stalls past the handshake timeout) in one place: one log line, and only
that connection closed.

The mTLS principal is ``User:<subject>`` with the subject as Java's ``X500Principal.getName()`` prints it
(RFC 2253), which is what Kafka's DefaultKafkaPrincipalBuilder uses (without ssl.principal.mapping.rules).
cryptography's RFC 4514 text is the same for the attribute keywords both know (CN, L, ST, O, OU, C,
STREET, DC, UID); any other attribute (emailAddress, say) Java prints as ``<dotted oid>=#<hex of the
value's DER encoding>``, and so do we, so ACLs written for Kafka name the same principal here.
"""

from __future__ import annotations

import asyncio
import re
import ssl

from cryptography import x509

from engine.net.channel_security import ANONYMOUS, KafkaPrincipal
from engine.net.connect import failure_words

# Java's RFC 2253 keywords; every other attribute type is printed as its OID with a hex DER value.
_RFC2253_KEYWORDS = {"2.5.4.3", "2.5.4.7", "2.5.4.8", "2.5.4.10", "2.5.4.11", "2.5.4.6", "2.5.4.9",
                     "0.9.2342.19200300.100.1.25", "0.9.2342.19200300.100.1.1"}
_UTF8_STRING_TAG = 12
_OPENSSL_NOISE = re.compile(r"^\[[A-Z0-9_]+: [A-Z0-9_]+\] |\s*\(_ssl\.c:\d+\)$")


def _der_length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def _rfc2253_attribute(attr: x509.NameAttribute) -> str:
    if attr.oid.dotted_string in _RFC2253_KEYWORDS:
        return attr.rfc4514_string()
    value = attr.value if isinstance(attr.value, bytes) else attr.value.encode("utf-8")
    tag = getattr(getattr(attr, "_type", None), "value", _UTF8_STRING_TAG)
    return f"{attr.oid.dotted_string}=#{(bytes([tag]) + _der_length(len(value)) + value).hex()}"


def certificate_principal(der: bytes) -> KafkaPrincipal:
    """``User:<subject>`` of a DER certificate, the subject in Java's RFC 2253 form (most specific first)."""
    subject = x509.load_der_x509_certificate(der).subject
    return KafkaPrincipal("User", ",".join("+".join(_rfc2253_attribute(a) for a in rdn)
                                           for rdn in reversed(subject.rdns)))


def peer_principal(writer: asyncio.StreamWriter) -> KafkaPrincipal:
    """The principal of a TLS peer's certificate, or User:ANONYMOUS when it sent none."""
    ssl_object = writer.get_extra_info("ssl_object")
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    return certificate_principal(der) if der else ANONYMOUS


def handshake_failure(err: BaseException, *, server_side: bool = False) -> str:
    """One line for a failed TLS handshake: OpenSSL's reason without its "[SSL: X]" and "(_ssl.c:N)",
    with a hint where the usual cause is known (the other side not speaking TLS, or refusing our
    certificate: asyncio's TLS drops the connection without sending an alert)."""
    if isinstance(err, TimeoutError) or "taking longer than" in str(err):
        return "TLS handshake timed out"
    if isinstance(err, (asyncio.IncompleteReadError, ConnectionResetError, ssl.SSLEOFError, EOFError,
                        BrokenPipeError)) or (isinstance(err, ssl.SSLError) and "EOF" in str(err)):
        if server_side:
            return "TLS handshake failed: the client closed the connection (did it refuse our certificate?)"
        # a TLS listener that refused our TLS version drops the connection the same way (Python's TLS
        # server sends no alert), so the hint names both causes
        return ("TLS handshake failed: the peer closed the connection (is it a TLS listener? "
                "does it accept our ssl.enabled.protocols?)")
    if isinstance(err, ssl.SSLCertVerificationError) and err.verify_message:
        return f"TLS handshake failed: certificate verify failed: {err.verify_message}"
    if isinstance(err, OSError) and not isinstance(err, ssl.SSLError) and err.errno:
        return f"TLS handshake failed: {failure_words(err)}"  # words, not "[Errno 104] ..."
    text = " ".join(str(err).split())
    if isinstance(err, ssl.SSLError):
        text = _OPENSSL_NOISE.sub("", text) or (err.reason or type(err).__name__)
        if err.reason in ("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "UNKNOWN_PROTOCOL", "RECORD_LAYER_FAILURE"):
            text += " (is the client using PLAINTEXT?)" if server_side else " (is it a TLS listener?)"
    return f"TLS handshake failed: {text or type(err).__name__}"


async def start_tls(writer: asyncio.StreamWriter, context: ssl.SSLContext, timeout_ms: float, *,
                    server_hostname: str | None = None) -> None:
    """Upgrade ``writer``'s connection to TLS (the server or client side, as the stream was made);
    raises ``OSError``/``ssl.SSLError``/``TimeoutError`` for ``handshake_failure`` to describe."""
    async with asyncio.timeout(timeout_ms / 1000.0):
        await writer.start_tls(context, server_hostname=server_hostname,
                               ssl_handshake_timeout=timeout_ms / 1000.0)


__all__ = ["certificate_principal", "handshake_failure", "peer_principal", "start_tls"]
