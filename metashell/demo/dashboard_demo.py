"""The dashboard's demo: the generated history of a small cluster having a bad day.

Three controllers (a kraft.version 1 quorum: the first leader writes KRaftVersionRecord and
VotersRecord with its LeaderChangeMessage, as Kafka's LeaderState does) and five brokers on
three racks; metadata.version 4.1-IV1 with eligible.leader.replicas.version=1 (KIP-966). Topics
``orders`` (6 partitions, RF 3, min.insync.replicas=2), ``payments`` (3 partitions, RF 3,
min.insync.replicas=2) and ``audit`` (2 partitions, RF 2). Then:

1. broker 3 goes silent: once its session expires it is fenced, out of every ISR, its
   leaderships move; it heartbeats again, is unfenced, the leaders add it to their ISRs, and
   an admin restores the preferred leaders (ElectLeaders);
2. the quorum leader changes (101 leads epoch 2; controller 100 restarts and registers again);
3. an ELR episode on ``payments-0`` (replicas [2, 4, 5], min ISR 2): brokers 5, 4 and 2 go
   silent one after another. Broker 5 is fenced (ISR [2, 4], still at min ISR, so no ELR), then
   broker 4 (ISR [2] is under min ISR: the member that just left, 4, becomes eligible: ELR [4]),
   then broker 2 (ISR empty, leader -1, ELR [2, 4], last-known ELR [2], the last leader); broker
   4 is heard again and elected from the ELR (leader 4, ISR [4], ELR [2]); broker 5 catches up
   and the ISR is back at min ISR: ELR cleared; broker 2 returns; the preferred leaders are
   restored;
4. broker 1 shuts down cleanly (in controlled shutdown: out of every ISR, leaderships moved;
   then fenced); it restarts with a new incarnation, registering once the old session has
   expired (which fences the old epoch once more, as Kafka's controller does), catches up and
   leads again;
5. ``audit`` is deleted; the partitions on broker 5 are reassigned away (adding the new
   replica, removing 5, completed once the new replica is in the ISR); broker 5 shuts down and
   is unregistered.

Every metadata record is one the engine's QuorumController wrote for these requests
(``metashell.demo.controller_driver``), at Kafka's default settings; the quorum's control
records and the idle NoOpRecords are written as the Raft layer and the controller node write
them. Each batch is one second after the previous one; broker epochs are the offsets of their
registrations, as in Kafka. Everything is deterministic: the same bytes on every run.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from pathlib import Path

from engine.image.metadata_version import BY_NAME, feature_levels_for
from engine.records import metadata_records as m
from engine.records.kio_codec import i16
from engine.storage.meta_properties import MetaProperties, write_meta_properties
from engine.storage.quorum_state_file import QUORUM_STATE_FILE, QuorumStateData, write_quorum_state
from metashell.demo.controller_driver import ControllerDriver, node_directory_id

START = datetime(2026, 3, 2, 9, 0, 0, tzinfo=timezone.utc)
START_MS = int(START.timestamp() * 1000)
CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
NODE_ID = 101  # the controller whose log directory this is (the leader at the end)
METADATA_VERSION = 27  # 4.1-IV1: ELR (4.1-IV0+), directory assignment, kraft.version 1
CONTROLLERS = (100, 101, 102)
RACKS = {1: "rack-a", 2: "rack-b", 3: "rack-c", 4: "rack-a", 5: "rack-c"}
TOPICS = {  # name -> (replica assignments, topic configs)
    "orders": ([[1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 1], [5, 1, 2], [1, 3, 5]],
               {"min.insync.replicas": "2", "retention.ms": "604800000"}),
    "payments": ([[2, 4, 5], [3, 5, 1], [4, 1, 2]], {"min.insync.replicas": "2", "cleanup.policy": "delete"}),
    "audit": ([[5, 1], [2, 3]], {"retention.ms": "2592000000"}),
}
# Moving broker 5's replicas away before it is decommissioned (audit is gone by then).
REASSIGNMENTS = {("orders", 2): [3, 4, 1], ("orders", 3): [4, 2, 1], ("orders", 4): [3, 1, 2],
                 ("orders", 5): [1, 3, 2], ("payments", 0): [2, 4, 3], ("payments", 1): [3, 2, 1]}

_NAMESPACE = uuid.UUID("0c6f6d2e-6d65-7461-7368-656c6c2d6465")  # ids are uuid5 of names in it
SUPPORTED = (("eligible.leader.replicas.version", 0, 1), ("group.version", 0, 1), ("kraft.version", 0, 1),
             ("metadata.version", 7, METADATA_VERSION), ("transaction.version", 0, 2))
BOOTSTRAP = feature_levels_for(BY_NAME["4.1-IV1"])  # what `kafka-storage format` writes


def directory_id(node_id: int) -> uuid.UUID:
    """The (single) log directory of a broker, or the metadata directory of a controller."""
    return node_directory_id(_NAMESPACE, node_id)


def _history() -> ControllerDriver:
    c = ControllerDriver(cluster_id=CLUSTER_ID, controllers=CONTROLLERS, start_ms=START_MS, features=SUPPORTED,
                         bootstrap_records=[m.FeatureLevelRecordV0(name=name, feature_level=i16(level))
                                            for name, level in BOOTSTRAP], id_namespace=_NAMESPACE)
    c.elect(100, (100, 101), CONTROLLERS, bootstrap_voters=True,
            story="controller 100 leads quorum epoch 1; kraft.version 1 with voters 100, 101, 102")
    for controller in CONTROLLERS:
        c.register_controller(controller)
    for broker, rack in sorted(RACKS.items()):
        c.add_broker(broker, rack)
        c.register_broker(broker)
    for broker in sorted(RACKS):
        c.heartbeat(broker)
    c.mark("5 brokers registered and unfenced, on racks a, b, c")
    for name, (assignments, configs) in TOPICS.items():
        c.create_topic(name, assignments, configs)
    c.mark("topics orders (6 partitions), payments (3) and audit (2) created")
    for broker in (1, 2, 3):
        c.allocate_producer_ids(broker)
    c.idle(2)

    c.go_silent(3)
    c.wait_until_fenced(3, story="broker 3 fenced (session lost): out of every ISR; orders-2 and payments-1 "
                                 "change leader")
    c.idle(2)
    c.heartbeat(3)
    c.catch_up(3, story="broker 3 back: unfenced and in sync again")
    c.elect_preferred_leaders(story="preferred leaders restored (orders-2, payments-1 led by 3 again)")
    c.idle(3)

    c.elect(101, (101, 102), CONTROLLERS, story="quorum leader change: controller 101 leads epoch 2")
    c.register_controller(100)  # controller 100 restarted: a new incarnation
    c.idle(2)

    # payments-0 (replicas [2, 4, 5], min ISR 2) loses its brokers one after another
    c.go_silent(5)
    c.idle(2)
    c.go_silent(4)
    c.idle(2)
    c.go_silent(2)
    c.wait_until_fenced(5, story="broker 5 fenced: payments-0 ISR [2, 4], at min ISR 2, no ELR")
    c.wait_until_fenced(4, story="broker 4 fenced: payments-0 ISR [2] under min ISR; ELR [4]")
    c.wait_until_fenced(2, story="broker 2 fenced: payments-0 leaderless, ISR empty, ELR [2, 4], "
                                 "last-known ELR [2]")
    c.idle(3)
    c.heartbeat(4, story="broker 4 back: elected payments-0 leader from the ELR (ISR [4], ELR [2])")
    c.catch_up(4)
    c.idle(1)
    c.heartbeat(5)
    c.catch_up(5, story="broker 5 in sync: payments-0 ISR [4, 5] at min ISR again, ELR cleared")
    c.idle(1)
    c.heartbeat(2)
    c.catch_up(2)
    c.idle(2)
    c.elect_preferred_leaders(story="all brokers back, preferred leaders restored")
    c.idle(3)

    c.controlled_shutdown(1, story="broker 1 in controlled shutdown: out of every ISR, its leaderships moved",
                          stopped="broker 1 shut down: fenced")
    c.idle(2)
    c.register_broker(1, story="broker 1 restarted: registered again with a new epoch")
    c.heartbeat(1)
    c.catch_up(1)
    c.idle(2)
    c.elect_preferred_leaders(story="broker 1 back in sync and leading its preferred partitions")
    c.allocate_producer_ids(1)
    c.idle(3)

    c.delete_topic("audit", story="topic audit deleted")
    c.idle(2)
    c.reassign(REASSIGNMENTS, story="reassignment off broker 5 started: payments-0 replicas [2, 4, 3, 5], "
                                    "adding [3], removing [5]")
    c.idle(2)
    for broker in sorted({r for target in REASSIGNMENTS.values() for r in target}):
        c.catch_up(broker)
    c.mark("reassignment completed: payments-0 replicas [2, 4, 3]; broker 5 holds no replica")
    c.idle(2)
    c.controlled_shutdown(5)  # it leads nothing any more: fenced at once
    c.idle(2)
    c.unregister_broker(5, story="broker 5 unregistered (decommissioned)")
    c.idle(2)
    return c


_CLUSTER = _history()
DEMO_BATCHES: list[tuple[int, list, bool]] = _CLUSTER.batches
DEMO_STORY: list[tuple[int, str]] = _CLUSTER.story
END_OFFSET = _CLUSTER.next_offset  # one past the last record


def write_dashboard_demo(directory: Path) -> Path:
    """Write the demo history as controller 101's log directory under ``directory`` (with its
    meta.properties and quorum-state); returns ``directory``."""
    directory = Path(directory)
    partition_dir = _CLUSTER.write_log(directory)
    write_meta_properties(directory, MetaProperties(1, CLUSTER_ID, NODE_ID, directory_id(NODE_ID)), now=START)
    write_quorum_state(partition_dir / QUORUM_STATE_FILE, QuorumStateData(
        leader_id=NODE_ID, leader_epoch=DEMO_BATCHES[-1][0], voted_id=NODE_ID,
        voted_directory_id=directory_id(NODE_ID), data_version=1))
    return directory
