"""The final proof: Apache Kafka's controller and ours in one dynamic quorum.

Three voters — two `kraftd start` controllers and one Kafka controller — and one Kafka broker,
for each Kafka version. The leadership is moved (by killing the leader until the wanted kind
leads) so that each kind is in turn the active controller, and each time the broker makes
metadata through it (topics, configs, a fenced and unfenced broker). Then:
- a Kafka standby has replayed what our controller wrote: still running, no fault in its log,
  caught up, and Kafka's own metadata shell reads its log into the image we wrote;
- our standbys have replayed what Kafka's controller wrote: still running, caught up, and they
  answer from their in-memory image (DescribeConfigs on a standby reads its committed image);
- every voter's log holds the same records: Kafka's own metadata shell, on each voter's log up
  to the common high watermark, prints the same /image, which our loader reads alike.
A Kafka standby that fails on our records is a bug of ours.
"""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from engine.image.metadata_loader import load_log_dir
from engine.net.kafka_client import KafkaClient
from engine.records.kio_codec import ErrorCode, i8, protocol_module
from engine.admin.quorum_client import default_send, find_leader
from kafka_peer.cluster import KafkaCluster
from kafka_peer.nodes import KafkaNode, NodeFailed, wait_until
from tests.kafka_shell_tree import KafkaTree, kafka_tree, log_until, parse_java, provenance_of

pytestmark = pytest.mark.kafka

KINDS = ("kraftd", "kraftd", "kafka")
LEADER_MOVES = 20  # each move is a coin toss or better: 8 failed once in 256 runs
FAULT = re.compile(r"Encountered [\w ]*fault")


def kind(node: KafkaNode) -> str:
    return "kraftd" if node.kraftd else "kafka"


def lead_with(cluster: KafkaCluster, wanted: str) -> KafkaNode:
    """Kill the leader (and bring it back) until a controller of the wanted kind leads."""
    for _ in range(LEADER_MOVES):
        leader = cluster.node(cluster.wait_leader())
        if kind(leader) == wanted:
            return leader
        leader.kill()
        wait_until(lambda: cluster.leader_id() not in (-1, leader.node_id), "a new leader", cluster.live_nodes())
        cluster.restart(leader)
    raise NodeFailed(f"no {wanted} controller took the leadership in {LEADER_MOVES} moves")


def make_metadata(cluster: KafkaCluster, topic: str) -> None:
    """Through the broker: a topic with a config, and the broker fenced (killed) and unfenced."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for future in admin.create_topics([NewTopic(topic, 3, 1, config={"retention.ms": "123456"})],
                                      operation_timeout=60).values():
        future.result(60)
    broker = cluster.brokers[0]
    broker.kill()
    cluster.restart(broker)


def quorum_state(cluster: KafkaCluster) -> tuple[int, dict[int, int]]:
    """The leader's high watermark and every voter's log end offset, by DescribeQuorum."""
    _, info = find_leader(cluster.controller_addresses, default_send(5000))
    return info.high_watermark, {int(v.replica_id): int(v.log_end_offset) for v in info.voters}


def caught_up(cluster: KafkaCluster, offset: int) -> bool:
    _, ends = quorum_state(cluster)
    return len(ends) == 3 and min(ends.values()) >= offset


def no_faults(node: KafkaNode) -> None:
    text = node.output_path.read_text(errors="replace")
    # Kafka's fault handlers say "Encountered ... fault" (metadata loading, publishing, fatal)
    bad = [line for line in text.splitlines()
           if FAULT.search(line) or "Traceback" in line or "the Raft core failed" in line]
    assert not bad, f"node {node.node_id} ({kind(node)}) reports a fault:\n" + "\n".join(bad[:5])
    node.check_running()


def describe_topic_config(node: KafkaNode, topic: str) -> dict[str, str]:
    """DescribeConfigs asked of one controller (a standby answers from its committed image)."""
    request = protocol_module("describe_configs", 4, "request")

    async def ask():
        client = KafkaClient(client_id="mixed-quorum-test")
        try:
            return await client.send(node.controller_address, request.DescribeConfigsRequest(
                resources=(request.DescribeConfigsResource(resource_type=i8(2), resource_name=topic,
                                                           configuration_keys=None),),
                include_synonyms=False, include_documentation=False))
        finally:
            await client.close()

    result = asyncio.run(ask()).results[0]
    assert result.error_code == ErrorCode.none, f"node {node.node_id}: {result.error_code} {result.error_message}"
    return {c.name: c.value for c in result.configs}


@pytest.fixture
def mixed(kafka_dist, tmp_path: Path):
    cluster = KafkaCluster(kafka_dist, tmp_path / "mixed", voters=3, brokers=1, controllers=KINDS,
                           release_version="4.1" if kafka_dist.version.startswith("4.1.") else None)
    try:
        yield cluster.start()
    finally:
        cluster.close()


def test_kafka_and_kraftd_controllers_replay_each_other(mixed: KafkaCluster, tmp_path: Path) -> None:
    kafka_voter = next(n for n in mixed.voters if not n.kraftd)
    ours = [n for n in mixed.voters if n.kraftd]

    # 1. ours active: the Kafka standby replays our records
    lead_with(mixed, "kraftd")
    make_metadata(mixed, "written-by-kraftd")
    hw, _ = quorum_state(mixed)
    wait_until(lambda: caught_up(mixed, hw), "every voter caught up with our leader", mixed.live_nodes())
    no_faults(kafka_voter)
    segment = sorted(kafka_voter.metadata_dir.glob("*.log"))[-1]
    tree = kafka_tree(mixed.dist, segment, tmp_path / "kafka-shell")
    assert {f"/image/topics/byName/written-by-kraftd/{p}" for p in range(3)} <= tree.paths
    assert tree.leaves["/image/configs/TOPIC:written-by-kraftd/retention.ms"] == "123456"

    # 2. Kafka's active: our standbys replay its records, in memory and on disk
    lead_with(mixed, "kafka")
    make_metadata(mixed, "written-by-kafka")
    hw, _ = quorum_state(mixed)
    wait_until(lambda: caught_up(mixed, hw), "every voter caught up with Kafka's leader", mixed.live_nodes())
    for node in ours:
        no_faults(node)
        assert wait_until(lambda node=node: describe_topic_config(node, "written-by-kafka").get("retention.ms"),
                          f"node {node.node_id} knows Kafka's topic", mixed.live_nodes()) == "123456"

    # 3. ours active again, on top of Kafka's records
    lead_with(mixed, "kraftd")
    make_metadata(mixed, "written-by-kraftd-again")
    hw, _ = quorum_state(mixed)
    wait_until(lambda: caught_up(mixed, hw), "every voter caught up", mixed.live_nodes())
    for node in mixed.voters:
        no_faults(node)
    # The same records everywhere, read by Kafka itself: its kafka-metadata-shell, on each voter's
    # log up to the common high watermark, prints the same /image (provenance too: the same
    # batches). The nodes are stopped first: what was committed is on disk, and the shells'
    # JVMs get the CPU.
    mixed.close()
    trees = kafka_trees(mixed, hw, tmp_path)
    first = mixed.voters[0].node_id
    for node_id, tree in trees.items():
        differences = tree_differences(trees[first], tree)
        assert not differences, f"Kafka's shell on node {first} / on node {node_id}:\n" + "\n".join(differences)
    tree = trees[first]
    assert provenance_of(tree.leaves["/image/provenance"])[0] < hw
    names = {p.split("/")[4] for p in tree.paths if p.startswith("/image/topics/byName/") and p.count("/") == 4}
    assert {"written-by-kraftd", "written-by-kafka", "written-by-kraftd-again"} <= names
    # every controller registered itself with whichever was active (KIP-919): Kafka's with ours, ours
    # with Kafka's or our own; the broker is unfenced (it came back after each kill)
    assert {p for p in tree.paths if p.count("/") == 4 and p.startswith("/image/cluster/controllers/")} == \
        {f"/image/cluster/controllers/{n.node_id}" for n in mixed.voters}
    broker = parse_java(tree.leaves[f"/image/cluster/brokers/{mixed.brokers[0].node_id}"])
    assert broker["fenced"] == "false"
    # and our loader reads the same log into the same topics, partitions and registrations
    image = load_log_dir(mixed.voters[0].metadata_dir, offset=hw - 1)[0]
    assert {t.name for t in image.topics.by_id.values()} == names
    assert set(image.cluster.controllers) == {n.node_id for n in mixed.voters}
    for topic in image.topics.by_id.values():
        for partition_id, partition in topic.partitions.items():
            shown = parse_java(tree.leaves[f"/image/topics/byName/{topic.name}/{partition_id}"])
            assert (shown["leader"], shown["isr"], shown["leaderEpoch"], shown["partitionEpoch"]) == \
                (str(partition.leader), [str(r) for r in partition.isr], str(partition.leader_epoch),
                 str(partition.partition_epoch)), f"{topic.name}-{partition_id}"


def kafka_trees(cluster: KafkaCluster, hw: int, scratch: Path) -> dict[int, KafkaTree]:
    """Kafka's shell on every voter's log below ``hw``, two JVMs at a time (CI has two cores)."""
    logs = {n.node_id: log_until(n.metadata_dir, hw, scratch / f"log-{n.node_id}") for n in cluster.voters}
    with ThreadPoolExecutor(max_workers=2) as pool:
        trees = pool.map(lambda item: kafka_tree(cluster.dist, item[1], scratch / f"shell-{item[0]}"), logs.items())
        return dict(zip(logs, trees))


def tree_differences(one: KafkaTree, other: KafkaTree) -> list[str]:
    """Paths in one tree only, and leaves whose text differs (the first 20)."""
    differ = [f"{path}: in one tree only" for path in sorted(one.paths ^ other.paths)]
    differ += [f"{path}: {one.leaves[path]!r} / {other.leaves[path]!r}"
               for path in sorted(one.leaves.keys() & other.leaves.keys()) if one.leaves[path] != other.leaves[path]]
    differ += [f"{path}: a leaf in one tree only" for path in sorted(one.leaves.keys() ^ other.leaves.keys())]
    return differ[:20]
