"""PKCS12 key and trust stores, read as the JVM reads them for Kafka, turned into what OpenSSL loads.

Why: operators' client configs name the stores their Kafka tools already use, and those are PKCS12
far more often than PEM (Strimzi hands out ``ca.p12`` and ``user.p12``; ``keytool`` writes PKCS12 by
default since JDK 9). Python's ssl loads only PEM files, so a PKCS12 store is read with
``cryptography`` and handed over as PEM in a private temporary directory that is gone once loaded;
the key in it stays encrypted, under a one-time password.

JKS, Kafka's default store type, has no reader in a library we use. It is recognised by its magic
number and refused in one line that says how to convert it. A store typed JKS that is in fact a
PKCS12 file is read as PKCS12, as the JDK does (``keystore.type.compat``, on since JDK 9).
"""

from __future__ import annotations

import secrets
import ssl
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

JKS_MAGIC = b"\xfe\xed\xfe\xed"


def is_jks(data: bytes) -> bool:
    return data.startswith(JKS_MAGIC)


def looks_like_pkcs12(data: bytes) -> bool:
    """DER, as a PKCS12 file is (an ASN.1 SEQUENCE); PEM text and JKS are not."""
    return data[:1] == b"\x30"


def _load(data: bytes, password: str | None) -> pkcs12.PKCS12KeyAndCertificates:
    """The store's contents, or ValueError: a wrong password and a file that is not PKCS12 look the
    same to the reader (the MAC over the contents does not verify)."""
    return pkcs12.load_pkcs12(data, password.encode() if password else None)


def keystore_entry(data: bytes, passwords: list[str]) -> tuple[object, list[x509.Certificate]]:
    """The private key and its certificate chain (leaf first) of a PKCS12 keystore, trying each of
    ``passwords`` (the JVM keeps one password for the store and its key, but a config may give the
    key's separately). ValueError naming what is wrong."""
    store = None
    for password in passwords:
        try:
            store = _load(data, password)
            break
        except ValueError:
            continue
    if store is None:
        raise ValueError("the password is wrong, or the file is not a PKCS12 store")
    if store.key is None or store.cert is None:
        raise ValueError("it holds no private key with its certificate (is it a truststore?)")
    return store.key, [store.cert.certificate, *(c.certificate for c in store.additional_certs)]


def truststore_certificates(data: bytes, password: str | None) -> list[x509.Certificate]:
    """The trust anchors of a PKCS12 truststore: its certificate entries, the ones keytool writes
    (named by an alias, a friendly name). As with the JDK's PKIX trust manager, a key entry's
    certificate and chain are no anchors, nor are certificates without an alias (openssl's
    ``pkcs12 -export -nokeys``, unless given ``-jdktrust``: the JDK lists no entry in them).
    ValueError naming what is wrong."""
    try:
        store = _load(data, password)
    except ValueError:
        raise ValueError("the password is wrong, or the file is not a PKCS12 store" if password else
                         "it cannot be read without its password (its certificates are encrypted)") from None
    if store.key is not None:
        raise ValueError("it is a keystore (it holds a private key): a truststore holds only certificate entries")
    certs = [c.certificate for c in store.additional_certs if c.friendly_name]
    if not certs:
        raise ValueError("it holds no trusted certificate entry (keytool -importcert makes one)")
    return certs


def load_keystore(context: ssl.SSLContext, key: object, chain: list[x509.Certificate]) -> None:
    """``key`` and ``chain`` into ``context``, through a PEM file in a private (0700) temporary
    directory, the key encrypted under a password made for this load alone."""
    password = secrets.token_urlsafe(24)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,  # type: ignore[attr-defined]
                            serialization.BestAvailableEncryption(password.encode()))
    pem += b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)
    with tempfile.TemporaryDirectory(prefix="metashell-keystore-") as directory:
        path = Path(directory) / "keystore.pem"
        path.write_bytes(pem)
        context.load_cert_chain(str(path), password=password)


__all__ = ["is_jks", "keystore_entry", "load_keystore", "looks_like_pkcs12", "truststore_certificates"]
