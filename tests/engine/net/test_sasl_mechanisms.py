"""SASL mechanism cores: RFC 7677's SCRAM-SHA-256 vector, our client against our server, and every
way an exchange must fail (with Kafka's one-line texts)."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings, strategies as st

from engine.net.errors import AuthenticationError
from engine.net.sasl_mechanisms import (
    escape_saslname, sasl_client, sasl_server, scram_credential, unescape_saslname)

SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")
INVALID = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"

# RFC 7677 section 3.
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def lookup_for(users: dict[str, str], iterations: int = 4096):
    creds = {(m, u): scram_credential(m, p, iterations=iterations) for m in SCRAM for u, p in users.items()}
    return lambda mechanism, user: creds.get((mechanism, user))


def run(client, server):
    """Drive a full exchange; returns the last server challenge."""
    token = client.first()
    while True:
        challenge = server.evaluate(token)
        token = client.evaluate(challenge)
        if token is None:
            return challenge


def test_rfc7677_vector_client():
    client = sasl_client("SCRAM-SHA-256", "user", "pencil", nonce=RFC_CLIENT_NONCE)
    assert client.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert client.evaluate(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    assert client.evaluate(RFC_SERVER_FINAL) is None
    assert client.complete


def test_rfc7677_vector_server():
    cred = scram_credential("SCRAM-SHA-256", "pencil", salt=RFC_SALT, iterations=4096)
    server = sasl_server("SCRAM-SHA-256", scram_credentials=lambda m, u: cred if u == "user" else None)
    server.server_nonce = RFC_SERVER_NONCE
    assert server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO") == RFC_SERVER_FIRST
    assert not server.complete
    assert server.evaluate(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete and server.username == "user"


@pytest.mark.parametrize("mechanism", ("PLAIN", *SCRAM))
def test_client_against_server(mechanism):
    users = {"alice": "alice-secret", "b,o=b": "pässword"}
    for name, password in users.items():
        server = sasl_server(mechanism, plain_users=users, scram_credentials=lookup_for(users))
        client = sasl_client(mechanism, name, password)
        run(client, server)
        assert client.complete and server.complete and server.username == name


@pytest.mark.parametrize("mechanism", ("PLAIN", *SCRAM))
@pytest.mark.parametrize("user,password", [("alice", "wrong"), ("mallory", "alice-secret")])
def test_wrong_password_or_unknown_user(mechanism, user, password):
    users = {"alice": "alice-secret"}
    server = sasl_server(mechanism, plain_users=users, scram_credentials=lookup_for(users))
    with pytest.raises(AuthenticationError) as err:
        run(sasl_client(mechanism, user, password), server)
    expected = ("Authentication failed: Invalid username or password" if mechanism == "PLAIN"
                else INVALID.format(mechanism))
    assert str(err.value) == expected
    assert not server.complete and server.username is None


@pytest.mark.parametrize("token,message", [
    (b"alice\0alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    (b"\0alice\0secret\0x", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    (b"\0\0secret", "Authentication failed: username not specified"),
    (b"\0alice\0", "Authentication failed: password not specified"),
    (b"bob\0alice\0alice-secret",
     "Authentication failed: Client requested an authorization id that is different from username"),
])
def test_plain_rules(token, message):
    server = sasl_server("PLAIN", plain_users={"alice": "alice-secret"})
    with pytest.raises(AuthenticationError, match=f"^{message}$"):
        server.evaluate(token)


def test_plain_authzid_equal_to_authcid_accepted():
    server = sasl_server("PLAIN", plain_users={"alice": "alice-secret"})
    assert server.evaluate(b"alice\0alice\0alice-secret") == b""
    assert server.username == "alice"


def _scram_pair(mechanism, iterations=4096):
    users = {"alice": "alice-secret"}
    server = sasl_server(mechanism, scram_credentials=lookup_for(users, iterations))
    return sasl_client(mechanism, "alice", "alice-secret"), server


def _replace_field(message: bytes, key: bytes, new_value: bytes) -> bytes:
    parts = [new_value if p.startswith(key + b"=") else p for p in message.split(b",")]
    return b",".join(parts)


@pytest.mark.parametrize("mechanism", SCRAM)
def test_tampered_proof(mechanism):
    client, server = _scram_pair(mechanism)
    final = client.evaluate(server.evaluate(client.first()))
    proof = bytearray(base64.b64decode(final.split(b",p=")[1]))
    proof[0] ^= 1
    with pytest.raises(AuthenticationError, match=f"^{INVALID.format(mechanism)}$"):
        server.evaluate(_replace_field(final, b"p", b"p=" + base64.b64encode(bytes(proof))))
    assert not server.complete


@pytest.mark.parametrize("mechanism", SCRAM)
def test_nonce_mismatch(mechanism):
    client, server = _scram_pair(mechanism)
    final = client.evaluate(server.evaluate(client.first()))
    nonce = final.split(b",")[1]
    with pytest.raises(AuthenticationError, match=f"^{INVALID.format(mechanism)}$"):
        server.evaluate(final.replace(nonce, nonce + b"x"))


@pytest.mark.parametrize("mechanism", SCRAM)
def test_tampered_server_signature(mechanism):
    client, server = _scram_pair(mechanism)
    server_final = server.evaluate(client.evaluate(server.evaluate(client.first())))
    signature = bytearray(base64.b64decode(server_final[2:]))
    signature[-1] ^= 1
    with pytest.raises(AuthenticationError, match="Invalid server signature") as err:
        client.evaluate(b"v=" + base64.b64encode(bytes(signature)))
    assert "\n" not in str(err.value) and not client.complete


def test_server_final_error_reaches_client():
    client, server = _scram_pair("SCRAM-SHA-256")
    client.evaluate(server.evaluate(client.first()))
    with pytest.raises(AuthenticationError, match="server error invalid-proof"):
        client.evaluate(b"e=invalid-proof")


@pytest.mark.parametrize("mechanism", SCRAM)
def test_iterations_below_minimum(mechanism):
    client, server = _scram_pair(mechanism, iterations=4095)
    with pytest.raises(AuthenticationError, match=f"^{INVALID.format(mechanism)}$"):
        server.evaluate(client.first())
    # And the client refuses a server asking for too few.
    client = sasl_client(mechanism, "alice", "x", nonce="abc")
    client.first()
    with pytest.raises(AuthenticationError, match="Requested iterations 4095 is less than the minimum 4096"):
        client.evaluate(b"r=abcdef,s=QUJD,i=4095")


def test_client_refuses_foreign_nonce():
    client = sasl_client("SCRAM-SHA-256", "alice", "x", nonce="abc")
    client.first()
    with pytest.raises(AuthenticationError, match="does not start with client nonce"):
        client.evaluate(b"r=xyzdef,s=QUJD,i=4096")


def test_extensions_ignored_but_tokenauth_refused():
    client, server = _scram_pair("SCRAM-SHA-256")
    first = client.first()
    challenge = server.evaluate(first + b",foo=bar")
    assert challenge.startswith(b"r=")
    client2, server2 = _scram_pair("SCRAM-SHA-256")
    with pytest.raises(AuthenticationError, match=INVALID.format("SCRAM-SHA-256")):
        server2.evaluate(client2.first() + b",tokenauth=true")


def test_saslname_escaping():
    assert escape_saslname("a=b,c") == "a=3Db=2Cc"
    assert unescape_saslname("a=3Db=2Cc") == "a=b,c"
    assert unescape_saslname(escape_saslname("=2C")) == "=2C"
    with pytest.raises(ValueError):
        unescape_saslname("a=4Fb")
    client = sasl_client("SCRAM-SHA-256", "a=b,c", "pw", nonce="n0nce")
    assert client.first() == b"n,,n=a=3Db=2Cc,r=n0nce"


def test_unknown_mechanism():
    for build in (lambda: sasl_server("GSSAPI"), lambda: sasl_client("GSSAPI", "u", "p"),
                  lambda: scram_credential("SCRAM-SHA-1", "p")):
        with pytest.raises(AuthenticationError, match="^Unsupported SASL mechanism"):
            build()


def test_scram_credential_shape():
    cred = scram_credential("SCRAM-SHA-512", "pw", salt=b"salt", iterations=8192)
    assert (cred.salt, cred.iterations, len(cred.stored_key), len(cred.server_key)) == (b"salt", 8192, 64, 64)
    assert scram_credential("SCRAM-SHA-512", "pw", salt=b"salt", iterations=8192) == cred
    assert scram_credential("SCRAM-SHA-256", "pw").salt != scram_credential("SCRAM-SHA-256", "pw").salt


# Built once: PBKDF2 per example would make the property test slow.
_FIXED_LOOKUP = lookup_for({"alice": "alice-secret"})
_STEP_PREFIXES = st.sampled_from([b"", b"n,,", b"n,,n=alice,r=", b"c=biws,r=", b"n,a=alice,n=alice,r=x"])


@settings(max_examples=200, deadline=None)
@given(mechanism=st.sampled_from(("PLAIN", *SCRAM)), prefix=_STEP_PREFIXES, data=st.binary(max_size=200),
       second=st.booleans())
def test_arbitrary_bytes_only_raise_one_line_authentication_error(mechanism, prefix, data, second):
    users = {"alice": "alice-secret"}
    server = sasl_server(mechanism, plain_users=users, scram_credentials=_FIXED_LOOKUP)
    try:
        if second and mechanism != "PLAIN":
            server.evaluate(b"n,,n=alice,r=abc")
        server.evaluate(prefix + data)
    except AuthenticationError as exc:
        assert "\n" not in str(exc) and str(exc)



@pytest.mark.parametrize("mechanism", SCRAM)
def test_kafka_python_scram_client_against_our_server(mechanism):
    """A SCRAM client we did not write (kafka-python's) logs in to our server, and its server-final check
    accepts our signature."""
    from kafka.net.sasl.scram import ScramClient

    server = sasl_server(mechanism, scram_credentials=_FIXED_LOOKUP)
    client = ScramClient("alice", "alice-secret", mechanism)
    client.process_server_first_message(server.evaluate(client.first_message()))
    client.process_server_final_message(server.evaluate(client.final_message()))
    assert server.complete and server.username == "alice"
    wrong = ScramClient("alice", "not-the-secret", mechanism)
    server = sasl_server(mechanism, scram_credentials=_FIXED_LOOKUP)
    wrong.process_server_first_message(server.evaluate(wrong.first_message()))
    with pytest.raises(AuthenticationError):
        server.evaluate(wrong.final_message())


@pytest.mark.kafka
def test_scram_credential_matches_kafka_storage_format(kafka_dist, tmp_path):
    """Kafka's own ScramFormatter (through ``kafka-storage format --add-scram``, which writes the
    credential into bootstrap.checkpoint) computes the same keys as scram_credential, for a password
    that SASLprep would change (neither side applies it) and both mechanisms."""
    from kafka_peer.distribution import bootstrap_records

    salt = b"kafka-cross-check-salt"
    password = "alice-s\u00e9cret-\ufb01"  # SASLprep (NFKC) would turn the ligature into "fi"
    config = tmp_path / "controller.properties"
    log_dir = tmp_path / "log"
    config.write_text("process.roles=controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
                      "listeners=CONTROLLER://127.0.0.1:9093\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
                      f"log.dirs={log_dir}\n", encoding="utf-8")
    args = ["format", "-t", "q1Sh-9_ISia_zwGINzRvyQ", "-c", str(config)]
    for mechanism in SCRAM:
        args += ["--add-scram", f'{mechanism}=[name=alice,password="{password}",'
                                f'salt="{base64.b64encode(salt).decode()}",iterations=8192]']
    kafka_dist.run("kafka-storage", *args)
    found = {}
    for record in bootstrap_records(log_dir):  # bootstrap.checkpoint, or the first snapshot from Kafka 4.4
        if record.type_name == "USER_SCRAM_CREDENTIAL_RECORD":
            found[SCRAM[record.mechanism - 1]] = record
    assert set(found) == set(SCRAM)
    for mechanism, record in found.items():
        ours = scram_credential(mechanism, password, salt=salt, iterations=8192)
        assert record.name == "alice"
        assert (record.salt, record.stored_key, record.server_key, record.iterations) == (
            ours.salt, ours.stored_key, ours.server_key, ours.iterations)
