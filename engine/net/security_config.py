"""Building a listener's or a client's security from Kafka's config names.

What Kafka reads, and so what we read:

* ``listener.security.protocol.map`` names each listener's protocol (default: a listener named after a
  protocol uses it). ``listener.name.<listener lowercase>.<key>`` wins over ``<key>`` for a listener's
  ssl.* and sasl.* settings, as Kafka's ``valuesWithPrefixOverride`` does.
* SASL: ``sasl.enabled.mechanisms`` (Kafka's default is GSSAPI, which we do not serve: Kerberos and
  OAUTHBEARER need infrastructure this project does not have, so naming them is one ConfigError saying
  which mechanisms we do). A listener's PLAIN users are the ``user_<name>="<password>"`` options of its
  ``listener.name.<l>.plain.sasl.jaas.config``; SCRAM credentials come from the metadata (the caller
  passes a lookup), so a SCRAM listener needs no JAAS entry here.
* A client (a tool's ``--command-config``) reads ``security.protocol``, ``sasl.mechanism`` and the
  username/password options of ``sasl.jaas.config``. A node's channel to the controller quorum reads what
  Kafka's RaftManager and NodeToControllerChannelManager read: the first ``controller.listener.names``
  entry, its protocol from the map, ``sasl.mechanism.controller.protocol``, and the JAAS of
  ``listener.name.<l>.<mech>.sasl.jaas.config`` (Kafka builds that channel with JaasContext.Type.SERVER,
  so the login's username/password come from the listener's server-side JAAS entry).
* Where no ``sasl.jaas.config`` is set, the JAAS file of ``KAFKA_OPTS`` (-Djava.security.auth.login.config)
  is read as Kafka reads it: ``KafkaClient`` for a tool, ``<listener>.KafkaServer`` then ``KafkaServer``
  for a listener and a node's channel (engine.net.jaas_config).
* TLS stores are PEM (``ssl.keystore.type=PEM``: private key then certificate chain;
  ``ssl.truststore.type=PEM``: CA certificates; or inline, as Kafka allows, in ``ssl.keystore.key`` with
  ``ssl.keystore.certificate.chain`` and ``ssl.truststore.certificates``) or PKCS12 (with
  ``ssl.keystore.password`` / ``ssl.truststore.password``, engine.net.pkcs12_stores). Kafka's default
  type is JKS, which we cannot read: a JKS file is one ConfigError saying how to convert it, while a
  PKCS12 file under the JKS type is read as PKCS12, as the JDK does. The files are checked with ``cryptography`` before OpenSSL sees them, so
  a wrong ``ssl.key.password`` or a file that is not PEM is a line naming the key, not OpenSSL's
  "[SSL] PEM lib".
* ``ssl.client.auth`` (required / requested / none) is the server context's verify mode. On a SASL_SSL
  listener Kafka honours it only when listener-prefixed (the SASL login is the identity there), and so do we.
* ``ssl.principal.mapping.rules`` maps an SSL listener's client certificate subject to the principal's
  name (engine.net.ssl_principal_mapper); on SASL_SSL the SASL login is the principal, as in Kafka.
* ``ssl.endpoint.identification.algorithm``: ``https`` (Kafka's default) checks the server's host name,
  empty does not. A client always verifies the server's chain (against the system CAs when no truststore
  is given, as the JVM's default trust store would).

* ``ssl.enabled.protocols`` (Kafka's default ``TLSv1.2,TLSv1.3``) bounds the TLS versions a listener
  accepts and a client offers. TLSv1 and TLSv1.1 may be listed, as old configs do, but are not enabled:
  JDK 17 disables them too. On a client, ``ssl.protocol=TLSv1.2`` keeps it off TLS 1.3 even where the
  list allows it, as Kafka documents. ``ssl.cipher.suites`` is left to OpenSSL's defaults: its names are
  the JVM's, and Python's ssl cannot choose TLS 1.3 suites.
"""

from __future__ import annotations

import ssl
import tempfile
from pathlib import Path
from typing import Mapping

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from engine.common.errors import ConfigError
from engine.common.server_config import parse_list, security_protocol_map
from engine.net import pkcs12_stores
from engine.net.jaas_config import (
    CLIENT_SECTION, JAAS_FILE_PROPERTY, SERVER_SECTION, JaasEntry, parse_jaas_config, static_jaas_section,
)
from engine.net.ssl_principal_mapper import SslPrincipalMapper
from engine.net.channel_security import (
    SASL_MECHANISMS, ClientSecurity, ListenerSecurity, ScramCredentialLookup, SecurityProtocol,
)

_LOGIN_MODULES = {  # what each mechanism's JAAS entry names in Kafka
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
_CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
_UNSUPPORTED_MECHANISMS = ("GSSAPI", "OAUTHBEARER")
_TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
# accepted in a list, never enabled (JDK 17's java.security disables them all)
_DISABLED_TLS_VERSIONS = ("SSLv2Hello", "SSLv3", "TLSv1", "TLSv1.1")
# ssl.protocol values a JVM's SSLContext takes ("SSL" is the JDK's alias of "TLS")
_SSL_PROTOCOLS = ("TLS", "SSL", "TLSv1.2", "TLSv1.3")


# ---------------------------------------------------------------- keys with a listener prefix

class _Settings:
    """A node's or a tool's properties seen through an optional listener prefix: ``get`` answers the
    value and the key it came from (the prefixed one wins), so errors name the key actually set."""

    def __init__(self, props: Mapping[str, str], where: str | None, listener_name: str | None = None):
        self.props = props
        self.where = where
        self.prefix = f"listener.name.{listener_name.lower()}." if listener_name else ""

    def get(self, key: str, default: str = "") -> tuple[str, str]:
        if self.prefix and self.prefix + key in self.props:
            return self.props[self.prefix + key].strip(), self.prefix + key
        return self.props.get(key, default).strip(), key

    def error(self, message: str) -> ConfigError:
        return ConfigError(message, path=self.where)


def _protocol(text: str, key: str, where: str | None) -> SecurityProtocol:
    try:
        return SecurityProtocol[text.strip().upper()]
    except KeyError:
        raise ConfigError(f"{key} must be one of {', '.join(p.name for p in SecurityProtocol)}, got {text!r}",
                          path=where) from None


def _listener_protocol(props: Mapping[str, str], listener_name: str, where: str | None) -> SecurityProtocol:
    """The listener's protocol from the effective listener.security.protocol.map (engine.common.server_config)."""
    protocol = security_protocol_map(props, where).get(listener_name.strip().upper())
    if protocol is None:
        raise ConfigError(f"listener {listener_name} has no entry in listener.security.protocol.map", path=where)
    return SecurityProtocol(protocol)


def _mechanism(text: str, key: str, where: str | None) -> str:
    mechanism = text.strip().upper()
    if mechanism in _UNSUPPORTED_MECHANISMS:
        default = " (Kafka's default)" if mechanism == "GSSAPI" else ""
        raise ConfigError(f"{key} is {mechanism}{default}, which is not supported: only "
                          f"{', '.join(SASL_MECHANISMS)} are", path=where)
    if mechanism not in SASL_MECHANISMS:
        raise ConfigError(f"{key} must be one of {', '.join(SASL_MECHANISMS)}, got {text.strip()!r}", path=where)
    return mechanism


# ---------------------------------------------------------------- stores: PEM and PKCS12

def _store_format(s: _Settings, type_key: str, what: str, data: bytes | None, location: str) -> str:
    """PEM or PKCS12: how to read the store ``data`` (None: inline PEM text, which Kafka allows only
    with the PEM type). A store typed JKS that is a PKCS12 file is one, as the JDK reads it."""
    store_type, key = s.get(type_key, "JKS")
    kind = store_type.upper()
    default = " (Kafka's default)" if key == type_key and type_key not in s.props else ""
    if kind == "PKCS12" and data is not None and not pkcs12_stores.looks_like_pkcs12(data):
        found = "a JKS store" if pkcs12_stores.is_jks(data) else "PEM text" if b"-----BEGIN" in data else "not DER"
        raise s.error(f"{key} is PKCS12 but {location} is not a PKCS12 file ({found})")
    if kind == "PEM" or (kind == "PKCS12" and data is not None):
        return kind
    if kind == "JKS" and data is not None:
        if pkcs12_stores.looks_like_pkcs12(data):
            return "PKCS12"
        if pkcs12_stores.is_jks(data):
            raise s.error(f"{key} is JKS{default} and {location} is a JKS store, which we cannot read: convert it "
                          f"(keytool -importkeystore -srckeystore {location} -destkeystore STORE.p12 "
                          f"-deststoretype PKCS12) and set {key}=PKCS12, or use PEM")
    if data is None:
        raise s.error(f"{key} is {store_type or 'empty'}{default}: a {what} given inline must be PEM "
                      f"(set {key}=PEM)")
    raise s.error(f"{key} is {store_type or 'empty'}{default}: the store types we read are PKCS12 and PEM "
                  f"(set {key}=PKCS12 for a PKCS12 file, or {key}=PEM and give the {what} as PEM)")


def _read_store(s: _Settings, location_key: str) -> tuple[Path, bytes]:
    location, key = s.get(location_key)
    path = Path(location)
    try:
        return path, path.read_bytes()
    except OSError as err:
        raise s.error(f"{key}: cannot read {location}: {err.strerror or err}") from None


def _certificates(data: bytes, key: str, s: _Settings) -> list[x509.Certificate]:
    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError as err:
        raise s.error(f"{key}: not PEM certificates: {err}") from None
    return certs


def _has_keystore(s: _Settings) -> bool:
    return bool(s.get("ssl.keystore.location")[0] or s.get("ssl.keystore.key")[0])


def _load_keystore(context: ssl.SSLContext, s: _Settings) -> None:
    """The key and certificate chain into ``context``: ssl.keystore.location (a PEM file: the private
    key, then the chain) or, as Kafka also allows, the PEM text itself in ssl.keystore.key and
    ssl.keystore.certificate.chain (OpenSSL loads only files, so that goes through a private temporary
    file that is gone once loaded)."""
    location, location_key = s.get("ssl.keystore.location")
    inline, inline_key = s.get("ssl.keystore.key")
    if not location and not inline:
        return
    path, data = _read_store(s, "ssl.keystore.location") if location else (None, None)
    if _store_format(s, "ssl.keystore.type", "key and certificate chain", data, location) == "PKCS12":
        _load_pkcs12_keystore(context, s, data, location, location_key)
        return
    if s.get("ssl.keystore.password")[0]:
        raise s.error(f"{s.get('ssl.keystore.password')[1]} cannot be used with a PEM keystore "
                      f"(as in Kafka, give only ssl.key.password)")
    if location:
        _check_keystore(s, data, location, location_key)
        _load_cert_chain(context, s, path, location, location_key)
        return
    chain, chain_key = s.get("ssl.keystore.certificate.chain")
    if not chain:
        raise s.error(f"{inline_key} is set but {chain_key} is not (an inline key needs its certificate chain)")
    data = f"{inline}\n{chain}\n".encode()
    _check_keystore(s, data, "the value", inline_key)
    with tempfile.TemporaryDirectory(prefix="metashell-keystore-") as directory:  # mode 0700
        path = Path(directory) / "keystore.pem"
        path.write_bytes(data)
        _load_cert_chain(context, s, path, "the value", inline_key)


def _load_pkcs12_keystore(context: ssl.SSLContext, s: _Settings, data: bytes, location: str,
                          location_key: str) -> None:
    """A PKCS12 keystore: opened with ssl.keystore.password (or ssl.key.password, where the key's
    differs), its key entry handed to OpenSSL."""
    store_password, store_key = s.get("ssl.keystore.password")
    key_password = s.get("ssl.key.password")[0]
    passwords = [p for p in (store_password, key_password) if p]
    if not passwords:
        raise s.error(f"{store_key} is not set: the PKCS12 keystore {location} needs its password")
    try:
        key, chain = pkcs12_stores.keystore_entry(data, passwords)
        pkcs12_stores.load_keystore(context, key, chain)
    except ValueError as err:
        raise s.error(f"{location_key}: cannot use the PKCS12 keystore {location} with {store_key}: {err}") from None
    except (ssl.SSLError, OSError) as err:
        raise s.error(f"{location_key}: {location} is not a usable key and certificate chain: "
                      f"{getattr(err, 'reason', None) or err}") from None


def _check_keystore(s: _Settings, data: bytes, location: str, location_key: str) -> None:
    """The key reads with ssl.key.password and certificates follow it, or a line saying what is wrong."""
    password, password_key = s.get("ssl.key.password")
    if b"PRIVATE KEY-----" not in data:
        raise s.error(f"{location_key}: {location} holds no PEM private key")
    try:
        serialization.load_pem_private_key(data, password.encode() if password else None)
    except TypeError:  # encrypted without a password, or a password for a key that is not encrypted
        raise s.error(f"{location_key}: the private key in {location} is encrypted but {password_key} is not set"
                      if not password else
                      f"{password_key} is set but the private key in {location} is not encrypted") from None
    except ValueError as err:
        wrong = bool(password) and ("password" in str(err).lower() or "decrypt" in str(err).lower())
        raise s.error(f"{password_key} is wrong for the private key in {location}" if wrong else
                      f"{location_key}: cannot read the private key in {location}: {err}") from None
    if b"CERTIFICATE-----" not in data:
        raise s.error(f"{location_key}: {location} holds no PEM certificate after its private key")
    _certificates(data, location_key, s)


def _load_cert_chain(context: ssl.SSLContext, s: _Settings, path: Path, location: str, location_key: str) -> None:
    password = s.get("ssl.key.password")[0]
    try:
        context.load_cert_chain(str(path), password=password or None)
    except (ssl.SSLError, OSError) as err:
        raise s.error(f"{location_key}: {location} is not a usable key and certificate chain: "
                      f"{getattr(err, 'reason', None) or err}") from None


def _load_truststore(context: ssl.SSLContext, s: _Settings) -> bool:
    """ssl.truststore.location (or ssl.truststore.certificates) into ``context``; False if neither is set."""
    location, location_key = s.get("ssl.truststore.location")
    inline, inline_key = s.get("ssl.truststore.certificates")
    if not location and not inline:
        return False
    data = _read_store(s, "ssl.truststore.location")[1] if location else None
    store_format = _store_format(s, "ssl.truststore.type", "CA certificates", data, location)
    if location:
        key = location_key
    else:
        data, key = inline.encode(), inline_key
    if store_format == "PKCS12":
        password, password_key = s.get("ssl.truststore.password")
        try:
            certs = pkcs12_stores.truststore_certificates(data, password or None)
        except ValueError as err:
            raise s.error(f"{key}: cannot use the PKCS12 truststore {location}"
                          f"{' with ' + password_key if password else ''}: {err}") from None
    else:
        certs = _certificates(data, key, s)
    if not certs:
        raise s.error(f"{key}: no PEM certificate in {location or 'the value'}")
    try:
        context.load_verify_locations(cadata="".join(
            c.public_bytes(serialization.Encoding.PEM).decode() for c in certs))
    except ssl.SSLError as err:
        raise s.error(f"{key}: cannot use the certificates in {location or 'the value'}: "
                      f"{err.reason or err}") from None
    return True


def _set_tls_versions(context: ssl.SSLContext, s: _Settings, *, client: bool) -> None:
    """The TLS versions ``context`` may negotiate, from ssl.enabled.protocols (and, for a client,
    ssl.protocol), as one contiguous range: with only TLS 1.2 and 1.3 left to choose from, every list
    is one."""
    text, key = s.get("ssl.enabled.protocols", "TLSv1.2,TLSv1.3")
    names = parse_list(text)
    unknown = [n for n in names if n not in _TLS_VERSIONS and n not in _DISABLED_TLS_VERSIONS]
    if unknown:
        raise s.error(f"{key} names {', '.join(unknown)}, which is not a TLS version "
                      f"(use {', '.join(_TLS_VERSIONS)})")
    versions = sorted({_TLS_VERSIONS[n] for n in names if n in _TLS_VERSIONS})
    if not versions:
        raise s.error(f"{key} is {text!r}: it enables no TLS version we can use (SSLv3, TLSv1 and TLSv1.1 are "
                      f"disabled, as in JDK 17; use {', '.join(_TLS_VERSIONS)})")
    highest = versions[-1]
    if client:
        protocol, protocol_key = s.get("ssl.protocol", "TLSv1.3")
        if protocol not in _SSL_PROTOCOLS:
            raise s.error(f"{protocol_key} must be one of {', '.join(_SSL_PROTOCOLS)}, got {protocol!r}")
        if protocol == "TLSv1.2":
            highest = min(highest, ssl.TLSVersion.TLSv1_2)
            if highest < versions[0]:
                raise s.error(f"{protocol_key} is TLSv1.2 but {key} is {text!r}: no TLS version is left")
    context.minimum_version, context.maximum_version = versions[0], highest


# ---------------------------------------------------------------- server side

def listener_security(props: Mapping[str, str], listener_name: str, protocol: SecurityProtocol | str,
                      where: str | None, *, scram_credentials: ScramCredentialLookup | None = None
                      ) -> ListenerSecurity:
    """The server side of ``listener_name``: its TLS context (for SSL and SASL_SSL), its SASL mechanisms
    and PLAIN users (for SASL_*); ``scram_credentials`` answers SCRAM lookups. ConfigError (one line
    naming the key and ``where``) for anything we cannot serve."""
    if not isinstance(protocol, SecurityProtocol):
        protocol = _protocol(protocol, "listener.security.protocol.map", where)
    s = _Settings(props, where, listener_name)
    context = None
    if protocol.uses_tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        _set_tls_versions(context, s, client=False)
        if not _has_keystore(s):
            raise s.error(f"listener {listener_name} is {protocol.name} but ssl.keystore.location is not set "
                          f"(nor {s.prefix}ssl.keystore.location): a TLS listener needs its key and certificate")
        _load_keystore(context, s)
        auth_text, auth_key = s.get("ssl.client.auth", "none")
        if protocol is SecurityProtocol.SASL_SSL and auth_key == "ssl.client.auth":
            auth_text = "none"  # Kafka: on SASL_SSL only the listener-prefixed setting counts
        verify = _CLIENT_AUTH.get(auth_text.lower())
        if verify is None:
            raise s.error(f"{auth_key} must be one of {', '.join(_CLIENT_AUTH)}, got {auth_text!r}")
        context.verify_mode = verify
        if verify != ssl.CERT_NONE and not _load_truststore(context, s):
            context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    principal_name = None
    if protocol is SecurityProtocol.SSL:  # on SASL_SSL the principal is the SASL login, as in Kafka
        rules, rules_key = s.get("ssl.principal.mapping.rules", "DEFAULT")
        try:
            mapper = SslPrincipalMapper.from_rules(rules)
        except ValueError as err:
            raise s.error(f"{rules_key}: {err}") from None
        principal_name = None if mapper.is_default else mapper.name
    mechanisms: tuple[str, ...] = ()
    plain_users: dict[str, str] = {}
    if protocol.uses_sasl:
        text, key = s.get("sasl.enabled.mechanisms", "GSSAPI")
        names = parse_list(text)
        if not names:
            raise s.error(f"{key} is empty: listener {listener_name} is {protocol.name} and needs a mechanism")
        mechanisms = tuple(dict.fromkeys(_mechanism(m, key, where) for m in names))
        if "PLAIN" in mechanisms:
            entry, _ = _jaas_entry(props, f"listener.name.{listener_name.lower()}.plain.sasl.jaas.config", "PLAIN",
                                   _server_sections(listener_name), where,
                                   f"PLAIN on listener {listener_name} needs its users "
                                   f"(user_<name>=\"<password>\" options)")
            plain_users = {name[5:]: value for name, value in entry.options.items()
                           if name.startswith("user_") and len(name) > 5}
    return ListenerSecurity(protocol=protocol, ssl_context=context, sasl_mechanisms=mechanisms,
                            plain_users=plain_users, scram_credentials=scram_credentials,
                            principal_name=principal_name)


def _check_login_module(entry: JaasEntry, mechanism: str, key: str, where: str | None) -> None:
    if entry.login_module not in set(_LOGIN_MODULES.values()):
        raise ConfigError(f"{key} names login module {entry.login_module}, which is not supported: use "
                          f"{_LOGIN_MODULES[mechanism]} for {mechanism}", path=where)


def _server_sections(listener_name: str) -> tuple[str, ...]:
    """The JAAS file sections a listener (and a node's channel through it) reads, Kafka's order."""
    return (f"{listener_name.lower()}.{SERVER_SECTION}", SERVER_SECTION)


def _jaas_entry(props: Mapping[str, str], key: str, mechanism: str, sections: tuple[str, ...], where: str | None,
                need: str) -> tuple[JaasEntry, str]:
    """The login for ``mechanism`` and where it was found: the ``key`` property, else (as Kafka's
    JaasContext) the first of ``sections`` in the JAAS file named by KAFKA_OPTS, its login module
    for the mechanism."""
    text = props.get(key, "").strip()
    if text:
        entry = parse_jaas_config(text, where, key=key)
        _check_login_module(entry, mechanism, key, where)
        return entry, key
    static = static_jaas_section(sections)
    if static is None:
        raise ConfigError(f"{key} is not set (nor a {' or '.join(sections)} section in a JAAS file named by "
                          f"-D{JAAS_FILE_PROPERTY} in KAFKA_OPTS): {need}", path=where)
    entries, source = static
    module = _LOGIN_MODULES[mechanism]
    entry = next((e for e in entries if e.login_module == module), None)
    if entry is None:
        raise ConfigError(f"{source} has no {module} login module: {need}")
    return entry, source


# ---------------------------------------------------------------- client side

def client_security(props: Mapping[str, str], where: str | None, *, listener_name: str | None = None,
                    mechanism_key: str = "sasl.mechanism") -> ClientSecurity:
    """How a client reaches a listener. Without ``listener_name``: a tool's --command-config
    (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.*). With it: a node's channel to that
    listener, as Kafka builds it (protocol from listener.security.protocol.map, mechanism from
    ``mechanism_key``, JAAS from listener.name.<l>.<mech>.sasl.jaas.config, listener-prefixed ssl.*)."""
    s = _Settings(props, where, listener_name)
    if listener_name:
        protocol = _listener_protocol(props, listener_name, where)
    else:
        protocol = _protocol(props.get("security.protocol", "PLAINTEXT"), "security.protocol", where)
    context = None
    if protocol.uses_tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        _set_tls_versions(context, s, client=True)
        algorithm, algorithm_key = s.get("ssl.endpoint.identification.algorithm", "https")
        if algorithm.lower() not in ("https", ""):
            raise s.error(f"{algorithm_key} must be https or empty, got {algorithm!r}")
        context.check_hostname = algorithm.lower() == "https"
        context.verify_mode = ssl.CERT_REQUIRED  # the chain is always checked, as Kafka's clients do
        if not _load_truststore(context, s):
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        _load_keystore(context, s)  # a client certificate, for listeners that ask for one (mTLS)
    if not protocol.uses_sasl:
        return ClientSecurity(protocol=protocol, ssl_context=context)
    mechanism = _mechanism(props.get(mechanism_key, "GSSAPI"), mechanism_key, where)
    jaas_key = (f"listener.name.{listener_name.lower()}.{mechanism.lower()}.sasl.jaas.config" if listener_name
                else "sasl.jaas.config")
    sections = _server_sections(listener_name) if listener_name else (CLIENT_SECTION,)
    entry, source = _jaas_entry(props, jaas_key, mechanism, sections, where,
                                f"{protocol.name} with {mechanism} needs username and password options")
    for option in ("username", "password"):
        if option not in entry.options:
            raise ConfigError(f"{source} has no {option} option", path=where)
    return ClientSecurity(protocol=protocol, ssl_context=context, sasl_mechanism=mechanism,
                          username=entry.options["username"], password=entry.options["password"])


def controller_client_security(props: Mapping[str, str], where: str | None) -> ClientSecurity:
    """A broker's or controller's channel to the controller quorum: the first controller.listener.names
    entry with sasl.mechanism.controller.protocol, as Kafka's RaftManager and
    NodeToControllerChannelManager pick it."""
    names = parse_list(props.get("controller.listener.names"))
    if not names:
        raise ConfigError("controller.listener.names is not set", path=where)
    return client_security(props, where, listener_name=names[0], mechanism_key="sasl.mechanism.controller.protocol")


__all__ = ["JaasEntry", "client_security", "controller_client_security", "listener_security", "parse_jaas_config"]
