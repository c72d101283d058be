"""The simulated broker node against our real controller, in one process on 127.0.0.1.

A one-controller quorum (tests/node_quorum.py) and a BrokerNode with two log directories: the
broker registers with its listeners, rack and directory ids, follows the metadata log as a Raft
observer, heartbeats through STARTING and RECOVERY to RUNNING (unfenced in the controller's
image), reports a failed log dir, shuts down under control and names its clean broker epoch at
the next start. Deadlines are safety nets, never performance claims.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from engine.broker.broker_lifecycle import BrokerState
from engine.common.errors import ConfigError, StorageError
from engine.net.errors import NetError
from engine.net.kafka_client import KafkaClient
from engine.net.ports import pick_ports
from engine.records.kio_codec import ErrorCode, i8, i16, i32, protocol_module
from engine.server.broker_node import BrokerNode
from engine.server.broker_settings import CLEAN_SHUTDOWN_FILE, load_broker_settings, read_faults
from engine.server.node_process import build_nodes
from engine.cluster.processes import SOURCE_ROOT, kraftd
from engine.admin.storage_format import format_storage
from tests.node_quorum import CLUSTER_ID, start_quorum, wait_until

# processes, sockets and timers of their own: out of the fast tier
pytestmark = pytest.mark.slow

DEADLINE_S = 30


def in_loop(test):
    """Run an async test in its own event loop (the suite has no asyncio plugin)."""
    @functools.wraps(test)
    def run(tmp_path: Path) -> None:
        asyncio.run(asyncio.wait_for(test(tmp_path), 120))
    return run
BROKER_ID = 7
FAST = {"broker.heartbeat.interval.ms": 100, "broker.session.timeout.ms": 5000}  # 2 s fenced live brokers under load


def broker_config(root: Path, bootstrap: str, port: int = 0, **extra: object) -> Path:
    props = {"process.roles": "broker", "node.id": BROKER_ID, "listeners": f"PLAINTEXT://127.0.0.1:{port}",
             "controller.listener.names": "CONTROLLER", "controller.quorum.bootstrap.servers": bootstrap,
             "log.dirs": f"{root / 'data0'},{root / 'data1'}", "broker.rack": "rack-a",
             "kraftd.sim.faults.file": root / "faults.properties", **FAST, **extra}
    root.mkdir(parents=True, exist_ok=True)
    path = root / "broker.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def formatted_broker(root: Path, bootstrap: str, **extra: object) -> Path:
    config = broker_config(root, bootstrap, **extra)
    format_storage(config, CLUSTER_ID, out=lambda line: None)
    return config


def registration(controller, broker_id: int = BROKER_ID):
    return controller.image.cluster.brokers.get(broker_id)


async def running_broker(tmp_path: Path, controller, config: Path) -> BrokerNode:
    node = BrokerNode(load_broker_settings(config))
    await node.start()
    await wait_until(lambda: node.state == BrokerState.RUNNING, DEADLINE_S, "the broker RUNNING")
    await wait_until(lambda: registration(controller) is not None and not registration(controller).fenced,
                     DEADLINE_S, "the broker unfenced in the controller's image")
    return node


def bootstrap_of(configs: list[Path]) -> str:
    return next(line.split("=", 1)[1] for line in configs[0].read_text().splitlines()
                if line.startswith("controller.quorum.bootstrap.servers="))


@in_loop
async def test_a_broker_registers_follows_the_log_and_is_unfenced(tmp_path: Path) -> None:
    configs, (controller,) = await start_quorum(tmp_path / "quorum", 1, **FAST)
    node = None
    try:
        config = formatted_broker(tmp_path / "broker", bootstrap_of(configs), **{"min.insync.replicas": 2})
        node = await running_broker(tmp_path, controller, config)
        reg = registration(controller)
        assert reg.incarnation_id == node.incarnation_id and reg.rack == "rack-a"
        assert sorted(reg.directories) == sorted(node.dir_ids.values())
        (endpoint,) = reg.endpoints
        assert (endpoint.name, endpoint.host, endpoint.port, endpoint.security_protocol) == \
            ("PLAINTEXT", "127.0.0.1", node.servers[0].address[1], 0)
        # the broker's own image follows the controller's (an observer of the metadata log)
        await wait_until(lambda: node.image.cluster.brokers.get(BROKER_ID) is not None and
                         not node.image.cluster.brokers[BROKER_ID].fenced, DEADLINE_S, "the broker's own image")
        assert node.driver.client.quorum.leader_id == controller.settings.node_id
        # its own static settings are what DescribeConfigs tells of it
        describe = protocol_module("describe_configs", 4, "request")
        async with KafkaClient(client_id="test") as client:
            response = await client.send(node.servers[0].address, describe.DescribeConfigsRequest(
                resources=(describe.DescribeConfigsResource(resource_type=i8(4), resource_name=str(BROKER_ID),
                                                            configuration_keys=("min.insync.replicas",)),),
                include_synonyms=False, include_documentation=False))
        (result,) = response.results
        assert [(c.name, c.value, c.config_source) for c in result.configs] == [("min.insync.replicas", "2", 4)]
    finally:
        if node is not None:
            await node.stop()
        await controller.stop()


@in_loop
async def test_a_controlled_shutdown_leaves_the_clean_epoch_for_the_next_registration(tmp_path: Path) -> None:
    configs, (controller,) = await start_quorum(tmp_path / "quorum", 1, **FAST)
    node = None
    try:
        config = formatted_broker(tmp_path / "broker", bootstrap_of(configs))
        node = await running_broker(tmp_path, controller, config)
        epoch = node.lifecycle.broker_epoch
        assert epoch == registration(controller).epoch
        await node.controlled_shutdown()
        assert node.lifecycle.shutdown_reason == "controlled shutdown complete" and node.failure is None
        await wait_until(lambda: registration(controller).in_controlled_shutdown or registration(controller).fenced,
                         DEADLINE_S, "the controller to see the shutdown")
        for directory in ("data0", "data1"):
            assert json.loads((tmp_path / "broker" / directory / CLEAN_SHUTDOWN_FILE).read_text()) == \
                {"version": 0, "brokerEpoch": epoch}
        # the next start names that epoch, deletes the files, and registers (once the old
        # session expired: Kafka refuses a second registration of a live session)
        node = BrokerNode(load_broker_settings(config))
        await node.start()
        assert node.lifecycle.previous_broker_epoch == epoch
        assert not (tmp_path / "broker" / "data0" / CLEAN_SHUTDOWN_FILE).exists()
        await wait_until(lambda: node.state == BrokerState.RUNNING, DEADLINE_S, "the broker RUNNING again")
        assert registration(controller).epoch > epoch and registration(controller).incarnation_id == node.incarnation_id
    finally:
        if node is not None:
            await node.stop()
        await controller.stop()


@in_loop
async def test_a_failed_log_dir_is_reported_and_leaves_the_registration(tmp_path: Path) -> None:
    configs, (controller,) = await start_quorum(tmp_path / "quorum", 1, **FAST)
    node = None
    try:
        root = tmp_path / "broker"
        config = formatted_broker(root, bootstrap_of(configs))
        node = await running_broker(tmp_path, controller, config)
        failed = node.dir_ids[root / "data1"]
        (root / "faults.properties").write_text(f"failed.log.dirs={root / 'data1'}\nreplica.fetch.delay.ms=250\n")
        await wait_until(lambda: failed not in registration(controller).directories, DEADLINE_S,
                         "the failed dir to leave the registration")
        assert node.dir_ids[root / "data0"] in registration(controller).directories
        assert node.faults.fetch_delay_ms == 250 and node.state == BrokerState.RUNNING
    finally:
        if node is not None:
            await node.stop()
        await controller.stop()


@in_loop
async def test_a_broker_no_controller_registers_shuts_itself_down(tmp_path: Path) -> None:
    (port,) = pick_ports(1)
    config = formatted_broker(tmp_path / "broker", f"127.0.0.1:{port}",
                              **{"initial.broker.registration.timeout.ms": 500})
    node = BrokerNode(load_broker_settings(config))
    try:
        await node.start()
        await asyncio.wait_for(node.stopped.wait(), DEADLINE_S)
        assert node.failure == "unable to register with the controller quorum"
    finally:
        await node.stop()
    assert not (tmp_path / "broker" / "data0" / CLEAN_SHUTDOWN_FILE).exists()


def test_bad_broker_configs_and_storage_are_one_line(tmp_path: Path) -> None:
    def error(**changes: object) -> str:
        config = broker_config(tmp_path / "b", "127.0.0.1:9093", **changes)
        with pytest.raises(ConfigError) as info:
            load_broker_settings(config)
        assert "\n" not in str(info.value)
        return str(info.value)

    assert "no broker listener" in error(listeners="CONTROLLER://127.0.0.1:9093")
    assert "listener PLAINTEXT is SSL but ssl.keystore.location is not set" in error(
        **{"listener.security.protocol.map": "PLAINTEXT:SSL"})
    assert "sasl.mechanism.inter.broker.protocol is GSSAPI (Kafka's default)" in error(
        **{"listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
           "sasl.enabled.mechanisms": "PLAIN", "listener.name.plaintext.plain.sasl.jaas.config":
           'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";'})
    assert "inter.broker.listener.name" in error(**{"inter.broker.listener.name": "OTHER"})
    assert "broker.heartbeat.interval.ms" in error(**{"broker.heartbeat.interval.ms": "often"})
    faults = tmp_path / "faults.properties"
    faults.write_text("replica.fetch.failure.rate=2\n")
    with pytest.raises(ConfigError, match="a probability from 0 to 1"):
        read_faults(faults, "x")
    faults.write_text("replica.fetch.failure.rate=0.25\nreplica.fetch.delay.ms=7\n")
    assert (read_faults(faults, "x").fetch_failure_rate, read_faults(faults, "x").fetch_delay_ms) == (0.25, 7)
    assert "process.roles" in error(**{"process.roles": "controller"})

    config = broker_config(tmp_path / "c", "127.0.0.1:9093")
    with pytest.raises(StorageError, match="not formatted"):
        BrokerNode(load_broker_settings(config))
    format_storage(config, CLUSTER_ID, out=lambda line: None)
    (tmp_path / "c" / "data1" / "meta.properties").write_text(
        (tmp_path / "c" / "data1" / "meta.properties").read_text().replace(f"node.id={BROKER_ID}", "node.id=9"))
    with pytest.raises(StorageError, match="node.id 9"):
        BrokerNode(load_broker_settings(config))


def test_kraftd_start_refuses_an_unformatted_broker_in_one_line(tmp_path: Path) -> None:
    config = broker_config(tmp_path / "b", "127.0.0.1:9093")
    done = kraftd("start", "--config", str(config))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "not formatted" in done.stderr and "kraftd storage format" in done.stderr


def create_topic_request(name: str, partitions: int, replication_factor: int):
    module = protocol_module("create_topics", 7, "request")
    return module.CreateTopicsRequest(
        topics=(module.CreatableTopic(name=name, num_partitions=i32(partitions),
                                      replication_factor=i16(replication_factor), assignments=(), configs=()),),
        timeout=datetime.timedelta(seconds=10), validate_only=False)


@in_loop
async def test_two_brokers_replicate_shrink_and_expand_the_isr_and_assign_directories(tmp_path: Path) -> None:
    configs, (controller,) = await start_quorum(tmp_path / "quorum", 1, **FAST)
    lag = {"replica.lag.time.max.ms": 1000, "replica.fetch.wait.max.ms": 50}
    brokers: list[BrokerNode] = []
    try:
        for broker_id in (11, 12):  # the controller is node 1
            root = tmp_path / f"broker{broker_id}"
            config = broker_config(root, bootstrap_of(configs), **lag)
            config.write_text(config.read_text().replace(f"node.id={BROKER_ID}", f"node.id={broker_id}"))
            format_storage(config, CLUSTER_ID, out=lambda line: None)
            node = BrokerNode(load_broker_settings(config))
            brokers.append(node)
            await node.start()
        for node in brokers:
            await wait_until(lambda: node.state == BrokerState.RUNNING, DEADLINE_S, "both brokers RUNNING")
        # a client's CreateTopics through broker 11 is forwarded to the controller in an Envelope
        async with KafkaClient(client_id="test") as client:
            response = await client.send(brokers[0].servers[0].address, create_topic_request("t", 4, 2))
        assert [r.error_code for r in response.topics] == [ErrorCode.none]

        def partitions():
            topics = controller.image.topics
            topic_id = topics.by_name.get("t")
            return list(topics.by_id[topic_id].partitions.values()) if topic_id is not None else []

        await wait_until(lambda: len(partitions()) == 4, DEADLINE_S, "the topic")
        # every replica lands in one of its broker's directories (AssignReplicasToDirs)
        dirs = {node.settings.node_id: set(node.dir_ids.values()) for node in brokers}
        await wait_until(lambda: all(d in dirs[r] for p in partitions() for r, d in zip(p.replicas, p.directories)),
                         DEADLINE_S, "every replica assigned a directory")
        # broker 12 falls behind: the leaders on broker 11 drop it from their ISR, then take it back
        led_by_11 = lambda: [p for p in partitions() if p.leader == 11]  # noqa: E731
        assert led_by_11()
        (tmp_path / "broker12" / "faults.properties").write_text("replica.fetch.delay.ms=5000\n")
        await wait_until(lambda: all(p.isr == (11,) for p in led_by_11()), DEADLINE_S, "the ISR shrunk to [11]")
        (tmp_path / "broker12" / "faults.properties").write_text("replica.fetch.delay.ms=0\n")
        await wait_until(lambda: all(sorted(p.isr) == [11, 12] for p in led_by_11()), DEADLINE_S,
                         "the ISR expanded back")
        assert brokers[0].replicas.sim.counters.isr_shrinks_sent >= 1
        # the failure model: every fetch of broker 12 lost, then none
        (tmp_path / "broker12" / "faults.properties").write_text("replica.fetch.failure.rate=1\n")
        await wait_until(lambda: all(p.isr == (11,) for p in led_by_11()), DEADLINE_S, "the ISR shrunk again")
        assert brokers[1].replicas.sim.fetcher.counters.fetches_lost > 0
        (tmp_path / "broker12" / "faults.properties").write_text("replica.fetch.failure.rate=0\n")
        await wait_until(lambda: all(sorted(p.isr) == [11, 12] for p in led_by_11()), DEADLINE_S,
                         "the ISR expanded again")
    finally:
        for node in brokers:
            await node.stop()
        await controller.stop()


@in_loop
async def test_brokers_of_one_process_share_the_first_ones_metadata_observer(tmp_path: Path) -> None:
    configs, (controller,) = await start_quorum(tmp_path / "quorum", 1, **FAST)
    configs_of_brokers = []
    for broker_id in (21, 22, 23):
        config = broker_config(tmp_path / f"b{broker_id}", bootstrap_of(configs))
        config.write_text(config.read_text().replace(f"node.id={BROKER_ID}", f"node.id={broker_id}"))
        format_storage(config, CLUSTER_ID, out=lambda line: None)
        configs_of_brokers.append(config)
    none, brokers = build_nodes(configs_of_brokers)
    assert none is None
    try:
        for node in brokers:
            await node.start()
        for node in brokers:
            await wait_until(lambda: node.state == BrokerState.RUNNING, DEADLINE_S, "every broker RUNNING")
        assert brokers[1].driver is brokers[0].driver and brokers[2].metadata is brokers[0].metadata
        assert {b: not r.fenced for b, r in controller.image.cluster.brokers.items()} == {21: True, 22: True, 23: True}
        # one Raft observer fetches for the three (the first broker's replica key)
        assert {key.node_id for key in controller.driver.client.quorum.state.observers} == {21}
    finally:
        for node in reversed(brokers):
            await node.stop()
        await controller.stop()


def test_a_combined_node_serves_both_roles_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    controller_port, broker_port = pick_ports(2)
    config = tmp_path / "combined.properties"
    config.write_text("\n".join([
        "process.roles=broker,controller", "node.id=1",
        f"listeners=PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
        "controller.listener.names=CONTROLLER", f"controller.quorum.bootstrap.servers=127.0.0.1:{controller_port}",
        f"log.dirs={tmp_path / 'data'}", *(f"{k}={v}" for k, v in FAST.items())]) + "\n")
    format_storage(config, CLUSTER_ID, standalone=True, out=lambda line: None)
    process = subprocess.Popen([sys.executable, "-m", "engine.tools.cli", "start", "--config", str(config)],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, cwd=SOURCE_ROOT)
    try:
        metadata = protocol_module("metadata", 12, "request").MetadataRequest(
            topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)

        async def registered() -> Any:
            async with KafkaClient(client_id="test") as client:
                deadline = time.monotonic() + DEADLINE_S
                while True:
                    try:
                        response = await client.send(("127.0.0.1", broker_port), metadata)
                        if [b.node_id for b in response.brokers] == [1]:
                            return response
                    except NetError:
                        pass
                    assert time.monotonic() < deadline, "the combined node never listed itself"
                    await asyncio.sleep(0.1)

        response = asyncio.run(registered())  # unfenced: Metadata lists unfenced brokers only
        assert response.brokers[0].port == broker_port and response.cluster_id == CLUSTER_ID
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=DEADLINE_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert "is RUNNING" in stderr and "controlled shutdown" in stderr and "Traceback" not in stderr
    assert json.loads((tmp_path / "data" / CLEAN_SHUTDOWN_FILE).read_text())["brokerEpoch"] >= 0


@in_loop
async def test_a_broker_joining_late_loads_the_leaders_snapshot(tmp_path: Path) -> None:
    # small segments and frequent snapshots: the leader's log soon starts past offset 0, so a new
    # observer must begin with FetchSnapshot
    configs, (controller,) = await start_quorum(
        tmp_path / "quorum", 1, **FAST, **{"internal.metadata.log.segment.bytes": 2048,
                                            "metadata.log.max.record.bytes.between.snapshots": 1024})
    node = None
    try:
        await wait_until(lambda: controller.raft_log.start_offset > 0, DEADLINE_S, "the leader's log to start later")
        start = controller.raft_log.start_offset
        config = formatted_broker(tmp_path / "broker", bootstrap_of(configs))
        node = await running_broker(tmp_path, controller, config)
        assert node.raft_log.start_offset >= start  # it never fetched what the snapshot covers
        assert list((tmp_path / "broker" / "data0" / "__cluster_metadata-0").glob("*.checkpoint"))
        assert node.image.features == controller.image.features
    finally:
        if node is not None:
            await node.stop()
        await controller.stop()
