"""Apache Kafka's own broker joins our controller over SASL_SSL with SCRAM-SHA-512 (issue 15).

One cluster for the module, the newest Kafka release only (each JVM costs the suite seconds):
a ``kraftd start`` controller whose controller listener is SASL_SSL, its SCRAM users bootstrapped
by ``kraftd storage format --add-scram`` (tests/kafka_peer/secured.py, Kafka's config names
throughout), and one Kafka broker whose controller listener is the same: it registers, is
unfenced and forwards a CreateTopics to us through it. Kafka's own ``kafka-metadata-quorum``
also reaches our controller through that listener, and is refused for a wrong password or a
user no ACL lets in: Kafka's clients, not ours, judge our SASL_SSL. metashell attaches with the
same --command-config.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kafka_peer.fixtures import VERSIONS
from kafka_peer.nodes import metadata_brokers
from kafka_peer.secured import NOBODY_USER, SecuredQuorum, parse_status

from engine.image.metadata_loader import load_log_dir

REPO = Path(__file__).resolve().parents[1]
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
