"""MetadataDelta: replay records onto an image, then ``apply()`` for the next image.

Kafka's replay semantics (metadata/image/*Delta.java), record by record:
- RegisterBrokerRecord replaces the registration; UnregisterBrokerRecord removes it whatever
  its epoch; Fence/Unfence act only when the broker epoch matches;
  BrokerRegistrationChangeRecord's ``fenced`` is a tri-state (-1 unfence, 0 no change,
  1 fence) and ``in_controlled_shutdown`` 1 sets it; its ``cordoned_log_dirs`` (4.3+) replaces
  the cordoned directories unless null. UnregisterControllerRecord (4.4+) removes a controller.
- FeatureLevelRecord level 0 removes the feature.
- PartitionChangeRecord merges (see partition_registration); RemoveTopicRecord drops the
  topic, its partitions and its configs; ClearElrRecord empties ELRs of one topic or all
  (topics without any stay the old image's objects).
- ConfigRecord with a null value deletes the key; ClientQuotaRecord ``remove`` deletes.
- Begin/End/AbortTransactionRecord (KIP-868): the records between are applied at End, dropped
  at Abort; those of a transaction still open are in no image (Kafka publishes none mid-
  transaction). ``replay`` says which befell each record; ``open_transaction`` carries an
  open one to the next delta.
Records that do not apply (an epoch mismatch, an unknown topic, directories that do not pair
with the replicas) change nothing and are counted in ``skipped``: an offline reader must not
stop where Kafka would have refused.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from engine.image.change_set import EMPTY_CHANGE_SET, Change, ChangeSet
from engine.image.metadata_image import (
    BrokerRegistration, ClusterImage, ControllerRegistration, Endpoint, FeatureRange, LeaderChange,
    MetadataImage, Provenance, QuorumImage, TopicImage, TopicsImage, Voter,
)
from engine.records.metadata_record_serde import ControlRecord, UnknownRecord
from engine.records.metadata_records import RECORD_CLASSES
from engine.image.partition_registration import InvalidReplicaDirectories, PartitionRegistration

_REMOVED = object()

# What ``MetadataDelta.replay`` did with a record (KIP-868 metadata transactions):
APPLIED = "applied"  # replayed at its place (one that does not apply changes nothing: see ``skipped``)
PENDING = "pending"  # a transaction is open: kept until its end (a BeginTransactionRecord opens one)
COMMITTED = "committed"  # an EndTransactionRecord: the open transaction's records are applied now
ABORTED = "aborted"  # an AbortTransactionRecord: the open transaction's records are dropped


class MetadataDelta:
    """Changes against ``image``; mutable and short-lived, like Kafka's MetadataDelta.

    ``open_transaction``: the records of a metadata transaction left open by the previous
    delta (its ``open_transaction``), so that a transaction can span batches and checkpoints."""

    def __init__(self, image: MetadataImage, open_transaction: Sequence[Any] | None = None):
        self.image = image
        self.skipped = 0
        self._features: dict[str, Any] = {}
        self._brokers: dict[int, Any] = {}
        self._controllers: dict[int, Any] = {}
        self._topics: dict[Any, Any] = {}  # topic id -> TopicImage | _REMOVED (partitions: dict while open)
        self._configs: dict[tuple[int, str], dict[str, str | None]] = {}
        self._quotas: dict[tuple, dict[str, float | None]] = {}
        self._acls: dict[Any, Any] = {}
        self._scram: dict[tuple[int, str], Any] = {}
        self._tokens: dict[str, Any] = {}
        self._next_producer_id: int | None = None
        self._zk_migration_state: int | None = None
        self._quorum = image.quorum
        self._provenance = image.provenance
        self._transaction: list | None = None if open_transaction is None else list(open_transaction)
        # what changed, for ``changes()``: (domain, key) -> [offset, timestamp] of the last record
        # that touched it; and, for ``record_changes()``, (domain, key, value before) of the last
        # record replayed
        self._touched: dict[tuple[str, Any], list[int]] = {}
        self._stamp = [-1, -1]
        self._last: list[tuple[str, Any, Any]] = []
        self._quorum_before_record = image.quorum

    # -- entry points -----------------------------------------------------------

    def replay(self, record: Any, offset: int = -1, epoch: int = -1, timestamp_ms: int = -1) -> str:
        """Apply one record (metadata, control or unknown) at its place in the log; returns
        APPLIED, PENDING (kept for the end of the open transaction), COMMITTED or ABORTED."""
        if offset >= 0:
            self._provenance = Provenance(offset, epoch, timestamp_ms)
        self._stamp = [offset, timestamp_ms]
        self._last = []
        self._quorum_before_record = self._quorum
        handler = _BY_CLASS.get(type(record))
        if handler is not None and self._transaction is None:  # the common case, first
            handler(self, record)
            return APPLIED
        if isinstance(record, ControlRecord):  # the quorum's: never part of a metadata transaction
            self._replay_control(record, offset, epoch, timestamp_ms)
            return APPLIED
        if isinstance(record, UnknownRecord):
            self.skipped += 1
            return APPLIED
        name = record.record_name
        if name in _TRANSACTION_MARKERS:
            return self._transaction_marker(name)
        if self._transaction is not None:
            self._transaction.append(record)
            return PENDING
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(self, record)
        return APPLIED

    @property
    def open_transaction(self) -> tuple | None:
        """The records of the metadata transaction open now, in log order (None: none is open).
        Kafka's loader publishes no image in the middle of a transaction, and neither does
        ``apply()``: these records are not in it."""
        return None if self._transaction is None else tuple(self._transaction)

    # -- the state replayed so far (as Kafka's ClusterDelta.broker): for per-record history --

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self._broker(broker_id)

    def topic_name(self, topic_id: Any) -> str | None:
        return self._topic_name(topic_id)

    def topic_ids(self) -> list:
        """The ids of the topics that exist as the delta stands."""
        return self._topic_ids()

    def partitions(self, topic_id: Any) -> Mapping[int, PartitionRegistration]:
        """The partitions of a topic as the delta stands (empty when there is no such topic);
        read only, and only until the next ``replay``."""
        changed = self._topics.get(topic_id)
        if changed is _REMOVED:
            return {}
        if changed is not None:
            return changed[1]
        topic = self.image.topics.by_id.get(topic_id)
        return {} if topic is None else topic.partitions

    def changed_topic_ids(self) -> list:
        """The topics this delta created, changed or removed (``apply`` rebuilds only these)."""
        return list(self._topics)

    # -- what changed ---------------------------------------------------------------

    def _note(self, domain: str, key: Any, before: Any) -> None:
        """``key`` of ``domain`` is about to change from ``before`` (its value as the delta stands)."""
        self._touched[(domain, key)] = self._stamp
        self._last.append((domain, key, before))

    def changes(self) -> ChangeSet:
        """What ``apply()`` changes against ``image``: every subject whose value differs, with the
        place of the last record that changed it (engine/image/change_set.py)."""
        if not self._touched and self._quorum is self.image.quorum:
            return EMPTY_CHANGE_SET  # the many batches of NoOpRecords: asked of every one
        return self._change_set(((domain, key, self._value_in_image(domain, key), stamp)
                                 for (domain, key), stamp in self._touched.items()),
                                self.image.quorum)

    def record_changes(self) -> ChangeSet:
        """What the last ``replay`` changed (all of a transaction's records at its End marker)."""
        stamp, first = self._stamp, {}
        for domain, key, before in self._last:
            first.setdefault((domain, key), before)
        return self._change_set(((domain, key, before, stamp) for (domain, key), before in first.items()),
                                self._quorum_before_record)

    def _change_set(self, touched, quorum_before: QuorumImage) -> ChangeSet:
        found: dict[str, dict] = {}
        for domain, key, before, (offset, timestamp_ms) in touched:
            after = self._value_now(domain, key)
            if after is before or after == before:
                continue
            found.setdefault(domain, {})[key] = Change(before, after, offset, timestamp_ms)
        singles = {domain: found.pop(domain)[None] for domain in _SINGLE_DOMAINS if domain in found}
        quorum = self._quorum
        new_leaders = tuple(quorum.leader_changes[len(quorum_before.leader_changes):]) \
            if quorum.leader_changes is not quorum_before.leader_changes else ()
        return ChangeSet(**{domain: MappingProxyType(changes) for domain, changes in found.items()}, **singles,
                         leader_changes=new_leaders)

    def _value_in_image(self, domain: str, key: Any) -> Any:
        image = self.image
        if domain == "partitions":
            topic = image.topics.by_id.get(key[0])
            return None if topic is None else topic.partitions.get(key[1])
        if domain == "brokers":
            return image.cluster.brokers.get(key)
        if domain == "topics":
            topic = image.topics.by_id.get(key)
            return None if topic is None else topic.name
        if domain == "configs":
            return image.configs.get(key[0], _NOTHING).get(key[1])
        if domain == "client_quotas":
            return image.client_quotas.get(key[0], _NOTHING).get(key[1])
        if domain == "controllers":
            return image.cluster.controllers.get(key)
        if domain == "features":
            return image.features.get(key)
        if domain in ("acls", "scram", "tokens"):
            return getattr(image, _IMAGE_FIELD[domain]).get(key)
        if domain == "producer_ids":
            return image.next_producer_id if image.next_producer_id >= 0 else None
        if domain == "zk_migration_state":
            return image.zk_migration_state
        quorum = image.quorum
        return quorum.kraft_version if domain == "kraft_version" else quorum.voters

    def _value_now(self, domain: str, key: Any) -> Any:
        if domain == "partitions":
            return self.partitions(key[0]).get(key[1])
        if domain == "brokers":
            return self._broker(key)
        if domain == "topics":
            return self._topic_name(key)
        if domain in ("configs", "client_quotas"):
            changed = (self._configs if domain == "configs" else self._quotas).get(key[0], _NOTHING)
            if key[1] in changed:
                return changed[key[1]]
            return self._value_in_image(domain, key)
        if domain in _KEYED:
            value = getattr(self, _KEYED[domain]).get(key, _UNSET)
            if value is _UNSET:
                return self._value_in_image(domain, key)
            return None if value is _REMOVED else value
        if domain == "producer_ids":
            return self._next_producer_id if self._next_producer_id is not None else self._value_in_image(domain, key)
        if domain == "zk_migration_state":
            return self._zk_migration_state if self._zk_migration_state is not None else self.image.zk_migration_state
        quorum = self._quorum
        return quorum.kraft_version if domain == "kraft_version" else quorum.voters

    def apply(self) -> MetadataImage:
        """The next image; untouched parts are the old image's own objects."""
        image = self.image
        return MetadataImage(
            provenance=self._provenance,
            features=_merged(image.features, self._features),
            zk_migration_state=image.zk_migration_state if self._zk_migration_state is None
            else self._zk_migration_state,
            cluster=self._cluster(),
            topics=self._topics_image(),
            configs=_merged_nested(image.configs, self._configs),
            client_quotas=_merged_nested(image.client_quotas, self._quotas),
            acls=_merged(image.acls, self._acls),
            scram=_merged(image.scram, self._scram),
            delegation_tokens=_merged(image.delegation_tokens, self._tokens),
            next_producer_id=image.next_producer_id if self._next_producer_id is None else self._next_producer_id,
            quorum=self._quorum,
        )

    # -- cluster --------------------------------------------------------------------

    def _broker(self, broker_id: int) -> BrokerRegistration | None:
        current = self._brokers.get(broker_id, self.image.cluster.brokers.get(broker_id))
        return None if current is _REMOVED else current

    def _broker_at_epoch(self, broker_id: int, epoch: int) -> BrokerRegistration | None:
        broker = self._broker(broker_id)
        if broker is None or broker.epoch != epoch:
            self.skipped += 1
            return None
        return broker

    def _register_broker(self, r: Any) -> None:
        self._note("brokers", r.broker_id, self._broker(r.broker_id))
        self._brokers[r.broker_id] = BrokerRegistration(
            r.broker_id, r.broker_epoch, r.incarnation_id, _endpoints(r.end_points), _feature_ranges(r.features),
            r.rack, r.fenced, getattr(r, "in_controlled_shutdown", False),
            getattr(r, "is_migrating_zk_broker", False), tuple(getattr(r, "log_dirs", ())),
            _optional_tuple(getattr(r, "cordoned_log_dirs", None)))

    def _unregister_broker(self, r: Any) -> None:
        # Kafka's ClusterDelta removes the registration by id, whatever its epoch (only the
        # controller's own bookkeeping compares it)
        broker = self._broker(r.broker_id)
        if broker is not None:
            self._note("brokers", r.broker_id, broker)
            self._brokers[r.broker_id] = _REMOVED

    def _fence(self, r: Any, fenced: bool) -> None:
        broker = self._broker_at_epoch(r.id, r.epoch)
        if broker is not None:
            self._note("brokers", r.id, broker)
            self._brokers[r.id] = broker._replace(fenced=fenced)

    def _broker_change(self, r: Any) -> None:
        broker = self._broker_at_epoch(r.broker_id, r.broker_epoch)
        if broker is None:
            return
        fenced = {-1: False, 1: True}.get(r.fenced, broker.fenced)
        shutting_down = True if getattr(r, "in_controlled_shutdown", 0) == 1 else broker.in_controlled_shutdown
        directories = tuple(getattr(r, "log_dirs", ())) or broker.directories
        # Kafka's ClusterDelta: a null list changes nothing, any other (empty too) replaces
        cordoned = getattr(r, "cordoned_log_dirs", None)
        self._note("brokers", r.broker_id, broker)
        self._brokers[r.broker_id] = broker._replace(
            fenced=fenced, in_controlled_shutdown=shutting_down, directories=directories,
            cordoned_directories=broker.cordoned_directories if cordoned is None else tuple(cordoned))

    def _register_controller(self, r: Any) -> None:
        self._note("controllers", r.controller_id, self._value_now("controllers", r.controller_id))
        self._controllers[r.controller_id] = ControllerRegistration(
            r.controller_id, r.incarnation_id, r.zk_migration_ready, _endpoints(r.end_points),
            _feature_ranges(r.features))

    def _unregister_controller(self, r: Any) -> None:
        self._note("controllers", r.controller_id, self._value_now("controllers", r.controller_id))
        self._controllers[r.controller_id] = _REMOVED  # by id, as Kafka's ClusterDelta

    def _cluster(self) -> ClusterImage:
        if not self._brokers and not self._controllers:
            return self.image.cluster
        return ClusterImage(_merged(self.image.cluster.brokers, self._brokers),
                            _merged(self.image.cluster.controllers, self._controllers))

    # -- topics ----------------------------------------------------------------------

    def _open_topic(self, topic_id: Any) -> dict | None:
        """The changing partitions dict of a topic (copied from the image once), or None."""
        changed = self._topics.get(topic_id)
        if changed is _REMOVED:
            return None
        if changed is None:
            base = self.image.topics.by_id.get(topic_id)
            if base is None:
                return None
            changed = self._topics[topic_id] = [base.name, dict(base.partitions)]
        return changed[1]

    def _topic(self, r: Any) -> None:
        self._note("topics", r.topic_id, self._topic_name(r.topic_id))
        for partition_id, registration in self.partitions(r.topic_id).items():  # a topic made anew has none
            self._note("partitions", (r.topic_id, partition_id), registration)
        self._topics[r.topic_id] = [r.name, {}]

    def _partition(self, r: Any) -> None:
        partitions = self._open_topic(r.topic_id)
        if partitions is None:
            self.skipped += 1
            return
        try:
            registration = PartitionRegistration.from_record(r)
        except InvalidReplicaDirectories:
            self.skipped += 1
            return
        self._note("partitions", (r.topic_id, r.partition_id), partitions.get(r.partition_id))
        partitions[r.partition_id] = registration

    def _partition_change(self, r: Any) -> None:
        partitions = self._open_topic(r.topic_id)
        current = None if partitions is None else partitions.get(r.partition_id)
        if current is None:
            self.skipped += 1
            return
        try:
            merged = current.merge(r)
        except InvalidReplicaDirectories:
            self.skipped += 1
            return
        self._note("partitions", (r.topic_id, r.partition_id), current)
        partitions[r.partition_id] = merged

    def _remove_topic(self, r: Any) -> None:
        name = self._topic_name(r.topic_id)
        if name is None:
            self.skipped += 1
            return
        self._note("topics", r.topic_id, name)
        for partition_id, registration in self.partitions(r.topic_id).items():
            self._note("partitions", (r.topic_id, partition_id), registration)
        self._topics[r.topic_id] = _REMOVED
        keys = self._config_keys((2, name))
        for key in keys:
            self._note("configs", ((2, name), key), self._value_now("configs", ((2, name), key)))
        self._configs[(2, name)] = {key: None for key in keys}

    def _topic_name(self, topic_id: Any) -> str | None:
        changed = self._topics.get(topic_id)
        if changed is _REMOVED:
            return None
        if changed is not None:
            return changed[0]
        base = self.image.topics.by_id.get(topic_id)
        return None if base is None else base.name

    def _clear_elr(self, r: Any) -> None:
        if r.topic_name:
            topic_id = self._topic_id(r.topic_name)
            if topic_id is None:  # Kafka's TopicsDelta refuses it: no such topic
                self.skipped += 1
                return
            ids = [topic_id]
        else:
            ids = self._topic_ids()
        for topic_id in ids:
            changed = self._topics.get(topic_id)
            current = changed[1] if changed is not None else self.image.topics.by_id[topic_id].partitions
            if not any(reg.elr or reg.last_known_elr for reg in current.values()):
                continue  # nothing to clear: the topic stays the image's own object
            partitions = self._open_topic(topic_id)
            for pid, reg in list(partitions.items()):
                if reg.elr or reg.last_known_elr:
                    self._note("partitions", (topic_id, pid), reg)
                    partitions[pid] = reg.without_elr()

    def _topic_id(self, name: str) -> Any:
        """The id of the topic named ``name`` as the delta stands, or None."""
        for topic_id, changed in self._topics.items():
            if changed is not _REMOVED and changed[0] == name:
                return topic_id
        topic_id = self.image.topics.by_name.get(name)
        return topic_id if topic_id is not None and self._topic_name(topic_id) == name else None

    def _topic_ids(self) -> list:
        # the image's order, then the topics the delta made: a ClearElrRecord for every topic
        # changes them in an order its readers can rely on (not a set's)
        ids = list(self.image.topics.by_id)
        ids.extend(tid for tid in self._topics if tid not in self.image.topics.by_id)
        return [tid for tid in ids if self._topic_name(tid) is not None]

    def _topics_image(self) -> TopicsImage:
        if not self._topics:
            return self.image.topics
        by_id = dict(self.image.topics.by_id)
        by_name = dict(self.image.topics.by_name)
        for topic_id, changed in self._topics.items():
            old = by_id.pop(topic_id, None)
            if old is not None:
                by_name.pop(old.name, None)
            if changed is not _REMOVED:
                by_id[topic_id] = TopicImage(changed[0], topic_id, MappingProxyType(changed[1]))
                by_name[changed[0]] = topic_id
        return TopicsImage(MappingProxyType(by_id), MappingProxyType(by_name))

    # -- configs, quotas, security, producer ids, features ---------------------------

    def _config_keys(self, resource: tuple[int, str]) -> set[str]:
        keys = set(self.image.configs.get(resource, {}))
        keys |= {k for k, v in self._configs.get(resource, {}).items() if v is not None}
        return keys

    def _config(self, r: Any) -> None:
        resource = (r.resource_type, r.resource_name)
        self._note("configs", (resource, r.name), self._value_now("configs", (resource, r.name)))
        self._configs.setdefault((r.resource_type, r.resource_name), {})[r.name] = r.value

    def _quota(self, r: Any) -> None:
        entity = tuple((e.entity_type, e.entity_name) for e in r.entity)
        self._note("client_quotas", (entity, r.key), self._value_now("client_quotas", (entity, r.key)))
        self._quotas.setdefault(entity, {})[r.key] = None if r.remove else r.value

    def _feature(self, r: Any) -> None:
        self._note("features", r.name, self._value_now("features", r.name))
        self._features[r.name] = _REMOVED if r.feature_level == 0 else r.feature_level

    def _zk_migration(self, r: Any) -> None:
        self._note("zk_migration_state", None, self._value_now("zk_migration_state", None))
        self._zk_migration_state = r.zk_migration_state

    def _producer_ids(self, r: Any) -> None:
        self._note("producer_ids", None, self._value_now("producer_ids", None))
        self._next_producer_id = r.next_producer_id

    def _acl(self, r: Any) -> None:
        self._note("acls", r.id, self._value_now("acls", r.id))
        self._acls[r.id] = r

    def _remove_acl(self, r: Any) -> None:
        self._note("acls", r.id, self._value_now("acls", r.id))
        self._acls[r.id] = _REMOVED

    def _scram_credential(self, r: Any) -> None:
        self._note("scram", (r.mechanism, r.name), self._value_now("scram", (r.mechanism, r.name)))
        self._scram[(r.mechanism, r.name)] = r

    def _remove_scram(self, r: Any) -> None:
        self._note("scram", (r.mechanism, r.name), self._value_now("scram", (r.mechanism, r.name)))
        self._scram[(r.mechanism, r.name)] = _REMOVED

    def _token(self, r: Any) -> None:
        self._note("tokens", r.token_id, self._value_now("tokens", r.token_id))
        self._tokens[r.token_id] = r

    def _remove_token(self, r: Any) -> None:
        self._note("tokens", r.token_id, self._value_now("tokens", r.token_id))
        self._tokens[r.token_id] = _REMOVED

    # -- transactions (KIP-868) --------------------------------------------------------

    def _transaction_marker(self, name: str) -> str:
        """Kafka's MetadataBatchLoader state machine. A marker out of place (a Begin inside a
        transaction, an End or Abort outside one) is a fault there; here it is skipped and
        the transaction, if any, stays open."""
        if name == "BeginTransactionRecord":
            if self._transaction is None:
                self._transaction = []
            else:
                self.skipped += 1
            return PENDING
        if self._transaction is None:
            self.skipped += 1
            return APPLIED
        pending, self._transaction = self._transaction, None
        if name == "AbortTransactionRecord":
            return ABORTED
        # applied now, at the End marker's place: their changes are the marker's
        stamp, last, provenance = self._stamp, self._last, self._provenance
        for record in pending:
            self.replay(record, stamp[0], provenance.last_epoch, stamp[1])
            last.extend(self._last)
        self._stamp, self._last, self._provenance = stamp, last, provenance
        return COMMITTED

    # -- control records: the quorum ---------------------------------------------------

    def _replay_control(self, record: ControlRecord, offset: int, epoch: int, timestamp_ms: int) -> None:
        message, quorum = record.message, self._quorum
        self._quorum_before_record = quorum
        if record.type_name == "LEADER_CHANGE":
            change = LeaderChange(offset, epoch, timestamp_ms, message.leader_id,
                                  tuple(v.voter_id for v in message.voters),
                                  tuple(v.voter_id for v in message.granting_voters))
            self._quorum = QuorumImage(quorum.leader_changes.appended(change), quorum.kraft_version, quorum.voters)
        elif record.type_name == "KRAFT_VERSION":
            self._note("kraft_version", None, quorum.kraft_version)
            self._quorum = QuorumImage(quorum.leader_changes, message.k_raft_version, quorum.voters)
        elif record.type_name == "KRAFT_VOTERS":
            self._note("voters", None, quorum.voters)
            voters = tuple(Voter(v.voter_id, v.voter_directory_id,
                                 tuple((e.name, e.host, e.port) for e in v.endpoints),
                                 (v.k_raft_version_feature.min_supported_version,
                                  v.k_raft_version_feature.max_supported_version))
                           for v in message.voters)
            self._quorum = QuorumImage(quorum.leader_changes, quorum.kraft_version, voters)


def _endpoints(items: Any) -> tuple[Endpoint, ...]:
    """By listener name: Kafka keeps them in a map, so their order in a record means nothing."""
    return tuple(sorted(Endpoint(e.name, e.host, e.port, e.security_protocol) for e in items))


def _optional_tuple(items: Any) -> tuple | None:
    return None if items is None else tuple(items)


def _feature_ranges(items: Any) -> tuple[FeatureRange, ...]:
    return tuple(sorted(FeatureRange(f.name, f.min_supported_version, f.max_supported_version) for f in items))


def _merged(base: Any, changes: dict) -> Any:
    if not changes:
        return base
    merged = dict(base)
    for key, value in changes.items():
        if value is _REMOVED:
            merged.pop(key, None)
        else:
            merged[key] = value
    return MappingProxyType(merged)


def _merged_nested(base: Any, changes: dict[Any, dict]) -> Any:
    """Two-level maps (resource -> key -> value) where a None value deletes the key."""
    if not changes:
        return base
    merged = dict(base)
    for resource, keys in changes.items():
        inner = dict(merged.get(resource, {}))
        for key, value in keys.items():
            if value is None:
                inner.pop(key, None)
            else:
                inner[key] = value
        if inner:
            merged[resource] = MappingProxyType(inner)
        else:
            merged.pop(resource, None)
    return MappingProxyType(merged)


_NOTHING: Mapping = MappingProxyType({})
_UNSET = object()
_SINGLE_DOMAINS = ("producer_ids", "zk_migration_state", "kraft_version", "voters")
_KEYED = {"features": "_features", "controllers": "_controllers", "acls": "_acls", "scram": "_scram",
          "tokens": "_tokens"}
_IMAGE_FIELD = {"acls": "acls", "scram": "scram", "tokens": "delegation_tokens"}

_TRANSACTION_MARKERS = {"BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord"}

_HANDLERS: dict[str, Callable[[MetadataDelta, Any], None]] = {
    "RegisterBrokerRecord": MetadataDelta._register_broker,
    "UnregisterBrokerRecord": MetadataDelta._unregister_broker,
    "FenceBrokerRecord": lambda d, r: d._fence(r, True),
    "UnfenceBrokerRecord": lambda d, r: d._fence(r, False),
    "BrokerRegistrationChangeRecord": MetadataDelta._broker_change,
    "RegisterControllerRecord": MetadataDelta._register_controller,
    "UnregisterControllerRecord": MetadataDelta._unregister_controller,
    "TopicRecord": MetadataDelta._topic,
    "PartitionRecord": MetadataDelta._partition,
    "PartitionChangeRecord": MetadataDelta._partition_change,
    "RemoveTopicRecord": MetadataDelta._remove_topic,
    "ClearElrRecord": MetadataDelta._clear_elr,
    "ConfigRecord": MetadataDelta._config,
    "ClientQuotaRecord": MetadataDelta._quota,
    "FeatureLevelRecord": MetadataDelta._feature,
    "ZkMigrationStateRecord": MetadataDelta._zk_migration,
    "ProducerIdsRecord": MetadataDelta._producer_ids,
    "AccessControlEntryRecord": MetadataDelta._acl,
    "RemoveAccessControlEntryRecord": MetadataDelta._remove_acl,
    "UserScramCredentialRecord": MetadataDelta._scram_credential,
    "RemoveUserScramCredentialRecord": MetadataDelta._remove_scram,
    "DelegationTokenRecord": MetadataDelta._token,
    "RemoveDelegationTokenRecord": MetadataDelta._remove_token,
}


# record class -> handler, for every version of every handled record type
_BY_CLASS = {cls: _HANDLERS[cls.record_name] for cls in RECORD_CLASSES.values() if cls.record_name in _HANDLERS}


def replay_entries(entries, image: MetadataImage | None = None) -> MetadataImage:
    """The image after replaying LogEntry values (e.g. from engine.storage.log_reader) onto ``image``."""
    delta = MetadataDelta(image or MetadataImage())
    for entry in entries:
        delta.replay(entry.record, entry.offset if not entry.in_snapshot else -1, entry.leader_epoch,
                     entry.timestamp_ms)
    return delta.apply()
