"""``kraftd cluster up --kafka-brokers VERSION``: Apache Kafka's own brokers on our controllers.

The real CLI in subprocesses: one kraftd controller and two Kafka broker JVMs (the newest Kafka
server the harness offers, its jars from the harness's cache, handed over as --kafka-home so CI
finds them where it fetched them). The module shares one cluster; the tests run in the file's
order and each leaves every node up, except the last, which takes the cluster down. Every process
it ran is SIGKILLed at the end, failure or not. Waits poll to a deadline (a safety net only).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from engine.common.java_properties import load_properties
from engine.image.metadata_loader import load_log_dir
from engine.image.metadata_version import parse_release_version
from engine.cluster.chaos import Chaos
from engine.cluster.kafka_brokers import release_for
from engine.cluster.layout import load_layout
from engine.cluster.view import observe
from engine.cluster.kafka_dist import KafkaUnavailable, find_distribution
from engine.cluster.processes import kraftd
from tests.engine.cluster.test_cluster_tool import Cluster, ours
from tests.engine.server.test_controller_processes import poll

pytestmark = pytest.mark.kafka

SESSION_TIMEOUT_MS = 5000  # a killed broker is fenced after this (Kafka's 9 s would slow the suite; 2 s fenced live ones under load)
CLIENT_TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def cluster(kafka_newest_server, tmp_path_factory) -> Cluster:
    c = Cluster(tmp_path_factory.mktemp("kafka-cluster") / "state")
    try:
        c.up_output = c.ok("up", "--controllers", "1", "--brokers", "2", "--racks", "2",
                           "--kafka-brokers", kafka_newest_server.version,
                           "--kafka-home", str(kafka_newest_server.libs.parent),
                           "--heartbeat-interval-ms", "500", "--session-timeout-ms", str(SESSION_TIMEOUT_MS))
        c.version = kafka_newest_server.version
        yield c
    finally:
        c.kill_all()


def bootstrap(cluster: Cluster) -> str:
    return next(line for line in cluster.up_output.splitlines() if line.startswith("bootstrap.servers="))[18:]


def test_up_starts_kafka_brokers_on_our_controller(cluster):
    lines = cluster.up_output.splitlines()
    nodes = {n["name"]: n for n in cluster.registry()["nodes"]}
    assert lines[-2:] == [f"bootstrap.servers=127.0.0.1:{nodes['broker-1']['port']},127.0.0.1:{nodes['broker-2']['port']}",
                          f"bootstrap.controllers=127.0.0.1:{nodes['controller-1']['port']}"]
    assert f"brokers: Apache Kafka {cluster.version} " in cluster.up_output
    settings = cluster.registry()["settings"]
    assert settings["kafka_version"] == cluster.version and settings["release_version"] == release_for(cluster.version)
    props = (cluster.root / "broker-2" / "server.properties").read_text()
    assert "broker.rack=rack-2" in props and "kraftd.sim" not in props
    assert f"controller.quorum.bootstrap.servers=127.0.0.1:{nodes['controller-1']['port']}" in props
    # formatted by Kafka's kafka-storage, run by Kafka's own server main
    assert (cluster.root / "broker-2" / "data-2" / "meta.properties").is_file()
    cmdline = Path(f"/proc/{cluster.pids()['broker-2']}/cmdline").read_bytes().split(b"\0")
    assert b"kafka.Kafka" in cmdline and str(cluster.root / "broker-2" / "server.properties").encode() in cmdline
    rows = cluster.status()
    assert [rows[f"broker-{i}"]["STATE"] for i in (1, 2)] == ["unfenced", "unfenced"]
    assert rows["controller-1"]["STATE"] == "leader"


def test_a_topic_made_through_the_kafka_brokers(cluster):
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap(cluster), request_timeout_ms=CLIENT_TIMEOUT_MS)
    try:
        admin.create_topics([NewTopic("through-kafka", 3, 2)])
        # CreateTopics answers once our controller commits; the answering broker's metadata cache
        # learns the topic a moment later (Kafka's own brokers behave so), so describe until it has
        described = poll(lambda: next((t for t in admin.describe_topics(["through-kafka"]) if t["error_code"] == 0), None),
                         "the Kafka broker's metadata to carry the new topic", interval_s=0.2)
    finally:
        admin.close()
    assert len(described["partitions"]) == 3
    # the Kafka broker forwarded it to our controller: it is in our metadata log
    image, _ = load_log_dir(cluster.root / "controller-1" / "metadata")
    topic = image.topics.topic("through-kafka")
    assert topic is not None and all(sorted(p.replicas) == [1, 2] for p in topic.partitions.values())


def test_simulated_only_faults_are_refused_in_one_line(cluster):
    for args in (("lag", "broker-1", "100"), ("disk-fail", "broker-2")):
        result = cluster.run(*args)
        assert result.returncode == 1 and "Apache Kafka" in result.stderr and "simulated brokers only" in result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_chaos_picks_only_process_faults_for_kafka_brokers(cluster):
    layout = load_layout(cluster.root)
    choices = Chaos(layout, random.Random(0), lambda line: None, 60.0).faults(observe(layout))
    assert {action for action, node in choices if node.role == "broker"} == {"kill", "stop", "pause"}


@pytest.mark.parametrize("how", ["kill", "stop"])
def test_a_kafka_broker_gone_is_fenced_and_unfenced_after_start(cluster, how):
    """kill: SIGKILL, fenced when its session expires; stop: SIGTERM, Kafka's controlled shutdown."""
    name, pid = "broker-1", cluster.pids()["broker-1"]
    assert cluster.ok(how, name).startswith(f"{name}: {how}ped" if how == "stop" else f"{name}: killed")
    assert not ours(pid, cluster.root) and cluster.status()[name]["PROCESS"] == "down"
    poll(lambda: cluster.state(name) == "fenced", f"{name} fenced after {how}")
    cluster.ok("start", name)  # returns once it is unfenced
    assert cluster.state(name) == "unfenced" and ours(cluster.pids()[name], cluster.root)


def test_the_workload_administers_kafkas_brokers(cluster):
    """``kraftd cluster workload`` through Kafka's own brokers (they forward to our controller):
    what it prints is what the image then holds. Two brokers: a reassignment is a leader move."""
    from tests.engine.cluster.test_cluster_workload import SAFETY_S, expected_state, image_holds, steps

    result = cluster.run("workload", "--steps", "20", "--seed", "4", "--interval-ms", "150")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = steps(result.stdout)
    assert len(lines) == 20 and not [line for line in lines if "refused" in line[2] or "failed" in line[2]], lines
    assert {"create", "config", "leader"} <= {kind for kind, _, _ in lines}, lines
    want = expected_state(lines)
    poll(lambda: image_holds(cluster, want), "the image holding what the workload printed", timeout_s=SAFETY_S)


def test_down_leaves_no_process(cluster):
    pids = cluster.pids()
    out = cluster.ok("down")
    assert out.splitlines() == ["broker-1: stopped", "broker-2: stopped", "controller-1: stopped"]
    assert not [pid for pid in pids.values() if ours(pid, cluster.root)]
    assert cluster.pids() == {}


def test_a_secured_cluster_of_kafka_brokers(kafka_newest_server, tmp_path):
    """``--security SASL_SSL`` with Kafka's brokers: Kafka reads the configs, certificates and
    JAAS logins ``up`` made, registers over our SASL_SSL controller listener, and serves a real
    client that logs in with the printed client.properties (SCRAM over TLS, as User:admin)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    c = Cluster(tmp_path / "state")
    try:
        c.up_output = c.ok("up", "--controllers", "1", "--brokers", "1", "--racks", "0", "--security", "SASL_SSL",
                           "--kafka-brokers", kafka_newest_server.version,
                           "--kafka-home", str(kafka_newest_server.libs.parent), "--heartbeat-interval-ms", "500")
        assert c.up_output.splitlines()[-1] == f"command.config={c.root / 'client.properties'}"
        assert c.state("broker-1") == "unfenced"
        props = load_properties(c.root / "client.properties")
        admin = AdminClient({"bootstrap.servers": bootstrap(c), "security.protocol": props["security.protocol"],
                             "sasl.mechanism": props["sasl.mechanism"],
                             "sasl.username": "admin", "sasl.password": jaas_password(props["sasl.jaas.config"]),
                             "ssl.ca.location": props["ssl.truststore.location"], "log_level": 0})
        admin.create_topics([NewTopic("through-a-secured-kafka-broker", 2, 1)])["through-a-secured-kafka-broker"] \
            .result(CLIENT_TIMEOUT_MS / 1000)
        topic = poll(lambda: admin.list_topics(timeout=CLIENT_TIMEOUT_MS / 1000).topics.get(
            "through-a-secured-kafka-broker"), "the topic in the broker's metadata")
        assert sorted(topic.partitions) == [0, 1]
        assert c.ok("down").splitlines() == ["broker-1: stopped", "controller-1: stopped"]
    finally:
        c.kill_all()


def jaas_password(jaas: str) -> str:
    return re.search(r'password="([^"]*)"', jaas).group(1)


# ------------------------------------------------------------------ without a JVM
def test_release_follows_the_broker_version_capped_at_ours():
    assert release_for("4.1.2") == "4.1"
    ours = parse_release_version(None).release
    assert release_for("9.0.0") == ours and release_for(f"{ours}.7") == ours


def test_missing_jars_are_one_line_saying_how_to_get_them(tmp_path, monkeypatch):
    monkeypatch.setenv("METASHELL_KAFKA_CACHE", str(tmp_path / "cache"))
    with pytest.raises(KafkaUnavailable, match=r"give --kafka-home DIR .*mvn .*-Dkafka\.version=9\.9\.9"):
        find_distribution("9.9.9")
    (tmp_path / "cache" / "9.9.9-server" / "libs").mkdir(parents=True)
    (tmp_path / "cache" / "9.9.9-server" / "libs" / "kafka_2.13-9.9.9.jar").write_bytes(b"")
    assert find_distribution("9.9.9").libs == tmp_path / "cache" / "9.9.9-server" / "libs"
    with pytest.raises(KafkaUnavailable, match="holds Kafka 9.9.9, not 4.3.1"):
        find_distribution("4.3.1", tmp_path / "cache" / "9.9.9-server")
    state = tmp_path / "state"
    result = kraftd("cluster", "up", "--dir", str(state), "--kafka-brokers", "4.3.1", "--kafka-home", str(tmp_path))
    assert result.returncode == 1 and result.stderr.startswith("kraftd: ") and result.stderr.count("\n") == 1
    assert "kafka_2.13-4.3.1.jar" in result.stderr and not (state / "cluster.json").exists()
