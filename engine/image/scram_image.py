"""SCRAM credentials (Kafka's ScramImage and ScramDelta, and the ScramCredentialData they hold).

A ScramImage reads as the map of ``(mechanism, user name)`` to the user's ScramCredentialData for
that mechanism (Kafka's ids: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512). Replay: a
UserScramCredentialRecord sets a credential, a RemoveUserScramCredentialRecord removes it.
"""

from __future__ import annotations

from typing import ClassVar, Mapping, NamedTuple

from engine.image.domain_delta import REMOVED, KeyedDelta
from engine.image.image_map import ImageMap
from engine.records import metadata_records as m


class ScramCredentialData(NamedTuple):
    """What a server keeps of a SCRAM password (RFC 5802): never the password itself."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_record(cls, record: m.UserScramCredentialRecordV0) -> "ScramCredentialData":
        return cls(record.salt, record.stored_key, record.server_key, record.iterations)

    def to_record(self, mechanism: int, user_name: str) -> m.UserScramCredentialRecordV0:
        return m.UserScramCredentialRecordV0(name=user_name, mechanism=mechanism, **self._asdict())


class ScramImage(ImageMap[tuple[int, str], ScramCredentialData]):
    """Every credential, by (mechanism, user name)."""

    __slots__ = ()
    EMPTY: ClassVar["ScramImage"]

    @property
    def credentials(self) -> Mapping[tuple[int, str], ScramCredentialData]:
        return self._entries

    def mechanisms(self) -> dict[int, dict[str, ScramCredentialData]]:
        """Mechanism -> user name -> credential (Kafka's ``ScramImage.mechanisms()``)."""
        found: dict[int, dict[str, ScramCredentialData]] = {}
        for (mechanism, user), credential in self._entries.items():
            found.setdefault(mechanism, {})[user] = credential
        return found


ScramImage.EMPTY = ScramImage()


class ScramDelta(KeyedDelta):
    """Changes to the SCRAM credentials. Change set domain: ``scram``, by (mechanism, user name)."""

    DOMAIN, DOMAINS = "scram", ("scram",)
    __slots__ = ()

    def replay_user_scram_credential(self, record: m.UserScramCredentialRecordV0) -> None:
        self._put((record.mechanism, record.name), ScramCredentialData.from_record(record))

    def replay_remove_user_scram_credential(self, record: m.RemoveUserScramCredentialRecordV0) -> None:
        self._put((record.mechanism, record.name), REMOVED)


__all__ = ["ScramCredentialData", "ScramDelta", "ScramImage"]
