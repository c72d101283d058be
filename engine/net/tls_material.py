"""A certificate authority of our own, and the PEM stores Kafka's ``ssl.keystore.type=PEM`` reads.

``kraftd cluster up --security`` makes one for its local cluster (a CA, the nodes' certificate,
an operator's), and the test suite makes its certificates with it: no key material is ever
committed or shipped. A ``LocalCA`` issues leaf certificates for 127.0.0.1/localhost that serve
as server and as client certificates; ``write_pem`` lays a leaf out as Kafka's PEM stores read it:
the keystore is the private key (PKCS#8, encrypted when a key password is given, as Kafka requires
with ``ssl.key.password``) followed by the certificate chain; the truststore is the CA certificates.
Keys are P-256: quick to make, and every TLS 1.2/1.3 stack (the JDK's, OpenSSL's) takes them.
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

from engine.common.file_io import write_private

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
    """A certificate, its private key and the CA that issued it."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    issuer: "LocalCA"

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


class LocalCA:
    """A self-signed root that issues leaves; two instances do not trust each other."""

    def __init__(self, name: str, organization: str, valid_days: int = 30):
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.valid_days = valid_days
        subject = _name(name, organization)
        now = _now()
        self.cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(days=1))
                     .not_valid_after(now + datetime.timedelta(days=valid_days))
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
        """A leaf for ``hosts`` usable as a server and as a client certificate, valid as long as
        the CA; ``expired`` makes one whose validity ended yesterday."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        if expired:
            start, end = now - datetime.timedelta(days=10), now - datetime.timedelta(days=1)
        else:
            start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=self.valid_days)
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
              trust: tuple[LocalCA, ...] | None = None) -> PemFiles:
    """Write ``name``.keystore.pem (owner-only) and ``name``.truststore.pem under ``directory``;
    the truststore holds ``trust`` (default: the leaf's own CA)."""
    directory.mkdir(parents=True, exist_ok=True)
    keystore = directory / f"{name}.keystore.pem"
    truststore = directory / f"{name}.truststore.pem"
    write_private(keystore, leaf.key_pem(key_password) + leaf.cert_pem())
    truststore.write_bytes(b"".join(ca.cert_pem() for ca in (trust or (leaf.issuer,))))
    return PemFiles(keystore, truststore, key_password)


__all__ = ["HOSTS", "Leaf", "LocalCA", "PemFiles", "write_pem"]
