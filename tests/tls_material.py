"""Certificates for the security tests, made at test time (no key material is committed).

A ``TestCA`` issues leaf certificates for 127.0.0.1/localhost; ``write_pem`` lays a leaf out as the
files Kafka's PEM stores read (``ssl.keystore.type=PEM``): the keystore is the private key (PKCS#8,
encrypted when a key password is given, as Kafka requires with ``ssl.key.password``) followed by the
certificate chain; the truststore is the CA certificates.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

HOSTS = ("localhost", "127.0.0.1")


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        parts.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(parts)


@dataclass(frozen=True)
class Leaf:
    """A certificate, its private key and the chain up to (not including) the root."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    issuer: "TestCA"

    @property
    def subject(self) -> str:
        """The subject as RFC 4514/2253 text, which is how Kafka names an mTLS principal (User:<this>)."""
        return self.cert.subject.rfc4514_string()

    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def key_pem(self, password: str | None = None) -> bytes:
        encryption = (serialization.BestAvailableEncryption(password.encode()) if password
                      else serialization.NoEncryption())
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)


class TestCA:
    """A self-signed root that issues leaves; two instances do not trust each other."""

    __test__ = False  # not a pytest test class

    def __init__(self, name: str = "metashell test CA"):
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = _name(name, "metashell tests")
        now = _now()
        self.cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(days=1))
                     .not_valid_after(now + datetime.timedelta(days=30))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                                  key_encipherment=False, data_encipherment=False,
                                                  key_agreement=False, key_cert_sign=True, crl_sign=True,
                                                  encipher_only=False, decipher_only=False), critical=True)
                     .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
                     .sign(self.key, hashes.SHA256()))

    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, common_name: str, *, hosts: tuple[str, ...] = HOSTS, organization: str | None = None,
              expired: bool = False) -> Leaf:
        """A leaf for ``hosts`` usable as a server and as a client certificate; ``expired`` makes
        one whose validity ended yesterday."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        if expired:
            start, end = now - datetime.timedelta(days=10), now - datetime.timedelta(days=1)
        else:
            start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=30)
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        builder = (x509.CertificateBuilder().subject_name(_name(common_name, organization))
                   .issuer_name(self.cert.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                         ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                                  critical=False))
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return Leaf(builder.sign(self.key, hashes.SHA256()), key, self)


@dataclass(frozen=True)
class PemFiles:
    """Where ``write_pem`` put a leaf's stores."""

    keystore: Path  # key then certificate chain (ssl.keystore.location with ssl.keystore.type=PEM)
    truststore: Path  # the CA certificates (ssl.truststore.location with ssl.truststore.type=PEM)
    key_password: str | None  # ssl.key.password, when the key is encrypted


def write_pem(directory: Path, name: str, leaf: Leaf, *, key_password: str | None = None,
              trust: tuple[TestCA, ...] | None = None) -> PemFiles:
    """Write ``name``.keystore.pem and ``name``.truststore.pem under ``directory``; the truststore
    holds ``trust`` (default: the leaf's own CA)."""
    directory.mkdir(parents=True, exist_ok=True)
    keystore = directory / f"{name}.keystore.pem"
    truststore = directory / f"{name}.truststore.pem"
    keystore.write_bytes(leaf.key_pem(key_password) + leaf.cert_pem())
    truststore.write_bytes(b"".join(ca.cert_pem() for ca in (trust or (leaf.issuer,))))
    return PemFiles(keystore, truststore, key_password)


def write_truststore(path: Path, *cas: TestCA) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(ca.cert_pem() for ca in cas))
    return path


def write_pkcs12(path: Path, leaf: Leaf | None, password: str | None, *, cas: tuple[TestCA, ...] = ()) -> Path:
    """A PKCS12 store made by ``cryptography``: ``leaf``'s key and certificate (a keystore) and/or
    ``cas`` as certificate entries (a truststore), encrypted under ``password``."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    encryption = (serialization.BestAvailableEncryption(password.encode()) if password
                  else serialization.NoEncryption())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pkcs12.serialize_key_and_certificates(
        b"leaf" if leaf else None, leaf.key if leaf else None, leaf.cert if leaf else None,
        [ca.cert for ca in cas] or None, encryption))
    return path


def keytool(*args: str) -> None:
    """The JDK's keytool (the one next to ``java``), for stores made as a JVM makes them."""
    import os
    import shutil
    import subprocess

    java_home = os.environ.get("JAVA_HOME")
    tool = (str(Path(java_home) / "bin" / "keytool") if java_home and (Path(java_home) / "bin" / "keytool").exists()
            else shutil.which("keytool"))
    assert tool, "keytool (the JDK's) is not on PATH: the PKCS12/JKS tests need it, as the Kafka tests need java"
    subprocess.run([tool, *args], check=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=120)


def principals_seen(security, client_securities: list) -> list:
    """Serve ``security`` (a ListenerSecurity) on 127.0.0.1 and connect each ClientSecurity in turn:
    the principal the listener saw (a DescribeCluster answer carrying it as its cluster id), or
    the NetError the client got. Returns once every connection is closed, so refusals are logged."""
    import asyncio

    from engine.net.errors import NetError
    from engine.net.kafka_client import KafkaClient
    from engine.net.kafka_protocol import RAFT_APIS, request_class, response_class
    from engine.net.kafka_server import KafkaServer
    from engine.records.kio_codec import ErrorCode

    async def who_am_i(ctx, request):
        return response_class(60, 0)(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, error_message=None,
                                     cluster_id=str(ctx.principal), controller_id=1, brokers=(),
                                     cluster_authorized_operations=0)

    async def main() -> list:
        out: list = []
        async with KafkaServer(who_am_i, listener_name="SECURE", security=security, apis={**RAFT_APIS}) as server:
            for client_security in client_securities:
                async with KafkaClient(client_id="t", request_timeout_ms=5000, security=client_security) as client:
                    try:
                        answer = await client.send(("127.0.0.1", server.address[1]),
                                                   request_class(60, 0)(include_cluster_authorized_operations=False))
                        out.append(answer.cluster_id)
                    except NetError as err:
                        out.append(err)
            while server.connection_count:
                await asyncio.sleep(0.01)
        return out
    return asyncio.run(asyncio.wait_for(main(), 30))
