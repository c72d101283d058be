"""The active controller's soft state about brokers: what heartbeats tell, never in the log.

Kafka 4.1's BrokerHeartbeatManager and BrokerHeartbeatTracker, as facts (no code carried over):

- a *session* is a (broker id, broker epoch) with the time of its last heartbeat; a heartbeat
  refreshes its own (id, epoch) before anything is checked, so a stale epoch still counts as
  contact for that epoch, and a registration records no contact. A session expires when
  ``last contact + broker.session.timeout.ms < now``; the expiry task takes one expired
  session at a time and fences the broker if that epoch is still the registered one.
- per broker: the metadata offset it last reported and, while in controlled shutdown, the
  offset that must be replicated before it may stop (``controlled_shutdown_offset``).
- the *active* brokers are the unfenced ones not in controlled shutdown; the lowest offset they
  reported gates the end of a controlled shutdown.
- a controller that becomes active starts afresh: every unfenced broker gets a session from the
  activation time (a full timeout to heartbeat to the new controller), offsets unknown (-1).

Whether a broker is fenced is read from the (speculative) image, where Kafka keeps a copy.
Times come in as arguments (``now_ms``); nothing here reads a clock.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable

from engine.image.metadata_image import MetadataImage

NO_OFFSET = -1
# Kafka's lowestActiveOffset with no active broker: Long.MAX_VALUE
NO_ACTIVE_BROKER = (1 << 63) - 1


class BrokerControlState(enum.Enum):
    """Kafka's BrokerControlState: (fenced, in controlled shutdown, should shut down)."""

    FENCED = (True, False, False)
    UNFENCED = (False, False, False)
    CONTROLLED_SHUTDOWN = (False, True, False)
    SHUTDOWN_NOW = (True, False, True)

    @property
    def fenced(self) -> bool:
        return self.value[0]

    @property
    def in_controlled_shutdown(self) -> bool:
        return self.value[1]

    @property
    def should_shut_down(self) -> bool:
        return self.value[2]


@dataclass
class _Broker:
    metadata_offset: int = NO_OFFSET
    controlled_shutdown_offset: int = NO_OFFSET  # >= 0 while in controlled shutdown


class BrokerHeartbeatManager:
    def __init__(self, session_timeout_ms: int):
        self.session_timeout_ms = session_timeout_ms
        self._contact_ms: dict[tuple[int, int], int] = {}  # (broker id, epoch) -> last contact
        self._brokers: dict[int, _Broker] = {}
        # the offset of each broker's latest RegisterBrokerRecord (Kafka keeps it from replay; the
        # image does not, so it is known only for registrations this controller wrote)
        self._registration_offsets: dict[int, int] = {}

    # -- sessions ------------------------------------------------------------------------

    def record_contact(self, broker_id: int, broker_epoch: int, now_ms: int) -> None:
        self._contact_ms[(broker_id, broker_epoch)] = now_ms

    def contact_ms(self, broker_id: int, broker_epoch: int) -> int | None:
        return self._contact_ms.get((broker_id, broker_epoch))

    def is_expired(self, contact_ms: int, now_ms: int) -> bool:
        return now_ms > contact_ms and contact_ms + self.session_timeout_ms < now_ms

    def has_valid_session(self, broker_id: int, broker_epoch: int, now_ms: int) -> bool:
        contact = self._contact_ms.get((broker_id, broker_epoch))
        return contact is not None and not self.is_expired(contact, now_ms)

    def pop_expired_session(self, now_ms: int) -> tuple[int, int] | None:
        """Remove and return one expired (broker id, epoch): the oldest contact first (Kafka
        takes any one; the oldest makes the order reproducible)."""
        expired = [(contact, key) for key, contact in self._contact_ms.items() if self.is_expired(contact, now_ms)]
        if not expired:
            return None
        _, key = min(expired)
        del self._contact_ms[key]
        return key

    # -- per broker ----------------------------------------------------------------------

    def _broker(self, broker_id: int) -> _Broker:
        return self._brokers.setdefault(broker_id, _Broker())

    def metadata_offset(self, broker_id: int) -> int:
        broker = self._brokers.get(broker_id)
        return NO_OFFSET if broker is None else broker.metadata_offset

    def controlled_shutdown_offset(self, broker_id: int) -> int | None:
        broker = self._brokers.get(broker_id)
        if broker is None or broker.controlled_shutdown_offset < 0:
            return None
        return broker.controlled_shutdown_offset

    def registration_offset(self, broker_id: int, broker_epoch: int) -> int:
        """The offset a heartbeat must have reached to be caught up: the broker's latest
        RegisterBrokerRecord, else (written before this controller became active) its epoch,
        the offset of the batch that first registered this incarnation."""
        return self._registration_offsets.get(broker_id, broker_epoch)

    def registered(self, broker_id: int, record_offset: int) -> None:
        """A RegisterBrokerRecord at ``record_offset``: the broker's soft state starts afresh
        (Kafka re-registers it in its manager on replay, with no offset known)."""
        self._registration_offsets[broker_id] = record_offset
        self._brokers.pop(broker_id, None)

    def unregistered(self, broker_id: int) -> None:
        self._registration_offsets.pop(broker_id, None)
        self._brokers.pop(broker_id, None)

    def fenced_by_expiry(self, broker_id: int) -> None:
        """The broker was fenced by records (expiry): it leaves controlled shutdown, and what it
        reported is forgotten, as Kafka's replay of the fencing record does."""
        self._brokers.pop(broker_id, None)

    def touch(self, broker_id: int, fenced: bool, metadata_offset: int) -> None:
        """After a heartbeat: what the broker reported. A fenced broker leaves controlled
        shutdown (its next heartbeat is told to shut down at once)."""
        broker = self._broker(broker_id)
        broker.metadata_offset = metadata_offset
        if fenced:
            broker.controlled_shutdown_offset = NO_OFFSET

    def maybe_update_controlled_shutdown_offset(self, broker_id: int, offset: int) -> None:
        """The offset that ends the batch moving the broker's leaderships; set once per shutdown."""
        broker = self._broker(broker_id)
        if broker.controlled_shutdown_offset < 0:
            broker.controlled_shutdown_offset = offset

    # -- the state machine ---------------------------------------------------------------

    def current_state(self, broker_id: int, fenced: bool) -> BrokerControlState:
        if self.controlled_shutdown_offset(broker_id) is not None:
            return BrokerControlState.CONTROLLED_SHUTDOWN
        return BrokerControlState.FENCED if fenced else BrokerControlState.UNFENCED

    def lowest_active_offset(self, image: MetadataImage) -> int:
        """The lowest metadata offset reported by an unfenced broker not shutting down."""
        offsets = [self.metadata_offset(b.id) for b in image.cluster.brokers.values()
                   if not b.fenced and self.controlled_shutdown_offset(b.id) is None]
        return min(offsets, default=NO_ACTIVE_BROKER)

    def next_state(self, image: MetadataImage, broker_id: int, fenced: bool, request: Any,
                   registration_offset: int, has_leaderships: Callable[[], bool]
                   ) -> tuple[BrokerControlState, BrokerControlState]:
        """(current, next) for a heartbeat ``request`` (want_fence, want_shut_down,
        current_metadata_offset), as the table of Kafka's calculateNextBrokerState."""
        S = BrokerControlState
        current = self.current_state(broker_id, fenced)
        if current is S.FENCED:
            if request.want_shut_down:
                return current, S.SHUTDOWN_NOW
            if not request.want_fence and request.current_metadata_offset >= registration_offset:
                return current, S.UNFENCED
            return current, S.FENCED
        if current is S.UNFENCED:
            if request.want_fence:
                return current, S.SHUTDOWN_NOW if request.want_shut_down else S.FENCED
            if request.want_shut_down:
                return current, S.CONTROLLED_SHUTDOWN if has_leaderships() else S.SHUTDOWN_NOW
            return current, S.UNFENCED
        # in controlled shutdown: done once it leads nothing and every active broker has the
        # batch that moved its leaderships
        if has_leaderships():
            return current, S.CONTROLLED_SHUTDOWN
        if self._broker(broker_id).controlled_shutdown_offset <= self.lowest_active_offset(image):
            return current, S.SHUTDOWN_NOW
        return current, S.CONTROLLED_SHUTDOWN

    # -- activation ----------------------------------------------------------------------

    def activate(self, image: MetadataImage, now_ms: int) -> None:
        """A new active controller: nothing is known but the image. Each unfenced broker gets a
        session from now, so none is fenced before it could reach the new controller."""
        self._contact_ms.clear()
        self._brokers.clear()
        self._registration_offsets.clear()
        for broker in image.cluster.brokers.values():
            if not broker.fenced:
                self._contact_ms[(broker.id, broker.epoch)] = now_ms


@dataclass
class ControllerSoftState:
    """The controller's soft state (``ControllerContext.soft``): kept by the active controller
    only, rebuilt on activation. Not slotted: the command table merges its attributes."""

    heartbeats: BrokerHeartbeatManager = field(default_factory=lambda: BrokerHeartbeatManager(9000))


def new_soft_state(config: Any) -> ControllerSoftState:
    return ControllerSoftState(BrokerHeartbeatManager(config.broker_session_timeout_ms))


def on_activation(soft: Any, image: MetadataImage, now_ms: int) -> None:
    """Kafka's ClusterControlManager.activate: a fresh heartbeat manager, sessions from now."""
    soft.heartbeats.activate(image, now_ms)
