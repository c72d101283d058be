"""A controller registers itself with the active controller (KIP-919), as Kafka's
ControllerRegistrationManager does.

Once the finalized metadata.version has controller registrations (3.7-IV0), every controller
makes sure the log holds a RegisterControllerRecord with its incarnation (new at each start),
its controller listeners and its supported features. Kafka's active controller lists the
registered controllers in DescribeCluster and checks their feature ranges before an
UpdateFeatures; in a quorum that mixes Kafka's controllers and ours, ours must be registered
for Kafka's to accept a feature upgrade. The active controller registers itself through its own
core; a standby sends ControllerRegistration to the active one, one request at a time, again
after a failure once ``RETRY_MS`` passed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, Mapping, Sequence

from engine.common.kafka_uuid import random_kafka_uuid
from engine.image.metadata_image import MetadataImage
from engine.records.kio_codec import ErrorCode, i16, i32, protocol_module, u16

log = logging.getLogger("engine.server.controller")

MINIMUM_LEVEL = 15  # 3.7-IV0
RETRY_MS = 1000
PLAINTEXT = 0  # Kafka's SecurityProtocol id

_REQUEST = protocol_module("controller_registration", 0, "request")

# submit(request) -> the response: through the local core when active, else to the active controller
Submit = Callable[[Any], Awaitable[Any]]


class ControllerRegistrar:
    def __init__(self, node_id: int, endpoints: Callable[[], Sequence[tuple[str, tuple[str, int]]]],
                 supported_features: Mapping[str, tuple[int, int]], security_protocol: int = PLAINTEXT):
        self.node_id = node_id
        self.security_protocol = security_protocol  # the controller listener's, as brokers must speak it
        self.incarnation_id = random_kafka_uuid()
        self._endpoints = endpoints  # read when sending: a listener on port 0 learns its port at bind
        self.supported_features = dict(supported_features)
        self._in_flight = False
        self._retry_at_ms = 0

    def request(self) -> Any:
        return _REQUEST.ControllerRegistrationRequest(
            controller_id=i32(self.node_id), incarnation_id=self.incarnation_id, zk_migration_ready=False,
            listeners=tuple(_REQUEST.Listener(name=name, host=host, port=u16(port), security_protocol=i16(self.security_protocol))
                            for name, (host, port) in self._endpoints()),
            features=tuple(_REQUEST.Feature(name=name, min_supported_version=i16(low), max_supported_version=i16(high))
                           for name, (low, high) in sorted(self.supported_features.items())))

    def registered(self, image: MetadataImage) -> bool:
        current = image.cluster.controllers.get(self.node_id)
        return (current is not None and current.incarnation_id == self.incarnation_id
                and sorted((e.name, e.host, e.port) for e in current.endpoints)
                == sorted((name, host, port) for name, (host, port) in self._endpoints()))

    def due(self, image: MetadataImage, now_ms: int) -> bool:
        """Whether to send a registration now: the level has them, ours is missing or stale, none
        in flight, and no failure in the last RETRY_MS."""
        return ((image.metadata_version or 0) >= MINIMUM_LEVEL and not self._in_flight
                and now_ms >= self._retry_at_ms and not self.registered(image))

    async def register(self, submit: Submit, now_ms: Callable[[], int]) -> None:
        self._in_flight = True
        try:
            response = await submit(self.request())
            failure = None if response is None else (
                None if response.error_code == ErrorCode.none else f"{response.error_code.name}: "
                                                                   f"{response.error_message}")
            if response is None:
                failure = "no active controller to ask"
        except Exception as err:  # noqa: BLE001 - a peer gone mid-request: try again later
            failure = f"{type(err).__name__}: {err}"
        finally:
            self._in_flight = False
        if failure is not None:
            self._retry_at_ms = now_ms() + RETRY_MS
            log.debug("node %d: controller registration not done yet (%s); again in %d ms", self.node_id, failure,
                      RETRY_MS)
        else:
            log.info("node %d: registered as a controller (incarnation %s)", self.node_id, self.incarnation_id)


def spawn(coroutine: Awaitable[None], tasks: set[asyncio.Task]) -> None:
    task = asyncio.ensure_future(coroutine)
    tasks.add(task)
    task.add_done_callback(tasks.discard)
