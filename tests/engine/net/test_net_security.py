"""TLS and SASL on real sockets (127.0.0.1): our KafkaServer and KafkaClient on every security protocol
and SASL mechanism, the principal a handler sees, and the refusals — each one line, the server still
serving the next good client. Certificates come from tests/tls_material.py; config goes through
engine.net.security_config as a node's or tool's properties would."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import logging
import socket
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from engine.records.kio_codec import ErrorCode
from engine.net.errors import AuthenticationError, NetError
from engine.net.kafka_client import KafkaClient
from engine.net.kafka_protocol import RAFT_APIS, ApiSpec, encode_request, request_class, response_class
from engine.net.kafka_server import KafkaServer, RequestContext
from engine.net.sasl_mechanisms import scram_credential
from engine.net.security_config import client_security, listener_security
from engine.net.tls_channel import certificate_principal
from tls_material import TestCA, write_pem

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
LISTENER = "SECURE"
DESCRIBE_CLUSTER = request_class(60, 0)


class Material:
    """Stores written once per module; tests only read them."""

    def __init__(self, directory: Path):
        self.ca, other = TestCA(), TestCA("another CA")
        self.server = write_pem(directory, "server", self.ca.issue("broker", organization="Acme"),
                                key_password="server-key")
        self.client = write_pem(directory, "client", self.ca.issue("alice-host", organization="Acme"))
        self.client_subject = "CN=alice-host,O=Acme"
        self.expired_client = write_pem(directory, "expired-client", self.ca.issue("old", expired=True))
        self.expired_server = write_pem(directory, "expired-server", self.ca.issue("old-broker", expired=True))
        self.foreign_client = write_pem(directory, "foreign-client", other.issue("mallory"))
        self.other_host = write_pem(directory, "other-host", self.ca.issue("far", hosts=("far.example",)))
        # a truststore of the other CA only: our server's certificate is unknown to it
        self.foreign_trust = write_pem(directory, "foreign-trust", other.issue("x"), trust=(other,)).truststore
        self.scram = {(m, "alice"): scram_credential(m, "alice-secret") for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")}


@pytest.fixture(scope="module")
def material(tmp_path_factory) -> Material:
    return Material(tmp_path_factory.mktemp("tls"))


def server_props(m: Material, *, client_auth: str = "none", mechanisms: str = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                 store=None, extra: dict[str, str] | None = None) -> dict[str, str]:
    store = store or m.server
    p = f"listener.name.{LISTENER.lower()}."
    return {**(extra or {}), "ssl.keystore.location": str(store.keystore), "ssl.keystore.type": "PEM",
            "ssl.key.password": store.key_password or "", "ssl.truststore.location": str(m.server.truststore),
            "ssl.truststore.type": "PEM", f"{p}ssl.client.auth": client_auth, "sasl.enabled.mechanisms": mechanisms,
            f"{p}plain.sasl.jaas.config": f'{PLAIN_MODULE} required username="admin" password="admin-secret" '
                                          f'user_admin="admin-secret" user_alice="alice-secret";'}


def client_props(m: Material, protocol: str, mechanism: str = "PLAIN", password: str = "alice-secret", *,
                 certificate=None, trust: Path | None = None) -> dict[str, str]:
    props = {"security.protocol": protocol, "sasl.mechanism": mechanism,
             "sasl.jaas.config": f'{SCRAM_MODULE} required username="alice" password="{password}";',
             "ssl.truststore.location": str(trust or m.client.truststore), "ssl.truststore.type": "PEM"}
    if certificate is not None:
        props.update({"ssl.keystore.location": str(certificate.keystore), "ssl.keystore.type": "PEM"})
    return props


async def who_am_i(ctx: RequestContext, request: Any) -> Any:
    """DescribeCluster answering with the principal and protocol the connection has, in cluster_id."""
    return response_class(60, 0)(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, error_message=None,
                                 cluster_id=f"{ctx.principal}|{ctx.security_protocol.name}", controller_id=1,
                                 brokers=(), cluster_authorized_operations=0)


def run_against(m: Material, protocol: str, clients: list[dict[str, str]], *, host: str = "127.0.0.1",
                **server_kwargs: Any) -> list[Any]:
    """Serve ``protocol`` and connect each client in turn (a fresh KafkaClient each): the cluster_id
    answered, or the NetError raised."""
    security = listener_security(server_props(m, **server_kwargs), LISTENER, protocol, "server.properties",
                                 scram_credentials=lambda mech, user: m.scram.get((mech, user)))

    async def main() -> list[Any]:
        out: list[Any] = []
        async with KafkaServer(who_am_i, listener_name=LISTENER, security=security,
                               apis={**RAFT_APIS}) as server:
            for props in clients:
                async with KafkaClient(client_id="t", request_timeout_ms=5000,
                                       security=client_security(props, "client.properties")) as client:
                    try:
                        request = DESCRIBE_CLUSTER(include_cluster_authorized_operations=False)
                        response = await client.send((host, server.address[1]), request)
                        out.append(response.cluster_id)
                    except NetError as err:
                        out.append(err)
            while server.connection_count:  # every refusal logged before the assertions read the log
                await asyncio.sleep(0.01)
        return out
    return asyncio.run(asyncio.wait_for(main(), 30))


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "engine.net" and r.levelno >= logging.WARNING]


# ---------------------------------------------------------------- round trips

@pytest.mark.parametrize("protocol, mechanism", [
    ("PLAINTEXT", None), ("SSL", None),
    ("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256"), ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
    ("SASL_SSL", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512"),
])
def test_round_trip_with_principal(material, protocol, mechanism):
    (answer,) = run_against(material, protocol, [client_props(material, protocol, mechanism or "PLAIN")])
    user = "User:alice" if mechanism else "User:ANONYMOUS"
    assert answer == f"{user}|{protocol}"


def test_mutual_tls_principal_is_the_certificate_subject(material):
    answers = run_against(material, "SSL", [client_props(material, "SSL", certificate=material.client)],
                          client_auth="required")
    assert answers == [f"User:{material.client_subject}|SSL"]


def test_requested_client_auth_without_certificate_is_anonymous(material):
    answers = run_against(material, "SSL", [client_props(material, "SSL"),
                                            client_props(material, "SSL", certificate=material.client)],
                          client_auth="requested")
    assert answers == ["User:ANONYMOUS|SSL", f"User:{material.client_subject}|SSL"]


def test_sasl_ssl_principal_is_the_sasl_user_even_with_a_certificate(material):
    answers = run_against(material, "SASL_SSL", [client_props(material, "SASL_SSL", "SCRAM-SHA-512",
                                                              certificate=material.client)], client_auth="required")
    assert answers == ["User:alice|SASL_SSL"]


def test_sasl_listener_lists_handshake_and_authenticate(material):
    security = listener_security(server_props(material), LISTENER, "SASL_PLAINTEXT", None)

    async def main() -> dict[int, tuple[int, int]]:
        async with KafkaServer(who_am_i, security=security) as server:
            client_sec = client_security(client_props(material, "SASL_PLAINTEXT"), None)
            async with KafkaClient(client_id="t", security=client_sec) as client:
                return await client.api_versions(server.address)
    ranges = asyncio.run(main())
    assert ranges[17] == (1, 1) and ranges[36] == (0, 2)


def test_certificate_principal_prints_unknown_attributes_as_java_does():
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import Encoding
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COUNTRY_NAME, "NO"),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "A, B"),
                      x509.NameAttribute(NameOID.EMAIL_ADDRESS, "a@b"), x509.NameAttribute(NameOID.COMMON_NAME, "x")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    # X500Principal.getName(): RFC 2253, most specific first; emailAddress (no RFC 2253 keyword) as
    # its OID with the hex DER of its IA5String value.
    assert str(certificate_principal(cert.public_bytes(Encoding.DER))) == \
        "User:CN=x,1.2.840.113549.1.9.1=#1603614062,O=A\\, B,C=NO"


# ---------------------------------------------------------------- refusals

def assert_refused(answers: list[Any], reason: str, good: str) -> str:
    """The first client refused with one AuthenticationError line holding ``reason``; the next served."""
    refused, served = answers
    assert isinstance(refused, AuthenticationError), refused
    text = str(refused)
    assert "\n" not in text and text.startswith("cannot connect to 127.0.0.1:") and reason in text, text
    assert served == good
    return text


@pytest.mark.parametrize("protocol, mechanism, reason", [
    ("SASL_PLAINTEXT", "PLAIN", "SASL authentication failed: Authentication failed: Invalid username or password"),
    ("SASL_SSL", "SCRAM-SHA-512", "SASL authentication failed: Authentication failed during authentication due "
                                  "to invalid credentials with SASL mechanism SCRAM-SHA-512"),
])
def test_wrong_password(material, caplog, protocol, mechanism, reason):
    answers = run_against(material, protocol, [client_props(material, protocol, mechanism, "wrong"),
                                               client_props(material, protocol, mechanism)])
    assert_refused(answers, reason, f"User:alice|{protocol}")
    (line,) = warnings(caplog)
    assert f"on {LISTENER}: SASL authentication failed ({mechanism})" in line


def test_mechanism_not_enabled(material, caplog):
    answers = run_against(material, "SASL_PLAINTEXT", [client_props(material, "SASL_PLAINTEXT", "SCRAM-SHA-256"),
                                                       client_props(material, "SASL_PLAINTEXT", "PLAIN")],
                          mechanisms="PLAIN")
    assert_refused(answers, "SASL mechanism SCRAM-SHA-256 is not enabled there (it offers PLAIN)",
                   "User:alice|SASL_PLAINTEXT")
    (line,) = warnings(caplog)
    assert "SASL mechanism 'SCRAM-SHA-256' is not enabled" in line


def test_client_does_not_know_the_server_ca(material, caplog):
    answers = run_against(material, "SSL", [client_props(material, "SSL", trust=material.foreign_trust),
                                            client_props(material, "SSL")])
    assert_refused(answers, "TLS handshake failed: certificate verify failed: unable to get local issuer "
                            "certificate", "User:ANONYMOUS|SSL")
    (line,) = warnings(caplog)
    assert line.startswith("closing connection from 127.0.0.1:")
    assert line.endswith(f"on {LISTENER}: TLS handshake failed: the client closed the connection (did it refuse "
                         f"our certificate?)")


@pytest.mark.parametrize("certificate, reason", [
    ("foreign_client", "certificate verify failed: unable to get local issuer certificate"),
    ("expired_client", "certificate verify failed: certificate has expired"),
    (None, "peer did not return a certificate"),
])
def test_server_refuses_the_client_certificate(material, caplog, certificate, reason):
    offered = getattr(material, certificate) if certificate else None
    answers = run_against(material, "SSL", [client_props(material, "SSL", certificate=offered),
                                            client_props(material, "SSL", certificate=material.client)],
                          client_auth="required")
    assert_refused(answers, "the peer closed the connection after the TLS handshake (did it refuse our certificate?)",
                   f"User:{material.client_subject}|SSL")
    (line,) = warnings(caplog)
    assert line.endswith(f"on {LISTENER}: TLS handshake failed: {reason}")


def test_expired_server_certificate(material, caplog):
    answers = run_against(material, "SSL", [client_props(material, "SSL")] * 2, store=material.expired_server)
    refused, again = answers
    assert "TLS handshake failed: certificate verify failed: certificate has expired" in str(refused)
    assert isinstance(again, AuthenticationError)
    lines = warnings(caplog)
    assert len(lines) == 2 and all(f"on {LISTENER}: TLS handshake failed" in line for line in lines)


def test_host_name_check(material):
    checked = client_props(material, "SSL")
    unchecked = {**checked, "ssl.endpoint.identification.algorithm": ""}
    answers = run_against(material, "SSL", [checked, unchecked], store=material.other_host)
    assert "certificate verify failed: IP address mismatch" in str(answers[0])
    assert answers[1] == "User:ANONYMOUS|SSL"


def test_plaintext_client_on_a_tls_listener(material, caplog):
    answers = run_against(material, "SSL", [client_props(material, "PLAINTEXT"), client_props(material, "SSL")])
    refused, served = answers
    assert isinstance(refused, NetError) and "\n" not in str(refused) and served == "User:ANONYMOUS|SSL"
    (line,) = warnings(caplog)
    assert line.endswith(f"on {LISTENER}: TLS handshake failed: wrong version number (is the client using PLAINTEXT?)")


def test_enabled_protocols_are_enforced_in_the_handshake(material, caplog):
    """A TLS 1.3-only listener refuses a client held to TLS 1.2 (by its list, or by ssl.protocol, as Kafka's
    clients are), in one line on each side, and serves the next client."""
    tls12 = {**client_props(material, "SSL"), "ssl.enabled.protocols": "TLSv1.2"}
    by_protocol = {**client_props(material, "SSL"), "ssl.protocol": "TLSv1.2"}
    answers = run_against(material, "SSL", [tls12, by_protocol, client_props(material, "SSL")],
                          extra={f"listener.name.{LISTENER.lower()}.ssl.enabled.protocols": "TLSv1.3"})
    for refused in answers[:2]:
        assert isinstance(refused, AuthenticationError) and "\n" not in str(refused), refused
        assert "TLS handshake failed" in str(refused) and "ssl.enabled.protocols" in str(refused), refused
    assert answers[2] == "User:ANONYMOUS|SSL"
    lines = warnings(caplog)
    assert len(lines) == 2 and all(line.endswith(f"on {LISTENER}: TLS handshake failed: unsupported protocol") for line in lines), lines


def test_a_tls_12_listener_refuses_a_tls_13_only_client(material):
    tls13 = {**client_props(material, "SSL"), "ssl.enabled.protocols": "TLSv1.3"}
    answers = run_against(material, "SSL", [tls13, client_props(material, "SSL")],
                          extra={"ssl.enabled.protocols": "TLSv1.2"})
    assert isinstance(answers[0], AuthenticationError) and "TLS handshake failed" in str(answers[0])
    assert answers[1] == "User:ANONYMOUS|SSL"


def test_tls_client_on_a_plaintext_listener(material, caplog):
    answers = run_against(material, "PLAINTEXT", [client_props(material, "SSL"), client_props(material, "PLAINTEXT")])
    assert_refused(answers, "TLS handshake failed: the peer closed the connection (is it a TLS listener? "
                            "does it accept our ssl.enabled.protocols?)",
                   "User:ANONYMOUS|PLAINTEXT")
    (line,) = warnings(caplog)
    assert line.endswith(f"on {LISTENER}: a TLS handshake on a non-TLS listener (is the client using SSL?)")


def test_request_before_authentication_closes_the_connection(material, caplog):
    answers = run_against(material, "SASL_PLAINTEXT", [client_props(material, "PLAINTEXT"),
                                                       client_props(material, "SASL_PLAINTEXT")])
    refused, served = answers
    assert isinstance(refused, NetError) and "closed by the peer" in str(refused)
    assert served == "User:alice|SASL_PLAINTEXT"
    (line,) = warnings(caplog)
    assert "describe_cluster v0 before SASL authentication" in line


def test_raw_sasl_handshake_v0_is_refused(material, caplog):
    """Kafka's pre-1.0 raw-token mode is not served: a SaslHandshake v0 closes the connection."""
    security = listener_security(server_props(material), LISTENER, "SASL_PLAINTEXT", None)

    async def main() -> bytes:
        async with KafkaServer(who_am_i, listener_name=LISTENER, security=security) as server:
            reader, writer = await asyncio.open_connection(*server.address)
            writer.write(encode_request(request_class(17, 0)(mechanism="PLAIN"), 1, "raw"))
            data = await reader.read()
            writer.close()
            return data
    assert asyncio.run(asyncio.wait_for(main(), 10)) == b""
    (line,) = warnings(caplog)
    assert "sasl_handshake v0 is not served" in line


# ---------------------------------------------------------------- a real Kafka client

def metadata_for(port: int, seen: list[str]):
    """A handler answering Metadata with this one node and no topics, noting each caller's principal."""
    async def handler(ctx: RequestContext, request: Any) -> Any:
        seen.append(str(ctx.principal))
        cls = response_class(3, ctx.api_version)
        module = sys.modules[cls.__module__]
        broker = {"node_id": 1, "host": "127.0.0.1", "port": port}
        if ctx.api_version >= 1:
            broker["rack"] = None
        fields = {"brokers": (module.MetadataResponseBroker(**broker),), "controller_id": 1, "topics": ()}
        names = {f.name for f in dataclasses.fields(cls)}
        fields.update({k: v for k, v in {"throttle_time": datetime.timedelta(0), "cluster_id": "metashell",
                                         "cluster_authorized_operations": -2147483648}.items() if k in names})
        return cls(**fields)
    return handler


@contextlib.contextmanager
def metadata_server_in_thread(m: Material, seen: list[str]):
    """A SASL_SSL listener serving Metadata on its own event loop thread, for blocking Kafka clients;
    yields its port."""
    security = listener_security(server_props(m), LISTENER, "SASL_SSL", None,
                                 scram_credentials=lambda mech, user: m.scram.get((mech, user)))
    loop = asyncio.new_event_loop()
    with socket.socket() as sock:  # the port first: Metadata must advertise it
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = KafkaServer(metadata_for(port, seen), port=port, listener_name=LISTENER, security=security,
                         apis={3: ApiSpec(3, "metadata", 0, 12)})
    loop.run_until_complete(server.start())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()


def test_librdkafka_admin_client_over_sasl_ssl(material):
    """confluent-kafka (librdkafka, a real Kafka client): ApiVersions, SaslHandshake v1, SaslAuthenticate
    with SCRAM-SHA-512 over TLS checked against our CA, then Metadata as User:alice; a wrong password is
    refused with Kafka's message."""
    admin_module = pytest.importorskip("confluent_kafka.admin")
    from confluent_kafka import KafkaError
    seen: list[str] = []
    with metadata_server_in_thread(material, seen) as port:
        def admin(password: str, error_cb: Any = None) -> Any:
            return admin_module.AdminClient({
                **({"error_cb": error_cb} if error_cb else {}),
                "bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_SSL",
                "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice", "sasl.password": password,
                "ssl.ca.location": str(material.client.truststore), "ssl.endpoint.identification.algorithm": "https",
                "log_level": 0})

        metadata = admin("alice-secret").list_topics(timeout=20)
        assert [b.port for b in metadata.brokers.values()] == [port] and "User:alice" in seen
        errors: list[Any] = []
        refused = admin("wrong", errors.append)
        for _ in range(500):  # until librdkafka reports the refusal (it retries the login meanwhile)
            if errors:
                break
            refused.poll(0.05)
        assert errors and errors[0].code() == KafkaError._AUTHENTICATION
        assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in errors[0].str()


def test_kafka_python_consumer_over_sasl_ssl(material):
    """kafka-python (its own SaslHandshake/SaslAuthenticate and SCRAM code) bootstraps through our
    listener and reads Metadata as User:alice."""
    kafka = pytest.importorskip("kafka")
    seen: list[str] = []
    with metadata_server_in_thread(material, seen) as port:
        consumer = kafka.KafkaConsumer(
            bootstrap_servers=f"127.0.0.1:{port}", security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username="alice", sasl_plain_password="alice-secret",
            ssl_cafile=str(material.client.truststore), request_timeout_ms=20000)
        try:
            assert consumer.topics() == set()
        finally:
            consumer.close()
    assert seen and set(seen) == {"User:alice"}


def test_silent_client_on_a_tls_listener_times_out(material, caplog):
    """A peer that connects and never starts the handshake is dropped after handshake_timeout_ms (one line)."""
    security = listener_security(server_props(material), LISTENER, "SSL", None)

    async def main() -> bytes:
        async with KafkaServer(who_am_i, listener_name=LISTENER, security=security,
                               handshake_timeout_ms=100) as server:
            reader, writer = await asyncio.open_connection(*server.address)
            data = await reader.read()  # EOF once the server gives up
            writer.close()
            return data
    assert asyncio.run(asyncio.wait_for(main(), 10)) == b""
    (line,) = warnings(caplog)
    assert line.endswith(f"on {LISTENER}: TLS handshake timed out")


def test_plaintext_client_told_a_jvm_tls_listener_speaks_tls() -> None:
    """Kafka's (the JVM's) TLS listener answers plain bytes with a TLS alert record and hangs up; the
    client reads those bytes where a frame size should be and says it met a TLS listener, at once and
    for good (AuthenticationError), instead of a 350 MB frame and retries."""
    alert = bytes.fromhex("15030300020250")  # what Kafka 4.3's controller listener sent our ApiVersions

    async def scenario() -> BaseException:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read(4)
            writer.write(alert)
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            async with KafkaClient(client_id="test", request_timeout_ms=10_000) as client:
                with pytest.raises(AuthenticationError) as refused:
                    await client.api_versions(("127.0.0.1", port))
            return refused.value
        finally:
            server.close()
            await server.wait_closed()

    refused = asyncio.run(scenario())
    assert str(refused).startswith("cannot connect to 127.0.0.1:") and "\n" not in str(refused)
    assert str(refused).endswith(": it is a TLS listener and we are not using TLS (set security.protocol to SSL "
                                 "or SASL_SSL)")


def test_closing_does_not_wait_for_a_tls_peers_close_notify(material) -> None:
    """A TLS peer that never answers our close_notify (a JVM answers late: 0.2-0.5 s from Kafka's
    controllers) does not hold the client's close for asyncio's 30 s shutdown timeout: after a short
    wait the connection is dropped. The 10 s bound is a safety net, not a performance claim."""
    from engine.net.kafka_client import _closed

    server_context = listener_security(server_props(material), LISTENER, "SSL", None).ssl_context
    listening = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def silent_peer() -> None:
        raw, _ = listening.accept()
        with server_context.wrap_socket(raw, server_side=True):  # the handshake, then nothing at all
            done.wait(30)

    thread = threading.Thread(target=silent_peer, daemon=True)
    thread.start()

    async def scenario() -> bool:
        context = client_security(client_props(material, "SSL"), "client.properties").ssl_context
        _, writer = await asyncio.open_connection(*listening.getsockname(), ssl=context, server_hostname="127.0.0.1")
        writer.close()
        await _closed(writer)  # asyncio alone waits 30 s for the peer's close_notify: past the bound below
        return True
    try:
        assert asyncio.run(asyncio.wait_for(scenario(), 10))  # a TimeoutError here is the failure
    finally:
        done.set()
        thread.join(5)
        listening.close()


def test_a_tls_peer_that_resets_after_the_handshake_is_told_as_a_refusal(material) -> None:
    """A TLS listener that refuses our certificate may hang up with a reset (our ApiVersions unread in
    its buffer) as well as with a clean close: either way, one line asking whether it refused us
    (it was "Connection reset by peer", a race the secured-quorum test lost once)."""
    import struct

    server_context = listener_security(server_props(material), LISTENER, "SSL", None).ssl_context
    listening = socket.create_server(("127.0.0.1", 0))

    def resetting_peer() -> None:
        raw, _ = listening.accept()
        tls = server_context.wrap_socket(raw, server_side=True)  # the handshake completes
        tls.recv(4)  # our ApiVersions arrives; the rest stays unread
        tls.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = RST
        tls.close()

    thread = threading.Thread(target=resetting_peer, daemon=True)
    thread.start()

    async def scenario() -> BaseException:
        security = client_security(client_props(material, "SSL"), "client.properties")
        async with KafkaClient(client_id="t", request_timeout_ms=5000, security=security) as client:
            try:
                await client.send(listening.getsockname(), DESCRIBE_CLUSTER(include_cluster_authorized_operations=False))
            except NetError as err:
                return err
        raise AssertionError("the peer answered")
    try:
        err = asyncio.run(asyncio.wait_for(scenario(), 20))
    finally:
        thread.join(5)
        listening.close()
    assert isinstance(err, AuthenticationError), err
    assert "the peer closed the connection after the TLS handshake (did it refuse our certificate?)" in str(err)
