"""metashell attaches to Apache Kafka controller quorums whose controller listener is secured (issue 15).

Two quorums for the module (tests/kafka_peer/secured.py), the newest Kafka release only (every
JVM costs the suite seconds): one controller on SASL_SSL with SCRAM-SHA-512 and Kafka's
StandardAuthorizer, one on SSL with ``ssl.client.auth=required``. Certificates are made at test
time. What metashell shows is compared with what Kafka's own ``kafka-metadata-quorum
--command-config`` reported through the same listener (the quorum's readiness check).

metashell runs as a user runs it (``python -m metashell.cli --bootstrap-controller ...
--command-config FILE -c ...``, a process of its own). Each refusal (wrong SCRAM password, a
truststore of another CA, an expired client certificate or none, PLAINTEXT to the TLS port, a
user no ACL lets in) must be one line on stderr and exit 1: no traceback, no password, nothing on
stdout. Kafka's tool is asked the same where it fails fast, so each refusal is Kafka's too and
not a setup that would refuse anyone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from kafka_peer.fixtures import VERSIONS
from kafka_peer.secured import ADMIN_USER, KEY_PASSWORD, NOBODY_USER, SecuredQuorum

from metashell.live.attach import Attachment, load_command_config
from tests.tls_material import TestCA

pytestmark = [pytest.mark.kafka, pytest.mark.parametrize("kafka_dist", VERSIONS[-1:], indirect=True)]

REPO = Path(__file__).resolve().parents[3]
METASHELL_TIMEOUT_S = 120  # a guard against a hang, not a claim
ATTACH_TIMEOUT_S = 60


@pytest.fixture
def sasl_quorum(kafka_dist, secured_quorums, tmp_path_factory) -> SecuredQuorum:
    """One Kafka controller, its listener SASL_SSL with SCRAM-SHA-512 (shared: ask, don't change)."""
    return secured_quorums.get("sasl", lambda: SecuredQuorum.sasl_ssl(kafka_dist, tmp_path_factory.mktemp("secured-sasl")))


@pytest.fixture
def mtls_quorum(kafka_dist, secured_quorums, tmp_path_factory) -> SecuredQuorum:
    """One Kafka controller, its listener SSL with ssl.client.auth=required (shared)."""
    return secured_quorums.get("mtls", lambda: SecuredQuorum.mutual_tls(kafka_dist, tmp_path_factory.mktemp("secured-mtls")))


def metashell(quorum: SecuredQuorum, config: Path | None, commands: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "metashell.cli", "--bootstrap-controller", quorum.bootstrap_controllers]
    if config is not None:
        argv += ["--command-config", str(config)]
    return subprocess.run([*argv, "-c", commands], capture_output=True, text=True, cwd=REPO,
                          stdin=subprocess.DEVNULL, timeout=METASHELL_TIMEOUT_S)


def with_cluster_id(config: Path, cluster_id: str) -> Path:
    """The command config plus cluster.id: the attachment's Fetch then names the cluster, which
    Kafka's leader checks (INCONSISTENT_CLUSTER_ID otherwise)."""
    named = config.with_name(f"{config.stem}-named.properties")
    named.write_text(config.read_text() + f"cluster.id={cluster_id}\n")
    return named


def assert_attached_to(quorum: SecuredQuorum, config: Path) -> None:
    """metashell shows the quorum Kafka's tool described: its leader, its voters and their directories."""
    kafka = quorum.status
    voters = sorted(json.loads(kafka["CurrentVoters"]), key=lambda v: v["id"])
    commands = ["cat /quorum/leader", "ls /quorum/voters", *(f"cat /quorum/voters/{v['id']}/directory-id" for v in voters)]
    done = metashell(quorum, with_cluster_id(config, kafka["ClusterId"]), "; ".join(commands))
    assert done.returncode == 0, done.stderr
    # the one thing on stderr is the note of where it attached
    assert all(line.startswith("metashell: note: attached to ") for line in done.stderr.splitlines()), done.stderr
    assert done.stdout.splitlines() == [kafka["LeaderId"], *(str(v["id"]) for v in voters),
                                        *(v["directoryId"] for v in voters)]


def assert_refused(done: subprocess.CompletedProcess, *, words: tuple[str, ...], secrets: tuple[str, ...]) -> str:
    """One line on stderr, exit 1, nothing served, no secret; the line names one of ``words``."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("metashell: "), done.stderr
    assert "Traceback" not in done.stderr
    for secret in secrets:
        assert secret not in done.stderr
    # the refusal is the peer's, not ours before connecting (as "not supported" would be)
    assert "not supported" not in lines[0] and any(word.lower() in lines[0].lower() for word in words), lines[0]
    return lines[0]


def assert_kafka_refuses(quorum: SecuredQuorum, config: Path, exception: str) -> None:
    """Kafka's own tool is refused too, with ``exception`` (a Java class name) in what it says."""
    done = quorum.describe_status(config, check=False)
    assert done.returncode != 0, done.stdout
    assert exception in done.stdout + done.stderr, (done.stdout + done.stderr)[-2000:]


# -- SASL_SSL with SCRAM-SHA-512 -------------------------------------------------------------------


def test_metashell_attaches_over_sasl_ssl_scram(sasl_quorum):
    assert_attached_to(sasl_quorum, sasl_quorum.client_config("admin"))


def test_the_attachment_learns_kafkas_cluster_id_over_sasl_ssl(sasl_quorum):
    config = load_command_config(str(sasl_quorum.client_config("admin")))
    woken = threading.Event()
    with Attachment(sasl_quorum.bootstrap_controllers, command_config=config, on_update=woken.set) as attachment:
        attachment.start()
        update = attachment.wait_caught_up(ATTACH_TIMEOUT_S)
        assert update.status.error is None
        assert update.status.leader_id == int(sasl_quorum.status["LeaderId"])
        # the high watermark Kafka reported was committed before: the attachment reached it
        assert update.status.applied_offset + 1 >= int(sasl_quorum.status["HighWatermark"])
        # DescribeCluster and DescribeQuorum are asked beside the fetching, over the same SASL_SSL
        deadline = time.monotonic() + ATTACH_TIMEOUT_S
        while (attachment.cluster_id is None or attachment.quorum is None) and time.monotonic() < deadline:
            woken.wait(0.5)
            woken.clear()
        assert attachment.cluster_id == sasl_quorum.status["ClusterId"]
        assert attachment.quorum.leader_id == int(sasl_quorum.status["LeaderId"])


def test_a_wrong_scram_password_is_one_line(sasl_quorum):
    wrong = "not-the-admin-password-3b1e"
    config = sasl_quorum.client_config("wrong-password", password=wrong)
    assert_kafka_refuses(sasl_quorum, config, "SaslAuthenticationException")
    assert_refused(metashell(sasl_quorum, config, "ls /quorum"), words=("authentication", "SCRAM", "credentials"),
                   secrets=(wrong, sasl_quorum.passwords[ADMIN_USER]))


def test_a_truststore_of_another_ca_is_one_line(sasl_quorum):
    config = sasl_quorum.client_config("unknown-ca", trust=TestCA("a CA the controller's certificate is not from"))
    assert_kafka_refuses(sasl_quorum, config, "SslAuthenticationException")
    assert_refused(metashell(sasl_quorum, config, "ls /quorum"), words=("certificate", "verif", "trust", "handshake"),
                   secrets=(sasl_quorum.passwords[ADMIN_USER],))


def test_a_user_without_acls_is_one_line(sasl_quorum):
    """``nobody`` authenticates, but no ACL lets it describe or fetch the cluster's metadata."""
    config = sasl_quorum.client_config("nobody", user=NOBODY_USER)
    assert_kafka_refuses(sasl_quorum, config, "ClusterAuthorizationException")
    assert_refused(metashell(sasl_quorum, config, "ls /quorum"), words=("authoriz", "ACL", "CLUSTER_AUTHORIZATION"),
                   secrets=(sasl_quorum.passwords[NOBODY_USER],))


# -- SSL with ssl.client.auth=required ------------------------------------------------------------


def test_metashell_attaches_over_mutual_tls(mtls_quorum):
    assert_attached_to(mtls_quorum, mtls_quorum.client_config("client"))


def test_an_expired_client_certificate_is_one_line(mtls_quorum):
    config = mtls_quorum.client_config("expired", certificate="expired client", expired=True)
    assert_kafka_refuses(mtls_quorum, config, "SslAuthenticationException")
    assert_refused(metashell(mtls_quorum, config, "ls /quorum"),
                   words=("certificate", "expired", "handshake"), secrets=(KEY_PASSWORD,))


def test_no_client_certificate_is_one_line(mtls_quorum):
    """A truststore but no keystore: the controller requires a certificate and refuses the handshake."""
    config = mtls_quorum.client_config("no-certificate", certificate=None)
    assert "ssl.keystore.location" not in config.read_text()
    assert_refused(metashell(mtls_quorum, config, "ls /quorum"), words=("certificate", "handshake"), secrets=())


def test_plaintext_to_the_tls_port_is_one_line(mtls_quorum):
    """No command config: PLAINTEXT. Kafka's TLS listener answers the ApiVersions request with a
    TLS alert record (15 03 03 00 02 02 50) and closes; metashell must end with one line, serving
    nothing. Today the attachment retries until its 30 s attach timeout and names the alert's
    first bytes as a 352518912-byte frame; a client that knew a TLS alert when it saw one would
    say "set security.protocol" at once (this test then takes a second, not 30)."""
    assert_refused(metashell(mtls_quorum, None, "ls /quorum"),
                   words=("TLS", "security.protocol", "not caught up"), secrets=())
