"""Events of interest, found by comparing the images before and after one batch.

Only what the batch's records touch is compared (the brokers, partitions, topics and quorum
they name), so finding the events of a whole history costs about as much as replaying it,
however big the image. An event carries the offset and time of the last record of the batch
that touched its subject: the net change of a batch is what a reader of the log observes.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.common.config_resource import ConfigResourceType
from engine.storage.log_reader import LogEntry
from engine.image.metadata_image import MetadataImage, TopicImage
from engine.records.metadata_record_serde import ControlRecord
from metashell.dashboard.model import Event

_BROKER_ID_FIELD = {"RegisterBrokerRecord": "broker_id", "UnregisterBrokerRecord": "broker_id",
                    "BrokerRegistrationChangeRecord": "broker_id", "FenceBrokerRecord": "id",
                    "UnfenceBrokerRecord": "id"}
# the order of kinds within one record's events (a feed reads better cause first)
_KIND_ORDER = {kind: n for n, kind in enumerate((
    "leader-change", "voter-change", "topic-create", "broker-register", "fence", "controlled-shutdown",
    "unfence", "partition-leader", "isr-shrink", "isr-expand", "elr-change", "broker-unregister",
    "topic-delete"))}


@dataclass(slots=True)
class Touched:
    """What a run of records names, each subject with the last entry that named it."""

    brokers: dict[int, LogEntry] = field(default_factory=dict)
    topics: dict[uuid.UUID, LogEntry] = field(default_factory=dict)  # TopicRecord / RemoveTopicRecord
    partitions: dict[tuple[uuid.UUID, int], LogEntry] = field(default_factory=dict)
    clear_elr: list[tuple[str | None, LogEntry]] = field(default_factory=list)  # topic name, None: all
    min_isr_topics: set[str] = field(default_factory=set)  # min.insync.replicas set on these topics
    min_isr_default: bool = False  # ... or on the cluster default
    quorum: bool = False  # a LeaderChangeMessage or a VotersRecord


def touched(entries: Sequence[LogEntry]) -> Touched:
    """The subjects ``entries`` name (records that refer to nothing known still count)."""
    t = Touched()
    for entry in entries:
        record = entry.record
        if isinstance(record, ControlRecord):
            if record.type_name in ("LEADER_CHANGE", "KRAFT_VOTERS"):
                t.quorum = True
            continue
        name = getattr(record, "record_name", None)
        if name in ("PartitionRecord", "PartitionChangeRecord"):
            t.partitions[(record.topic_id, record.partition_id)] = entry
        elif name in _BROKER_ID_FIELD:
            t.brokers[getattr(record, _BROKER_ID_FIELD[name])] = entry
        elif name in ("TopicRecord", "RemoveTopicRecord"):
            t.topics[record.topic_id] = entry
        elif name == "ClearElrRecord":
            t.clear_elr.append((record.topic_name or None, entry))
        elif name == "ConfigRecord" and record.name == "min.insync.replicas":
            if record.resource_type == ConfigResourceType.TOPIC:
                t.min_isr_topics.add(record.resource_name)
            elif record.resource_type == ConfigResourceType.BROKER and not record.resource_name:
                t.min_isr_default = True
    return t


def events_of_batch(before: MetadataImage, entries: Sequence[LogEntry], after: MetadataImage,
                    scope: Touched | None = None) -> list[Event]:
    """The events between ``before`` and ``after`` (the image once ``entries`` are applied),
    sorted by offset. ``scope``: ``touched(entries)`` when the caller has it already."""
    t = scope if scope is not None else touched(entries)
    events: list[Event] = []
    if t.quorum and after.quorum is not before.quorum:
        _quorum_events(before, after, entries, events)
    if t.brokers and after.cluster is not before.cluster:
        for broker_id, entry in t.brokers.items():
            _broker_events(broker_id, before, after, entry, events)
    if after.topics is not before.topics:
        for topic_id, entry in t.topics.items():
            _topic_events(before.topics.by_id.get(topic_id), after.topics.by_id.get(topic_id), entry, events)
        for (topic_id, pid), entry in _partitions_in_scope(t, before).items():
            old_topic, new_topic = before.topics.by_id.get(topic_id), after.topics.by_id.get(topic_id)
            if old_topic is None or new_topic is None or old_topic is new_topic:
                continue  # created or deleted (one topic event says it), or untouched after all
            _partition_events(new_topic, pid, old_topic.partitions.get(pid), new_topic.partitions.get(pid),
                              entry, events)
    events.sort(key=lambda e: (e.offset, _KIND_ORDER.get(e.kind, 99)))
    return events


def _partitions_in_scope(t: Touched, before: MetadataImage) -> dict[tuple[uuid.UUID, int], LogEntry]:
    """The partitions records named, plus every partition a ClearElrRecord reached."""
    if not t.clear_elr:
        return t.partitions
    scope = dict(t.partitions)
    for name, entry in t.clear_elr:
        topics = before.topics.by_id.values() if name is None else \
            [before.topics.by_id[tid] for tid in (before.topics.by_name.get(name),) if tid is not None]
        for topic in topics:
            for pid in topic.partitions:
                key = (topic.id, pid)
                if key not in scope or scope[key].offset < entry.offset:
                    scope[key] = entry
    return scope


def _event(entry: LogEntry, kind: str, subject: str, text: str) -> Event:
    return Event(entry.offset, entry.timestamp_ms, kind, subject, text)


def _quorum_events(before: MetadataImage, after: MetadataImage, entries: Sequence[LogEntry],
                   events: list[Event]) -> None:
    for change in after.quorum.leader_changes[len(before.quorum.leader_changes):]:
        events.append(Event(change.offset, change.timestamp_ms, "leader-change", "quorum",
                            f"quorum leader {change.leader_id} (epoch {change.epoch})"))
    old, new = before.quorum.voters, after.quorum.voters
    if old == new:
        return
    # the last VotersRecord of the batch made the change
    entry = next((e for e in reversed(entries)
                  if isinstance(e.record, ControlRecord) and e.record.type_name == "KRAFT_VOTERS"), entries[-1])
    if old is None or new is None:
        ids = sorted(v.id for v in new or ())
        events.append(_event(entry, "voter-change", "voters", f"voters {ids}"))
        return
    old_by_id, new_by_id = {v.id: v for v in old}, {v.id: v for v in new}
    for voter_id in sorted(old_by_id.keys() | new_by_id.keys()):
        was, now = old_by_id.get(voter_id), new_by_id.get(voter_id)
        if was == now:
            continue
        what = "added" if was is None else "removed" if now is None else "changed"
        events.append(_event(entry, "voter-change", f"voter {voter_id}", f"voter {voter_id} {what}"))


def _broker_events(broker_id: int, before: MetadataImage, after: MetadataImage, entry: LogEntry,
                   events: list[Event]) -> None:
    old, new = before.cluster.brokers.get(broker_id), after.cluster.brokers.get(broker_id)
    subject = f"broker {broker_id}"
    if old is new:
        return
    if new is None:
        events.append(_event(entry, "broker-unregister", subject, f"broker {broker_id} unregistered"))
        return
    if old is None or old.epoch != new.epoch:
        again = "" if old is None else "re-"
        events.append(_event(entry, "broker-register", subject,
                             f"broker {broker_id} {again}registered (epoch {new.epoch}, {new.state})"))
        if old is None:
            return
    if new.fenced and not old.fenced:
        events.append(_event(entry, "fence", subject, f"broker {broker_id} fenced"))
    elif old.fenced and not new.fenced:
        events.append(_event(entry, "unfence", subject, f"broker {broker_id} unfenced"))
    if new.in_controlled_shutdown and not old.in_controlled_shutdown:
        events.append(_event(entry, "controlled-shutdown", subject, f"broker {broker_id} in controlled shutdown"))


def _topic_events(old: TopicImage | None, new: TopicImage | None, entry: LogEntry, events: list[Event]) -> None:
    if old is None and new is not None:
        events.append(_event(entry, "topic-create", f"topic {new.name}",
                             f"topic {new.name} created ({len(new.partitions)} partitions)"))
    elif old is not None and new is None:
        events.append(_event(entry, "topic-delete", f"topic {old.name}", f"topic {old.name} deleted"))


def _partition_events(topic: TopicImage, pid: int, old, new, entry: LogEntry, events: list[Event]) -> None:
    if old is None or new is None or old is new:
        return  # a partition added to a topic is not an event of interest (yet)
    subject = f"{topic.name}-{pid}"
    if old.leader != new.leader:
        leader = str(new.leader) if new.leader >= 0 else "none"
        was = str(old.leader) if old.leader >= 0 else "none"
        events.append(_event(entry, "partition-leader", subject,
                             f"{subject} leader {was} → {leader} (epoch {new.leader_epoch})"))
    if old.isr != new.isr:
        removed, added = set(old.isr) - set(new.isr), set(new.isr) - set(old.isr)
        kind = "isr-shrink" if removed else "isr-expand" if added else None  # a reorder is no event
        if kind is not None:
            events.append(_event(entry, kind, subject, f"{subject} ISR {list(old.isr)} → {list(new.isr)}"))
    parts = []
    if old.elr != new.elr:
        parts.append(f"ELR {list(old.elr)} → {list(new.elr)}")
    if old.last_known_elr != new.last_known_elr:
        parts.append(f"last-known ELR {list(old.last_known_elr)} → {list(new.last_known_elr)}")
    if parts:
        events.append(_event(entry, "elr-change", subject, f"{subject} " + ", ".join(parts)))
