"""The simulated replicas' edge: sockets and timers around engine.broker.replica_sim and
engine.broker.dir_assignments.

One task polls both cores whenever the broker's image moves, an answer comes back or a core's
timer falls due. Followers' Fetch requests go over TCP to the leader broker's endpoint on the
inter-broker listener (from the image's registration, as Kafka's fetcher finds it), through one
client whose connections stay open (secured as the inter-broker listener asks); AlterPartition
and AssignReplicasToDirs go to the active controller through the broker's channel. A leader's side is ``handle_fetch``, which the client
listener calls for a Fetch that names a replica. A send that fails is handed back to its core
as ``None`` (the cores back off and retry, as Kafka's managers do).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import uuid
from typing import Any, Callable, Iterable

from engine.broker.controller_channel import ControllerChannel
from engine.broker.dir_assignments import DirAssignments
from engine.broker.replica_sim import CONTROLLER, ReplicaConfig, ReplicaSim
from engine.image.metadata_image import MetadataImage
from engine.net.channel_security import PLAINTEXT_CLIENT, ClientSecurity
from engine.net.errors import NetError
from engine.net.kafka_client import KafkaClient
from engine.net.kafka_server import RequestContext

log = logging.getLogger("engine.server.broker_replicas")

FETCH_TIMEOUT_MS = 30000  # replica.socket.timeout.ms


class BrokerReplicas:
    """Runs one broker's ReplicaSim and DirAssignments: ``start()``, then ``await close()``."""

    def __init__(self, config: ReplicaConfig, *, image: Callable[[], MetadataImage],
                 broker_epoch: Callable[[], int], channel: ControllerChannel, inter_broker_listener: str,
                 now_ms: Callable[[], int], controller_timeout_ms: int, rng: random.Random | None = None,
                 inter_broker_security: ClientSecurity = PLAINTEXT_CLIENT):
        self.sim = ReplicaSim(config, rng or random.Random())
        self.dirs = DirAssignments(config.broker_id, config.log_dir_ids, rng)
        self._image = image
        self._broker_epoch = broker_epoch
        self.channel = channel
        self.listener = inter_broker_listener
        self.now_ms = now_ms
        self.controller_timeout_ms = controller_timeout_ms
        self.client = KafkaClient(client_id=f"broker-{config.broker_id}-fetcher", request_timeout_ms=FETCH_TIMEOUT_MS,
                                  security=inter_broker_security)
        self._seen: tuple[MetadataImage, int] | None = None  # (image, broker epoch) last given to the cores
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._sends: set[asyncio.Task] = set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="broker replicas")

    def wake(self) -> None:
        self._wake.set()

    def set_failed_dirs(self, dir_ids: Iterable[uuid.UUID]) -> None:
        ids = frozenset(dir_ids)
        self.sim.set_failed_dirs(ids, self.now_ms())
        self.dirs.set_failed_dirs(ids)
        self.wake()

    def set_fetch_delay_ms(self, delay_ms: int) -> None:
        self.sim.set_fetch_delay_ms(delay_ms)
        self.wake()

    def set_fetch_failure_rate(self, rate: float) -> None:
        self.sim.set_fetch_failure_rate(rate)
        self.wake()

    async def handle_fetch(self, ctx: RequestContext, request: Any) -> Any:
        """A follower's Fetch, answered by the leader's core."""
        self._refresh()
        response = self.sim.handle_fetch(request, self.now_ms())
        self.wake()  # an expansion may now be due
        return response

    # -- the loop ------------------------------------------------------------------------

    def _refresh(self) -> None:
        image, epoch = self._image(), self._broker_epoch()
        if epoch < 0:
            return  # not registered yet: nothing to replicate as
        if self._seen is None or self._seen[0] is not image or self._seen[1] != epoch:
            self._seen = (image, epoch)
            now = self.now_ms()
            self.sim.set_image(image, now, epoch)
            self.dirs.set_image(image, now)

    async def _loop(self) -> None:
        while True:
            self._refresh()
            now = self.now_ms()
            if self._seen is not None:
                for destination, request in self.sim.poll(now):
                    self._spawn(self._alter_partition(request) if destination == CONTROLLER
                                else self._fetch(destination, request))
                for request in self.dirs.poll(now):
                    self._spawn(self._assign(request))
            dues = [d for d in (self.sim.next_poll_ms(now), self.dirs.next_poll_ms(now)) if d is not None]
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0, min(dues) - now) / 1000 if dues else None):
                    await self._wake.wait()

    def _spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    async def _fetch(self, leader_id: int, request: Any) -> None:
        registration = self._image().cluster.brokers.get(leader_id)
        endpoint = next((e for e in registration.endpoints if e.name == self.listener), None) \
            if registration is not None else None
        response = None
        if endpoint is not None:
            try:
                response = await self.client.send((endpoint.host, endpoint.port), request, adapt=True)
            except NetError as err:
                log.debug("replica fetch from broker %d failed: %s", leader_id, err)
        self.sim.handle_fetch_response(leader_id, request, response, self.now_ms())
        self.wake()

    async def _to_controller(self, request: Any) -> Any | None:
        try:
            return await self.channel.send(request, timeout_ms=self.controller_timeout_ms)
        except NetError as err:
            log.debug("%s to the controller failed: %s", type(request).__name__, err)
            return None

    async def _alter_partition(self, request: Any) -> None:
        response = await self._to_controller(request)
        self.sim.handle_alter_partition_response(request, response, self.now_ms())
        self.wake()

    async def _assign(self, request: Any) -> None:
        response = await self._to_controller(request)
        self.dirs.handle_response(request, response, self.now_ms())
        self.wake()

    async def close(self) -> None:
        tasks = [t for t in (self._task, *self._sends) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.client.close()


__all__ = ["BrokerReplicas"]
