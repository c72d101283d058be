"""Kafka's controller and ours, asked the same odd questions: the answers must be the same.

Two single-controller clusters per Kafka version, each with one Kafka broker: one controller is
Kafka's own, the other kraftd. The test asks both, on their controller listener, and compares:

* Raft Fetch requests Kafka's handleFetchRequest refuses before any leadership check (a negative
  MaxWaitMs, a negative fetch offset, a last fetched epoch above the fetcher's own
  CurrentLeaderEpoch) and the epoch checks after it: the error, the high watermark (-1) and the
  log start offset of the answer;
* AlterPartition with a leader recovery state Kafka does not know (the whole request fails);
* AlterPartition on a topic whose min.insync.replicas is " 2": ConfigDef trims it, so
  IncrementalAlterConfigs takes it, but Kafka's controller reads it with Integer.parseInt and
  the operation fails; a value that is no number at all is refused up front (INVALID_CONFIG).

The broker epoch and the partition's epochs an AlterPartition must name are read from each
controller's own metadata log (engine.image.metadata_loader reads Kafka's too).
"""

from __future__ import annotations

import pytest

from engine.image.metadata_loader import load_log_dir
from engine.net.kafka_client import request_once
from engine.raft import raft_messages as rm
from engine.raft.voter_set import ReplicaKey
from engine.records.kio_codec import ErrorCode, i8, i32, i64, protocol_module
from kafka_peer.cluster import KafkaCluster
from kafka_peer.nodes import wait_until

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

KINDS = ("kafka", "kraftd")
BROKER = 2  # node 1 is the controller
AP = protocol_module("alter_partition", 3, "request")
@pytest.fixture
def pair(kafka_dist, module_clusters, tmp_path_factory) -> dict[str, KafkaCluster]:
    """Kafka's controller and ours, each with one Kafka broker, for this version."""
    release = "4.1" if kafka_dist.version.startswith("4.1.") else None
    for kind in KINDS:
        key = (kafka_dist.version, kind)
        if key not in module_clusters:
            root = tmp_path_factory.mktemp(f"answers-{kind}-{kafka_dist.version}")
            module_clusters[key] = KafkaCluster(kafka_dist, root, voters=1, brokers=1, controllers=kind,
                                          release_version=release).start()
    return {kind: module_clusters[(kafka_dist.version, kind)] for kind in KINDS}


def _controller(cluster: KafkaCluster) -> tuple[str, int]:
    cluster.wait_leader()
    return cluster.controller_addresses[0]


# -- Raft Fetch ----------------------------------------------------------------------------------

def _fetch(cluster: KafkaCluster, *, epoch: int, offset: int, last_epoch: int, max_wait_ms: int = 0):
    request = rm.fetch_request(cluster.cluster_id, ReplicaKey(-1), epoch, offset, last_epoch, max_wait_ms, 1 << 16)
    return request_once(_controller(cluster), request, timeout_ms=10_000, adapt=True)


def _fetch_answer(cluster: KafkaCluster, **ask) -> tuple:
    response = _fetch(cluster, **ask)
    p = rm.only_partition(response)
    return response.error_code, p.error_code, p.high_watermark, p.log_start_offset, p.current_leader.leader_id


def _leader_epoch(cluster: KafkaCluster) -> int:
    response = _fetch(cluster, epoch=0, offset=0, last_epoch=0)  # fenced: the answer names the epoch
    return rm.only_partition(response).current_leader.leader_epoch


def test_fetch_sanity_and_epoch_checks_answer_as_kafkas_controller(pair) -> None:
    answers = {}
    for kind, cluster in pair.items():
        epoch = _leader_epoch(cluster)
        assert epoch >= 1
        answers[kind] = [
            _fetch_answer(cluster, epoch=epoch, offset=0, last_epoch=0, max_wait_ms=-1),  # negative wait
            _fetch_answer(cluster, epoch=epoch, offset=-1, last_epoch=0),  # negative offset
            _fetch_answer(cluster, epoch=epoch - 1, offset=1, last_epoch=epoch),  # above its own epoch
            _fetch_answer(cluster, epoch=epoch - 1, offset=1, last_epoch=epoch - 1),  # fenced
            _fetch_answer(cluster, epoch=epoch + 1, offset=1, last_epoch=0),  # unknown epoch
        ]
    E = ErrorCode
    expected_codes = [E.invalid_request, E.invalid_request, E.invalid_request, E.fenced_leader_epoch,
                      E.unknown_leader_epoch]
    for kind, rows in answers.items():
        assert [row[1] for row in rows] == expected_codes, (kind, rows)
        assert all(row[0] == E.none and row[2] == -1 and row[4] == 1 for row in rows), (kind, rows)
    assert answers["kraftd"] == answers["kafka"]


# -- AlterPartition ------------------------------------------------------------------------------

def _create_topic(cluster: KafkaCluster, name: str, **configs: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for future in admin.create_topics([NewTopic(name, 1, 1, config=configs)], operation_timeout=60).values():
        future.result(timeout=60)


def _alter_partition(cluster: KafkaCluster, topic: str, *, recovery: int) -> tuple:
    """AlterPartition from the broker, keeping its ISR as it is, with this recovery state."""
    def registered():
        image = load_log_dir(cluster.node(1).metadata_dir)[0]
        found = image.topics.topic(topic)
        return (image, found) if found is not None and BROKER in image.cluster.brokers else None

    image, found = wait_until(registered, f"{topic} in the controller's log", cluster.live_nodes())
    p = found.partitions[0]
    data = AP.PartitionData(partition_index=i32(0), leader_epoch=i32(p.leader_epoch),
                            new_isr_with_epochs=(AP.BrokerState(broker_id=i32(BROKER),
                                                                broker_epoch=i64(image.cluster.brokers[BROKER].epoch)),),
                            leader_recovery_state=i8(recovery), partition_epoch=i32(p.partition_epoch))
    request = AP.AlterPartitionRequest(broker_id=i32(BROKER), broker_epoch=i64(image.cluster.brokers[BROKER].epoch),
                                       topics=(AP.TopicData(topic_id=found.id, partitions=(data,)),))
    response = request_once(_controller(cluster), request, timeout_ms=10_000)
    return response.error_code, [p.error_code for t in response.topics for p in t.partitions]


def test_an_unknown_leader_recovery_state_fails_alter_partition_as_kafkas_does(pair) -> None:
    answers = {}
    for kind, cluster in pair.items():
        _create_topic(cluster, "recovery-state")
        answers[kind] = (_alter_partition(cluster, "recovery-state", recovery=0),
                         _alter_partition(cluster, "recovery-state", recovery=5))
    assert answers["kafka"] == ((ErrorCode.none, [ErrorCode.none]), (ErrorCode.unknown_server_error, []))
    assert answers["kraftd"] == answers["kafka"]


def test_a_min_isr_integer_parse_int_refuses_fails_alter_partition_as_kafkas_does(pair) -> None:
    from confluent_kafka import KafkaError, KafkaException

    answers = {}
    for kind, cluster in pair.items():
        with pytest.raises(KafkaException) as refused:
            _create_topic(cluster, "not-a-number", **{"min.insync.replicas": "two"})
        invalid = refused.value.args[0].code()
        _create_topic(cluster, "padded-min-isr", **{"min.insync.replicas": " 2"})  # ConfigDef trims: taken
        answers[kind] = (invalid, _alter_partition(cluster, "padded-min-isr", recovery=0))
    assert answers["kafka"] == (KafkaError.INVALID_CONFIG, (ErrorCode.unknown_server_error, []))
    assert answers["kraftd"] == answers["kafka"]
