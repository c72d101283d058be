"""What a record itself says, as the history tables print it: a printer, as record JSON is.

A history table's row is a record beside what it did. What it did (the partitions a
ClearElrRecord cleared, the quorum's new leader, the state after it) comes from the change set
and the state the delta holds (history_tables.py); what the record says (which table its row
goes to, the partition and the state it asks for, the broker event it names) is printed here,
the one module of the export that reads a record's type.
"""

from __future__ import annotations

import uuid
from typing import Any, Callable, NamedTuple


class PartitionFields(NamedTuple):
    """A partition_changes row's own columns. ``topic_id`` None: the record names no single
    partition (a ClearElrRecord), and has one row with these columns per partition it changed."""

    type: str  # the record's type, as Kafka's JSON names it: PARTITION_RECORD, ...
    topic_id: uuid.UUID | None
    partition: int | None
    leader: int  # -1 none, -2 unchanged
    isr: list | None  # None: unchanged (and so on for the lists)
    replicas: list | None
    adding: list | None
    removing: list | None
    elr: list | None
    last_known_elr: list | None
    leader_recovery_state: int


class BrokerFields(NamedTuple):
    """A broker_fencing row's own columns: the broker and epoch the record names, and its event."""

    broker_id: int
    broker_epoch: int
    event: str  # register, unregister, fence, unfence, controlled_shutdown or change


class TopicName(NamedTuple):
    """A TopicRecord names its topic's id, whether or not it is ever applied (an aborted creation)."""

    topic_id: uuid.UUID
    name: str


Fields = PartitionFields | BrokerFields | TopicName


def record_fields(record: Any) -> Fields | None:
    """What ``record`` prints in the history tables besides the records table (None: nothing)."""
    printer = _PRINTERS.get(getattr(record, "record_name", None))
    return None if printer is None else printer(record)


def _list(values) -> list | None:
    return None if values is None else list(values)


def _partition(r: Any) -> PartitionFields:
    v = getattr(r, "__version__", 0)
    return PartitionFields(r.type_name, r.topic_id, r.partition_id, r.leader, _list(r.isr), _list(r.replicas),
                           _list(r.adding_replicas), _list(r.removing_replicas),
                           _list(r.eligible_leader_replicas) if v >= 2 else None,
                           _list(r.last_known_elr) if v >= 2 else None, r.leader_recovery_state)


def _clear_elr(r: Any) -> PartitionFields:
    """As the change it is to each partition: ELR and last-known ELR emptied, the rest unchanged."""
    return PartitionFields(r.type_name, None, None, -2, None, None, None, None, [], [], -1)


def _broker_change(r: Any) -> BrokerFields:
    if getattr(r, "in_controlled_shutdown", 0) == 1:
        event = "controlled_shutdown"
    else:
        event = {1: "fence", -1: "unfence"}.get(r.fenced, "change")
    return BrokerFields(r.broker_id, r.broker_epoch, event)


_PRINTERS: dict[str | None, Callable[[Any], Fields]] = {
    "PartitionRecord": _partition,
    "PartitionChangeRecord": _partition,
    "ClearElrRecord": _clear_elr,
    "RegisterBrokerRecord": lambda r: BrokerFields(r.broker_id, r.broker_epoch, "register"),
    "UnregisterBrokerRecord": lambda r: BrokerFields(r.broker_id, r.broker_epoch, "unregister"),
    "FenceBrokerRecord": lambda r: BrokerFields(r.id, r.epoch, "fence"),
    "UnfenceBrokerRecord": lambda r: BrokerFields(r.id, r.epoch, "unfence"),
    "BrokerRegistrationChangeRecord": _broker_change,
    "TopicRecord": lambda r: TopicName(r.topic_id, r.name),
}
