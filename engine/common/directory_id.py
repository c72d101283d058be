"""Log directory ids and the ones Kafka reserves (server-common's DirectoryId, KIP-858, 3.7+).

A partition records one directory id per replica. Three ids are not directories:

    MIGRATING   AAAAAAAAAAAAAAAAAAAAAA  (0, 0)  placed before directories were tracked
    UNASSIGNED  AAAAAAAAAAAAAAAAAAAAAQ  (0, 1)  not placed in a directory yet
    LOST        AAAAAAAAAAAAAAAAAAAAAg  (0, 2)  its directory went offline

MIGRATING is the all-zero id, which kio decodes as ``None``: code reading records treats
``None`` in a directory list as MIGRATING. Kafka reserves every id below 100 (DirectoryId.reserved).
"""

from __future__ import annotations

import uuid

from engine.common.kafka_uuid import uuid_to_kafka

MIGRATING = uuid.UUID(int=0)
UNASSIGNED = uuid.UUID(int=1)
LOST = uuid.UUID(int=2)

RESERVED_NAMES = {MIGRATING: "MIGRATING", UNASSIGNED: "UNASSIGNED", LOST: "LOST"}
RESERVED_TEXTS = {uuid_to_kafka(d): name for d, name in RESERVED_NAMES.items()}  # for output read by people

# The same few lengths come back for every partition: share one tuple per length.
_MIGRATING_ARRAYS = tuple((MIGRATING,) * n for n in range(16))


def migrating_array(length: int) -> tuple[uuid.UUID, ...]:
    """One MIGRATING per replica (Kafka's DirectoryId.migratingArray)."""
    return _MIGRATING_ARRAYS[length] if length < len(_MIGRATING_ARRAYS) else (MIGRATING,) * length
