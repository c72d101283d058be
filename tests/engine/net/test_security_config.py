"""Building listener and client security from Kafka's config names (engine.net.security_config)."""

from __future__ import annotations

import ssl

import pytest

from engine.common.errors import ConfigError
from engine.net.channel_security import PLAINTEXT_CLIENT, SecurityProtocol
from engine.net.security_config import (
    client_security, controller_client_security, listener_security, parse_jaas_config,
)
from engine.server.controller_node import broker_client
from tls_material import TestCA, write_pem

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
WHERE = "server.properties"


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """One CA, a server leaf with an encrypted key and a client leaf with a plain key (read-only)."""
    directory = tmp_path_factory.mktemp("pem")
    ca = TestCA()
    server = write_pem(directory, "server", ca.issue("server"), key_password="key-secret")
    client = write_pem(directory, "client", ca.issue("client"))
    return server, client


def tls_props(files, prefix: str = "") -> dict[str, str]:
    props = {f"{prefix}ssl.keystore.location": str(files.keystore), f"{prefix}ssl.keystore.type": "PEM",
             f"{prefix}ssl.truststore.location": str(files.truststore), f"{prefix}ssl.truststore.type": "PEM"}
    if files.key_password:
        props[f"{prefix}ssl.key.password"] = files.key_password
    return props


def config_error(fn, *args, **kwargs) -> str:
    with pytest.raises(ConfigError) as info:
        fn(*args, **kwargs)
    text = str(info.value)
    assert "\n" not in text
    return text


# ---------------------------------------------------------------- JAAS

def test_jaas_plain_entry_with_users():
    entry = parse_jaas_config(f'{PLAIN_MODULE} required username="admin" password="a b;c" user_admin="a b;c" '
                              f'user_alice=\'alice-secret\';', WHERE)
    assert entry.login_module == PLAIN_MODULE and entry.control_flag == "required"
    assert entry.options == {"username": "admin", "password": "a b;c", "user_admin": "a b;c",
                             "user_alice": "alice-secret"}


def test_jaas_comments_escapes_and_flag_case():
    entry = parse_jaas_config(f'/* c */ {SCRAM_MODULE} REQUIRED // note\n username="x\\"y" password=pw;', WHERE)
    assert entry == (SCRAM_MODULE, "required", {"username": 'x"y', "password": "pw"})


@pytest.mark.parametrize("text, reason", [
    ("", "no login module"),
    (f"{PLAIN_MODULE};", "control flag not specified"),
    (f"{PLAIN_MODULE} mandatory;", "invalid login module control flag 'mandatory'"),
    (f'{PLAIN_MODULE} required username="a"', "not terminated by a semicolon"),
    (f"{PLAIN_MODULE} required username=;", "value not specified for option 'username'"),
    (f"{PLAIN_MODULE} required iterations=4096;", "value of option 'iterations' must be quoted"),
    (f'{PLAIN_MODULE} required username="a;', "a quoted value is not terminated (opened at character 75)"),
    (f'{PLAIN_MODULE} required password=hunter2 secret;', "option 2 of PlainLoginModule is not name=value"),
    (f'{PLAIN_MODULE} required username="a" \u2013;', "option 2 of PlainLoginModule: expected an option name"),
    # a no-break space is a word character to Java's tokenizer, as to ours: one word, a bad flag (it hung)
    (f'{PLAIN_MODULE} required\u00a0username="a";', "invalid login module control flag 'required\\xa0username'"),
    (f"{PLAIN_MODULE} required; {SCRAM_MODULE} required;", "2 login modules, should be 1"),
])
def test_jaas_malformed_is_one_line_naming_the_key(text, reason):
    message = config_error(parse_jaas_config, text, WHERE, key="listener.name.sasl.plain.sasl.jaas.config")
    assert message.startswith(f"{WHERE}: bad listener.name.sasl.plain.sasl.jaas.config: ")
    assert reason in message, message
    assert "hunter2" not in message and "secret" not in message


# ---------------------------------------------------------------- listeners

def test_plaintext_listener_has_no_tls_or_sasl():
    security = listener_security({}, "PLAINTEXT", SecurityProtocol.PLAINTEXT, WHERE)
    assert security.ssl_context is None and security.sasl_mechanisms == ()


def test_ssl_listener_client_auth_and_prefix_override(stores):
    server, _ = stores
    props = {**tls_props(server), "ssl.client.auth": "requested", "listener.name.internal.ssl.client.auth": "required"}
    assert listener_security(props, "EXTERNAL", "SSL", WHERE).ssl_context.verify_mode == ssl.CERT_OPTIONAL
    assert listener_security(props, "INTERNAL", "SSL", WHERE).ssl_context.verify_mode == ssl.CERT_REQUIRED
    assert listener_security(tls_props(server), "X", "SSL", WHERE).ssl_context.verify_mode == ssl.CERT_NONE


def test_sasl_ssl_ignores_unprefixed_client_auth(stores):
    server, _ = stores
    props = {**tls_props(server), "ssl.client.auth": "required", "sasl.enabled.mechanisms": "SCRAM-SHA-256"}
    assert listener_security(props, "SASL_SSL", "SASL_SSL", WHERE).ssl_context.verify_mode == ssl.CERT_NONE
    props["listener.name.sasl_ssl.ssl.client.auth"] = "required"
    assert listener_security(props, "SASL_SSL", "SASL_SSL", WHERE).ssl_context.verify_mode == ssl.CERT_REQUIRED


def test_listener_prefixed_stores_win(stores):
    server, client = stores
    props = {**tls_props(client), **tls_props(server, "listener.name.broker.")}
    props["ssl.keystore.location"] = "/nonexistent/unprefixed.pem"
    assert listener_security(props, "BROKER", "SSL", WHERE).ssl_context is not None
    assert "ssl.keystore.location: cannot read /nonexistent/unprefixed.pem" in config_error(
        listener_security, props, "OTHER", "SSL", WHERE)


def test_sasl_listener_mechanisms_and_plain_users():
    jaas = f'{PLAIN_MODULE} required username="admin" password="pw" user_admin="pw" user_alice="secret";'
    props = {"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "plain, SCRAM-SHA-512",
             "sasl.enabled.mechanisms": "SCRAM-SHA-256", "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas}
    security = listener_security(props, "SASL_PLAINTEXT", "SASL_PLAINTEXT", WHERE, scram_credentials=lambda m, u: None)
    assert security.sasl_mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert dict(security.plain_users) == {"admin": "pw", "alice": "secret"}
    assert security.scram_credentials is not None and security.ssl_context is None


@pytest.mark.parametrize("props, expected", [
    ({}, "sasl.enabled.mechanisms is GSSAPI (Kafka's default), which is not supported: only PLAIN, "
         "SCRAM-SHA-256, SCRAM-SHA-512 are"),
    ({"sasl.enabled.mechanisms": "OAUTHBEARER"}, "sasl.enabled.mechanisms is OAUTHBEARER, which is not supported"),
    ({"sasl.enabled.mechanisms": "DIGEST-MD5"}, "sasl.enabled.mechanisms must be one of PLAIN, SCRAM-SHA-256"),
    ({"sasl.enabled.mechanisms": " , "}, "sasl.enabled.mechanisms is empty"),
    ({"sasl.enabled.mechanisms": "PLAIN"}, "listener.name.sasl_plaintext.plain.sasl.jaas.config is not set"),
    ({"sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config":
      "com.sun.security.auth.module.Krb5LoginModule required;"}, "names login module com.sun.security.auth"),
])
def test_sasl_listener_errors(props, expected):
    message = config_error(listener_security, props, "SASL_PLAINTEXT", "SASL_PLAINTEXT", WHERE)
    assert message.startswith(f"{WHERE}: ") and expected in message


def test_tls_store_errors_name_the_key(stores, tmp_path):
    server, client = stores
    not_pem = tmp_path / "garbage.pem"
    not_pem.write_text("-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n")
    key_only = tmp_path / "key-only.pem"
    key_only.write_bytes(client.keystore.read_bytes().split(b"-----BEGIN CERTIFICATE")[0])
    cases = [
        ({"ssl.keystore.type": "PEM"}, "is SSL but ssl.keystore.location is not set"),
        ({**tls_props(server), "ssl.keystore.type": "JKS"},
         "ssl.keystore.type is JKS: the store types we read are PKCS12 and PEM"),
        ({k: v for k, v in tls_props(server).items() if k != "ssl.keystore.type"},
         "ssl.keystore.type is JKS (Kafka's default): the store types we read are PKCS12 and PEM"),
        ({**tls_props(server), "ssl.client.auth": "required", "ssl.truststore.type": "PKCS12"},
         "ssl.truststore.type is PKCS12 but " + str(server.truststore) + " is not a PKCS12 file (PEM text)"),
        ({**tls_props(server), "ssl.keystore.location": "/nonexistent/k.pem"},
         "ssl.keystore.location: cannot read /nonexistent/k.pem"),
        ({**tls_props(server), "ssl.key.password": "wrong"}, "ssl.key.password is wrong for the private key"),
        ({k: v for k, v in tls_props(server).items() if k != "ssl.key.password"},
         "is encrypted but ssl.key.password is not set"),
        ({**tls_props(client), "ssl.key.password": "x"}, "ssl.key.password is set but the private key"),
        ({**tls_props(server), "ssl.keystore.location": str(server.truststore)}, "holds no PEM private key"),
        ({**tls_props(client), "ssl.keystore.location": str(key_only)}, "holds no PEM certificate"),
        ({**tls_props(server), "ssl.client.auth": "required", "ssl.truststore.location": str(not_pem)},
         "ssl.truststore.location: not PEM certificates"),
        ({**tls_props(server), "ssl.client.auth": "always"}, "ssl.client.auth must be one of required"),
        ({**tls_props(server), "ssl.keystore.password": "x"}, "cannot be used with a PEM keystore"),
    ]
    for props, expected in cases:
        message = config_error(listener_security, props, "SSL", "SSL", WHERE)
        assert message.startswith(f"{WHERE}: ") and expected in message, (props, message)


def test_unknown_protocol_names_the_key():
    assert "listener.security.protocol.map must be one of PLAINTEXT, SSL" in config_error(
        listener_security, {}, "X", "TLS", WHERE)


# ---------------------------------------------------------------- clients

def test_command_config_sasl_ssl_client(stores):
    server, _ = stores
    props = {"security.protocol": "sasl_ssl", "sasl.mechanism": "SCRAM-SHA-512",
             "sasl.jaas.config": f'{SCRAM_MODULE} required username="alice" password="alice-secret";',
             "ssl.truststore.location": str(server.truststore), "ssl.truststore.type": "PEM"}
    security = client_security(props, "admin.properties")
    assert security.protocol is SecurityProtocol.SASL_SSL and security.sasl_mechanism == "SCRAM-SHA-512"
    assert (security.username, security.password) == ("alice", "alice-secret")
    assert security.ssl_context.check_hostname and security.ssl_context.verify_mode == ssl.CERT_REQUIRED
    props["ssl.endpoint.identification.algorithm"] = ""
    assert not client_security(props, "admin.properties").ssl_context.check_hostname


def test_plaintext_client_by_default():
    security = client_security({}, "admin.properties")
    assert security.protocol is SecurityProtocol.PLAINTEXT and security.ssl_context is None


def test_ssl_client_with_certificate_for_mtls(stores):
    _, client = stores
    security = client_security({"security.protocol": "SSL", **tls_props(client)}, "admin.properties")
    assert security.protocol is SecurityProtocol.SSL and security.username is None


@pytest.mark.parametrize("props, expected", [
    ({"security.protocol": "TLS"},
     "security.protocol must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL, got 'TLS'"),
    ({"security.protocol": "SASL_PLAINTEXT"}, "sasl.mechanism is GSSAPI (Kafka's default), which is not supported"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "sasl.jaas.config is not set"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
      "sasl.jaas.config": f'{PLAIN_MODULE} required username="a";'}, "sasl.jaas.config has no password option"),
    ({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "ldap"},
     "ssl.endpoint.identification.algorithm must be https or empty"),
])
def test_command_config_errors(props, expected):
    message = config_error(client_security, props, "admin.properties")
    assert message.startswith("admin.properties: ") and expected in message


def test_controller_channel_as_kafka_builds_it(stores):
    server, _ = stores
    props = {"controller.listener.names": "CONTROLLER,OLD", "listener.security.protocol.map": "CONTROLLER:SASL_SSL",
             "sasl.mechanism.controller.protocol": "SCRAM-SHA-256", "sasl.mechanism": "PLAIN",
             "listener.name.controller.scram-sha-256.sasl.jaas.config":
                 f'{SCRAM_MODULE} required username="ctl" password="ctl-secret";',
             "sasl.jaas.config": f'{PLAIN_MODULE} required username="wrong" password="wrong";',
             **tls_props(server, "listener.name.controller."), "ssl.truststore.location": "/nonexistent"}
    security = controller_client_security(props, WHERE)
    assert security.protocol is SecurityProtocol.SASL_SSL and security.sasl_mechanism == "SCRAM-SHA-256"
    assert (security.username, security.password) == ("ctl", "ctl-secret")
    props["listener.security.protocol.map"] = "OLD:PLAINTEXT"
    assert "listener CONTROLLER has no entry in listener.security.protocol.map" in config_error(
        controller_client_security, props, WHERE)
    del props["listener.security.protocol.map"]  # not set at all: Kafka takes the controller listener as PLAINTEXT
    assert controller_client_security(props, WHERE).protocol is SecurityProtocol.PLAINTEXT
    assert "sasl.mechanism.controller.protocol is GSSAPI (Kafka's default)" in config_error(
        client_security, {"listener.security.protocol.map": "C:SASL_PLAINTEXT"}, WHERE, listener_name="C",
        mechanism_key="sasl.mechanism.controller.protocol")


def test_controller_channel_named_after_protocol_needs_no_map():
    security = client_security({}, WHERE, listener_name="PLAINTEXT")
    assert security.protocol is SecurityProtocol.PLAINTEXT
    assert "controller.listener.names is not set" in config_error(controller_client_security, {}, WHERE)


def test_inline_pem_stores(stores):
    """ssl.keystore.key + ssl.keystore.certificate.chain and ssl.truststore.certificates, as Kafka allows."""
    server, _ = stores
    keystore = server.keystore.read_text()
    key_end = keystore.index("-----END ENCRYPTED PRIVATE KEY-----") + len("-----END ENCRYPTED PRIVATE KEY-----")
    props = {"ssl.keystore.type": "PEM", "ssl.keystore.key": keystore[:key_end],
             "ssl.keystore.certificate.chain": keystore[key_end:].strip(), "ssl.key.password": server.key_password,
             "ssl.truststore.type": "PEM", "ssl.truststore.certificates": server.truststore.read_text(),
             "ssl.client.auth": "required"}
    assert listener_security(props, "SSL", "SSL", WHERE).ssl_context.verify_mode == ssl.CERT_REQUIRED
    del props["ssl.keystore.certificate.chain"]
    assert "ssl.keystore.key is set but ssl.keystore.certificate.chain is not" in config_error(
        listener_security, props, "SSL", "SSL", WHERE)


# ---------------------------------------------------------------- TLS versions

def test_enabled_protocols_bound_the_tls_versions(stores):
    server, client = stores
    default = listener_security(tls_props(server), "SSL", "SSL", WHERE).ssl_context
    assert (default.minimum_version, default.maximum_version) == (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)
    # an old config's list: the versions JDK 17 disables are accepted and left out
    props = {**tls_props(server), "listener.name.ssl.ssl.enabled.protocols": "TLSv1.1, TLSv1.3",
             "ssl.enabled.protocols": "TLSv1.2"}
    only_13 = listener_security(props, "SSL", "SSL", WHERE).ssl_context
    assert (only_13.minimum_version, only_13.maximum_version) == (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_3)
    capped = client_security({"security.protocol": "SSL", **tls_props(client), "ssl.protocol": "TLSv1.2"},
                             "admin.properties").ssl_context
    assert (capped.minimum_version, capped.maximum_version) == (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_2)


@pytest.mark.parametrize("extra, expected", [
    ({"ssl.enabled.protocols": "TLSv1.2,TLSv9"}, "ssl.enabled.protocols names TLSv9, which is not a TLS version"),
    ({"ssl.enabled.protocols": "SSLv3,TLSv1.1"}, "it enables no TLS version we can use"),
    ({"ssl.enabled.protocols": "TLSv1,TLSv1.1"}, "ssl.enabled.protocols is 'TLSv1,TLSv1.1': it enables no TLS "
                                                 "version we can use"),
    ({"ssl.enabled.protocols": " "}, "it enables no TLS version we can use"),
    ({"ssl.protocol": "SSLv3"}, "ssl.protocol must be one of TLS, SSL, TLSv1.2, TLSv1.3, got 'SSLv3'"),
    ({"ssl.protocol": "TLSv1.2", "ssl.enabled.protocols": "TLSv1.3"},
     "ssl.protocol is TLSv1.2 but ssl.enabled.protocols is 'TLSv1.3': no TLS version is left"),
])
def test_tls_version_errors_name_the_key(stores, extra, expected):
    _, client = stores
    message = config_error(client_security, {"security.protocol": "SSL", **tls_props(client), **extra},
                           "admin.properties")
    assert message.startswith("admin.properties: ") and expected in message


# ---------------------------------------------------------------- a controller's client to the brokers

def test_controller_reaches_brokers_as_inter_broker_listener_says(stores):
    """Unclean recovery asks the brokers' inter.broker.listener.name listener, logged in as a
    broker would be there (sasl.mechanism.inter.broker.protocol, that listener's JAAS)."""
    server, _ = stores
    props = {"listener.security.protocol.map": "CONTROLLER:SSL,SECURE:SASL_SSL", "inter.broker.listener.name": "secure",
             "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512", "sasl.mechanism": "PLAIN",
             "listener.name.secure.scram-sha-512.sasl.jaas.config":
                 f'{SCRAM_MODULE} required username="ctl" password="ctl-secret";', **tls_props(server)}
    listener, security = broker_client(props, WHERE)
    assert (listener, security.protocol, security.sasl_mechanism) == ("SECURE", SecurityProtocol.SASL_SSL,
                                                                      "SCRAM-SHA-512")
    assert (security.username, security.password) == ("ctl", "ctl-secret") and security.ssl_context is not None
    assert broker_client({}, WHERE) == (None, PLAINTEXT_CLIENT)
    listener, security = broker_client({"security.inter.broker.protocol": "SSL", **tls_props(server)}, WHERE)
    assert (listener, security.protocol) == ("SSL", SecurityProtocol.SSL)
    assert "set inter.broker.listener.name or security.inter.broker.protocol, not both" in config_error(
        broker_client, {**props, "security.inter.broker.protocol": "SSL"}, WHERE)
    del props["sasl.mechanism.inter.broker.protocol"]
    assert "sasl.mechanism.inter.broker.protocol is GSSAPI (Kafka's default)" in config_error(
        broker_client, props, WHERE)
    assert "listener NOPE has no entry in listener.security.protocol.map" in config_error(
        broker_client, {**props, "inter.broker.listener.name": "NOPE"}, WHERE)


def test_a_controller_only_node_starts_whatever_its_inter_broker_settings(tmp_path, caplog):
    """Kafka's controllers never read the inter-broker settings, and a config shared with brokers
    may name GSSAPI there: a controller-only node loads, and unclean recovery says once, in one
    line, that it cannot ask the brokers. A combined node's broker side needs them: refused."""
    from types import SimpleNamespace

    from engine.controller.unclean_recovery import LogQuery, UncleanRecoveryState
    from engine.server.controller_node import load_controller_settings
    from engine.server.unclean_recovery_queries import UncleanRecoveryQueries

    config = tmp_path / "controller.properties"
    props = {"process.roles": "controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
             "listeners": "CONTROLLER://127.0.0.1:19093", "controller.quorum.bootstrap.servers": "127.0.0.1:19093",
             "metadata.log.dir": str(tmp_path / "meta"), "security.inter.broker.protocol": "SASL_SSL"}
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    settings = load_controller_settings(config)
    assert settings.broker_security is None
    assert "sasl.mechanism.inter.broker.protocol is GSSAPI (Kafka's default)" in settings.broker_problem

    state = UncleanRecoveryState(outbox=[LogQuery(None, "t", 0, 1, 1, 0)])
    core = SimpleNamespace(soft=SimpleNamespace(unclean_recovery=state), is_active=True, image=None)
    queries = UncleanRecoveryQueries(lambda: core, lambda: None, security=settings.broker_security,
                                     problem=settings.broker_problem)
    with caplog.at_level("WARNING", logger="engine.server.unclean_recovery"):
        queries.send_pending()
        state.outbox.append(LogQuery(None, "t", 0, 1, 1, 0))
        queries.send_pending()
    warnings = [r.getMessage() for r in caplog.records if r.name == "engine.server.unclean_recovery"]
    assert len(warnings) == 1 and warnings[0].startswith("unclean recovery cannot ask the brokers: ")
    assert "\n" not in warnings[0] and not state.outbox

    config.write_text(config.read_text().replace("process.roles=controller", "process.roles=broker,controller"))
    assert "sasl.mechanism.inter.broker.protocol is GSSAPI" in config_error(load_controller_settings, config)
