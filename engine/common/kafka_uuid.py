"""Kafka's Uuid text form: URL-safe base64 of the 16 bytes, without padding (22 chars).

Kafka prints ids this way everywhere (topic ids, directory ids, cluster ids made by
``kafka-storage random-uuid``), never in the dashed RFC 4122 form Python uses.
"""

from __future__ import annotations

import base64
import re
import uuid

ZERO_UUID = uuid.UUID(int=0)
ONE_UUID = uuid.UUID(int=1)
METADATA_TOPIC_ID = ONE_UUID  # the id of __cluster_metadata, fixed by Kafka
RESERVED_UUIDS = frozenset({ZERO_UUID, ONE_UUID, METADATA_TOPIC_ID})

# Java's URL decoder accepts the 22-char form with or without its "==" padding.
_KAFKA_UUID_RE = re.compile(r"[A-Za-z0-9_-]{22}(?:==)?")


def uuid_to_kafka(u: uuid.UUID | None) -> str:
    """The Kafka string form of ``u``; ``None`` stands for Kafka's ZERO_UUID."""
    raw = (u or ZERO_UUID).bytes
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def kafka_to_uuid(s: str) -> uuid.UUID:
    """Parse a Kafka Uuid string; ``ValueError`` saying what is wrong otherwise."""
    if not isinstance(s, str):
        raise ValueError(f"a Kafka uuid must be a string, not {type(s).__name__}")
    if len(s) > 24:
        raise ValueError(f"{s[:24]!r}... is too long for a base64 Kafka uuid (22 characters)")
    if not _KAFKA_UUID_RE.fullmatch(s):
        raise ValueError(f"{s!r} is not a Kafka uuid: expected 22 URL-safe base64 characters")
    raw = base64.urlsafe_b64decode(s[:22] + "==")
    return uuid.UUID(bytes=raw)


def random_kafka_uuid() -> uuid.UUID:
    """A random id as Kafka's Uuid.randomUuid makes them.

    Reserved ids are skipped, and so are ids whose text starts with '-', because
    such a string would be taken for an option on a command line.
    """
    while True:
        u = uuid.uuid4()
        if u not in RESERVED_UUIDS and not uuid_to_kafka(u).startswith("-"):
            return u
