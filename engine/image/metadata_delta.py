"""MetadataDelta: replay records onto an image, then ``apply()`` for the next image.

As Kafka's MetadataDelta, a dispatcher over one delta per domain, each made when the first
record of its domain comes: FeaturesDelta, ClusterDelta, TopicsDelta, ConfigurationsDelta,
ClientQuotasDelta, ProducerIdsDelta, AclsDelta, ScramDelta and DelegationTokenDelta
(engine/image/<domain>_image.py, where each domain's replay rules are written), and ours,
QuorumDelta, for the log's control records. ``apply()`` takes each delta's next image and keeps
the old image's own for every domain no record touched. Across domains, here:

- RemoveTopicRecord drops the topic (TopicsDelta) and its configs (ConfigurationsDelta).
- Begin/End/AbortTransactionRecord (KIP-868): the records between are applied at End, dropped
  at Abort; those of a transaction still open are in no image (Kafka publishes none mid-
  transaction). ``replay`` says which befell each record; ``open_transaction`` carries an
  open one to the next delta.
- Records that do not apply (an epoch mismatch, an unknown topic, directories that do not pair
  with the replicas, a record of a type this version does not know) change nothing and are
  counted in ``skipped``: an offline reader must not stop where Kafka would have refused.
- What changed: each domain delta notes the subjects its records change; ``changes()`` (the
  batch) and ``record_changes()`` (the last record) assemble them into one ChangeSet
  (engine/image/change_set.py).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from engine.image.acls_image import AclsDelta
from engine.image.broker_registration import BrokerRegistration
from engine.image.change_set import EMPTY_CHANGE_SET, Change, ChangeSet
from engine.image.client_quotas_image import ClientQuotasDelta
from engine.image.cluster_image import ClusterDelta
from engine.image.configurations_image import ConfigurationsDelta
from engine.image.delegation_token_image import DelegationTokenDelta
from engine.image.domain_delta import ReplayJournal
from engine.image.features_image import FeaturesDelta
from engine.image.metadata_image import MetadataImage, Provenance
from engine.image.partition_registration import PartitionRegistration
from engine.image.producer_ids_image import ProducerIdsDelta
from engine.image.quorum_image import QuorumDelta
from engine.image.scram_image import ScramDelta
from engine.image.topics_image import TopicsDelta
from engine.records import metadata_records as m
from engine.records.metadata_record_serde import ControlRecord, UnknownRecord
from engine.records.metadata_records import RECORD_CLASSES

# What ``MetadataDelta.replay`` did with a record (KIP-868 metadata transactions):
APPLIED = "applied"  # replayed at its place (one that does not apply changes nothing: see ``skipped``)
PENDING = "pending"  # a transaction is open: kept until its end (a BeginTransactionRecord opens one)
COMMITTED = "committed"  # an EndTransactionRecord: the open transaction's records are applied now
ABORTED = "aborted"  # an AbortTransactionRecord: the open transaction's records are dropped

# MetadataImage field -> the delta of that domain, in the image's field order (``apply`` builds it so)
_DELTAS: dict[str, type] = {
    "features": FeaturesDelta, "cluster": ClusterDelta, "topics": TopicsDelta, "configs": ConfigurationsDelta,
    "client_quotas": ClientQuotasDelta, "producer_ids": ProducerIdsDelta, "acls": AclsDelta, "scram": ScramDelta,
    "delegation_tokens": DelegationTokenDelta, "quorum": QuorumDelta,
}


class MetadataDelta:
    """Changes against ``image``; mutable and short-lived, like Kafka's MetadataDelta.

    ``open_transaction``: the records of a metadata transaction left open by the previous
    delta (its ``open_transaction``), so that a transaction can span batches and checkpoints."""

    def __init__(self, image: MetadataImage, open_transaction: Sequence[Any] | None = None, *,
                 per_record: bool = False):
        """``per_record``: keep what each record changed, for ``record_changes()`` (a per-record
        consumer, the history tables); a batch's ``changes()`` needs nothing of it."""
        self.image = image
        self._journal = ReplayJournal(per_record)
        self._deltas: dict[str, Any] = {}  # MetadataImage field -> its domain's delta, made on first use
        self._handlers: dict[type, Callable[[Any], Any]] = {}  # record class -> its bound replay method
        self._provenance = image.provenance
        self._transaction: list | None = None if open_transaction is None else list(open_transaction)

    # -- entry points -----------------------------------------------------------

    def replay(self, record: Any, offset: int = -1, epoch: int = -1, timestamp_ms: int = -1) -> str:
        """Apply one record (metadata, control or unknown) at its place in the log; returns
        APPLIED, PENDING (kept for the end of the open transaction), COMMITTED or ABORTED."""
        if offset >= 0:
            self._provenance = Provenance(offset, epoch, timestamp_ms)
        journal = self._journal
        journal.stamp = (offset, timestamp_ms)
        if journal.per_record:
            journal.named = []
        handler = self._handlers.get(type(record)) or self._bind(type(record))
        if handler is not None and self._transaction is None:  # the common case, first
            handler(record)
            return APPLIED
        if isinstance(record, ControlRecord):  # the quorum's: never part of a metadata transaction
            self._delta("quorum").replay_control(record, offset, epoch, timestamp_ms)
            return APPLIED
        if isinstance(record, UnknownRecord):
            journal.skipped += 1
            return APPLIED
        name = record.record_name
        if name in _TRANSACTION_MARKERS:
            return self._transaction_marker(name)
        if self._transaction is not None:
            self._transaction.append(record)
            return PENDING
        return APPLIED  # a record that changes no image (NoOpRecord)

    @property
    def open_transaction(self) -> tuple | None:
        """The records of the metadata transaction open now, in log order (None: none is open).
        Kafka's loader publishes no image in the middle of a transaction, and neither does
        ``apply()``: these records are not in it."""
        return None if self._transaction is None else tuple(self._transaction)

    @property
    def skipped(self) -> int:
        """How many records replayed so far did not apply."""
        return self._journal.skipped

    def apply(self) -> MetadataImage:
        """The next image; untouched domains are the old image's own objects."""
        image, deltas = self.image, self._deltas
        return MetadataImage(self._provenance, *[
            deltas[domain].apply() if domain in deltas else getattr(image, domain) for domain in _DELTAS])

    # -- the state replayed so far (as Kafka's ClusterDelta.broker): for per-record history --

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self._delta("cluster").broker(broker_id)

    def topic_name(self, topic_id: Any) -> str | None:
        return self._delta("topics").topic_name(topic_id)

    def topic_ids(self) -> list:
        """The ids of the topics that exist as the delta stands."""
        return self._delta("topics").topic_ids()

    def partitions(self, topic_id: Any) -> Mapping[int, PartitionRegistration]:
        """The partitions of a topic as the delta stands (empty when there is no such topic);
        read only, and only until the next ``replay``."""
        return self._delta("topics").partitions(topic_id)

    def configs_delta(self) -> Any:
        """The configs' delta (made if no record has changed a config yet): ``value_now`` reads a
        config as this delta stands."""
        return self._delta("configs")

    def changed_topic_ids(self) -> list:
        """The topics this delta created, changed or removed (``apply`` rebuilds only these)."""
        topics = self._deltas.get("topics")
        return [] if topics is None else topics.changed_topic_ids()

    # -- what changed ---------------------------------------------------------------

    def changes(self) -> ChangeSet:
        """What ``apply()`` changes against ``image``: every subject whose value differs, with the
        place of the last record that changed it (engine/image/change_set.py)."""
        if not self._deltas:
            return EMPTY_CHANGE_SET  # the many batches of NoOpRecords: asked of every one
        found: dict[str, dict] = {}
        for delta in self._deltas.values():
            for domain, key, change in delta.changed_subjects():
                found.setdefault(domain, {})[key] = change
        quorum = self._deltas.get("quorum")
        leaders = () if quorum is None else quorum.leader_changes_since(self.image.quorum.leader_changes)
        return _change_set(found, leaders)

    def record_changes(self) -> ChangeSet:
        """What the last ``replay`` changed (all of a transaction's records at its End marker);
        for a delta made with ``per_record=True``."""
        journal = self._journal
        if not journal.per_record:
            raise ValueError("record_changes() needs a MetadataDelta made with per_record=True")
        offset, timestamp_ms = journal.stamp
        first: dict[tuple[str, Any], Any] = {}
        for domain, key, before in journal.named:
            first.setdefault((domain, key), before)
        found: dict[str, dict] = {}
        leaders: tuple = ()
        for (domain, key), before in first.items():
            delta = self._deltas[_OWNER[domain]]
            if domain == "leader_changes":
                leaders = delta.leader_changes_since(before)
                continue
            after = delta.value_now(domain, key)
            if after is not before and after != before:
                found.setdefault(domain, {})[key] = Change(before, after, offset, timestamp_ms)
        return _change_set(found, leaders)

    # -- dispatch -----------------------------------------------------------------------

    def _delta(self, domain: str) -> Any:
        """The delta of ``domain`` (a MetadataImage field), made on first use (Kafka's getOrCreate...Delta)."""
        delta = self._deltas.get(domain)
        if delta is None:
            delta = self._deltas[domain] = _DELTAS[domain](getattr(self.image, domain), self._journal)
        return delta

    def _bind(self, record_class: type) -> Callable[[Any], Any] | None:
        """The replay method for records of ``record_class``, kept for the next ones; None for a
        control, unknown or transaction record, or one that changes no image (NoOpRecord)."""
        route = _BY_CLASS.get(record_class)
        if route is None:
            return None
        domain, function = route
        handler = self._handlers[record_class] = function.__get__(self if domain is None else self._delta(domain))
        return handler

    def _replay_remove_topic(self, record: m.RemoveTopicRecordV0) -> None:
        name = self._delta("topics").replay_remove_topic(record)
        if name is not None:
            self._delta("configs").replay_remove_topic(record, name)

    # -- transactions (KIP-868) --------------------------------------------------------

    def _transaction_marker(self, name: str) -> str:
        """Kafka's MetadataBatchLoader state machine. A marker out of place (a Begin inside a
        transaction, an End or Abort outside one) is a fault there; here it is skipped and
        the transaction, if any, stays open."""
        journal = self._journal
        if name == "BeginTransactionRecord":
            if self._transaction is None:
                self._transaction = []
            else:
                journal.skipped += 1
            return PENDING
        if self._transaction is None:
            journal.skipped += 1
            return APPLIED
        pending, self._transaction = self._transaction, None
        if name == "AbortTransactionRecord":
            return ABORTED
        # applied now, at the End marker's place: their changes are the marker's
        stamp, named, provenance = journal.stamp, journal.named, self._provenance
        for record in pending:
            self.replay(record, stamp[0], provenance.last_epoch, stamp[1])
            named.extend(journal.named)
        journal.stamp, journal.named, self._provenance = stamp, named, provenance
        return COMMITTED


# change set domain -> the MetadataImage field whose delta owns it
_OWNER = {domain: field for field, delta_class in _DELTAS.items() for domain in delta_class.DOMAINS}
_SINGLE_DOMAINS = ("producer_ids", "zk_migration_state", "kraft_version", "voters")


def _change_set(found: dict[str, dict], leader_changes: tuple) -> ChangeSet:
    singles = {domain: found.pop(domain)[None] for domain in _SINGLE_DOMAINS if domain in found}
    return ChangeSet(**{domain: MappingProxyType(changes) for domain, changes in found.items()}, **singles,
                     leader_changes=leader_changes)


_TRANSACTION_MARKERS = {"BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord"}

# record type -> (the MetadataImage field whose delta replays it, or None for MetadataDelta's own; the replay function)
_ROUTES: dict[str, tuple[str | None, Callable[[Any, Any], Any]]] = {
    "RegisterBrokerRecord": ("cluster", ClusterDelta.replay_register_broker),
    "UnregisterBrokerRecord": ("cluster", ClusterDelta.replay_unregister_broker),
    "FenceBrokerRecord": ("cluster", ClusterDelta.replay_fence_broker),
    "UnfenceBrokerRecord": ("cluster", ClusterDelta.replay_unfence_broker),
    "BrokerRegistrationChangeRecord": ("cluster", ClusterDelta.replay_broker_registration_change),
    "RegisterControllerRecord": ("cluster", ClusterDelta.replay_register_controller),
    "UnregisterControllerRecord": ("cluster", ClusterDelta.replay_unregister_controller),
    "TopicRecord": ("topics", TopicsDelta.replay_topic),
    "PartitionRecord": ("topics", TopicsDelta.replay_partition),
    "PartitionChangeRecord": ("topics", TopicsDelta.replay_partition_change),
    "RemoveTopicRecord": (None, MetadataDelta._replay_remove_topic),
    "ClearElrRecord": ("topics", TopicsDelta.replay_clear_elr),
    "ConfigRecord": ("configs", ConfigurationsDelta.replay_config),
    "ClientQuotaRecord": ("client_quotas", ClientQuotasDelta.replay_client_quota),
    "FeatureLevelRecord": ("features", FeaturesDelta.replay_feature_level),
    "ZkMigrationStateRecord": ("features", FeaturesDelta.replay_zk_migration_state),
    "ProducerIdsRecord": ("producer_ids", ProducerIdsDelta.replay_producer_ids),
    "AccessControlEntryRecord": ("acls", AclsDelta.replay_access_control_entry),
    "RemoveAccessControlEntryRecord": ("acls", AclsDelta.replay_remove_access_control_entry),
    "UserScramCredentialRecord": ("scram", ScramDelta.replay_user_scram_credential),
    "RemoveUserScramCredentialRecord": ("scram", ScramDelta.replay_remove_user_scram_credential),
    "DelegationTokenRecord": ("delegation_tokens", DelegationTokenDelta.replay_delegation_token),
    "RemoveDelegationTokenRecord": ("delegation_tokens", DelegationTokenDelta.replay_remove_delegation_token),
}
# record class -> its route, for every version of every routed type
_BY_CLASS = {cls: _ROUTES[cls.record_name] for cls in RECORD_CLASSES.values() if cls.record_name in _ROUTES}


def replay_entries(entries, image: MetadataImage | None = None) -> MetadataImage:
    """The image after replaying LogEntry values (e.g. from engine.storage.log_reader) onto ``image``."""
    delta = MetadataDelta(image or MetadataImage())
    for entry in entries:
        delta.replay(entry.record, entry.offset if not entry.in_snapshot else -1, entry.leader_epoch,
                     entry.timestamp_ms)
    return delta.apply()
