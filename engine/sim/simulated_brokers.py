"""The simulated brokers and admin clients of ``kraftd sim controller``.

They talk to the controller they believe is active over the simulator's network (delays, loss,
partitions, every message through kio), one request at a time each, and move to another
controller on NOT_CONTROLLER or when an answer does not come in time. A broker registers
(BrokerRegistration v4), heartbeats every ``broker.heartbeat.interval.ms`` with a metadata
offset that lags what is committed, crashes (a new incarnation, an unclean shutdown, when it
comes back), shuts down under control (WantShutDown, then a clean re-registration), and as a
partition leader asks AlterPartition (v3) to shrink or expand its ISR from its view of the
metadata. The clients create, delete, reassign and elect, and alter min.insync.replicas.

A broker's *view* is a committed image the simulation hands out (``ControllerSimulation.view``);
everything it sends is read off that view, as a real broker acts on its metadata cache.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from engine.common.api_keys import ApiKeys
from engine.common.config_resource import ConfigResourceType
from engine.image.metadata_image import MetadataImage
from engine.records.kio_codec import ErrorCode, i8, i16, i32, i64, protocol_module, u16

BROKER_IDS = (101, 102, 103, 104, 105)
CLIENT_IDS = (201, 202)
RACKS = ("rack-a", "rack-b", "rack-c")
REQUEST_TIMEOUT_MS = 600  # no answer by then: ask another controller
_TIMEOUT = datetime.timedelta(milliseconds=REQUEST_TIMEOUT_MS)  # what admin requests tell the controller

_REG = protocol_module("broker_registration", 4, "request")
_HB = protocol_module("broker_heartbeat", 2, "request")
_AP = protocol_module("alter_partition", 3, "request")
_CT = protocol_module("create_topics", 7, "request")
_DT = protocol_module("delete_topics", 6, "request")
_RA = protocol_module("alter_partition_reassignments", 0, "request")
_EL = protocol_module("elect_leaders", 2, "request")
_IAC = protocol_module("incremental_alter_configs", 1, "request")


def api_key_of(message: Any) -> int:
    return int(type(message).__api_key__)


class Peer:
    """Something outside the quorum that sends controller requests: one in flight at a time."""

    def __init__(self, sim: Any, peer_id: int):
        self.sim = sim
        self.id = peer_id
        self.rng = sim.rng
        self.target = self.rng.choice(sorted(sim.nodes))
        self.correlation = 0
        self.inflight: tuple[int, int, Any] | None = None  # (correlation id, deadline, request)

    def busy(self) -> bool:
        if self.inflight is not None and self.sim.now_ms >= self.inflight[1]:
            self.inflight = None  # timed out: the controller is gone or the message was lost
            self.next_target()
        return self.inflight is not None

    def next_target(self) -> None:
        ids = sorted(self.sim.nodes)
        self.target = ids[(ids.index(self.target) + 1) % len(ids)]

    def send(self, request: Any) -> None:
        self.correlation += 1
        self.inflight = (self.correlation, self.sim.now_ms + REQUEST_TIMEOUT_MS, request)
        self.sim.send_controller_request(self.id, self.target, self.correlation, request)

    def receive(self, node_id: int, correlation_id: int, response: Any) -> None:
        if self.inflight is None or self.inflight[0] != correlation_id:
            return  # a late or duplicated answer
        request = self.inflight[2]
        self.inflight = None
        if is_not_controller(response):
            self.next_target()
            return
        self.answered(node_id, request, response)

    def answered(self, node_id: int, request: Any, response: Any) -> None:
        raise NotImplementedError


def is_not_controller(response: Any) -> bool:
    """NOT_CONTROLLER anywhere in a response: top level, per topic or resource, per partition."""
    if getattr(response, "error_code", None) == ErrorCode.not_controller:
        return True
    for field_name in ("topics", "responses", "replica_election_results"):
        for item in getattr(response, field_name, ()) or ():
            if getattr(item, "error_code", None) == ErrorCode.not_controller:
                return True
            inner = getattr(item, "partitions", None) or getattr(item, "partition_result", None) or ()
            if any(getattr(p, "error_code", None) == ErrorCode.not_controller for p in inner):
                return True
    return False


def broker_features() -> tuple:
    """What our simulated broker supports: every finalized feature of the bootstrap from 0,
    metadata.version 3.3-IV3 (7) to 4.1-IV1 (27), kraft.version 0..1."""
    from engine.image.metadata_version import BY_NAME, feature_levels_for

    ranges = {name: (0, level) for name, level in feature_levels_for(BY_NAME["4.1-IV1"])}
    ranges["metadata.version"] = (7, 27)
    ranges["kraft.version"] = (0, 1)
    return tuple(_REG.Feature(name=n, min_supported_version=i16(lo), max_supported_version=i16(hi))
                 for n, (lo, hi) in sorted(ranges.items()))


class SimBroker(Peer):
    def __init__(self, sim: Any, broker_id: int):
        super().__init__(sim, broker_id)
        self.rack = RACKS[broker_id % len(RACKS)]
        self.log_dirs = (uuid.UUID(int=self.rng.getrandbits(128) | (1 << 100)),)
        self.state = "down"  # down, registering, running, stopping
        self.generation = 0  # bumped by every crash and start: timers of an older one do nothing
        self.incarnation: uuid.UUID | None = None
        self.epoch = -1
        self.previous_epoch = -1  # the epoch a clean shutdown left (KIP-966), else -1
        self.view: MetadataImage = MetadataImage()
        self.fenced = True
        self.alter_inflight = False

    # -- life ----------------------------------------------------------------------------

    def start(self) -> None:
        self.generation += 1
        self.incarnation = uuid.UUID(int=self.rng.getrandbits(128))
        self.state, self.epoch, self.fenced, self.inflight = "registering", -1, True, None
        self.sim.note(f"broker {self.id}: starts, incarnation {str(self.incarnation)[:8]}, "
                      f"previous epoch {self.previous_epoch}")
        self._tick(self.generation)

    def crash(self) -> None:
        if self.state == "down":
            return
        self.sim.note(f"broker {self.id}: crash (epoch {self.epoch})")
        self.state, self.previous_epoch, self.inflight = "down", -1, None
        self.generation += 1

    def controlled_shutdown(self) -> None:
        if self.state == "running":
            self.sim.note(f"broker {self.id}: controlled shutdown (epoch {self.epoch})")
            self.state = "stopping"

    def alive_as(self, epoch: int) -> bool:
        """This process is up and registered with ``epoch``: it holds what its replicas fetched."""
        return self.state in ("running", "stopping") and self.epoch == epoch

    def _tick(self, generation: int) -> None:
        if generation != self.generation or self.state == "down":
            return
        if not self.busy():
            self.view = self.sim.view(self.view)
            if self.state == "registering":
                self.send(self._registration())
            else:
                self.send(_HB.BrokerHeartbeatRequest(
                    broker_id=i32(self.id), broker_epoch=i64(self.epoch),
                    current_metadata_offset=i64(self.view.provenance.last_offset), want_fence=False,
                    want_shut_down=self.state == "stopping", offline_log_dirs=(), cordoned_log_dirs=None))
        interval = self.sim.controller_config.broker_heartbeat_interval_ms
        self.sim.call_at(self.sim.now_ms + interval, lambda: self._tick(generation))

    def _registration(self) -> Any:
        return _REG.BrokerRegistrationRequest(
            broker_id=i32(self.id), cluster_id=self.sim.cluster_id, incarnation_id=self.incarnation,
            listeners=(_REG.Listener(name="PLAINTEXT", host=f"broker{self.id}", port=u16(9092),
                                     security_protocol=i16(0)),),
            features=broker_features(), rack=self.rack, is_migrating_zk_broker=False, log_dirs=self.log_dirs,
            previous_broker_epoch=i64(self.previous_epoch))

    # -- answers -------------------------------------------------------------------------

    def receive(self, node_id: int, correlation_id: int, response: Any) -> None:
        if api_key_of(response) == ApiKeys.ALTER_PARTITION:
            self.alter_inflight = False
            if is_not_controller(response):
                self.next_target()
            return
        super().receive(node_id, correlation_id, response)

    def answered(self, node_id: int, request: Any, response: Any) -> None:
        if self.state == "down":
            return
        if api_key_of(request) == ApiKeys.BROKER_REGISTRATION:
            if response.error_code == ErrorCode.none:
                self.state, self.epoch = "running", int(response.broker_epoch)
                self.sim.note(f"broker {self.id}: registered with epoch {self.epoch} by node {node_id}")
            return
        if request.broker_epoch != self.epoch:
            return
        if response.error_code == ErrorCode.stale_broker_epoch:
            self.state = "registering"  # our registration is gone: register again
            return
        if response.error_code != ErrorCode.none:
            return
        self.fenced = bool(response.is_fenced)
        if self.state == "stopping" and response.should_shut_down:
            self.sim.note(f"broker {self.id}: shut down cleanly (epoch {self.epoch})")
            self.state, self.previous_epoch, self.inflight = "down", self.epoch, None
            self.generation += 1

    # -- AlterPartition ------------------------------------------------------------------

    def alter_partition(self) -> bool:
        """Shrink or expand the ISR of a partition this broker leads in its view."""
        if self.state != "running" or self.alter_inflight:
            return False
        view = self.view
        me = view.cluster.brokers.get(self.id)
        if me is None or me.epoch != self.epoch:
            return False
        led = [(t, pid, p) for t in view.topics.by_id.values() for pid, p in sorted(t.partitions.items())
               if p.leader == self.id]
        if not led:
            return False
        topic, pid, p = self.rng.choice(led)
        followers = [r for r in p.isr if r != self.id]
        outside = [r for r in p.replicas if r not in p.isr and self._fetching(view, r)]
        if outside and (not followers or self.rng.random() < 0.5):
            joining = self.rng.choice(outside)
            isr = tuple(p.isr) + (joining,)
            self.sim.model.expansions.add((topic.id, pid, joining, view.cluster.brokers[joining].epoch))
        elif followers:
            isr = tuple(r for r in p.isr if r != self.rng.choice(followers))
        else:
            return False
        states = tuple(_AP.BrokerState(broker_id=i32(r), broker_epoch=i64(view.cluster.brokers[r].epoch
                                                                          if r in view.cluster.brokers else -1))
                       for r in isr)
        request = _AP.AlterPartitionRequest(broker_id=i32(self.id), broker_epoch=i64(self.epoch), topics=(
            _AP.TopicData(topic_id=topic.id, partitions=(_AP.PartitionData(
                partition_index=i32(pid), leader_epoch=i32(p.leader_epoch), new_isr_with_epochs=states,
                leader_recovery_state=i8(0), partition_epoch=i32(p.partition_epoch)),)),))
        self.alter_inflight = True
        self.correlation += 1
        self.sim.send_controller_request(self.id, self.target, self.correlation, request)
        generation = self.generation
        self.sim.call_at(self.sim.now_ms + REQUEST_TIMEOUT_MS, lambda: self._alter_timeout(generation))
        return True

    def _alter_timeout(self, generation: int) -> None:
        if generation == self.generation:
            self.alter_inflight = False

    def _fetching(self, view: MetadataImage, replica: int) -> bool:
        """A replica that may join the ISR: unfenced in the view, and its process up in the
        incarnation the view knows (so it has fetched everything: caught up)."""
        registration = view.cluster.brokers.get(replica)
        broker = self.sim.brokers.get(replica)
        return (registration is not None and not registration.fenced and not registration.in_controlled_shutdown
                and broker is not None and broker.alive_as(registration.epoch))


class SimClient(Peer):
    """An admin client: one operation at a time, retried at another controller when unanswered."""

    def __init__(self, sim: Any, client_id: int):
        super().__init__(sim, client_id)
        self.topics: dict[str, uuid.UUID] = {}  # acknowledged, not (acknowledged) deleted
        self.created = 0
        self.pending: Any = None  # the request to retry

    def act(self) -> None:
        if self.busy():
            return
        if self.pending is None:
            self.pending = self._next_request()
        if self.pending is not None:
            self.send(self.pending)

    def next_target(self) -> None:
        super().next_target()
        # an unanswered request is tried again at the next controller on the next act

    def _next_request(self) -> Any:
        pick = self.rng.random()
        names = sorted(self.topics)
        if pick < 0.4 or not names:
            return self._create()
        name = self.rng.choice(names)
        if pick < 0.5:
            by_id = self.rng.random() < 0.5
            return _DT.DeleteTopicsRequest(topics=(_DT.DeleteTopicState(
                name=None if by_id else name, topic_id=self.topics[name] if by_id else None),), timeout=_TIMEOUT)
        if pick < 0.65:
            return self._reassign(name)
        if pick < 0.8:
            partitions = None if self.rng.random() < 0.3 else (_EL.TopicPartitions(topic=name, partitions=(i32(0),)),)
            return _EL.ElectLeadersRequest(election_type=i8(0), topic_partitions=partitions)
        operation, value = (1, None) if self.rng.random() < 0.2 else (0, str(self.rng.choice((1, 2))))
        return _IAC.IncrementalAlterConfigsRequest(resources=(_IAC.AlterConfigsResource(
            resource_type=i8(ConfigResourceType.TOPIC.value), resource_name=name, configs=(_IAC.AlterableConfig(
                name="min.insync.replicas", config_operation=i8(operation), value=value),)),), validate_only=False)

    def _create(self) -> Any:
        self.created += 1
        configs = ()
        if self.rng.random() < 0.3:
            configs = (_CT.CreatableTopicConfig(name="min.insync.replicas", value="2"),)
        return _CT.CreateTopicsRequest(topics=(_CT.CreatableTopic(
            name=f"t{self.id}-{self.created}", num_partitions=i32(self.rng.randint(1, 4)),
            replication_factor=i16(self.rng.randint(1, 3)), assignments=(), configs=configs),), validate_only=False)

    def _reassign(self, name: str) -> Any:
        replicas = None
        if self.rng.random() < 0.8:
            replicas = tuple(i32(b) for b in self.rng.sample(BROKER_IDS, self.rng.randint(1, 3)))
        return _RA.AlterPartitionReassignmentsRequest(topics=(_RA.ReassignableTopic(name=name, partitions=(
            _RA.ReassignablePartition(partition_index=i32(0), replicas=replicas),)),))

    def answered(self, node_id: int, request: Any, response: Any) -> None:
        self.pending = None
        key = api_key_of(request)
        if key == ApiKeys.CREATE_TOPICS:
            for topic in response.topics:
                if topic.error_code == ErrorCode.none:
                    self.topics[topic.name] = topic.topic_id
                    self.sim.note(f"client {self.id}: created {topic.name} ({len(self.topics)} topics)")
        elif key == ApiKeys.DELETE_TOPICS:
            for topic in response.responses:
                if topic.error_code in (ErrorCode.none, ErrorCode.unknown_topic_or_partition,
                                        ErrorCode.unknown_topic_id):
                    name = topic.name or next((n for n, i in self.topics.items() if i == topic.topic_id), None)
                    self.topics.pop(name, None)


def make_peers(sim: Any) -> tuple[dict[int, SimBroker], dict[int, SimClient]]:
    return ({b: SimBroker(sim, b) for b in BROKER_IDS}, {c: SimClient(sim, c) for c in CLIENT_IDS})

__all__ = ["BROKER_IDS", "CLIENT_IDS", "SimBroker", "SimClient", "api_key_of", "is_not_controller", "make_peers"]
