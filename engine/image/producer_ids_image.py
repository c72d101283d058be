"""Producer ids (Kafka's ProducerIdsImage and ProducerIdsDelta): the first id of the next block the
controller hands out. Replay: a ProducerIdsRecord sets it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from engine.image.domain_delta import DomainDelta, ReplayJournal
from engine.records import metadata_records as m


@dataclass(frozen=True, slots=True)
class ProducerIdsImage:
    next_producer_id: int = -1  # -1: no block was ever allocated
    EMPTY: ClassVar["ProducerIdsImage"]

    @property
    def is_empty(self) -> bool:
        return self.next_producer_id < 0


ProducerIdsImage.EMPTY = ProducerIdsImage()


class ProducerIdsDelta(DomainDelta):
    """Changes to the next producer id. Change set domain: ``producer_ids`` (one value; None where
    no block was ever allocated)."""

    DOMAINS = ("producer_ids",)
    __slots__ = ("image", "next_producer_id")

    def __init__(self, image: ProducerIdsImage, journal: ReplayJournal | None = None) -> None:
        super().__init__(journal)
        self.image = image
        self.next_producer_id: int | None = None  # None: no record set it

    def replay_producer_ids(self, record: m.ProducerIdsRecordV0) -> None:
        self._note("producer_ids", None, self.value_now("producer_ids", None))
        self.next_producer_id = record.next_producer_id

    def value_in_image(self, domain: str, key: None) -> int | None:
        return None if self.image.is_empty else self.image.next_producer_id

    def value_now(self, domain: str, key: None) -> int | None:
        return self.value_in_image(domain, key) if self.next_producer_id is None else self.next_producer_id

    def apply(self) -> ProducerIdsImage:
        return self.image if self.next_producer_id is None else ProducerIdsImage(self.next_producer_id)


__all__ = ["ProducerIdsDelta", "ProducerIdsImage"]
