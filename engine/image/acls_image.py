"""ACLs (Kafka's AclsImage and AclsDelta, and the StandardAcl they hold).

An AclsImage reads as the map of ACL ids to their StandardAcl bindings. Replay: an
AccessControlEntryRecord sets the binding of its id, a RemoveAccessControlEntryRecord removes it.
"""

from __future__ import annotations

import uuid
from typing import ClassVar, Mapping, NamedTuple

from engine.image.domain_delta import REMOVED, KeyedDelta
from engine.image.image_map import ImageMap
from engine.records import metadata_records as m


class StandardAcl(NamedTuple):
    """One ACL binding, in the record's terms: the resource pattern it applies to, who, from where,
    which operation and whether it allows or denies (Kafka's ids: engine.controller.standard_authorizer)."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    @classmethod
    def from_record(cls, record: m.AccessControlEntryRecordV0) -> "StandardAcl":
        return cls(record.resource_type, record.resource_name, record.pattern_type, record.principal, record.host,
                   record.operation, record.permission_type)

    def to_record(self, acl_id: uuid.UUID | None) -> m.AccessControlEntryRecordV0:
        return m.AccessControlEntryRecordV0(id=acl_id, **self._asdict())


class AclsImage(ImageMap["uuid.UUID | None", StandardAcl]):
    """Every ACL, by id."""

    __slots__ = ()
    EMPTY: ClassVar["AclsImage"]

    @property
    def acls(self) -> Mapping[uuid.UUID | None, StandardAcl]:
        return self._entries


AclsImage.EMPTY = AclsImage()


class AclsDelta(KeyedDelta):
    """Changes to the ACLs. Change set domain: ``acls``, by ACL id."""

    DOMAIN, DOMAINS = "acls", ("acls",)
    __slots__ = ()

    def replay_access_control_entry(self, record: m.AccessControlEntryRecordV0) -> None:
        self._put(record.id, StandardAcl.from_record(record))

    def replay_remove_access_control_entry(self, record: m.RemoveAccessControlEntryRecordV0) -> None:
        self._put(record.id, REMOVED)


__all__ = ["AclsDelta", "AclsImage", "StandardAcl"]
