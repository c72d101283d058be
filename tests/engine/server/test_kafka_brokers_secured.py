"""Apache Kafka's own broker joins our controller over SASL_SSL with SCRAM-SHA-512 (issue 15).

One cluster for the module, the newest Kafka release only (each JVM costs the suite seconds):
a ``kraftd start`` controller whose controller listener is SASL_SSL, its SCRAM users bootstrapped
by ``kraftd storage format --add-scram`` (tests/kafka_peer/secured.py, Kafka's config names
throughout), and one Kafka broker whose controller listener is the same: it registers, is
unfenced and forwards a CreateTopics to us through it. Kafka's own ``kafka-metadata-quorum``
also reaches our controller through that listener, and is refused for a wrong password or a
user no ACL lets in: Kafka's clients, not ours, judge our SASL_SSL. metashell attaches with the
same --command-config. The broker also listens on SECURE (SASL_SSL), the listener our
controller's ``inter.broker.listener.name`` names: unclean recovery asks its questions there.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kafka_peer.fixtures import VERSIONS
from kafka_peer.nodes import metadata_brokers
from kafka_peer.secured import NOBODY_USER, SecuredQuorum, parse_status

from engine.controller.unclean_recovery import LogQuery, UncleanRecoveryState
from engine.image.metadata_loader import load_log_dir
from engine.net.channel_security import SecurityProtocol
from engine.server.controller_node import load_controller_settings
from engine.server.unclean_recovery_queries import UncleanRecoveryQueries, broker_address

REPO = Path(__file__).resolve().parents[3]
pytestmark = [pytest.mark.kafka, pytest.mark.parametrize("kafka_dist", VERSIONS[-1:], indirect=True)]


@pytest.fixture
def secured(kafka_dist, secured_quorums, tmp_path_factory) -> SecuredQuorum:
    """Our controller and a Kafka broker, SASL_SSL between them (shared: each test makes its own topics)."""
    return secured_quorums.get("sasl", lambda: SecuredQuorum.sasl_ssl(
        kafka_dist, tmp_path_factory.mktemp("kraftd-secured"), controllers="kraftd", brokers=1))


def our_image(quorum: SecuredQuorum):
    return load_log_dir(quorum.cluster.voters[0].metadata_dir)[0]


def test_kafkas_tool_describes_our_quorum_over_sasl_ssl(secured):
    """What kafka-metadata-quorum --command-config said through our SASL_SSL listener when the
    cluster came up (the harness's readiness check: no second JVM for the same question)."""
    assert secured.status["ClusterId"] == secured.cluster_id
    assert secured.status["LeaderId"] == "1"
    voters = json.loads(secured.status["CurrentVoters"])
    assert [v["endpoints"] for v in voters] == [[f"CONTROLLER://{secured.bootstrap_controllers}"]]


def test_the_kafka_broker_registers_over_sasl_ssl_and_is_unfenced(secured):
    broker = secured.cluster.brokers[0]
    image = our_image(secured)
    assert sorted(image.cluster.brokers) == [broker.node_id]
    assert not image.cluster.brokers[broker.node_id].fenced
    assert metadata_brokers(broker.broker_address) == {broker.node_id}


def test_a_topic_created_through_the_broker_reaches_our_log(secured):
    """The broker forwards CreateTopics to us (an Envelope) over the SASL_SSL listener."""
    name = "made-through-a-secured-broker"
    admin = KafkaAdminClient(bootstrap_servers=secured.cluster.bootstrap_servers, request_timeout_ms=60_000)
    try:
        admin.create_topics([NewTopic(name, 2, 1)])
    finally:
        admin.close()
    topic = our_image(secured).topics.topic(name)
    assert topic is not None and sorted(topic.partitions) == [0, 1]


def test_kafkas_tool_with_a_wrong_password_is_refused_by_our_controller(secured):
    done = secured.describe_status(secured.client_config("wrong", password="wrong-password-0c7d"), check=False)
    assert done.returncode != 0 and "SaslAuthenticationException" in done.stdout + done.stderr, done.stderr[-2000:]
    assert "LeaderId" not in done.stdout


def test_kafkas_tool_as_a_user_without_acls_is_refused_by_our_controller(secured):
    done = secured.describe_status(secured.client_config("nobody", user=NOBODY_USER), check=False)
    assert done.returncode != 0, done.stdout
    assert "ClusterAuthorizationException" in done.stdout + done.stderr, done.stderr[-2000:]
    assert parse_status(done.stdout).get("LeaderId") is None


def test_metashell_attaches_to_our_controller_over_sasl_ssl(secured):
    """The same --command-config Kafka's tool used: metashell sees the Kafka broker registered."""
    done = subprocess.run([sys.executable, "-m", "metashell.cli", "--bootstrap-controller", secured.bootstrap_controllers,
                           "--command-config", str(secured.client_config("admin")), "-c", "ls /brokers; cat /quorum/leader"],
                          capture_output=True, text=True, cwd=REPO, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(secured.cluster.brokers[0].node_id), "1"]


def test_unclean_recovery_asks_the_kafka_broker_over_its_sasl_ssl_listener(secured):
    """The controller's questions (ListOffsets as a debugging replica) go to the broker listener
    its config's inter.broker.listener.name names, logged in as that listener's JAAS user, as
    ControllerServer wires them from the settings of the running controller's own config file.
    The Kafka broker answers its log end: three messages produced there."""
    from kafka import KafkaProducer

    name = "asked-over-sasl-ssl"
    broker = secured.cluster.brokers[0]
    admin = KafkaAdminClient(bootstrap_servers=secured.cluster.bootstrap_servers, request_timeout_ms=60_000)
    try:
        admin.create_topics([NewTopic(name, 1, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=secured.cluster.bootstrap_servers, acks="all")
    try:
        for i in range(3):
            producer.send(name, f"m{i}".encode()).get(timeout=60)
    finally:
        producer.close()

    settings = load_controller_settings(secured.cluster.voters[0].config_path)
    assert (settings.broker_listener, settings.broker_security.protocol) == ("SECURE", SecurityProtocol.SASL_SSL)
    image = our_image(secured)
    address = broker_address(image, broker.node_id, settings.broker_listener)
    assert address == ("127.0.0.1", secured.cluster.secure_ports[broker.node_id]) != broker.broker_address
    partition = image.topics.topic(name).partitions[0]
    state = UncleanRecoveryState(outbox=[LogQuery(image.topics.by_name[name], name, 0, broker.node_id,
                                                  image.cluster.brokers[broker.node_id].epoch, partition.leader_epoch)])
    core = SimpleNamespace(soft=SimpleNamespace(unclean_recovery=state), is_active=True, image=image)

    async def ask() -> None:
        answered = asyncio.Event()
        queries = UncleanRecoveryQueries(lambda: core, answered.set, listener=settings.broker_listener,
                                         security=settings.broker_security)
        try:
            queries.send_pending()
            await asyncio.wait_for(answered.wait(), 60)
        finally:
            await queries.close()

    asyncio.run(ask())
    (answer,) = state.inbox
    assert (answer.broker_id, answer.log_end_offset, answer.leader_epoch) == (broker.node_id, 3, partition.leader_epoch)
