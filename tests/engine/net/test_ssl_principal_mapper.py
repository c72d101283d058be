"""``ssl.principal.mapping.rules`` (engine/net/ssl_principal_mapper.py): the same names as Kafka's own
SslPrincipalMapper (compared live in tests/differential/test_diff_ssl_principal_mapper.py); and on a
real SSL listener, the mapped principal, or the connection refused when no rule maps the subject."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.common.errors import ConfigError
from engine.net.errors import NetError
from engine.net.security_config import client_security, listener_security
from engine.net.ssl_principal_mapper import NoMatchingRule, SslPrincipalMapper
from tls_material import TestCA, principals_seen, write_pem

SUBJECTS = [
    "CN=Duke,OU=ServiceUsers,O=Org,C=US",
    "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US",
    "UID=17,DC=example,DC=com",
]
# Kafka's documented examples (ssl.principal.mapping.rules' doc); every rule list is compared
# with Kafka's own SslPrincipalMapper live in tests/differential/test_diff_ssl_principal_mapper.py
RULES = [
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,RULE:^UID=(\\d+),.*$/user-$1/",
]


def test_names_from_kafkas_documented_examples() -> None:
    mapper = SslPrincipalMapper.from_rules(RULES[1] + ", " + RULES[2] + ", DEFAULT")
    assert mapper.name(SUBJECTS[1]) == "duke@javasoft"
    assert mapper.name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "DUKE"
    assert mapper.name(SUBJECTS[2]) == "user-17"
    assert SslPrincipalMapper.from_rules("DEFAULT").is_default
    with pytest.raises(NoMatchingRule, match="no rule of ssl.principal.mapping.rules maps CN=x"):
        SslPrincipalMapper.from_rules(RULES[0].split(", DEFAULT")[0]).name("CN=x")


# ---------------------------------------------------------------- on an SSL listener

@pytest.fixture(scope="module")
def pem(tmp_path_factory):
    directory = tmp_path_factory.mktemp("mapping")
    ca = TestCA()
    return (write_pem(directory, "server", ca.issue("localhost")),
            write_pem(directory, "ops", ca.issue("ops", organization="Acme")),
            write_pem(directory, "robot", ca.issue("robot", organization="Elsewhere")))


def _principals(server_props: dict[str, str], protocol: str, clients: list[dict[str, str]]) -> list[Any]:
    return principals_seen(listener_security(server_props, "SECURE", protocol, "server.properties"),
                           [client_security(props, "client.properties") for props in clients])


def _tls(files, **extra: str) -> dict[str, str]:
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(files.keystore),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(files.truststore), **extra}


def test_an_ssl_listener_maps_the_subject_and_refuses_what_no_rule_maps(pem, caplog) -> None:
    server, ops, robot = pem
    props = _tls(server, **{"listener.name.secure.ssl.client.auth": "required",
                            "listener.name.secure.ssl.principal.mapping.rules": "RULE:^CN=(.*?),O=Acme$/$1/L"})
    answers = _principals(props, "SSL", [{"security.protocol": "SSL", **_tls(ops)},
                                         {"security.protocol": "SSL", **_tls(robot)},
                                         {"security.protocol": "SSL", **_tls(ops)}])
    assert answers[0] == answers[2] == "User:ops"
    assert isinstance(answers[1], NetError) and "\n" not in str(answers[1])
    refusals = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.name == "engine.net"]
    assert len(refusals) == 1 and refusals[0].endswith(
        "on SECURE: the client certificate has no principal: no rule of ssl.principal.mapping.rules maps "
        "CN=robot,O=Elsewhere (rules: RULE:^CN=(.*?),O=Acme$/$1/L)"), refusals


def test_on_sasl_ssl_the_rules_are_not_read(pem) -> None:
    server, *_ = pem
    props = _tls(server, **{"sasl.enabled.mechanisms": "PLAIN", "ssl.principal.mapping.rules": "RULE:(/x/",
                            "listener.name.secure.plain.sasl.jaas.config":
                                'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";'})
    assert listener_security(props, "SECURE", "SASL_SSL", "server.properties").principal_name is None
    with pytest.raises(ConfigError, match=r"server.properties: ssl.principal.mapping.rules: Invalid rule"):
        listener_security(props, "SECURE", "SSL", "server.properties")


@settings(max_examples=400, deadline=None)
@given(st.text(st.sampled_from(list("RULE:DEFAULT^$()/\\,LU.*?[]{}<>=-_abcCN0129 $k")), max_size=60),
       st.text(st.sampled_from(list("CN=OU,abc$\\()0129 ")), max_size=30))
def test_any_rules_parse_or_refuse_and_any_subject_maps_or_refuses(rules: str, subject: str) -> None:
    """Rules that do not parse are a ValueError (a config error); a subject no rule maps, or that a
    rule's replacement cannot make, is NoMatchingRule (a refused connection): nothing else escapes."""
    try:
        mapper = SslPrincipalMapper.from_rules(rules)
    except ValueError:
        return
    try:
        assert isinstance(mapper.name(subject), str)
    except NoMatchingRule:
        pass
