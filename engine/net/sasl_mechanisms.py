"""The SASL mechanisms Kafka listeners offer — PLAIN and SCRAM-SHA-256/512 — as pure state machines:
bytes in, bytes out, no sockets. The handshake framing (SaslHandshake, SaslAuthenticate) lives in
``kafka_server`` and ``kafka_client``; they drive these objects.

SCRAM is written here on hashlib/hmac rather than taken from a library such as scramp because Kafka's
SCRAM differs from a textbook RFC 5802 one in ways a peer notices: Kafka does not SASLprep user names or
passwords (PBKDF2 runs over the password's plain UTF-8 bytes), it accepts extensions in the client-first
message (``tokenauth=true`` asks for delegation-token authentication), it refuses credentials with
fewer than 4096 iterations, and its message grammar is a fixed set of patterns (ScramMessages) that we
follow so that what Kafka refuses, we refuse.

Failure messages are Kafka's SaslAuthenticate error_message texts: PLAIN's own texts (Kafka passes
them to the client), and for SCRAM the generic "invalid credentials" line, since Kafka hides SCRAM's
reasons (they would tell an unauthenticated client whether a user exists).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from typing import Mapping

from engine.net.channel_security import SASL_MECHANISMS, ScramCredential, ScramCredentialLookup
from engine.net.errors import AuthenticationError

# Kafka's ScramMechanism: hash name and the minimum iteration count a credential may have.
_SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
SCRAM_MIN_ITERATIONS = 4096

# ScramMessages' grammar, character classes spelled without Java's && intersections.
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"                      # any 7-bit char but NUL and ','
_VALUE_SAFE = r"[\x01-\x2b\x2d-\x3c\x3e-\x7f]+"         # ... and not '='
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_B64 = "[a-zA-Z0-9/+]"
_BASE64 = f"(?:{_B64}{{4}})*(?:{_B64}{{3}}=|{_B64}{{2}}==)?"
_RESERVED = f"(?:m={_VALUE},)?"
_EXTENSIONS = f"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    f"n,(?:a=(?P<authzid>{_SASLNAME}))?,{_RESERVED}n=(?P<saslname>{_SASLNAME}),"
    f"r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS})")
_SERVER_FIRST = re.compile(
    f"{_RESERVED}r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_BASE64}),i=(?P<iterations>[0-9]+){_EXTENSIONS}")
_CLIENT_FINAL = re.compile(
    f"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS},p=(?P<proof>{_BASE64})")
_SERVER_FINAL = re.compile(f"(?:e=(?P<error>{_VALUE_SAFE}))|(?:v=(?P<signature>{_BASE64})){_EXTENSIONS}")

# The gs2 header "n,," (no channel binding, no authzid), base64-encoded as the client-final c= carries it.
_GS2_HEADER = "n,,"


def _invalid_credentials(mechanism: str) -> AuthenticationError:
    # SaslServerAuthenticator's reply for any SaslException: the reason stays on the server.
    return AuthenticationError(
        f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}")


def _unsupported(mechanism: str) -> AuthenticationError:
    return AuthenticationError(f"Unsupported SASL mechanism {mechanism}")


def escape_saslname(username: str) -> str:
    """ScramFormatter.saslName: '=' -> '=3D' and ',' -> '=2C' (in that order)."""
    return username.replace("=", "=3D").replace(",", "=2C")


def unescape_saslname(saslname: str) -> str:
    """ScramFormatter.username: the inverse; any other '=' is invalid (ValueError)."""
    name = saslname.replace("=2C", ",")
    if "=" in name.replace("=3D", ""):
        raise ValueError(f"invalid SCRAM saslname {saslname!r}: '=' not followed by 2C or 3D")
    return name.replace("=3D", "=")


def _hmac(mechanism: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, _SCRAM_HASHES[mechanism]).digest()


def _hash(mechanism: str, data: bytes) -> bytes:
    return hashlib.new(_SCRAM_HASHES[mechanism], data).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """Kafka's ScramFormatter.saltedPassword: Hi (PBKDF2, one block) over the password's UTF-8
    bytes, no SASLprep; an unpaired surrogate is written '?', as Java's String.getBytes does, and
    fewer than one iteration counts as one, as Hi's loop does. ValueError for an empty password:
    Java's HMAC refuses an empty key ("Empty key"), so Kafka never makes such a credential."""
    if not password:
        raise ValueError("a SCRAM password must not be empty (Kafka's ScramFormatter refuses an empty key)")
    return hashlib.pbkdf2_hmac(_SCRAM_HASHES[mechanism], password.encode("utf-8", "replace"), salt,
                               max(iterations, 1))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b))


def scram_credential(mechanism: str, password: str, *, salt: bytes | None = None,
                     iterations: int = 4096) -> ScramCredential:
    """The credential Kafka's ScramFormatter.generateCredential stores for ``password``; ValueError
    for an empty one (see salted_password)."""
    if mechanism not in _SCRAM_HASHES:
        raise _unsupported(mechanism)
    if salt is None:
        salt = secrets.token_bytes(32)
    salted = salted_password(mechanism, password, salt, iterations)
    client_key = _hmac(mechanism, salted, b"Client Key")
    return ScramCredential(salt=salt, stored_key=_hash(mechanism, client_key),
                           server_key=_hmac(mechanism, salted, b"Server Key"), iterations=iterations)


def _nonce() -> str:
    # ScramFormatter.secureRandomString: printable, comma-free; urlsafe base64 qualifies.
    return secrets.token_urlsafe(24)


def _decode(token: bytes) -> str:
    # Java's new String(bytes, UTF_8) replaces bad bytes; the grammar then rejects the U+FFFD.
    return token.decode("utf-8", errors="replace")


class SaslServer:
    """The server side of one connection's SASL exchange (subclasses per mechanism)."""

    mechanism: str
    complete: bool = False
    username: str | None = None

    def evaluate(self, response: bytes) -> bytes:
        raise NotImplementedError


class _PlainServer(SaslServer):
    mechanism = "PLAIN"

    def __init__(self, users: Mapping[str, str]):
        self._users = users

    def evaluate(self, response: bytes) -> bytes:
        if self.complete:
            raise AuthenticationError("Unexpected SASL/PLAIN token after authentication completed")
        # PlainSaslServer.extractTokens: split on NUL into at most 4 parts; exactly 3 is valid.
        tokens = _decode(response).split("\0", 3)
        if len(tokens) != 3:
            raise AuthenticationError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
        authzid, username, password = tokens
        if not username:
            raise AuthenticationError("Authentication failed: username not specified")
        if not password:
            raise AuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(username)
        if expected is None or not hmac.compare_digest(expected.encode("utf-8"), password.encode("utf-8")):
            raise AuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise AuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username")
        self.username = username
        self.complete = True
        return b""


class _ScramServer(SaslServer):
    # Fixed server nonce part, for test vectors only; None draws a random one per exchange.
    server_nonce: str | None = None

    def __init__(self, mechanism: str, lookup: ScramCredentialLookup | None):
        self.mechanism = mechanism
        self._lookup = lookup
        self._state = "first"
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""

    def evaluate(self, response: bytes) -> bytes:
        if self._state == "first":
            return self._first(_decode(response))
        if self._state == "final":
            return self._final(_decode(response))
        raise _invalid_credentials(self.mechanism)

    def _first(self, message: str) -> bytes:
        self._state = "failed"
        match = _CLIENT_FIRST.fullmatch(message)
        if match is None:
            raise _invalid_credentials(self.mechanism)
        extensions = dict(item.split("=", 1) for item in match["extensions"].split(",")[1:])
        if extensions.get("tokenauth", "").lower() == "true":
            # Delegation-token authentication; we hold no tokens, so no token can be valid.
            raise _invalid_credentials(self.mechanism)
        try:
            username = unescape_saslname(match["saslname"])
        except ValueError:
            raise _invalid_credentials(self.mechanism) from None
        credential = self._lookup(self.mechanism, username) if self._lookup is not None else None
        if credential is None:
            raise _invalid_credentials(self.mechanism)
        authzid = match["authzid"]
        if authzid and authzid != username:
            raise AuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username")
        if credential.iterations < SCRAM_MIN_ITERATIONS:
            raise _invalid_credentials(self.mechanism)
        self._credential = credential
        self._username = username
        self._client_first_bare = message.split(",", 2)[2]
        self._nonce = match["nonce"] + (self.server_nonce or _nonce())
        self._server_first = f"r={self._nonce},s={_b64(credential.salt)},i={credential.iterations}"
        self._state = "final"
        return self._server_first.encode("ascii")

    def _final(self, message: str) -> bytes:
        self._state = "failed"
        match = _CLIENT_FINAL.fullmatch(message)
        if match is None or match["nonce"] != self._nonce:
            raise _invalid_credentials(self.mechanism)
        credential = self._credential
        assert credential is not None
        without_proof = message[:message.rindex(",p=")]
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode("utf-8")
        proof = base64.b64decode(match["proof"])
        client_signature = _hmac(self.mechanism, credential.stored_key, auth_message)
        if len(proof) != len(client_signature):
            raise _invalid_credentials(self.mechanism)
        computed_stored_key = _hash(self.mechanism, _xor(proof, client_signature))
        if not hmac.compare_digest(computed_stored_key, credential.stored_key):
            raise _invalid_credentials(self.mechanism)
        server_signature = _hmac(self.mechanism, credential.server_key, auth_message)
        self.username = self._username
        self.complete = True
        self._state = "done"
        return f"v={_b64(server_signature)}".encode("ascii")


class SaslClient:
    """The client side of one SASL exchange (subclasses per mechanism)."""

    mechanism: str
    complete: bool = False

    def first(self) -> bytes:
        raise NotImplementedError

    def evaluate(self, challenge: bytes) -> bytes | None:
        raise NotImplementedError


class _PlainClient(SaslClient):
    mechanism = "PLAIN"

    def __init__(self, username: str, password: str):
        self._username = username
        self._password = password

    def first(self) -> bytes:
        return f"\0{self._username}\0{self._password}".encode("utf-8")

    def evaluate(self, challenge: bytes) -> bytes | None:
        # PLAIN's server answers with an empty challenge once it accepted the one message.
        if challenge:
            raise AuthenticationError("SASL/PLAIN: unexpected non-empty challenge from the server")
        self.complete = True
        return None


class _ScramClient(SaslClient):
    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None):
        self.mechanism = mechanism
        self._password = password
        self._nonce = nonce if nonce is not None else _nonce()
        self._client_first_bare = f"n={escape_saslname(username)},r={self._nonce}"
        self._state = "first"
        self._expected_signature = b""

    def first(self) -> bytes:
        self._state = "server-first"
        return (_GS2_HEADER + self._client_first_bare).encode("utf-8")

    def _fail(self, reason: str) -> AuthenticationError:
        self._state = "failed"
        return AuthenticationError(f"{self.mechanism} authentication failed: {reason}")

    def evaluate(self, challenge: bytes) -> bytes | None:
        message = _decode(challenge)
        if self._state == "server-first":
            return self._server_first(message)
        if self._state == "server-final":
            return self._server_final(message)
        raise self._fail(f"unexpected challenge in state {self._state}")

    def _server_first(self, message: str) -> bytes:
        match = _SERVER_FIRST.fullmatch(message)
        if match is None:
            raise self._fail("invalid server-first message")
        nonce = match["nonce"]
        if not nonce.startswith(self._nonce):
            raise self._fail("Invalid server nonce: does not start with client nonce")
        iterations = int(match["iterations"])
        if iterations < SCRAM_MIN_ITERATIONS:
            raise self._fail(f"Requested iterations {iterations} is less than the minimum "
                             f"{SCRAM_MIN_ITERATIONS} for {self.mechanism}")
        salt = base64.b64decode(match["salt"])
        try:
            salted = salted_password(self.mechanism, self._password, salt, iterations)
        except ValueError as err:
            raise self._fail(str(err)) from None
        client_key = _hmac(self.mechanism, salted, b"Client Key")
        stored_key = _hash(self.mechanism, client_key)
        without_proof = f"c={_b64(_GS2_HEADER.encode('ascii'))},r={nonce}"
        auth_message = f"{self._client_first_bare},{message},{without_proof}".encode("utf-8")
        proof = _xor(client_key, _hmac(self.mechanism, stored_key, auth_message))
        server_key = _hmac(self.mechanism, salted, b"Server Key")
        self._expected_signature = _hmac(self.mechanism, server_key, auth_message)
        self._state = "server-final"
        return f"{without_proof},p={_b64(proof)}".encode("ascii")

    def _server_final(self, message: str) -> None:
        match = _SERVER_FINAL.fullmatch(message)
        if match is None:
            raise self._fail("invalid server-final message")
        if match["error"] is not None:
            raise self._fail(f"server error {match['error']}")
        try:
            signature = base64.b64decode(match["signature"], validate=True)
        except binascii.Error:
            raise self._fail("invalid server signature encoding") from None
        if not hmac.compare_digest(signature, self._expected_signature):
            raise self._fail("Invalid server signature in server final message")
        self._state = "done"
        self.complete = True
        return None


def sasl_server(mechanism: str, *, plain_users: Mapping[str, str] | None = None,
                scram_credentials: ScramCredentialLookup | None = None) -> SaslServer:
    """A fresh server-side exchange for ``mechanism``."""
    if mechanism == "PLAIN":
        return _PlainServer(plain_users or {})
    if mechanism in _SCRAM_HASHES:
        return _ScramServer(mechanism, scram_credentials)
    raise _unsupported(mechanism)


def sasl_client(mechanism: str, username: str, password: str, *, nonce: str | None = None) -> SaslClient:
    """A fresh client-side exchange logging in as ``username``; ``nonce`` fixes SCRAM's client nonce
    (tests and test vectors only)."""
    if mechanism == "PLAIN":
        return _PlainClient(username, password)
    if mechanism in _SCRAM_HASHES:
        return _ScramClient(mechanism, username, password, nonce)
    raise _unsupported(mechanism)


assert set(SASL_MECHANISMS) == {"PLAIN", *_SCRAM_HASHES}

__all__ = ["SCRAM_MIN_ITERATIONS", "salted_password", "SaslClient", "SaslServer", "escape_saslname", "sasl_client",
           "sasl_server", "scram_credential", "unescape_saslname"]
