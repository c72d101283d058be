"""The Raft driver (engine.raft.raft_driver) and the controller node over real sockets, in process.

Three ControllerNodes run in one asyncio loop on 127.0.0.1, each over its own formatted
metadata directory (the storage tool's Python API, a dynamic quorum). Their ports go into the
configs, so they are chosen ahead (engine.net.ports) and the whole start is retried on new
ports if one is taken meanwhile. Every wait polls the state every 20 ms up to a generous
deadline, a safety net against hangs, never a performance claim.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from engine.server.controller_node import ControllerNode, check_storage, load_controller_settings
from engine.common.errors import ConfigError, StorageError
from engine.records.kio_codec import ErrorCode, protocol_module
from engine.net.kafka_client import KafkaClient
from engine.net.kafka_protocol import request_class, response_class
from engine.raft import raft_messages as rm
from engine.bench.node import BenchLoad
from engine.bench.load_generator import LatencyHistogram, LoadGenerator
from engine.raft.raft_driver import convert_message
from engine.server.controller_apis import controller_listener_apis
from engine.controller.commands import all_commands
from engine.admin.storage_format import format_storage

from tests.node_quorum import CLUSTER_ID, start_quorum, wait_until

def settled_leader(nodes: list[ControllerNode]) -> ControllerNode | None:
    """The leader, once every running node agrees on it."""
    leaders = [n for n in nodes if n.driver.is_leader]
    if len(leaders) != 1:
        return None
    leader = leaders[0]
    epoch = leader.driver.client.epoch
    agreed = all((n.driver.client.leader_and_epoch.leader_id, n.driver.client.epoch) == (leader.settings.node_id, epoch)
                 for n in nodes)
    return leader if agreed else None


def describe_cluster_request(version: int = 2, endpoint_type: int = 2) -> Any:
    m = protocol_module("describe_cluster", version, "request")
    fields = {"include_cluster_authorized_operations": False}
    if version >= 1:
        fields["endpoint_type"] = endpoint_type
    if version >= 2:
        fields["include_fenced_brokers"] = False
    return m.DescribeClusterRequest(**fields)


def describe_quorum_request(version: int = 2) -> Any:
    m = protocol_module("describe_quorum", version, "request")
    return m.DescribeQuorumRequest(topics=(m.TopicData(topic_name=rm.METADATA_TOPIC, partitions=(
        m.PartitionData(partition_index=0),)),))


def test_three_controllers_elect_commit_and_answer(tmp_path: Path) -> None:
    reports = {i: tmp_path / f"load{i}.json" for i in (1, 2, 3)}

    def with_load(node: ControllerNode) -> None:  # the benchmark's load, through the node's attach hook
        BenchLoad(node, 200, 5, reports[node.settings.node_id])

    async def scenario() -> None:
        net = KafkaClient(client_id="test", request_timeout_ms=2000)
        nodes: list[ControllerNode] = []
        try:
            _, nodes = await start_quorum(tmp_path, prepare=with_load)
            leader = await wait_until(lambda: settled_leader(nodes), 30, "a leader all three follow")
            followers = [n for n in nodes if n is not leader]

            # NoOps (and the load) commit on all three: every listener's offset moves on.
            mark = leader.last_committed_offset
            await wait_until(lambda: all(n.last_committed_offset >= mark + 3 for n in nodes), 30,
                             "commits past the leader's mark on every node")

            # DescribeQuorum: a follower names the leader; the leader lists the voters.
            address = followers[0].driver.address
            answer = await net.send(address, describe_quorum_request())
            part = answer.topics[0].partitions[0]
            assert part.error_code == ErrorCode.not_leader_or_follower
            assert part.leader_id == leader.settings.node_id
            answer = await net.send(leader.driver.address, describe_quorum_request())
            part = answer.topics[0].partitions[0]
            assert part.error_code == ErrorCode.none and part.leader_id == leader.settings.node_id
            assert sorted(v.replica_id for v in part.current_voters) == [1, 2, 3]
            assert all(v.log_end_offset > 0 for v in part.current_voters)
            assert part.high_watermark > 0 and not part.observers
            assert sorted(n.node_id for n in answer.nodes) == [1, 2, 3]
            # An older tool's v0 gets the same answer, in v0.
            old = await net.send(leader.driver.address, describe_quorum_request(0))
            assert type(old).__version__ == 0
            assert sorted(v.replica_id for v in old.topics[0].partitions[0].current_voters) == [1, 2, 3]

            # DescribeCluster: controllers only; names the leader and every voter's endpoint.
            cluster = await net.send(address, describe_cluster_request())
            assert cluster.error_code == ErrorCode.none and cluster.cluster_id == CLUSTER_ID
            assert cluster.controller_id == leader.settings.node_id
            assert sorted((b.broker_id, b.host, b.port) for b in cluster.brokers) == sorted(
                (n.settings.node_id, "127.0.0.1", n.driver.address[1]) for n in nodes)
            brokers = await net.send(address, describe_cluster_request(endpoint_type=1))
            assert brokers.error_code == ErrorCode.mismatched_endpoint_type

            # The leader's load (attached, as the benchmark does) commits and is reported every second.
            report_path = reports[leader.settings.node_id]
            await wait_until(lambda: (r := read_json(report_path)) and r["count"] > 0, 10, "a report of committed load")
            report = read_json(report_path)
            assert report["p50_ms"] is not None and report["p50_ms"] <= report["p99_ms"] <= report["max_ms"]

            # A graceful stop of the leader hands over (EndQuorumEpoch); the successor commits.
            epoch = leader.driver.client.epoch
            await leader.stop()
            assert read_json(report_path)["count"] >= report["count"]  # the final report, written at stop
            successor = await wait_until(lambda: settled_leader(followers), 10, "a successor")
            assert successor.driver.client.epoch > epoch
            mark = successor.last_committed_offset
            await wait_until(lambda: all(n.last_committed_offset > mark for n in followers), 10,
                             "commits under the successor")
            assert all(n.driver.failure is None for n in nodes)
        finally:
            await net.close()
            for node in nodes:
                await node.stop()

    asyncio.run(asyncio.wait_for(scenario(), 60))


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):  # not there yet
        return None


def test_a_restarted_node_reads_its_log_back(tmp_path: Path) -> None:
    """A single-voter quorum (--standalone) elects itself at once; a restart keeps the log and epoch."""

    async def scenario() -> tuple[int, int, int, int]:
        (config,), (node,) = await start_quorum(tmp_path, count=1)
        try:
            await wait_until(lambda: node.driver.is_leader, 10, "the solo leader")
            await wait_until(lambda: node.last_committed_offset >= 3, 10, "commits")
            epoch, offset = node.driver.client.epoch, node.last_committed_offset
        finally:
            await node.stop()
        node = ControllerNode(load_controller_settings(config))
        await node.start()  # the same port (outside the ephemeral range: nothing takes it meanwhile)
        try:
            await wait_until(lambda: node.driver.is_leader, 10, "the solo leader after the restart")
            await wait_until(lambda: node.last_committed_offset >= offset + 2, 10, "commits after the restart")
            return epoch, offset, node.driver.client.epoch, node.last_committed_offset
        finally:
            await node.stop()

    epoch, offset, epoch2, offset2 = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert epoch2 > epoch and offset2 > offset


# -- configuration and storage checks ------------------------------------------------------------

def test_config_errors_are_one_line(tmp_path: Path) -> None:
    base = {"process.roles": "controller", "node.id": "1", "listeners": "CONTROLLER://127.0.0.1:9093",
            "controller.listener.names": "CONTROLLER", "controller.quorum.bootstrap.servers": "127.0.0.1:9093",
            "metadata.log.dir": str(tmp_path / "meta")}

    def error(**changes: str | None) -> str:
        props = {**base, **changes}
        path = tmp_path / "c.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items() if v is not None))
        with pytest.raises(ConfigError) as info:
            load_controller_settings(path)
        assert "\n" not in str(info.value)
        return str(info.value)

    assert "process.roles must be controller" in error(**{"process.roles": "broker"})
    assert "process.roles" in error(**{"process.roles": None})
    assert "node.id" in error(**{"node.id": "x"})
    assert "is not in listeners" in error(**{"controller.listener.names": "OTHER"})
    assert "controller.listener.names" in error(**{"controller.listener.names": None})
    assert "log.dirs" in error(**{"metadata.log.dir": None})
    assert "bootstrap.servers" in error(**{"controller.quorum.bootstrap.servers": None})
    assert "election.timeout" in error(**{"controller.quorum.election.timeout.ms": "soon"})

    path = tmp_path / "ok.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in base.items()) + f"log.dirs={tmp_path / 'data'}\n")
    settings = load_controller_settings(path)
    assert settings.dynamic and settings.bind == ("127.0.0.1", 9093) and settings.metadata_log_dir == tmp_path / "meta"
    with pytest.raises(StorageError, match="kraftd storage format"):
        check_storage(settings)
    format_storage(path, CLUSTER_ID, standalone=True, out=lambda line: None)
    assert check_storage(settings).node_id == 1
    path.write_text(path.read_text().replace("node.id=1", "node.id=2"))
    with pytest.raises(StorageError, match="node.id 1 but the config says 2"):
        check_storage(load_controller_settings(path))


# -- pieces ------------------------------------------------------------------------------------------

def test_served_versions_are_the_cores() -> None:
    apis = controller_listener_apis(all_commands())
    assert (apis[52].min_version, apis[52].max_version) == (2, 2)  # Vote
    assert (apis[1].min_version, apis[1].max_version) == (17, 18)  # Fetch: as we send it, and v18 (KIP-1166)
    assert (apis[55].min_version, apis[55].max_version) == (0, 2)  # DescribeQuorum, converted
    assert (apis[60].min_version, apis[60].max_version) == (0, 2)  # DescribeCluster


def test_convert_message_between_versions() -> None:
    request = describe_quorum_request(1)
    up = convert_message(request, request_class(55, 2))
    assert type(up).__version__ == 2 and up.topics[0].partitions[0].partition_index == 0
    r = rm.DESCRIBE_RESP
    response = r.DescribeQuorumResponse(error_code=ErrorCode.none, error_message=None, nodes=(), topics=(
        r.TopicData(topic_name=rm.METADATA_TOPIC, partitions=(r.PartitionData(
            partition_index=0, error_code=ErrorCode.none, error_message=None, leader_id=1, leader_epoch=2,
            high_watermark=3, observers=(), current_voters=(r.ReplicaState(
                replica_id=1, replica_directory_id=None, log_end_offset=3, last_fetch_timestamp=5,
                last_caught_up_timestamp=5),)),)),))
    down = convert_message(response, response_class(55, 0))
    assert type(down).__version__ == 0
    voter = down.topics[0].partitions[0].current_voters[0]
    assert (voter.replica_id, voter.log_end_offset) == (1, 3)


def test_load_generator_rate_latency_and_report(tmp_path: Path) -> None:
    now = [100.0]
    gen = LoadGenerator(1000, 10, node_id=1, clock=lambda: now[0])
    appended: list[int] = []

    def append(records: list) -> int:
        appended.append(len(records))
        return sum(appended) - 1

    gen.tick(True, append)  # the first tick only starts the clock
    now[0] += 0.0625  # 62.5 records due: six batches of 10 now, the rest later
    gen.tick(True, append)
    assert appended == [10] * 6 and gen.appended == 60
    now[0] += 0.004

    class Batch:
        last_offset = 29

    gen.handle_commit([Batch()])
    assert gen.histogram.count == 30 and len(gen.pending) == 3
    assert gen.report()["p50_ms"] == pytest.approx(4.0, abs=0.11)
    gen.tick(False, append)  # leadership lost: the rest are lost
    assert gen.report()["lost"] == 30 and not gen.pending
    gen.write_report(tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text())["count"] == 30
    assert not list(tmp_path.glob(".*tmp"))


def test_latency_histogram_percentiles() -> None:
    h = LatencyHistogram()
    for value in range(1, 101):
        h.add(float(value))
    assert h.percentile(50) == pytest.approx(50.1) and h.percentile(99) == pytest.approx(99.1)
    assert h.percentile(100) == 100.0 and LatencyHistogram().percentile(50) is None
