"""The cluster's members: registered brokers and controllers (Kafka's ClusterImage and ClusterDelta).

Replay, as Kafka's ClusterDelta:
- RegisterBrokerRecord replaces the registration; UnregisterBrokerRecord removes it whatever its
  epoch (only the controller's own bookkeeping compares it);
- Fence/Unfence and BrokerRegistrationChangeRecord act only when the broker epoch matches (else
  the record is skipped). The change record's ``fenced`` is a tri-state (-1 unfence, 0 no change,
  1 fence), ``in_controlled_shutdown`` 1 sets it, its log directories replace them unless empty and
  its ``cordoned_log_dirs`` (4.3+) replace the cordoned ones unless null;
- RegisterControllerRecord replaces a controller's registration; UnregisterControllerRecord (4.4+)
  removes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Union

from engine.image.broker_registration import (
    BrokerRegistration, ControllerRegistration, RegisterBrokerRecord, directory_order,
)
from engine.image.domain_delta import REMOVED, DomainDelta, ReplayJournal, current, merged
from engine.image.image_map import EMPTY_MAP
from engine.records import metadata_records as m

BrokerRegistrationChangeRecord = Union[m.BrokerRegistrationChangeRecordV0, m.BrokerRegistrationChangeRecordV1,
                                       m.BrokerRegistrationChangeRecordV2, m.BrokerRegistrationChangeRecordV3]
FenceRecord = Union[m.FenceBrokerRecordV0, m.UnfenceBrokerRecordV0]

_FENCED = {-1: False, 1: True}  # BrokerRegistrationChangeRecord.fenced: 0 (or any other) keeps it


@dataclass(frozen=True, slots=True)
class ClusterImage:
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=lambda: EMPTY_MAP)
    controllers: Mapping[int, ControllerRegistration] = field(default_factory=lambda: EMPTY_MAP)
    EMPTY: ClassVar["ClusterImage"]

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)


ClusterImage.EMPTY = ClusterImage()


class ClusterDelta(DomainDelta):
    """Changes to the registered brokers and controllers. Change set domains: ``brokers`` and
    ``controllers``, by node id."""

    DOMAINS = ("brokers", "controllers")
    __slots__ = ("image", "_brokers", "_controllers")

    def __init__(self, image: ClusterImage, journal: ReplayJournal | None = None) -> None:
        super().__init__(journal)
        self.image = image
        self._brokers: dict[int, Any] = {}  # broker id -> BrokerRegistration, or REMOVED
        self._controllers: dict[int, Any] = {}  # controller id -> ControllerRegistration, or REMOVED

    # -- as the delta stands (Kafka's ClusterDelta.broker) ------------------------------------

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return current(self._brokers, self.image.brokers, broker_id)

    def controller(self, controller_id: int) -> ControllerRegistration | None:
        return current(self._controllers, self.image.controllers, controller_id)

    def changed_brokers(self) -> dict[int, BrokerRegistration | None]:
        """Each broker a record named, with its registration now (None: unregistered)."""
        return {b: None if r is REMOVED else r for b, r in self._brokers.items()}

    def changed_controllers(self) -> dict[int, ControllerRegistration | None]:
        return {c: None if r is REMOVED else r for c, r in self._controllers.items()}

    # -- replay -----------------------------------------------------------------------------

    def replay_register_broker(self, record: RegisterBrokerRecord) -> None:
        self._set_broker(record.broker_id, self.broker(record.broker_id), BrokerRegistration.from_record(record))

    def replay_unregister_broker(self, record: m.UnregisterBrokerRecordV0) -> None:
        broker = self.broker(record.broker_id)
        if broker is not None:
            self._set_broker(record.broker_id, broker, REMOVED)

    def replay_fence_broker(self, record: FenceRecord) -> None:
        self._fence(record, True)

    def replay_unfence_broker(self, record: FenceRecord) -> None:
        self._fence(record, False)

    def replay_broker_registration_change(self, record: BrokerRegistrationChangeRecord) -> None:
        broker = self._broker_at_epoch(record.broker_id, record.broker_epoch)
        if broker is None:
            return
        shutting_down = getattr(record, "in_controlled_shutdown", 0) == 1 or broker.in_controlled_shutdown
        # Kafka's ClusterDelta: a null list of cordoned directories changes nothing, any other (empty too) replaces
        cordoned = getattr(record, "cordoned_log_dirs", None)
        self._set_broker(record.broker_id, broker, broker._replace(
            fenced=_FENCED.get(record.fenced, broker.fenced), in_controlled_shutdown=shutting_down,
            directories=directory_order(getattr(record, "log_dirs", ())) or broker.directories,
            cordoned_directories=broker.cordoned_directories if cordoned is None else tuple(cordoned)))

    def replay_register_controller(self, record: m.RegisterControllerRecordV0) -> None:
        self._set_controller(record.controller_id, ControllerRegistration.from_record(record))

    def replay_unregister_controller(self, record: m.UnregisterControllerRecordV0) -> None:
        self._set_controller(record.controller_id, REMOVED)  # by id, as Kafka's ClusterDelta

    def _fence(self, record: FenceRecord, fenced: bool) -> None:
        broker = self._broker_at_epoch(record.id, record.epoch)
        if broker is not None:
            self._set_broker(record.id, broker, broker._replace(fenced=fenced))

    def _broker_at_epoch(self, broker_id: int, epoch: int) -> BrokerRegistration | None:
        broker = self.broker(broker_id)
        if broker is None or broker.epoch != epoch:
            self._skip()
            return None
        return broker

    def _set_broker(self, broker_id: int, before: BrokerRegistration | None, registration: Any) -> None:
        self._note("brokers", broker_id, before)
        self._brokers[broker_id] = registration

    def _set_controller(self, controller_id: int, registration: Any) -> None:
        self._note("controllers", controller_id, self.controller(controller_id))
        self._controllers[controller_id] = registration

    # -- what changed, and the next image --------------------------------------------------

    def value_in_image(self, domain: str, key: int) -> Any:
        return (self.image.brokers if domain == "brokers" else self.image.controllers).get(key)

    def value_now(self, domain: str, key: int) -> Any:
        return self.broker(key) if domain == "brokers" else self.controller(key)

    def apply(self) -> ClusterImage:
        if not self._brokers and not self._controllers:
            return self.image
        image = self.image
        return ClusterImage(merged(image.brokers, self._brokers) if self._brokers else image.brokers,
                            merged(image.controllers, self._controllers) if self._controllers else image.controllers)


__all__ = ["ClusterDelta", "ClusterImage"]
