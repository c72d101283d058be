"""Change items: one row per leaf of the tree a record changed, old value -> new value.

``change_items(start_image, batches)`` replays a log once and turns each record's change set
(``MetadataDelta.record_changes()``, engine/image/change_set.py) into items; metadata transactions
are handled as the history tables handle them (metashell/history/transactions.py, one shared
implementation). Nothing here reads a record's fields: what changed, and its values before and
after, are the change set's. ``log``, ``diff``, the history index, the export's change tables and
the dashboard's node history are all built on these items.

What one item is, per change-set domain (``path`` is the tree's, metashell/tree/tree_layout.py):

=============== ============================================ ====================================
domain          path                                         old / new
=============== ============================================ ====================================
configs         /configs/<TYPE>/<name>/<key>                 the value (secret ones redacted)
client_quotas   /client-quotas/<entity>/<key>                the value (float)
acls            /acls/<uuid>                                 the ACL's record JSON
scram           /scram/<mechanism>/<user>                    the credential, salt and keys redacted
features        /features/<name>                             the finalized level
topics          /topics/<name>                               {"id", "name"}: created or deleted
partitions      /topics/<name>/<partition>                   the partition's JSON (``cat --json``)
brokers         /brokers/<id>                                the registration (the directory's files)
controllers     /controllers/<id>                            the registration
voters          /quorum/voters/<id>                          {"id", "directory-id", "endpoints"}
kraft_version   /quorum/kraft-version                        the level
leader_changes  /quorum/leader                               {"leaderId", "epoch"}
producer_ids    /producer-ids                                the next producer id
tokens          /delegation-tokens/<id>                      the token's record JSON
=============== ============================================ ====================================

A partition or registration is one item per record with its whole JSON before and after, and
``fields`` naming the keys that differ (``leader``, ``isr``, ``eligibleLeaderReplicas``, ...):
the tree shows a partition as one file, so its path is that file, and a reader who wants one
field picks it from ``fields`` (``log /topics/orders/0`` prints only those). A topic deleted
gives an item for the topic, one per partition and one per config it had; a topic created, one
for the topic and one per partition. A deleted topic and a new one of the same name share a path
and differ in ``topic_id`` (and in the topic's value): two topics, not one.

Offsets: ``offset``/``timestamp_ms`` say where the change took effect (a committed transaction's
records at its EndTransactionRecord, an aborted one's at its AbortTransactionRecord, a record of
a transaction still open at its own place); ``record_offset`` is the record's own. Items come in
log order of ``offset`` (so a transaction's come at its end), each record's in change-set order
(a record's several configs, which a RemoveTopicRecord drops in no stable order, by key).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from engine.common.kafka_uuid import uuid_to_kafka
from engine.image.change_set import Change, ChangeSet
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.storage.log_reader import LogEntry
from metashell.history import item_values as v
from metashell.history.transactions import RecordOutcome, TransactionReplay, replay_outcomes
from metashell.tree.nodes import encode_name

__all__ = ["DOMAINS", "ChangeItem", "ChangeItemStream", "change_items", "items_of"]

# the item domains, in the order a record's items come (a change set's order, then its single values)
DOMAINS = ("features", "brokers", "controllers", "topics", "partitions", "configs", "client_quotas", "acls",
           "scram", "tokens", "producer_ids", "kraft_version", "voters", "leader_changes")


@dataclass(frozen=True, slots=True)
class ChangeItem:
    offset: int  # where it took effect (a transaction's marker); see the module's docstring
    timestamp_ms: int
    domain: str  # one of DOMAINS
    entity: str  # who: 'topic orders', 'broker 3', 'user alice', 'ACL <uuid>', ...
    key: str | None  # the config/quota key, the feature name, partition id, SCRAM mechanism, voter id
    path: str  # the tree path that changed: /configs/TOPIC/orders/retention.ms
    old: Any  # JSON-able value before (None: absent), as ``cat --json`` shows it, secrets redacted
    new: Any
    record: str  # Kafka's name of the record type that changed it: CONFIG_RECORD
    aborted: bool | None  # True: in an aborted transaction (no state change); None: transaction still open
    record_offset: int = -1  # the record's own offset (differs from ``offset`` in a transaction)
    topic_id: str | None = None  # topics, partitions: the topic's id (a re-created topic's differs)
    fields: tuple[str, ...] = ()  # an object's keys whose values differ (partitions, registrations, ...)
    event: str = "changed"  # created, deleted, changed; brokers: register, unregister, fence, unfence, ...

    @property
    def applied(self) -> bool:
        """It changed the image (not aborted, not still open)."""
        return self.aborted is False

    def to_json(self) -> dict:
        """A JSON object of every field (``log --json``'s rows)."""
        return {"offset": self.offset, "timestamp_ms": self.timestamp_ms, "record_offset": self.record_offset,
                "domain": self.domain, "entity": self.entity, "key": self.key, "path": self.path,
                "event": self.event, "old": self.old, "new": self.new, "fields": list(self.fields),
                "record": self.record, "aborted": self.aborted, "topic_id": self.topic_id}


def change_items(start_image: MetadataImage, batches: Iterable[list[LogEntry]], *, start: int | None = None,
                 end: int | None = None, open_transaction: tuple | None = None) -> Iterator[ChangeItem]:
    """The items of ``batches`` replayed from ``start_image`` (and the transaction it left open, if
    any), in log order: those with ``start <= offset`` (the state is replayed from the start
    regardless), up to the records at offset ``end`` (a transaction open there: its items have
    ``aborted`` None)."""
    replay = TransactionReplay(MetadataDelta(start_image, open_transaction, per_record=True))
    leader = start_image.quorum.leader
    state = {"leader": (leader.leader_id, leader.epoch) if leader is not None else None,
             "partitions": v.PartitionValues()}
    for outcome in replay_outcomes(replay, batches, end=end):
        if start is not None and outcome.offset < start:
            _follow_leader(outcome, state)
            continue
        yield from items_of(outcome, replay, state)


class ChangeItemStream:
    """``change_items`` fed as batches come (a live session's history grows): ``feed`` returns the
    items made known, ``pending`` those of a transaction still open (they change when it ends)."""

    def __init__(self, start_image: MetadataImage, open_transaction: tuple | None = None) -> None:
        self.replay = TransactionReplay(MetadataDelta(start_image, open_transaction, per_record=True))
        leader = start_image.quorum.leader
        self.state = {"leader": (leader.leader_id, leader.epoch) if leader is not None else None,
                      "partitions": v.PartitionValues()}

    def feed(self, batches: Iterable[list[LogEntry]]) -> list[ChangeItem]:
        out: list[ChangeItem] = []
        for batch in batches:
            for entry in batch:
                for outcome in self.replay.replay(entry):
                    out.extend(items_of(outcome, self.replay, self.state))
        return out

    def pending(self) -> list[ChangeItem]:
        state = dict(self.state)  # what the open records would do does not move the leader seen
        return [item for outcome in self.replay.pending() for item in items_of(outcome, self.replay, state)]


def _subjects(changes: ChangeSet) -> Iterator[tuple[str, Any, Change]]:
    """The change set's subjects in its order, a record's several configs by key: a RemoveTopicRecord
    drops a topic's configs in the order of a set (engine/image/configurations_image.py), which
    differs from one process to the next, and ``log`` must print the same lines every time."""
    if len(changes.configs) < 2:
        yield from changes.subjects()
        return
    for domain, key, change in changes.subjects():
        if domain != "configs":
            yield domain, key, change
        elif key == next(iter(changes.configs)):
            for sorted_key in sorted(changes.configs, key=lambda k: (k[0].type, k[0].name, k[1])):
                yield "configs", sorted_key, changes.configs[sorted_key]


def _follow_leader(outcome: RecordOutcome, state: dict) -> None:
    for leader in outcome.changes.leader_changes:
        state["leader"] = (leader.leader_id, leader.epoch)


def items_of(outcome: RecordOutcome, replay: TransactionReplay, state: dict) -> Iterator[ChangeItem]:
    """One record's items. ``state`` carries what a change set does not: the quorum's leader
    before a LeaderChange (``"leader"``: (id, epoch) or None), and the partitions' JSON rendered
    last (``"partitions"``: item_values.PartitionValues, optional)."""
    changes = outcome.changes
    if not changes:
        return
    entry = outcome.entry
    base = (outcome.offset, outcome.timestamp_ms)
    tail = dict(record_offset=entry.offset)
    record, aborted = entry.record.type_name, outcome.aborted

    def item(domain: str, entity: str, key: Any, path: str, old: Any, new: Any, **extra: Any) -> ChangeItem:
        event = extra.pop("event", None) or ("created" if old is None else "deleted" if new is None else "changed")
        return ChangeItem(*base, domain, entity, None if key is None else str(key), path, old, new, record, aborted,
                          fields=v.changed_fields(old, new), event=event, **tail, **extra)

    partitions = state.get("partitions") or v.PartitionValues()
    for domain, key, change in _subjects(changes):
        if domain == "partitions":
            yield _partition(item, key, change, replay, partitions)
        else:
            yield from _KEYED[domain](item, key, change, replay)
    for domain in ("producer_ids", "kraft_version"):
        change = getattr(changes, domain)
        if change is not None:
            path, entity = ("/producer-ids", "producer ids") if domain == "producer_ids" else \
                ("/quorum/kraft-version", "quorum")
            yield item(domain, entity, None, path, change.before, change.after)
    if changes.voters is not None:
        yield from _voters(item, changes.voters)
    for leader in changes.leader_changes:
        before = state["leader"]
        state["leader"] = (leader.leader_id, leader.epoch)
        old = None if before is None else {"leaderId": before[0], "epoch": before[1]}
        yield item("leader_changes", "quorum", None, "/quorum/leader", old,
                   {"leaderId": leader.leader_id, "epoch": leader.epoch}, event="elected")


# -- the keyed domains: (item maker, key, change, replay) -> items -------------------------------

def _features(item, name: str, change: Change, replay) -> Iterator[ChangeItem]:
    yield item("features", f"feature {name}", name, f"/features/{encode_name(name)}", change.before, change.after)


def _brokers(item, broker_id: int, change: Change, replay) -> Iterator[ChangeItem]:
    yield item("brokers", f"broker {broker_id}", None, f"/brokers/{broker_id}", v.broker_json(change.before),
               v.broker_json(change.after), event=v.broker_event(change))


def _controllers(item, controller_id: int, change: Change, replay) -> Iterator[ChangeItem]:
    event = "unregister" if change.after is None else "register"
    yield item("controllers", f"controller {controller_id}", None, f"/controllers/{controller_id}",
               v.controller_json(change.before), v.controller_json(change.after), event=event)


def _topics(item, topic_id: Any, change: Change, replay) -> Iterator[ChangeItem]:
    name = change.after or change.before
    yield item("topics", f"topic {name}", None, f"/topics/{encode_name(name)}", v.topic_json(topic_id, change.before),
               v.topic_json(topic_id, change.after), topic_id=uuid_to_kafka(topic_id))


def _partition(item, key: tuple, change: Change, replay, values: v.PartitionValues) -> ChangeItem:
    topic_id, partition_id = key
    name = replay.topic_name(topic_id) or uuid_to_kafka(topic_id)  # a name is always known: a guard
    old = values(topic_id, partition_id, change.before)
    new = values(topic_id, partition_id, change.after)
    return item("partitions", f"topic {name}", partition_id, f"/topics/{encode_name(name)}/{partition_id}", old, new,
                topic_id=new["topicId"] if new is not None else old["topicId"])


def _configs(item, key: tuple, change: Change, replay) -> Iterator[ChangeItem]:
    resource, name = key
    yield item("configs", v.config_entity(resource), name, f"{v.config_dir(resource)}/{encode_name(name)}",
               v.config_value(name, change.before), v.config_value(name, change.after))


def _client_quotas(item, key: tuple, change: Change, replay) -> Iterator[ChangeItem]:
    entity, name = key
    yield item("client_quotas", v.quota_entity_name(entity), name, f"{v.quota_dir(entity)}/{encode_name(name)}",
               change.before, change.after)


def _acls(item, acl_id: Any, change: Change, replay) -> Iterator[ChangeItem]:
    text = uuid_to_kafka(acl_id) if acl_id is not None else "null"
    yield item("acls", f"ACL {text}", None, f"/acls/{text}", v.acl_json(acl_id, change.before),
               v.acl_json(acl_id, change.after))


def _scram(item, key: tuple, change: Change, replay) -> Iterator[ChangeItem]:
    mechanism, user = key
    name = v.scram_mechanism(mechanism)
    yield item("scram", f"user {user}", name, f"/scram/{name}/{encode_name(user)}",
               v.scram_json(mechanism, user, change.before), v.scram_json(mechanism, user, change.after))


def _tokens(item, token_id: str, change: Change, replay) -> Iterator[ChangeItem]:
    yield item("tokens", f"token {token_id}", None, f"/delegation-tokens/{encode_name(token_id)}",
               v.token_json(change.before), v.token_json(change.after))


_KEYED = {"features": _features, "brokers": _brokers, "controllers": _controllers, "topics": _topics,
          "configs": _configs, "client_quotas": _client_quotas, "acls": _acls, "scram": _scram, "tokens": _tokens}


def _voters(item, change: Change) -> Iterator[ChangeItem]:
    """One item per voter added, removed or changed (a new directory id, endpoints)."""
    before = {voter.id: v.voter_json(voter) for voter in change.before or ()}
    after = {voter.id: v.voter_json(voter) for voter in change.after or ()}
    for voter_id in [*after, *(i for i in before if i not in after)]:
        old, new = before.get(voter_id), after.get(voter_id)
        if old != new:
            yield item("voters", f"voter {voter_id}", voter_id, f"/quorum/voters/{voter_id}", old, new)
