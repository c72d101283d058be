"""PKCS12 key and trust stores (engine/net/pkcs12_stores.py), as operators' Kafka configs name them.

The stores are made as the JVM makes them, by the JDK's keytool (a self-signed key pair, trusted
certificates imported), and by ``cryptography`` for a client's key with its CA chain; a JKS store by
keytool too, to be refused with a line saying how to convert it. The round trips are real TLS
connections on 127.0.0.1 between our KafkaServer and KafkaClient.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.common.errors import ConfigError
from engine.net.security_config import client_security, listener_security
from tls_material import TestCA, keytool, principals_seen, write_pkcs12

LISTENER = "SECURE"  # the listener name principals_seen serves


class Stores:
    """Written once per module; the tests only read them."""

    def __init__(self, directory: Path):
        self.ca = TestCA()
        ca_pem = directory / "ca.pem"
        ca_pem.write_bytes(self.ca.cert_pem())
        # the controller's key pair as keytool makes it (self-signed), and a truststore of it
        self.java_keystore = directory / "controller.p12"
        keytool("-genkeypair", "-alias", "controller", "-keyalg", "EC", "-groupname", "secp256r1",
                "-dname", "CN=localhost,O=Acme", "-ext", "SAN=ip:127.0.0.1,dns:localhost", "-validity", "30",
                "-keystore", str(self.java_keystore), "-storetype", "PKCS12", "-storepass", "ks-secret")
        exported = directory / "controller.pem"
        keytool("-exportcert", "-rfc", "-alias", "controller", "-keystore", str(self.java_keystore),
                "-storepass", "ks-secret", "-file", str(exported))
        self.java_truststore = directory / "controller-trust.p12"
        keytool("-importcert", "-noprompt", "-alias", "controller", "-file", str(exported),
                "-keystore", str(self.java_truststore), "-storetype", "PKCS12", "-storepass", "ts-secret")
        # the server's truststore of the clients' CA, keytool-made; a client key with its chain
        self.java_ca_truststore = directory / "clients-ca.p12"
        keytool("-importcert", "-noprompt", "-alias", "ca", "-file", str(ca_pem),
                "-keystore", str(self.java_ca_truststore), "-storetype", "PKCS12", "-storepass", "ts-secret")
        self.client_leaf = self.ca.issue("ops", organization="Acme")
        self.client_keystore = write_pkcs12(directory / "ops.p12", self.client_leaf, "ops-secret", cas=(self.ca,))
        self.jks = directory / "old.jks"
        keytool("-genkeypair", "-alias", "old", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=old",
                "-validity", "30", "-keystore", str(self.jks), "-storetype", "JKS", "-storepass", "jks-secret")


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> Stores:
    return Stores(tmp_path_factory.mktemp("pkcs12"))


def server_props(s: Stores, **extra: str) -> dict[str, str]:
    return {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(s.java_keystore),
            "ssl.keystore.password": "ks-secret", **extra}


def client_props(s: Stores, **extra: str) -> dict[str, str]:
    return {"security.protocol": "SSL", "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": str(s.java_truststore), "ssl.truststore.password": "ts-secret", **extra}




def round_trips(server: dict[str, str], clients: list[dict[str, str]]) -> list[Any]:
    """Each client's principal as the SSL listener saw it, or the NetError it got."""
    return principals_seen(listener_security(server, LISTENER, "SSL", "server.properties"),
                           [client_security(props, "client.properties") for props in clients])


@pytest.mark.slow
def test_a_keytool_keystore_serves_and_a_keytool_truststore_trusts(stores):
    """The JVM's own PKCS12 files on both sides; a truststore left at Kafka's default type (JKS) that is
    a PKCS12 file is read as one, as the JDK reads it."""
    untyped = {k: v for k, v in client_props(stores).items() if k != "ssl.truststore.type"}
    assert round_trips(server_props(stores), [client_props(stores), untyped]) == ["User:ANONYMOUS"] * 2


def test_mutual_tls_with_pkcs12_stores(stores):
    """The client's PKCS12 key names the principal; the server checks it against a keytool truststore."""
    server = server_props(stores, **{f"listener.name.{LISTENER.lower()}.ssl.client.auth": "required",
                                     "ssl.truststore.type": "PKCS12",
                                     "ssl.truststore.location": str(stores.java_ca_truststore),
                                     "ssl.truststore.password": "ts-secret"})
    client = client_props(stores, **{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(stores.client_keystore),
                                     "ssl.keystore.password": "ops-secret"})
    assert round_trips(server, [client]) == ["User:CN=ops,O=Acme"]


def test_a_keystore_password_given_only_as_the_key_password_opens_it(stores):
    props = {k: v for k, v in server_props(stores).items() if k != "ssl.keystore.password"}
    assert listener_security({**props, "ssl.keystore.password": "not-it", "ssl.key.password": "ks-secret"},
                             LISTENER, "SSL", "server.properties").ssl_context is not None


def _error(fn, *args) -> str:
    with pytest.raises(ConfigError) as info:
        fn(*args)
    text = str(info.value)
    assert "\n" not in text and "secret" not in text, text
    return text


def test_store_errors_are_one_line_naming_the_key(stores):
    server = [
        (server_props(stores, **{"ssl.keystore.type": "JKS", "ssl.keystore.location": str(stores.jks)}),
         f"ssl.keystore.type is JKS and {stores.jks} is a JKS store, which we cannot read: convert it "
         f"(keytool -importkeystore -srckeystore {stores.jks}"),
        (server_props(stores, **{"ssl.keystore.location": str(stores.jks)}),
         f"ssl.keystore.type is PKCS12 but {stores.jks} is not a PKCS12 file (a JKS store)"),
        ({k: v for k, v in server_props(stores).items() if k != "ssl.keystore.password"},
         f"ssl.keystore.password is not set: the PKCS12 keystore {stores.java_keystore} needs its password"),
        (server_props(stores, **{"ssl.keystore.password": "wrong"}),
         f"ssl.keystore.location: cannot use the PKCS12 keystore {stores.java_keystore} with ssl.keystore.password: "
         f"the password is wrong, or the file is not a PKCS12 store"),
        (server_props(stores, **{"ssl.keystore.location": str(stores.java_truststore), "ssl.keystore.password": "ts-secret"}),
         "it holds no private key with its certificate (is it a truststore?)"),
        (server_props(stores, **{"ssl.keystore.location": "", "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----",
                                 "ssl.keystore.certificate.chain": "x"}),
         "ssl.keystore.type is PKCS12: a key and certificate chain given inline must be PEM"),
    ]
    for props, expected in server:
        message = _error(listener_security, props, LISTENER, "SSL", "server.properties")
        assert message.startswith("server.properties: ") and expected in message, (props, message)
    client = [
        ({k: v for k, v in client_props(stores).items() if k != "ssl.truststore.password"},
         f"ssl.truststore.location: cannot use the PKCS12 truststore {stores.java_truststore}: it cannot be read "
         f"without its password (its certificates are encrypted)"),
        (client_props(stores, **{"ssl.truststore.password": "wrong"}),
         "with ssl.truststore.password: the password is wrong, or the file is not a PKCS12 store"),
    ]
    unnamed = write_pkcs12(stores.java_keystore.parent / "unnamed-ca.p12", None, "ts-secret", cas=(stores.ca,))
    client += [
        (client_props(stores, **{"ssl.truststore.location": str(stores.java_keystore),
                                 "ssl.truststore.password": "ks-secret"}),
         "it is a keystore (it holds a private key): a truststore holds only certificate entries"),
        # certificates without an alias, as openssl writes them: the JDK trusts none of them
        (client_props(stores, **{"ssl.truststore.location": str(unnamed)}),
         "it holds no trusted certificate entry (keytool -importcert makes one)"),
    ]
    for props, expected in client:
        message = _error(client_security, props, "admin.properties")
        assert message.startswith("admin.properties: ") and expected in message, (props, message)
