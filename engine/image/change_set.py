"""What one applied delta changed: the change set every consumer of the metadata log reads.

Kafka's publishers learn what a batch changed from its deltas (``TopicsDelta.changedTopics()``,
``ClusterDelta.changedBrokers()``, ...). Ours read one ``ChangeSet``, assembled by the MetadataDelta
that replayed the records (engine/image/metadata_delta.py) from what each of its domain deltas
says it changed (engine/image/domain_delta.py), so no consumer interprets a record again:
the dashboard's events, the history tables, ``watch``, the live shell's refresh, ``log`` and
``diff`` all read the same answer to "what changed here".

The API, stable for those consumers:

- ``ChangeSet.<domain>`` is a read-only mapping from a subject's key to a ``Change``:

  ============== ===================================== ==========================================
  domain         key                                   value (``Change.before`` / ``.after``)
  ============== ===================================== ==========================================
  brokers        broker id                             BrokerRegistration
  controllers    controller id                         ControllerRegistration
  topics         topic id (uuid.UUID)                  the topic's name: created, deleted
  partitions     (topic id, partition id)              PartitionRegistration
  configs        (ConfigResource, config key)          the value (str)
  client_quotas  (ClientQuotaEntity, quota key)        the value (float)
  acls           ACL id (uuid.UUID)                    the ACL binding (StandardAcl)
  scram          (mechanism, user name)                the credential (ScramCredentialData)
  tokens         token id                              the token (DelegationTokenData)
  features       feature name                          its finalized level (int)
  ============== ===================================== ==========================================

  ``None`` stands for absent: a subject created has ``before is None``, one removed
  ``after is None``. Only subjects whose value differs are listed; a record that names a
  subject and leaves it as it was (an UnfenceBrokerRecord for an unfenced broker) is not a
  change.
- ``producer_ids``, ``kraft_version``, ``voters`` and ``zk_migration_state`` are single values:
  a ``Change`` or ``None`` when unchanged.
- ``leader_changes``: the quorum's LeaderChange records appended, oldest first.
- Each ``Change`` carries the offset and timestamp of the last record that named its subject
  (``-1`` for records replayed from a snapshot, which have no offset of their own): the net change
  of a batch is what a reader of the log observes, and it happened where its subject was last named.
- ``len(change_set)`` counts every change, ``bool(change_set)`` says whether there is any, and
  ``change_set.subjects()`` yields ``(domain, key, change)`` in a stable order.

Where a consumer gets one:

- ``MetadataDelta.changes()``: what the delta's records changed together (a batch, as the
  dashboard's events read it); the observers of ``MetadataHistory`` receive it with each batch
  (``ReplayedBatch.changes``).
- ``MetadataDelta.record_changes()``: what the last replayed record changed; for an
  EndTransactionRecord, everything its transaction changed, all at the marker's place. What a
  record held in an open transaction would change is asked of a delta over ``apply()``'s image
  (the state without the transaction), as the history tables do for their rows.

Subjects a record changes together come in the order it changed them; a ClearElrRecord for
every topic goes through them in the image's order (then the topics the delta made).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, Iterator, Mapping, NamedTuple, TypeVar

V = TypeVar("V")

EMPTY: Mapping = MappingProxyType({})

# The domains of a change set, in the order ``subjects()`` yields them (a reader's order: the
# cluster's members first, then what lives on them).
DOMAINS = ("features", "brokers", "controllers", "topics", "partitions", "configs", "client_quotas", "acls",
           "scram", "tokens")


class Change(NamedTuple, Generic[V]):
    """One subject's value before and after, and where in the log a record last named it."""

    before: V | None
    after: V | None
    offset: int = -1
    timestamp_ms: int = -1

    @property
    def created(self) -> bool:
        return self.before is None and self.after is not None

    @property
    def deleted(self) -> bool:
        return self.before is not None and self.after is None

    @property
    def kind(self) -> str:
        """``created``, ``deleted`` or ``changed``: how a reader names it."""
        return "created" if self.before is None else "deleted" if self.after is None else "changed"


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """Everything one applied delta changed; see the module's docstring for the keys."""

    features: Mapping[str, Change[int]] = field(default_factory=lambda: EMPTY)
    brokers: Mapping[int, Change[Any]] = field(default_factory=lambda: EMPTY)
    controllers: Mapping[int, Change[Any]] = field(default_factory=lambda: EMPTY)
    topics: Mapping[Any, Change[str]] = field(default_factory=lambda: EMPTY)
    partitions: Mapping[tuple[Any, int], Change[Any]] = field(default_factory=lambda: EMPTY)
    configs: Mapping[tuple[Any, str], Change[str]] = field(default_factory=lambda: EMPTY)
    client_quotas: Mapping[tuple[Any, str], Change[float]] = field(default_factory=lambda: EMPTY)
    acls: Mapping[Any, Change[Any]] = field(default_factory=lambda: EMPTY)
    scram: Mapping[tuple[int, str], Change[Any]] = field(default_factory=lambda: EMPTY)
    tokens: Mapping[str, Change[Any]] = field(default_factory=lambda: EMPTY)
    producer_ids: Change[int] | None = None
    zk_migration_state: Change[int] | None = None
    kraft_version: Change[int] | None = None
    voters: Change[tuple] | None = None
    leader_changes: tuple = ()

    def __len__(self) -> int:
        singles = (self.producer_ids, self.zk_migration_state, self.kraft_version, self.voters)
        return (sum(len(getattr(self, domain)) for domain in DOMAINS) + sum(c is not None for c in singles)
                + len(self.leader_changes))

    def __bool__(self) -> bool:
        # asked of every batch: the shared empty one, and the first change found, answer at once
        if self is EMPTY_CHANGE_SET:
            return False
        return bool(self.leader_changes) or any(getattr(self, domain) for domain in DOMAINS) or any(
            change is not None for change in (self.producer_ids, self.zk_migration_state, self.kraft_version,
                                              self.voters))

    def subjects(self) -> Iterator[tuple[str, Any, Change]]:
        """Every keyed change as ``(domain, key, change)``: domains in ``DOMAINS`` order, each in
        the order its subjects were first changed."""
        for domain in DOMAINS:
            for key, change in getattr(self, domain).items():
                yield domain, key, change

    def changed_topic_ids(self) -> set:
        """The topics created, deleted, or with a partition changed (Kafka's ``changedTopics()``)."""
        return set(self.topics) | {topic_id for topic_id, _ in self.partitions}


EMPTY_CHANGE_SET = ChangeSet()
