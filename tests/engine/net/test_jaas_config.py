"""JAAS files (engine/net/jaas_config.py): the static JAAS configuration named by
``-Djava.security.auth.login.config`` in ``KAFKA_OPTS``, read with Kafka's precedence and sections,
by our listeners and clients on real sockets, and the same file read by Kafka's own
kafka-metadata-quorum against our controller."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka_peer.fixtures import VERSIONS

from engine.common.errors import ConfigError
from engine.net.errors import NetError
from engine.net.jaas_config import jaas_file_path, parse_jaas_config, parse_jaas_file
from engine.net.security_config import client_security, controller_client_security, listener_security
from tests.node_quorum import start_quorum, wait_until
from tls_material import principals_seen

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
JAAS = f"""
// as an operator's kafka_server_jaas.conf has it
KafkaServer {{
    {PLAIN} required
    username="admin" password="admin-secret"
    user_admin="admin-secret" user_alice="alice-secret";
}};
controller.KafkaServer {{
    {SCRAM} required username="ctl" password="scram-secret";
    {PLAIN} required
    username="ctl" password="ctl-secret"
    user_ctl="ctl-secret" user_ops="ops-secret";
}};
/* the tools' login */
KafkaClient {{ {PLAIN} required username="alice" password="alice-secret"; }};
"""


@pytest.fixture
def jaas_file(tmp_path: Path, monkeypatch) -> Path:
    path = tmp_path / "kafka_jaas.conf"
    path.write_text(JAAS)
    monkeypatch.setenv("KAFKA_OPTS", f"-Xmx1G '-Djava.security.auth.login.config={path}' -Dother=1")
    return path


def test_kafka_opts_names_the_file_as_a_jvm_reads_it() -> None:
    assert jaas_file_path({"KAFKA_OPTS": "-Djava.security.auth.login.config=/a/jaas.conf"}) == Path("/a/jaas.conf")
    assert jaas_file_path({"KAFKA_OPTS": "-Djava.security.auth.login.config==/b -Djava.security.auth.login.config=/c"}
                          ) == Path("/c")  # the last -D wins
    assert jaas_file_path({"KAFKA_OPTS": "-Djava.security.auth.login.config=file:///etc/kafka/my%20jaas.conf"}
                          ) == Path("/etc/kafka/my jaas.conf")  # the JDK also takes a URL
    assert jaas_file_path({"KAFKA_OPTS": "-Xmx1G"}) is None and jaas_file_path({}) is None


def test_sections_and_their_login_modules() -> None:
    sections = parse_jaas_file(JAAS, "kafka_jaas.conf")
    assert list(sections) == ["KafkaServer", "controller.KafkaServer", "KafkaClient"]
    assert [e.login_module for e in sections["controller.KafkaServer"]] == [SCRAM, PLAIN]
    assert sections["KafkaClient"][0].options == {"username": "alice", "password": "alice-secret"}


@pytest.mark.parametrize("text, reason", [
    ("KafkaClient { a.B required x=\"y\"; ", "section KafkaClient is not closed with }"),
    ("KafkaClient { a.B required x=\"y\"; }", "section KafkaClient is not terminated by a semicolon after }"),
    ("KafkaClient a.B required;", "section KafkaClient does not open with {"),
    ("KafkaClient { };", "section KafkaClient has no login module"),
    ("KafkaClient { a.B always; };", "invalid login module control flag 'always' (one of required, requisite, "
                                     "sufficient, optional)"),
])
def test_a_bad_file_is_one_line_naming_it(text: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_jaas_file(text, "/etc/kafka/jaas.conf")
    assert str(info.value) == f"/etc/kafka/jaas.conf: bad JAAS file: {reason}"


def test_kafkas_precedence(jaas_file: Path) -> None:
    # a tool: KafkaClient, unless sasl.jaas.config is set
    tool = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}
    assert client_security(tool, "tool.properties").username == "alice"
    given = {**tool, "sasl.jaas.config": f'{PLAIN} required username="bob" password="b";'}
    assert client_security(given, "tool.properties").username == "bob"
    # a listener: <listener>.KafkaServer before KafkaServer, the login module of the mechanism
    server = {"listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT,BROKER:SASL_PLAINTEXT",
              "sasl.enabled.mechanisms": "PLAIN", "controller.listener.names": "CONTROLLER",
              "sasl.mechanism.controller.protocol": "PLAIN"}
    assert dict(listener_security(server, "CONTROLLER", "SASL_PLAINTEXT", "s").plain_users) == \
        {"ctl": "ctl-secret", "ops": "ops-secret"}
    assert dict(listener_security(server, "BROKER", "SASL_PLAINTEXT", "s").plain_users) == \
        {"admin": "admin-secret", "alice": "alice-secret"}
    channel = controller_client_security(server, "s")  # a node's channel: the listener's server section
    assert (channel.username, channel.password) == ("ctl", "ctl-secret")
    scram = controller_client_security({**server, "sasl.mechanism.controller.protocol": "SCRAM-SHA-512"}, "s")
    assert (scram.username, scram.password) == ("ctl", "scram-secret")


def test_what_the_file_lacks_is_one_line(jaas_file: Path, monkeypatch) -> None:
    jaas_file.write_text(f"KafkaServer {{ {SCRAM} required username=\"u\" password=\"p\"; }};\n")
    with pytest.raises(ConfigError, match=r"^tool.properties: sasl.jaas.config is not set \(nor a KafkaClient "
                                          r"section in a JAAS file named by -Djava.security.auth.login.config in "
                                          r"KAFKA_OPTS\): SASL_PLAINTEXT with PLAIN needs username and password"):
        client_security({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "tool.properties")
    with pytest.raises(ConfigError, match=f"^{jaas_file} section KafkaServer has no {PLAIN} login module: PLAIN on "
                                          f"listener X needs its users"):
        listener_security({"sasl.enabled.mechanisms": "PLAIN"}, "X", "SASL_PLAINTEXT", "s")
    monkeypatch.setenv("KAFKA_OPTS", "-Djava.security.auth.login.config=/nonexistent/jaas.conf")
    with pytest.raises(ConfigError, match=r"^cannot read the JAAS file /nonexistent/jaas.conf "
                                          r"\(java.security.auth.login.config in KAFKA_OPTS\): No such file"):
        client_security({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "tool.properties")


def test_a_listener_and_a_client_logging_in_from_the_file(jaas_file: Path) -> None:
    server = listener_security({"sasl.enabled.mechanisms": "PLAIN"}, "SECURE", "SASL_PLAINTEXT", "s")
    tool = client_security({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "tool.properties")
    wrong = client_security({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config":
                             f'{PLAIN} required username="alice" password="nope";'}, "tool.properties")
    seen = principals_seen(server, [tool, wrong])
    assert seen[0] == "User:alice"
    assert isinstance(seen[1], NetError) and "Invalid username or password" in str(seen[1])


@pytest.mark.kafka
@pytest.mark.parametrize("kafka_dist", VERSIONS[-1:], indirect=True)
def test_kafkas_tool_and_our_controller_read_the_same_file(kafka_dist, jaas_file: Path, tmp_path: Path) -> None:
    """Our controller takes its PLAIN users from controller.KafkaServer; Kafka's kafka-metadata-quorum,
    given the same file as a JVM is (-Djava.security.auth.login.config), logs in from KafkaClient."""
    client_login = 'username="alice" password="alice-secret"; }'
    assert client_login in JAAS
    jaas_file.write_text(JAAS.replace(client_login, 'username="ops" password="ops-secret"; }'))

    async def scenario() -> str:
        configs, nodes = await start_quorum(tmp_path, 1, **{
            "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.controller.protocol": "PLAIN"})
        try:
            await wait_until(lambda: nodes[0].controller.core.is_active, 30, "an active controller")
            config = tmp_path / "tool.properties"
            config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n")
            done = await asyncio.to_thread(
                kafka_dist.run, "kafka-metadata-quorum", "--bootstrap-controller",
                f"127.0.0.1:{nodes[0].driver.address[1]}", "--command-config", str(config), "describe", "--status",
                jvm_opts=(f"-Djava.security.auth.login.config={jaas_file}",))
            return done.stdout
        finally:
            for node in nodes:
                await node.stop()

    status = asyncio.run(asyncio.wait_for(scenario(), 180))
    assert "LeaderId:" in status and "CurrentVoters:" in status, status


@settings(max_examples=400, deadline=None)
@given(st.text(st.sampled_from(list("KafkaClient{};=\"'/*\\ \nabc.required09\u00a0\u00e9\u0142\u2013")), max_size=80))
def test_any_text_is_a_file_or_one_line(text: str) -> None:
    for parse in (lambda: parse_jaas_file(text, "jaas.conf"), lambda: parse_jaas_config(text, "c", key="k")):
        try:
            parse()
        except ConfigError as err:
            assert "\n" not in str(err), str(err)
