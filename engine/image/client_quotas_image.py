"""Client quotas by entity (Kafka's ClientQuotasImage, ClientQuotaImage, ClientQuotasDelta and
ClientQuotaDelta).

A ClientQuotasImage reads as the map of ClientQuotaEntity to its ClientQuotaImage, which reads as
the map of quota keys to values (``producer_byte_rate`` -> 1024.0).

Replay: a ClientQuotaRecord sets a key, or deletes it when ``remove`` is set; an entity left with
no quota leaves the image.
"""

from __future__ import annotations

from typing import ClassVar, Iterable, Mapping

from engine.image.domain_delta import EntriesDelta, NestedEntriesDelta
from engine.image.image_map import ImageMap
from engine.records import metadata_records as m


class ClientQuotaEntity(tuple):
    """Whom a quota is for: ``(entity type, name)`` pairs (``("user", "alice")``; a None name is the
    type's default), sorted by type. A tuple, equal to the plain tuple of its pairs:
    ``image.client_quotas[(("client-id", "app"), ("user", "alice"))]`` finds it.

    Kafka's ClientQuotaEntity is a map of type to name: the order a record lists the types in
    means nothing (user then client-id is the entity client-id then user), and a later entry of
    a type replaces an earlier one. Sorted by type is also the order Kafka's hash map writes the
    one pair of types it allows together (client-id, then user)."""

    __slots__ = ()

    @classmethod
    def from_record(cls, entity: Iterable[m.ClientQuotaRecordV0EntityData]) -> "ClientQuotaEntity":
        by_type = {e.entity_type: e.entity_name for e in entity}
        return tuple.__new__(cls, tuple(sorted(by_type.items())))

    def entries(self) -> dict[str, str | None]:
        """Entity type -> name, as Kafka's ``ClientQuotaEntity.entries()``."""
        return dict(self)


class ClientQuotaImage(ImageMap[str, float]):
    """One entity's quotas: key -> value."""

    __slots__ = ()


class ClientQuotasImage(ImageMap[ClientQuotaEntity, ClientQuotaImage]):
    """Every entity with quotas."""

    __slots__ = ()
    EMPTY: ClassVar["ClientQuotasImage"]

    @property
    def entities(self) -> Mapping[ClientQuotaEntity, ClientQuotaImage]:
        return self._entries


ClientQuotasImage.EMPTY = ClientQuotasImage()


class ClientQuotaDelta(EntriesDelta):
    """The changes to one entity's quotas."""

    __slots__ = ()

    def apply(self) -> ClientQuotaImage:
        return ClientQuotaImage(self.entries())


class ClientQuotasDelta(NestedEntriesDelta):
    """Changes to the client quotas. Change set domain: ``client_quotas``, by (entity, quota key)."""

    DOMAIN, DOMAINS = "client_quotas", ("client_quotas",)
    __slots__ = ()

    def replay_client_quota(self, record: m.ClientQuotaRecordV0) -> None:
        self._set(ClientQuotaEntity.from_record(record.entity), record.key, None if record.remove else record.value)

    def _subject_delta(self, subject: ClientQuotaEntity) -> ClientQuotaDelta:
        return ClientQuotaDelta(self.image.get(subject) or ClientQuotaImage())


__all__ = ["ClientQuotaDelta", "ClientQuotaEntity", "ClientQuotaImage", "ClientQuotasDelta", "ClientQuotasImage"]
