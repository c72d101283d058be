"""``ssl.principal.mapping.rules`` (engine/net/ssl_principal_mapper.py): the same names as Kafka's own
SslPrincipalMapper, run side by side from the kafka-clients jar of the newest Kafka tested; and on a
real SSL listener, the mapped principal, or the connection refused when no rule maps the subject."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka_peer.fixtures import VERSIONS

from engine.common.errors import ConfigError
from engine.net.errors import NetError
from engine.net.security_config import client_security, listener_security
from engine.net.ssl_principal_mapper import NoMatchingRule, SslPrincipalMapper
from tls_material import TestCA, principals_seen, write_pem

SUBJECTS = [
    "CN=Duke,OU=ServiceUsers,O=Org,C=US",
    "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US",
    "OU=sales,cn=alpha.Beta,O=Acme",
    "CN=ops,O=Acme",
    "UID=17,DC=example,DC=com",
    "CN=a$b,O=x",
    "CN=acme,O=acme",
    "CN=jos\u00e9,O=\u0661\u0662",
]
RULES = [
    "DEFAULT",
    "",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,RULE:^UID=(\\d+),.*$/user-$1/",
    "RULE:^CN=([^,]*),O=(.*)$/$1$3-$2$0/, RULE:^CN=(.*)$/\\$1\\\\x/",
    "  RULE:^CN=(.*?),O=Acme$/$1/  ,  RULE:^(.*)$/other:$1/U  ",
    "RULE:^CN=(?<who>[^,]*),.*$/${who}!/",
    "RULE:^CN=(?<who>[^,]*),.*$/${nobody}/, RULE:^CN=([^,]*),O=x$/$/, DEFAULT",
    "RULE:^CN=(?<w>[a-z]+),O=\\k<w>$/same:$1/, RULE:(?<=x)y/z/",
    "RULE:^CN=(\\w+),O=(\\d*)$/$1-$2/, RULE:(?i)^cn=([^,]*),.*$/$1/U",
    "RULE:^CN=(.*)$/$1/Lx",
    "RULE:^CN=(.*$/$1/",
    "DEFAULT,RULE:^CN=(.*)$/$1/,garbage",
]

_JAVA = """
import org.apache.kafka.common.security.ssl.SslPrincipalMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;

public class MapNames {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        PrintStream printed = new PrintStream(System.out, true, "UTF-8");
        for (String line; (line = in.readLine()) != null; ) {
            String[] parts = line.split("\\t", -1);
            StringBuilder out = new StringBuilder();
            SslPrincipalMapper mapper;
            try {
                mapper = SslPrincipalMapper.fromRules(parts[0]);
            } catch (Exception e) {
                printed.println("INVALID");
                continue;
            }
            for (int i = 1; i < parts.length; i++) {
                String name;
                try {
                    name = "=" + mapper.getName(parts[i]);
                } catch (Exception e) {
                    name = "NONE";
                }
                out.append(i > 1 ? "\\t" : "").append(name);
            }
            printed.println(out);
        }
    }
}
"""


def ours(rules: str) -> str:
    try:
        mapper = SslPrincipalMapper.from_rules(rules)
    except ValueError:
        return "INVALID"
    names = []
    for subject in SUBJECTS:
        try:
            names.append("=" + mapper.name(subject))
        except NoMatchingRule:
            names.append("NONE")
    return "\t".join(names)


@pytest.mark.kafka
@pytest.mark.parametrize("kafka_dist", VERSIONS[-1:], indirect=True)
def test_the_names_are_kafkas(kafka_dist, tmp_path: Path) -> None:
    source = tmp_path / "MapNames.java"
    source.write_text(_JAVA)
    lines = "".join("\t".join([rules, *SUBJECTS]) + "\n" for rules in RULES)
    done = subprocess.run(["java", "-cp", kafka_dist.classpath, str(source)], input=lines, capture_output=True,
                          text=True, encoding="utf-8", timeout=300)
    assert done.returncode == 0, done.stderr
    kafkas = done.stdout.splitlines()
    assert len(kafkas) == len(RULES)
    for rules, theirs in zip(RULES, kafkas):
        assert ours(rules) == theirs, rules
    # the cases reach every outcome: mapped, defaulted, refused, invalid
    assert {"INVALID"} < set(kafkas) and any("NONE" in k for k in kafkas) and any("=duke" in k for k in kafkas)


def test_names_from_kafkas_documented_examples() -> None:
    mapper = SslPrincipalMapper.from_rules(RULES[3] + ", " + RULES[4] + ", DEFAULT")
    assert mapper.name(SUBJECTS[1]) == "duke@javasoft"
    assert mapper.name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "DUKE"
    assert mapper.name(SUBJECTS[4]) == "user-17"
    assert SslPrincipalMapper.from_rules("DEFAULT").is_default
    with pytest.raises(NoMatchingRule, match="no rule of ssl.principal.mapping.rules maps CN=x"):
        SslPrincipalMapper.from_rules(RULES[2].split(", DEFAULT")[0]).name("CN=x")


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
