"""The load client of ``kraftd bench controller``: simulated brokers and an admin, over real sockets.

The same client measures our controllers and Kafka's, speaking only the controller listener's
Kafka protocol: BrokerRegistration (v4) and BrokerHeartbeat (v1) as a broker sends them, and a
raw CreateTopics (v7), which Kafka's ControllerApis serves on the controller listener although
Kafka's admin client refuses to send it there (KIP-919). The active controller is the leader a
DescribeQuorum answer names; a NOT_CONTROLLER answer, a lost connection or a timeout makes the
client ask again.

A simulated broker registers with every finalized feature the controller's ApiVersions lists
(the controller's supported ranges, widened to the finalized levels), one log directory, and a
made-up listener; it then heartbeats and reports a metadata offset far ahead, so the controller
unfences it at its first heartbeat after the registration (a real broker would first catch up).
Requests are pipelined over ``connections`` TCP connections (one KafkaClient each).
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from engine.common.errors import MetadataError
from engine.net.errors import NetError
from engine.net.kafka_client import KafkaClient
from engine.raft.raft_messages import describe_quorum_request, only_partition
from engine.records.kio_codec import ErrorCode, i16, i32, i64, protocol_module, u16

Address = tuple[str, int]
_REG = protocol_module("broker_registration", 4, "request")
_HB = protocol_module("broker_heartbeat", 1, "request")
_CT = protocol_module("create_topics", 7, "request")
_AV = protocol_module("api_versions", 4, "request")
FAR_AHEAD_OFFSET = 1 << 40  # "caught up" with whatever the controller wrote
REQUEST_TIMEOUT_MS = 60_000
RETRY_PAUSE_S = 0.05


class LoadError(MetadataError):
    """The controller refused what the load needs (a registration, a topic), or never answered."""


def _ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


@dataclass
class SimBroker:
    broker_id: int
    incarnation: uuid.UUID = field(default_factory=uuid.uuid4)
    log_dir: uuid.UUID = field(default_factory=uuid.uuid4)
    epoch: int = -1
    fenced: bool = True


class ControllerLoad:
    """Talks to a controller quorum at ``addresses`` (node id -> address) as brokers and an admin."""

    def __init__(self, addresses: dict[int, Address], cluster_id: str, *, connections: int = 4,
                 request_timeout_ms: int = REQUEST_TIMEOUT_MS):
        self.addresses = dict(addresses)
        self.cluster_id = cluster_id
        self.request_timeout_ms = request_timeout_ms
        self.clients = [KafkaClient(client_id=f"bench-{i}", request_timeout_ms=request_timeout_ms)
                        for i in range(connections)]
        self.active: int | None = None
        self.dead: set[int] = set()  # killed nodes: not asked, and their stale leadership ignored
        self.brokers: dict[int, SimBroker] = {}
        self._features: tuple | None = None
        self._next = 0

    async def close(self) -> None:
        for client in self.clients:
            await client.close()

    def _client(self) -> KafkaClient:
        self._next = (self._next + 1) % len(self.clients)
        return self.clients[self._next]

    # -- the active controller -------------------------------------------------------------

    async def find_active(self, timeout_s: float = 60.0, exclude: tuple[int, ...] = ()) -> int:
        """The node id of the leader DescribeQuorum names (asked of every node not excluded)."""
        deadline = time.monotonic() + timeout_s
        exclude = (*exclude, *self.dead)
        while True:
            for node_id, address in self.addresses.items():
                if node_id in exclude:
                    continue
                try:
                    part = only_partition(await self.clients[0].send(address, describe_quorum_request(),
                                                                     timeout_ms=1000))
                except (NetError, OSError):
                    continue
                if part is not None and part.error_code == ErrorCode.none and part.leader_id in self.addresses \
                        and part.leader_id not in exclude:
                    self.active = int(part.leader_id)
                    return self.active
            if time.monotonic() > deadline:
                raise LoadError(f"no active controller named within {timeout_s:.0f} s")
            await asyncio.sleep(RETRY_PAUSE_S)

    async def wait_caught_up(self, node_id: int, timeout_s: float = 300.0) -> None:
        """Until the active controller's DescribeQuorum shows voter ``node_id`` at or past its
        high watermark: a restarted voter that is still loading or fetching cannot vote yet,
        and killing the leader before then measures the restart, not the failover."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                active = self.active if self.active is not None else await self.find_active(timeout_s)
                part = only_partition(await self.clients[0].send(self.addresses[active], describe_quorum_request(),
                                                                 timeout_ms=1000))
                if part is not None and part.error_code == ErrorCode.none:
                    voter = next((v for v in part.current_voters if v.replica_id == node_id), None)
                    if voter is not None and part.high_watermark >= 0 and voter.log_end_offset >= part.high_watermark:
                        return
            except (NetError, OSError):
                self.active = None
            if time.monotonic() > deadline:
                raise LoadError(f"controller {node_id} not caught up within {timeout_s:.0f} s")
            await asyncio.sleep(RETRY_PAUSE_S)

    async def call(self, request: Any, *, timeout_ms: int | None = None) -> Any:
        """``request`` answered by the active controller, following it when it moves."""
        deadline = time.monotonic() + (timeout_ms or self.request_timeout_ms) / 1000
        while True:
            if self.active is None:
                await self.find_active(max(1.0, deadline - time.monotonic()))
            try:
                response = await self._client().send(self.addresses[self.active], request,
                                                     timeout_ms=timeout_ms, adapt=True)
                if not _says_not_controller(response):
                    return response
            except (NetError, OSError):
                pass
            self.active = None
            if time.monotonic() > deadline:
                raise LoadError(f"{type(request).__name__} not answered by an active controller in time")
            await asyncio.sleep(RETRY_PAUSE_S)

    # -- brokers ---------------------------------------------------------------------------

    async def features(self, timeout_s: float = 60.0) -> tuple:
        """What a simulated broker says it supports: the ranges the controller's ApiVersions
        lists as supported (kraft.version among them), widened to every finalized level; asked
        again until metadata.version is finalized (a new quorum commits its bootstrap first)."""
        deadline = time.monotonic() + timeout_s
        while self._features is None:
            if self.active is None:
                await self.find_active()
            answer = await self.clients[0].send(self.addresses[self.active], _AV.ApiVersionsRequest(
                client_software_name="kraftd-bench", client_software_version="1"))
            finalized = {f.name: int(f.max_version_level) for f in answer.finalized_features}
            if "metadata.version" in finalized:
                ranges = {f.name: (int(f.min_version), int(f.max_version)) for f in answer.supported_features}
                for name, level in finalized.items():
                    low, high = ranges.get(name, (0, level))
                    ranges[name] = (min(low, level), max(high, level))
                self._features = tuple(_REG.Feature(name=name, min_supported_version=i16(low),
                                                    max_supported_version=i16(high))
                                       for name, (low, high) in sorted(ranges.items()))
            elif time.monotonic() > deadline:
                raise LoadError(f"metadata.version not finalized within {timeout_s:.0f} s")
            else:
                await asyncio.sleep(RETRY_PAUSE_S)
        return self._features

    async def register(self, broker_id: int) -> SimBroker:
        broker = self.brokers.setdefault(broker_id, SimBroker(broker_id))
        request = _REG.BrokerRegistrationRequest(
            broker_id=i32(broker_id), cluster_id=self.cluster_id, incarnation_id=broker.incarnation,
            listeners=(_REG.Listener(name="PLAINTEXT", host=f"broker{broker_id}.invalid", port=u16(9092),
                                     security_protocol=i16(0)),),
            features=await self.features(), rack=None, is_migrating_zk_broker=False, log_dirs=(broker.log_dir,),
            previous_broker_epoch=i64(-1))
        answer = await self.call(request)
        if answer.error_code != ErrorCode.none:
            raise LoadError(f"broker {broker_id} not registered: {ErrorCode(answer.error_code).name}")
        broker.epoch = int(answer.broker_epoch)
        return broker

    async def heartbeat(self, broker: SimBroker, *, timeout_ms: int | None = None) -> Any:
        answer = await self.call(_HB.BrokerHeartbeatRequest(
            broker_id=i32(broker.broker_id), broker_epoch=i64(broker.epoch),
            current_metadata_offset=i64(FAR_AHEAD_OFFSET), want_fence=False, want_shut_down=False,
            offline_log_dirs=()), timeout_ms=timeout_ms)
        if answer.error_code == ErrorCode.none:
            broker.fenced = bool(answer.is_fenced)
        elif answer.error_code == ErrorCode.stale_broker_epoch:
            await self.register(broker.broker_id)
        return answer

    async def start_brokers(self, broker_ids: list[int], timeout_s: float = 120.0) -> None:
        """Register them all and heartbeat until every one is unfenced."""
        await asyncio.gather(*(self.register(b) for b in broker_ids))
        deadline = time.monotonic() + timeout_s
        while True:
            fenced = [self.brokers[b] for b in broker_ids if self.brokers[b].fenced]
            if not fenced:
                return
            if time.monotonic() > deadline:
                raise LoadError(f"{len(fenced)} brokers still fenced after {timeout_s:.0f} s")
            await asyncio.gather(*(self.heartbeat(b) for b in fenced))
            await asyncio.sleep(0.1)

    async def keep_alive(self, interval_ms: int, latencies: list[float] | None = None,
                         stop: asyncio.Event | None = None) -> None:
        """Every broker heartbeats every ``interval_ms``, spread evenly over the interval, each on
        its own schedule (a late answer does not delay the next beat); each latency (ms) is noted."""
        stop = stop or asyncio.Event()
        brokers = list(self.brokers.values())
        start = time.monotonic()
        pending: set[asyncio.Task] = set()

        async def beat(broker: SimBroker) -> None:
            sent = time.monotonic()
            try:
                await self.heartbeat(broker, timeout_ms=interval_ms * 4)
            except LoadError:
                return
            if latencies is not None:
                latencies.append((time.monotonic() - sent) * 1000)

        tick = 0
        while not stop.is_set():
            slot = tick % len(brokers)
            due = start + (tick * interval_ms / len(brokers)) / 1000
            tick += 1
            wait = due - time.monotonic()
            if wait > 0:
                try:
                    await asyncio.wait_for(stop.wait(), wait)
                    break
                except TimeoutError:
                    pass
            task = asyncio.create_task(beat(brokers[slot]))
            pending.add(task)
            task.add_done_callback(pending.discard)
        for task in list(pending):
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    # -- topics ----------------------------------------------------------------------------

    async def create_topics(self, specs: list[tuple[str, int, int]], *, timeout_ms: int | None = None) -> int:
        """Create (name, partitions, replication factor) topics in one request; the partitions
        created. A topic that already exists counts (a retry after a failover may find it made)."""
        request = _CT.CreateTopicsRequest(topics=tuple(
            _CT.CreatableTopic(name=name, num_partitions=i32(count), replication_factor=i16(factor), assignments=(),
                               configs=()) for name, count, factor in specs),
            timeout=_ms(REQUEST_TIMEOUT_MS), validate_only=False)
        answer = await self.call(request, timeout_ms=timeout_ms)
        made = 0
        for spec, result in zip(specs, answer.topics):
            if result.error_code not in (ErrorCode.none, ErrorCode.topic_already_exists):
                raise LoadError(f"topic {result.name} refused: {ErrorCode(result.error_code).name} "
                                f"{result.error_message or ''}".strip())
            made += spec[1]
        return made


def _says_not_controller(response: Any) -> bool:
    if getattr(response, "error_code", None) == ErrorCode.not_controller:
        return True
    return any(getattr(t, "error_code", None) == ErrorCode.not_controller for t in getattr(response, "topics", ()) or ())


def topic_specs(topics: int, partitions_per_topic: int, prefix: str = "bench") -> list[tuple[str, int, int]]:
    """``topics`` topics, replication factors 1, 2, 3 in turn."""
    return [(f"{prefix}-{i:06d}", partitions_per_topic, 1 + i % 3) for i in range(topics)]


def batches(specs: list[tuple[str, int, int]], max_records: int = 10_000) -> list[list[tuple[str, int, int]]]:
    """Requests that each write at most ``max_records`` records (a TopicRecord and one
    PartitionRecord per partition, per topic): Kafka's controller refuses a request whose records
    exceed its 10,000-record batch bound (POLICY_VIOLATION, "excessively large batch operation")."""
    out: list[list[tuple[str, int, int]]] = [[]]
    count = 0
    for spec in specs:
        records = 1 + spec[1]
        if out[-1] and count + records > max_records:
            out.append([])
            count = 0
        out[-1].append(spec)
        count += records
    return [b for b in out if b]


async def create_all(load: ControllerLoad, specs: list[tuple[str, int, int]], *, max_records: int = 10_000,
                     in_flight: int = 4, progress: Callable[[int, float], None] | None = None) -> float:
    """Create every topic, ``in_flight`` requests at a time; the seconds it took."""
    start = time.monotonic()
    queue = batches(specs, max_records)
    made = 0
    semaphore = asyncio.Semaphore(in_flight)

    async def one(batch: list[tuple[str, int, int]]) -> None:
        nonlocal made
        async with semaphore:
            count = await load.create_topics(batch)  # not `made += await`: it reads `made` before awaiting
            made += count
            if progress is not None:
                progress(made, time.monotonic() - start)

    await asyncio.gather(*(one(b) for b in queue))
    return time.monotonic() - start


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


__all__ = ["ControllerLoad", "LoadError", "SimBroker", "batches", "create_all", "percentile", "topic_specs"]
