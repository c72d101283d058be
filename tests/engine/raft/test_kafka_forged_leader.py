"""BeginQuorumEpoch from a leader that is no voter, sent to Kafka's controller and to ours.

A single-voter controller of each kind (Kafka's, kraftd) is asked, on its controller listener:

* by leader 99, no voter, with an endpoint: Kafka 4.1+ follows it (KIP-853 dropped the voter
  check) and so does ours; the answers must be the same;
* by leader 98, no voter, without an endpoint, in the last int32 epoch: Kafka's Raft thread
  throws ("Unknown leader endpoints") and the process halts, which is why ours refuses it
  instead (INCONSISTENT_VOTER_SET) and goes on serving. Should a Kafka release answer it, this
  test says so, and ours should answer the same.
"""

from __future__ import annotations

import pytest

from engine.net.kafka_client import request_once
from engine.raft import raft_messages as rm
from engine.raft.quorum_state import MAX_EPOCH
from engine.raft.voter_set import ReplicaKey
from engine.records.kio_codec import ErrorCode
from kafka_peer.cluster import KafkaCluster
from kafka_peer.nodes import wait_until

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

LISTENER = "CONTROLLER"  # the controller listener KafkaCluster configures
NOWHERE = ("127.0.0.1", 9)  # discard: a leader that never answers a fetch


def _begin(cluster: KafkaCluster, leader_id: int, epoch: int, endpoints: tuple) -> object:
    return rm.begin_epoch_request(cluster.cluster_id, leader_id, epoch, ReplicaKey(1), endpoints)


def _answer(response) -> tuple:
    p = rm.only_partition(response)
    ends = sorted((e.node_id, e.host, int(e.port)) for e in response.node_endpoints)
    return response.error_code, p.error_code, p.leader_id, p.leader_epoch, ends


def _ask(cluster: KafkaCluster, request) -> object:
    return request_once(cluster.controller_addresses[0], request, timeout_ms=10_000)


@pytest.mark.parametrize("kind", ["kafka", "kraftd"])
def test_a_begin_quorum_epoch_from_no_voter(kafka_dist, kind: str, tmp_path) -> None:
    release = "4.1" if kafka_dist.version.startswith("4.1.") else None
    cluster = KafkaCluster(kafka_dist, tmp_path / kind, voters=1, controllers=kind,
                           release_version=release).start()
    try:
        cluster.wait_leader()
        node = cluster.voters[0]
        followed = _answer(_ask(cluster, _begin(cluster, 99, 1000, ((LISTENER, NOWHERE),))))
        assert followed == (ErrorCode.none, ErrorCode.none, 99, 1000, [(99, *NOWHERE)])
        forged = _begin(cluster, 98, MAX_EPOCH, ())
        if kind == "kafka":
            with pytest.raises(Exception):  # the connection dies with the process; no answer comes
                _ask(cluster, forged)
            wait_until(lambda: not node.alive, "Kafka's controller to halt", [])
            assert "Unknown leader endpoints" in node.log_tail(200)
        else:
            refused = _answer(_ask(cluster, forged))
            # the answer names what it knows: 99 still, or itself once 99's fetch timeout passed
            assert refused[:2] == (ErrorCode.none, ErrorCode.inconsistent_voter_set)
            assert refused[2] in (99, 1) and 1000 <= refused[3] < MAX_EPOCH
            again = _answer(_ask(cluster, _begin(cluster, 98, MAX_EPOCH, ())))  # and still serving
            assert again[1] == ErrorCode.inconsistent_voter_set and node.alive
    finally:
        cluster.close()
