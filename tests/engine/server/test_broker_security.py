"""The simulated broker served and reaching out over SASL_SSL with SCRAM-SHA-512 (issue 15).

One cluster for the module, in-process on 127.0.0.1 on its own event loop thread (the clients
here block): a controller whose controller listener is SASL_SSL, its SCRAM users bootstrapped
the way ``kraftd storage format --add-scram`` does (the same format_storage call), and two
simulated brokers whose only listener is SASL_SSL too. Each broker's metadata observer and its
channel to the controller log in as the controller listener's JAAS user; its replica fetcher logs
in to the other broker on the inter-broker listener. A real client (confluent-kafka, librdkafka's
own TLS and SCRAM) creates a topic through a broker, adds a user there, and is refused for a
wrong password. Every wait is a safety net against hangs, never a performance claim.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from engine.broker.broker_lifecycle import BrokerState
from engine.net.ports import pick_ports
from engine.server.broker_node import BrokerNode
from engine.server.broker_settings import load_broker_settings
from engine.server.controller_node import ControllerNode, load_controller_settings
from engine.admin.storage_format import format_storage
from tests.node_quorum import CLUSTER_ID, TIMEOUTS, wait_until
from tests.tls_material import TestCA, write_pem

admin_module = pytest.importorskip("confluent_kafka.admin")

SCRAM = "SCRAM-SHA-512"
PASSWORDS = {"controller": "controller-secret-3b1e", "broker": "broker-secret-77a0", "admin": "admin-secret-c915"}
KEY_PASSWORD = "key-secret-4d2c"
BROKER_IDS = (7, 8)
DEADLINE_S = 30
# quick heartbeats to unfence fast; a session long enough that a loaded machine does not fence a broker mid-test
FAST = {"broker.heartbeat.interval.ms": 100, "broker.session.timeout.ms": 6000}


def jaas(user: str) -> str:
    return f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" ' \
           f'password="{PASSWORDS[user]}";'


def write_properties(path: Path, props: dict[str, object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


class Rig:
    """The running nodes on their own loop thread, and what a client needs to reach the brokers."""

    def __init__(self, root: Path):
        self.root = root
        ca = TestCA()
        self.pem = write_pem(root / "tls", "node", ca.issue("kraftd"), key_password=KEY_PASSWORD)
        (port,) = pick_ports(1)
        tls = {"ssl.keystore.type": "PEM", "ssl.keystore.location": self.pem.keystore,
               "ssl.key.password": KEY_PASSWORD, "ssl.truststore.type": "PEM",
               "ssl.truststore.location": self.pem.truststore}
        # the controller listener's settings, which the brokers' channels to it read as well
        self.common = {"controller.listener.names": "CONTROLLER", "controller.quorum.bootstrap.servers":
                       f"127.0.0.1:{port}", "sasl.enabled.mechanisms": SCRAM,
                       "sasl.mechanism.controller.protocol": SCRAM,
                       f"listener.name.controller.{SCRAM.lower()}.sasl.jaas.config": jaas("controller"), **tls}
        config = write_properties(root / "controller.properties", {
            "process.roles": "controller", "node.id": 1, "listeners": f"CONTROLLER://127.0.0.1:{port}",
            "listener.security.protocol.map": "CONTROLLER:SASL_SSL,SECURE:SASL_SSL",
            "metadata.log.dir": root / "controller",
            # the brokers' listener unclean recovery asks, logged in as a broker is there
            "inter.broker.listener.name": "SECURE", "sasl.mechanism.inter.broker.protocol": SCRAM,
            f"listener.name.secure.{SCRAM.lower()}.sasl.jaas.config": jaas("broker"),
            **self.common, **TIMEOUTS, **FAST})
        format_storage(config, CLUSTER_ID, standalone=True, out=lambda line: None,
                       add_scram=[f"{SCRAM}=[name={user},password={password}]" for user, password in PASSWORDS.items()])
        self.controller = ControllerNode(load_controller_settings(config))
        self.brokers = [BrokerNode(load_broker_settings(self.broker_config(broker_id))) for broker_id in BROKER_IDS]
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def broker_config(self, broker_id: int) -> Path:
        path = write_properties(self.root / f"broker{broker_id}.properties", {
            "process.roles": "broker", "node.id": broker_id, "listeners": "SECURE://127.0.0.1:0",
            "listener.security.protocol.map": "CONTROLLER:SASL_SSL,SECURE:SASL_SSL",
            "inter.broker.listener.name": "SECURE", "sasl.mechanism.inter.broker.protocol": SCRAM,
            f"listener.name.secure.{SCRAM.lower()}.sasl.jaas.config": jaas("broker"),
            "log.dirs": self.root / f"broker{broker_id}", **self.common, **FAST})
        format_storage(path, CLUSTER_ID, out=lambda line: None)
        return path

    def run(self, work: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(DEADLINE_S * 2)

    async def start(self) -> None:
        await self.controller.start()
        for broker in self.brokers:
            await broker.start()
        for broker in self.brokers:
            await wait_until(lambda: broker.state == BrokerState.RUNNING, DEADLINE_S, "the broker RUNNING")

    async def stop(self) -> None:
        for broker in self.brokers:
            await broker.stop()
        await self.controller.stop()

    def close(self) -> None:
        try:
            self.run(self.stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(DEADLINE_S)
            self.loop.close()

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{b.servers[0].address[1]}" for b in self.brokers)

    def admin(self, user: str, password: str, errors: list[Any] | None = None) -> Any:
        return admin_module.AdminClient({
            **({"error_cb": errors.append} if errors is not None else {}),
            "bootstrap.servers": self.bootstrap, "security.protocol": "SASL_SSL", "sasl.mechanism": SCRAM,
            "sasl.username": user, "sasl.password": password, "ssl.ca.location": str(self.pem.truststore),
            "log_level": 0})

    def wait(self, predicate: Any, what: str) -> Any:
        return self.run(wait_until(predicate, DEADLINE_S, what))


@pytest.fixture(scope="module")
def rig(tmp_path_factory) -> Iterator[Rig]:
    rig = Rig(tmp_path_factory.mktemp("broker-security"))
    try:
        rig.run(rig.start())
        yield rig
    finally:
        rig.close()


def test_brokers_register_over_sasl_ssl_with_their_listeners_protocol(rig: Rig) -> None:
    """Observer, registration and heartbeats all went through the controller's SASL_SSL listener."""
    for broker in rig.brokers:
        registration = rig.wait(lambda: (r := rig.controller.image.cluster.brokers.get(broker.settings.node_id))
                                and not r.fenced and r, "the broker unfenced in the controller's image")
        (endpoint,) = registration.endpoints
        assert (endpoint.name, endpoint.port, endpoint.security_protocol) == \
            ("SECURE", broker.servers[0].address[1], 3)  # SASL_SSL's id
        assert broker.driver.client.quorum.leader_id == 1
        assert broker.image.provenance.last_offset > 0


def test_a_real_client_creates_a_topic_through_a_secured_broker(rig: Rig) -> None:
    """confluent-kafka as admin over SASL_SSL/SCRAM: the CreateTopics is forwarded to the
    controller, the topic is in Metadata, and the followers fetch from their leaders over the
    inter-broker SASL_SSL listener (a leader answers Fetch only from a logged-in follower)."""
    admin = rig.admin("admin", PASSWORDS["admin"])
    futures = admin.create_topics([admin_module.NewTopic("through-sasl-ssl", num_partitions=2,
                                                         replication_factor=2)], request_timeout=DEADLINE_S)
    futures["through-sasl-ssl"].result(DEADLINE_S)
    # CreateTopics answers once the controller committed; the broker that answers Metadata may not
    # have replayed that yet (Kafka's Admin docs say the same), so ask until it has
    metadata = admin.list_topics(timeout=DEADLINE_S)
    for _ in range(DEADLINE_S * 10):
        if "through-sasl-ssl" in metadata.topics:
            break
        time.sleep(0.1)
        metadata = admin.list_topics(timeout=DEADLINE_S)
    assert sorted(metadata.topics["through-sasl-ssl"].partitions) == [0, 1]
    assert sorted(metadata.brokers) == list(BROKER_IDS)
    rig.wait(lambda: rig.controller.image.topics.topic("through-sasl-ssl") is not None, "the topic in the image")
    rig.wait(lambda: all(b.replicas.sim.counters.fetches_answered > 0 for b in rig.brokers),
             "each leader answering its follower's fetches")


def test_unclean_recovery_reaches_the_brokers_on_their_sasl_ssl_listener(rig: Rig, caplog) -> None:
    """The controller's questions go to the listener inter.broker.listener.name names (the
    brokers have no PLAINTEXT one), over TLS and logged in with SCRAM. A simulated broker holds no
    data, so its ListOffsets answer is a per-partition error, which the edge logs: the login and
    the exchange went through. With a wrong password the broker refuses the login."""
    from types import SimpleNamespace

    from engine.controller.unclean_recovery import LogQuery, UncleanRecoveryState
    from engine.server.unclean_recovery_queries import UncleanRecoveryQueries, broker_address

    wired = rig.controller.controller.recovery_queries
    assert (wired.listener, wired.security.protocol.name, wired.security.username) == ("SECURE", "SASL_SSL", "broker")
    image = rig.controller.image
    broker_id = rig.brokers[0].settings.node_id
    assert broker_address(image, broker_id) is None  # no PLAINTEXT listener to fall back on
    assert broker_address(image, broker_id, wired.listener) == ("127.0.0.1", rig.brokers[0].servers[0].address[1])

    def ask(security: Any) -> list[str]:
        """The edge's own path (send_pending, then its task) with the wired listener and ``security``."""
        state = UncleanRecoveryState(outbox=[LogQuery(uuid.uuid4(), "no-such-topic", 0, broker_id, 0, 0)])
        core = SimpleNamespace(soft=SimpleNamespace(unclean_recovery=state), is_active=True, image=image)
        queries = UncleanRecoveryQueries(lambda: core, lambda: None, listener=wired.listener, security=security)

        async def once() -> None:
            queries.send_pending()
            await asyncio.gather(*queries._tasks)
            await queries.close()

        caplog.clear()
        with caplog.at_level("INFO", logger="engine.server.unclean_recovery"):
            rig.run(once())
        assert not state.inbox
        return [r.getMessage() for r in caplog.records if r.name == "engine.server.unclean_recovery"]

    assert ask(wired.security) == [f"unclean recovery: broker {broker_id} on no-such-topic-0: invalid_request"]
    (refused,) = ask(dataclasses.replace(wired.security, password="wrong-password-51aa"))
    assert refused.startswith("unclean recovery: 127.0.0.1:") and "invalid credentials" in refused
    assert "wrong-password" not in refused
    assert all(b.state == BrokerState.RUNNING for b in rig.brokers)


def test_a_user_added_through_the_broker_then_logs_in_there(rig: Rig) -> None:
    """The broker checks SCRAM against its own image: a credential AlterUserScramCredentials wrote
    through it counts there once the broker replayed it."""
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    admin = rig.admin("admin", PASSWORDS["admin"])
    futures = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"carol-secret-91f0")])
    for future in futures.values():
        future.result(DEADLINE_S)
    broker = rig.brokers[0]
    rig.wait(lambda: any(user == "carol" for _, user in broker.image.scram), "carol in the broker's image")
    metadata = rig.admin("carol", "carol-secret-91f0").list_topics(timeout=DEADLINE_S)
    assert sorted(metadata.brokers) == list(BROKER_IDS)


def test_a_wrong_password_is_the_clients_error_and_the_broker_keeps_serving(rig: Rig) -> None:
    from confluent_kafka import KafkaError

    errors: list[Any] = []
    refused = rig.admin("admin", "wrong-password-2e6d", errors)
    for _ in range(400):  # until librdkafka reports the refusal (it retries the login meanwhile)
        if errors:
            break
        refused.poll(0.05)
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION
    assert f"invalid credentials with SASL mechanism {SCRAM}" in errors[0].str()
    assert all(b.state == BrokerState.RUNNING for b in rig.brokers)
    metadata = rig.admin("admin", PASSWORDS["admin"]).list_topics(timeout=DEADLINE_S)
    assert sorted(metadata.brokers) == list(BROKER_IDS)


def test_a_broker_listener_with_required_client_certificates(tmp_path: Path) -> None:
    """SSL with listener.name.<l>.ssl.client.auth=required: a client presenting a certificate of
    the listener's CA is served (the controller side stays PLAINTEXT here); one without is refused
    in the handshake, and the broker goes on serving."""
    from engine.net.errors import NetError
    from engine.net.kafka_client import KafkaClient
    from engine.net.security_config import client_security
    from engine.records.kio_codec import protocol_module
    from tests.node_quorum import start_quorum
    from tests.engine.server.test_broker_node import bootstrap_of

    ca = TestCA()
    server, client = (write_pem(tmp_path / "tls", name, ca.issue(name)) for name in ("broker", "client"))
    metadata = protocol_module("metadata", 12, "request").MetadataRequest

    async def main() -> None:
        configs, (controller,) = await start_quorum(tmp_path / "quorum", 1, **FAST)
        bootstrap = bootstrap_of(configs)
        config = write_properties(tmp_path / "broker.properties", {
            "process.roles": "broker", "node.id": 9, "listeners": "MTLS://127.0.0.1:0",
            "listener.security.protocol.map": "MTLS:SSL,CONTROLLER:PLAINTEXT",
            "controller.listener.names": "CONTROLLER", "controller.quorum.bootstrap.servers": bootstrap,
            "ssl.keystore.type": "PEM", "ssl.keystore.location": server.keystore, "ssl.truststore.type": "PEM",
            "ssl.truststore.location": server.truststore, "listener.name.mtls.ssl.client.auth": "required",
            "log.dirs": tmp_path / "broker9", **FAST})
        format_storage(config, CLUSTER_ID, out=lambda line: None)
        broker = BrokerNode(load_broker_settings(config))
        try:
            await broker.start()
            await wait_until(lambda: broker.state == BrokerState.RUNNING, DEADLINE_S, "the broker RUNNING")
            (endpoint,) = controller.image.cluster.brokers[9].endpoints
            assert (endpoint.name, endpoint.security_protocol) == ("MTLS", 1)  # SSL's id
            address = broker.servers[0].address
            tls = {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                   "ssl.truststore.location": str(client.truststore)}
            keyed = {**tls, "ssl.keystore.type": "PEM", "ssl.keystore.location": str(client.keystore)}
            async with KafkaClient(client_id="no-certificate", security=client_security(tls, None)) as bare:
                with pytest.raises(NetError) as refused:
                    await bare.send(address, metadata(topics=None, allow_auto_topic_creation=False,
                                                      include_topic_authorized_operations=False), adapt=True)
                assert "refuse our certificate" in str(refused.value)
            async with KafkaClient(client_id="certified", security=client_security(keyed, None)) as certified:
                answer = await certified.send(address, metadata(topics=None, allow_auto_topic_creation=False,
                                                                include_topic_authorized_operations=False),
                                              adapt=True)
            assert [b.node_id for b in answer.brokers] == [9]
            assert broker.state == BrokerState.RUNNING
        finally:
            await broker.stop()
            await controller.stop()

    asyncio.run(asyncio.wait_for(main(), DEADLINE_S * 2))
