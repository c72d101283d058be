"""Delegation tokens (Kafka's DelegationTokenImage and DelegationTokenDelta, and the
DelegationTokenData they hold).

A DelegationTokenImage reads as the map of token ids to their DelegationTokenData. Replay: a
DelegationTokenRecord sets a token (a renewal or an expiry rewrites it whole), a
RemoveDelegationTokenRecord removes it.
"""

from __future__ import annotations

from typing import ClassVar, Mapping, NamedTuple

from engine.image.domain_delta import REMOVED, KeyedDelta
from engine.image.image_map import ImageMap
from engine.records import metadata_records as m


class DelegationTokenData(NamedTuple):
    """A token's information (Kafka's TokenInformation), under the DelegationTokenRecord's field
    names; the timestamps are milliseconds since the epoch."""

    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int

    @classmethod
    def from_record(cls, record: m.DelegationTokenRecordV0) -> "DelegationTokenData":
        return cls(record.token_id, record.owner, record.requester, tuple(record.renewers), record.issue_timestamp,
                   record.max_timestamp, record.expiration_timestamp)

    def to_record(self) -> m.DelegationTokenRecordV0:
        return m.DelegationTokenRecordV0(**self._asdict())


class DelegationTokenImage(ImageMap[str, DelegationTokenData]):
    """Every delegation token, by id."""

    __slots__ = ()
    EMPTY: ClassVar["DelegationTokenImage"]

    @property
    def tokens(self) -> Mapping[str, DelegationTokenData]:
        return self._entries


DelegationTokenImage.EMPTY = DelegationTokenImage()


class DelegationTokenDelta(KeyedDelta):
    """Changes to the delegation tokens. Change set domain: ``tokens``, by token id."""

    DOMAIN, DOMAINS = "tokens", ("tokens",)
    __slots__ = ()

    def replay_delegation_token(self, record: m.DelegationTokenRecordV0) -> None:
        self._put(record.token_id, DelegationTokenData.from_record(record))

    def replay_remove_delegation_token(self, record: m.RemoveDelegationTokenRecordV0) -> None:
        self._put(record.token_id, REMOVED)


__all__ = ["DelegationTokenData", "DelegationTokenDelta", "DelegationTokenImage"]
