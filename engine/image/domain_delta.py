"""What every per-domain delta shares: the subjects it changed, where, and their values before.

Kafka's deltas tell their publishers what they changed (``TopicsDelta.changedTopics()``,
``ClusterDelta.changedBrokers()``). Ours do it in one shape, so that ``MetadataDelta`` assembles
one ChangeSet (engine/image/change_set.py) from all of them without knowing any domain:

- a delta notes each subject a record is about to change: ``(domain, key)`` with its value as
  the delta stands before the record, at the place of that record;
- ``changed_subjects()`` yields, for the batch, every noted subject whose value differs from the
  base image's, with the place of the last record that named it;
- the deltas of one MetadataDelta share a ``ReplayJournal``: the place of the record being
  replayed, the subjects it named (for ``MetadataDelta.record_changes()``) and the count of
  records that did not apply.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, ClassVar, Iterator, Mapping

from engine.image.change_set import Change

REMOVED: Any = object()  # a subject a delta removed, where a value would stand


class ReplayJournal:
    """The replay's place and the record's footprint, shared by the deltas of one MetadataDelta."""

    __slots__ = ("stamp", "named", "skipped", "per_record")

    def __init__(self, per_record: bool = False) -> None:
        self.stamp: tuple[int, int] = (-1, -1)  # (offset, timestamp_ms) of the record being replayed
        # keep ``named`` (for record_changes) only when asked: a snapshot load would pay for
        # a list of every subject it names, which nobody reads
        self.per_record = per_record
        # (domain, key, value before) for each subject the record being replayed named
        self.named: list[tuple[str, Any, Any]] = []
        self.skipped = 0  # records that did not apply (an epoch mismatch, an unknown topic, ...)


class DomainDelta:
    """The base of the per-domain deltas. A subclass names the change set domains it owns in
    ``DOMAINS`` and answers ``value_in_image`` (a subject's value in the base image, None when
    absent) and ``value_now`` (as the delta stands)."""

    DOMAINS: ClassVar[tuple[str, ...]]
    __slots__ = ("journal", "_named")

    def __init__(self, journal: ReplayJournal | None = None) -> None:
        self.journal = journal if journal is not None else ReplayJournal()
        self._named: dict[tuple[str, Any], tuple[int, int]] = {}  # (domain, key) -> where last named

    def _note(self, domain: str, key: Any, before: Any) -> None:
        """``key`` of ``domain`` is about to change from ``before`` (its value as the delta stands)."""
        journal = self.journal
        self._named[(domain, key)] = journal.stamp
        if journal.per_record:
            journal.named.append((domain, key, before))

    def _skip(self) -> None:
        self.journal.skipped += 1

    def value_in_image(self, domain: str, key: Any) -> Any:
        raise NotImplementedError

    def value_now(self, domain: str, key: Any) -> Any:
        raise NotImplementedError

    def changed_subjects(self) -> Iterator[tuple[str, Any, Change]]:
        """``(domain, key, change)`` for every subject whose value differs from the base image's,
        in the order they were first named."""
        for (domain, key), (offset, timestamp_ms) in self._named.items():
            before, after = self.value_in_image(domain, key), self.value_now(domain, key)
            if after is not before and after != before:
                yield domain, key, Change(before, after, offset, timestamp_ms)


class KeyedDelta(DomainDelta):
    """A delta of an image that is one map of values by key (features, ACLs, SCRAM credentials,
    delegation tokens): each record sets or removes one key of ``DOMAIN``."""

    DOMAIN: ClassVar[str]
    __slots__ = ("image", "_changes")

    def __init__(self, image: Any, journal: ReplayJournal | None = None) -> None:
        super().__init__(journal)
        self.image = image
        self._changes: dict[Any, Any] = {}  # key -> value, or REMOVED

    def _put(self, key: Any, value: Any) -> None:
        """Set ``key`` to ``value`` (REMOVED: remove it)."""
        self._note(self.DOMAIN, key, current(self._changes, self.image, key))
        self._changes[key] = value

    def changes(self) -> dict[Any, Any]:
        """Each key a record named, with its value now (None: removed), as Kafka's ``changes()``."""
        return {key: None if value is REMOVED else value for key, value in self._changes.items()}

    def value_in_image(self, domain: str, key: Any) -> Any:
        return self.image.get(key)

    def value_now(self, domain: str, key: Any) -> Any:
        return current(self._changes, self.image, key)

    def apply(self) -> Any:
        """The next image: the base image itself when no record named a key."""
        return type(self.image)(merged(self.image, self._changes)) if self._changes else self.image


class EntriesDelta:
    """The changes to one subject's map of values (a resource's configs, an entity's quotas):
    key -> its new value, None where a record removed it. A subclass's ``apply`` makes the image."""

    __slots__ = ("image", "changes")

    def __init__(self, image: Mapping) -> None:
        self.image = image
        self.changes: dict[str, Any] = {}

    def value(self, key: str) -> Any:
        changes = self.changes
        return changes[key] if key in changes else self.image.get(key)

    def keys(self) -> set[str]:
        """The keys that have a value as the delta stands."""
        return {k for k in self.image if k not in self.changes} | {k for k, v in self.changes.items() if v is not None}

    def entries(self) -> Mapping:
        """The values as the delta stands, read-only."""
        return merged(self.image, {key: REMOVED if value is None else value for key, value in self.changes.items()})


class NestedEntriesDelta(DomainDelta):
    """A delta of an image that maps subjects to maps of values (configs by resource, quotas by
    entity). The change set's keys are ``(subject, key)`` in ``DOMAIN``; a subject left with no
    values leaves the image."""

    DOMAIN: ClassVar[str]
    __slots__ = ("image", "_changes")

    def __init__(self, image: Any, journal: ReplayJournal | None = None) -> None:
        super().__init__(journal)
        self.image = image
        self._changes: dict[Any, Any] = {}  # subject -> its EntriesDelta

    def _subject_delta(self, subject: Any) -> EntriesDelta:
        """The delta of ``subject``'s values, begun on first change."""
        raise NotImplementedError

    def _set(self, subject: Any, key: str, value: Any) -> None:
        """Set ``subject``'s ``key`` to ``value`` (None: remove it)."""
        self._note(self.DOMAIN, (subject, key), self.value_now(self.DOMAIN, (subject, key)))
        delta = self._changes.get(subject)
        if delta is None:
            delta = self._changes[subject] = self._subject_delta(subject)
        delta.changes[key] = value

    def changes(self) -> dict[Any, Any]:
        """Each subject a record named, with its EntriesDelta (as Kafka's ``changes()``)."""
        return dict(self._changes)

    def value_in_image(self, domain: str, key: tuple[Any, str]) -> Any:
        values = self.image.get(key[0])
        return None if values is None else values.get(key[1])

    def value_now(self, domain: str, key: tuple[Any, str]) -> Any:
        delta = self._changes.get(key[0])
        return self.value_in_image(domain, key) if delta is None else delta.value(key[1])

    def apply(self) -> Any:
        if not self._changes:
            return self.image
        subjects = dict(self.image)
        for subject, delta in self._changes.items():
            values = delta.apply()
            if values:
                subjects[subject] = values
            else:
                subjects.pop(subject, None)
        return type(self.image)(MappingProxyType(subjects))


def current(changes: Mapping, base: Mapping, key: Any) -> Any:
    """``key``'s value as a delta stands: its change (REMOVED: None), else the base's (or None)."""
    value = changes.get(key, REMOVED)
    if value is REMOVED:
        return None if key in changes else base.get(key)
    return value


def merged(base: Mapping, changes: Mapping) -> Mapping:
    """``base`` with ``changes`` laid over it (a REMOVED value drops the key), read-only."""
    entries = dict(base)
    for key, value in changes.items():
        if value is REMOVED:
            entries.pop(key, None)
        else:
            entries[key] = value
    return MappingProxyType(entries)


__all__ = ["REMOVED", "DomainDelta", "EntriesDelta", "KeyedDelta", "NestedEntriesDelta", "ReplayJournal", "current",
           "merged"]
