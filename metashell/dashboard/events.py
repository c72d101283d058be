"""Events of interest, read from a batch's change set (engine/image/change_set.py).

The delta that replayed the batch says what it changed, with the value before and after and
where a record last changed it, so finding the events of a whole history costs about as much
as replaying it, however big the image, and nothing here reads a record. An event carries
the offset and time of that last record: the net change of a batch is what a reader of the log
observes. A metadata transaction's changes are its EndTransactionRecord's (where its records
take effect, as they do in the image).
"""

from __future__ import annotations

from engine.common.kafka_uuid import uuid_to_kafka
from engine.image.broker_registration import ControllerRegistration
from engine.image.change_set import Change, ChangeSet
from engine.image.metadata_image import BrokerRegistration, MetadataImage
from engine.image.partition_registration import PartitionRegistration
from metashell.dashboard.model import Event

# the order of kinds within one record's events (a feed reads better cause first)
_KIND_ORDER = {kind: n for n, kind in enumerate((
    "leader-change", "voter-change", "topic-create", "broker-register", "fence",
    "controlled-shutdown", "unfence", "dirs-cordoned", "partition-leader", "isr-shrink", "isr-expand", "elr-change",
    "broker-unregister", "controller-unregister", "topic-delete"))}


def events_of_changes(changes: ChangeSet, after: MetadataImage) -> list[Event]:
    """The events of one batch's ``changes``, sorted by offset (``after``: the image once the
    batch is applied, which names the topics of the partitions that changed)."""
    events: list[Event] = []
    for leader in changes.leader_changes:
        events.append(Event(leader.offset, leader.timestamp_ms, "leader-change", "quorum",
                            f"quorum leader {leader.leader_id} (epoch {leader.epoch})"))
    if changes.voters is not None:
        _voter_events(changes.voters, events)
    for broker_id, change in changes.brokers.items():
        _broker_events(broker_id, change, events)
    for controller_id, change in changes.controllers.items():
        _controller_events(controller_id, change, events)
    by_id = after.topics.by_id
    for topic_id, change in changes.topics.items():
        if change.created:
            events.append(_event(change, "topic-create", f"topic {change.after}",
                                 f"topic {change.after} created ({_count(len(by_id[topic_id].partitions), 'partition')})"))
        elif change.deleted:
            events.append(_event(change, "topic-delete", f"topic {change.before}", f"topic {change.before} deleted"))
    for (topic_id, partition_id), change in changes.partitions.items():
        if change.before is None or change.after is None:
            continue  # added or removed: a topic event says it, or it is not one of interest (yet)
        _partition_events(f"{by_id[topic_id].name}-{partition_id}", change, events)
    events.sort(key=lambda e: (e.offset, _KIND_ORDER.get(e.kind, 99)))
    return events


def _event(change: Change, kind: str, subject: str, text: str) -> Event:
    return Event(change.offset, change.timestamp_ms, kind, subject, text)


def _voter_events(change: Change, events: list[Event]) -> None:
    old, new = change.before, change.after
    if old is None or new is None:
        ids = sorted(v.id for v in new or ())
        events.append(_event(change, "voter-change", "voters", f"voters {ids}"))
        return
    old_by_id, new_by_id = {v.id: v for v in old}, {v.id: v for v in new}
    for voter_id in sorted(old_by_id.keys() | new_by_id.keys()):
        was, now = old_by_id.get(voter_id), new_by_id.get(voter_id)
        if was == now:
            continue
        what = "added" if was is None else "removed" if now is None else "changed"
        events.append(_event(change, "voter-change", f"voter {voter_id}", f"voter {voter_id} {what}"))


def _broker_events(broker_id: int, change: Change[BrokerRegistration], events: list[Event]) -> None:
    old, new = change.before, change.after
    subject = f"broker {broker_id}"
    if new is None:
        events.append(_event(change, "broker-unregister", subject, f"broker {broker_id} unregistered"))
        return
    if old is None or old.epoch != new.epoch:
        again = "" if old is None else "re-"
        events.append(_event(change, "broker-register", subject,
                             f"broker {broker_id} {again}registered (epoch {new.epoch}, {new.state})"))
        if old is None:
            return
    if new.fenced and not old.fenced:
        events.append(_event(change, "fence", subject, f"broker {broker_id} fenced"))
    elif old.fenced and not new.fenced:
        events.append(_event(change, "unfence", subject, f"broker {broker_id} unfenced"))
    if new.in_controlled_shutdown and not old.in_controlled_shutdown:
        events.append(_event(change, "controlled-shutdown", subject, f"broker {broker_id} in controlled shutdown"))
    was, now = set(old.cordoned_directories or ()), set(new.cordoned_directories or ())
    if was != now:  # KIP-1066: no new replica goes to a cordoned directory
        parts = [f"{verb} {', '.join(sorted(uuid_to_kafka(d) for d in dirs))}"
                 for verb, dirs in (("cordoned", now - was), ("uncordoned", was - now)) if dirs]
        events.append(_event(change, "dirs-cordoned", subject, f"broker {broker_id} log dirs " + "; ".join(parts)))


def _controller_events(controller_id: int, change: Change[ControllerRegistration], events: list[Event]) -> None:
    """A controller unregistered (KIP-1312, Kafka 4.4+). Its registrations are no event: each
    controller registers again at every start, which the leader changes already tell."""
    if change.after is None:
        events.append(_event(change, "controller-unregister", f"controller {controller_id}",
                             f"controller {controller_id} unregistered"))


def _partition_events(subject: str, change: Change[PartitionRegistration], events: list[Event]) -> None:
    old, new = change.before, change.after
    if old.leader != new.leader:
        leader = str(new.leader) if new.leader >= 0 else "none"
        was = str(old.leader) if old.leader >= 0 else "none"
        events.append(_event(change, "partition-leader", subject,
                             f"{subject} leader {was} → {leader} (epoch {new.leader_epoch})"))
    if old.isr != new.isr:
        removed, added = set(old.isr) - set(new.isr), set(new.isr) - set(old.isr)
        kind = "isr-shrink" if removed else "isr-expand" if added else None  # a reorder is no event
        if kind is not None:
            events.append(_event(change, kind, subject, f"{subject} ISR {list(old.isr)} → {list(new.isr)}"))
    parts = []
    if old.elr != new.elr:
        parts.append(f"ELR {list(old.elr)} → {list(new.elr)}")
    if old.last_known_elr != new.last_known_elr:
        parts.append(f"last-known ELR {list(old.last_known_elr)} → {list(new.last_known_elr)}")
    if parts:
        events.append(_event(change, "elr-change", subject, f"{subject} " + ", ".join(parts)))


def _count(n: int, noun: str) -> str:
    """``1 partition``, ``3 partitions``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
