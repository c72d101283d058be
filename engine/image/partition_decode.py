"""One topic's PartitionRecords read straight from a snapshot's bytes into PartitionRegistrations.

The whole-image questions (``find``, ``summary``, an export) decode every partition of a snapshot;
through the general path each record becomes a kio dataclass (its UUIDs, its tuples), then a
PartitionRegistration, through TopicsDelta's replay. For a topic of a grouped snapshot
(engine.image.snapshot_index) the replay is simple: its TopicRecord, then its PartitionRecords,
each setting one partition's whole state, a later one for the same partition id replacing the
earlier in its place. So the records can be read here, field by field, into the registrations
the replay would make, with what repeats shared. A registration is immutable, and a record's
bytes after its partition and topic ids (replicas, ISR, leader, epochs, directories, ELRs) are
the whole of it: partitions whose bytes are the same share one registration, found by those
bytes in a dict (the bench's 1,000,000 partitions hold under 5,000 states; a real cluster's
epochs spread wider, and past 65,536 states a record is read field by field, its replica lists
and directories still shared the same way). No UUID is made for directories seen before.

Only the shape Kafka writes is read here: frame version 1, PartitionRecord v0 to v2, one-byte
array counts where the counts are small, the tagged fields the version defines (0: leader
recovery state; v2's 1 and 2: the ELRs), in order. Anything else (an unknown tag, a null array,
a count that does not fit, bytes left over) answers None and the caller decodes the topic by
the general path, which decides, as before, what such a record means: this reader never guesses.
tests/engine/image/test_partition_decode.py checks it against the general path record by record.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from engine.common.directory_id import MIGRATING, migrating_array
from engine.image.partition_registration import PartitionRegistration

_I32 = struct.Struct(">i").unpack_from
_THREE_I32 = struct.Struct(">iii").unpack_from
_new = tuple.__new__
_UUID = uuid.UUID

TOPIC_RECORD, PARTITION_RECORD = 2, 3

# decoded pieces shared by every partition that holds the same bytes; bounded, as a huge JBOD
# cluster's sets of directories could otherwise grow them without end (past the bound: decoded anew)
_CACHE_MAX = 65536
_INT_ARRAYS: dict[bytes, tuple[int, ...]] = {}
_DIRECTORIES: dict[bytes, tuple] = {}
# per PartitionRecord version: a record's bytes after its partition and topic ids -> the
# registration they make (immutable, so partitions in the same state share one), or _SKIP
_STATES: tuple[dict[bytes, Any], ...] = ({}, {}, {})
_SKIP: Any = object()


class _Refused(Exception):
    """A record this reader does not read: the general path decides."""


def decode_topic_partitions(buf: bytes, spans: list[tuple[int, int, int]]) -> tuple[dict[int, PartitionRegistration], int] | None:
    """The partitions of one topic from its records' bytes, and how many records the replay
    skips (directories that do not pair with the replicas); None when a record is not of the
    shape read here.

    ``spans``: (first byte, byte past the last, record count) of each run of the topic's records,
    whose framing the index's walk checked: its TopicRecord first, then its PartitionRecords."""
    partitions: dict[int, PartitionRegistration] = {}
    skipped = 0
    states = _STATES
    seen_topic = False
    try:
        for start, end, count in spans:
            pos = start
            for _ in range(count):
                # the record's framing (checked by the walk): its length, attributes, timestamp
                # delta, offset delta (one to three bytes), a null key, then the value's length
                b = buf[pos]
                if b < 0x80:
                    pos += 1
                    record_end = pos + (b >> 1)
                else:
                    record_end = pos + 2 + (((b & 0x7F) | (buf[pos + 1] << 7)) >> 1)
                    pos += 2
                q = pos + 2
                while buf[q] >= 0x80:
                    q += 1
                q += 2  # the offset delta's last byte and the null key
                value = q + 1 if buf[q] < 0x80 else q + 2
                value_end = record_end - 1  # the record's header count (0) follows the value
                api, version = buf[value + 1], buf[value + 2]
                pos = record_end
                if api == TOPIC_RECORD and not seen_topic:
                    seen_topic = True
                    continue
                if api != PARTITION_RECORD or version > 2 or buf[value] != 1:
                    return None
                # everything after the partition and topic ids: partitions in the same state share it
                tail = buf[value + 23:value_end]
                cache = states[version]
                registration = cache.get(tail)
                if registration is None:
                    registration = _partition(buf, value + 23, value_end, version)
                    if len(cache) < _CACHE_MAX:
                        cache[tail] = registration
                if registration is _SKIP:
                    skipped += 1  # directories that do not pair with the replicas: the replay skips it
                    continue
                partitions[_I32(buf, value + 3)[0]] = registration
            if pos != end:
                return None
    except (_Refused, IndexError, struct.error):
        return None
    return partitions, skipped


def _int_array(buf: bytes, pos: int, end: int) -> tuple[tuple[int, ...], int]:
    """A compact array of int32 (not null) at ``pos``: the shared tuple, and the position after it."""
    count = buf[pos]
    if count == 0 or count >= 0x80:
        raise _Refused  # null, or a count of more than 126 elements (a multi-byte varint)
    after = pos + 1 + 4 * (count - 1)
    if after > end:
        raise _Refused
    key = buf[pos:after]
    found = _INT_ARRAYS.get(key)
    if found is None:
        found = struct.unpack_from(f">{count - 1}i", buf, pos + 1)
        if len(_INT_ARRAYS) < _CACHE_MAX:
            _INT_ARRAYS[key] = found
    return found, after


def _partition(buf: bytes, pos: int, end: int, version: int) -> Any:
    """The registration a PartitionRecord's message makes, from its replicas on (the partition
    and topic ids come before); _SKIP when the replay skips it."""
    replicas, pos = _int_array(buf, pos, end)
    isr, pos = _int_array(buf, pos, end)
    removing, pos = _int_array(buf, pos, end)
    adding, pos = _int_array(buf, pos, end)
    if pos + 12 > end:
        raise _Refused
    leader, leader_epoch, partition_epoch = _THREE_I32(buf, pos)
    pos += 12
    if version >= 1:
        directories, pos = _directories(buf, pos, end, len(replicas))
    else:
        directories = migrating_array(len(replicas))
    recovery, elr, last_known, pos = _tags(buf, pos, end, version)
    if pos != end:
        raise _Refused
    if directories is None:
        return _SKIP
    return _new(PartitionRegistration, (replicas, isr, removing, adding, leader, recovery, leader_epoch,
                                        partition_epoch, directories, elr, last_known))


def _directories(buf: bytes, pos: int, end: int, replica_count: int) -> tuple[tuple | None, int]:
    """A record's directories as PartitionRegistration.from_record reads them (None: they do not
    pair with the replicas), decoded once per distinct bytes, before any UUID is made."""
    count = buf[pos]
    if count == 0 or count >= 0x80:
        raise _Refused
    after = pos + 1 + 16 * (count - 1)
    if after > end:
        raise _Refused
    if count == 1:  # none: one MIGRATING per replica
        return migrating_array(replica_count), after
    if count - 1 != replica_count:
        return None, after
    key = buf[pos:after]
    found = _DIRECTORIES.get(key)
    if found is None:
        found = _decode_directories(key)
        if len(_DIRECTORIES) < _CACHE_MAX:
            _DIRECTORIES[key] = found
    return found, after


def _decode_directories(key: bytes) -> tuple:
    """Kafka's rule (partition_registration._assigned): all MIGRATING (the all-zero id) is one
    MIGRATING per replica; else each id as it is."""
    ids = [int.from_bytes(key[i:i + 16], "big") for i in range(1, len(key), 16)]
    if not any(ids):
        return migrating_array(len(ids))
    return tuple(MIGRATING if not value else _UUID(int=value) for value in ids)


def _tags(buf: bytes, pos: int, end: int, version: int) -> tuple[int, tuple, tuple, int]:
    """The tagged fields: (leader recovery state, ELR, last known ELR, the position after them)."""
    recovery, elr, last_known = 0, (), ()
    tags = buf[pos]
    pos += 1
    if not tags:
        return recovery, elr, last_known, pos
    if tags >= 0x80:
        raise _Refused
    last_tag = -1
    for _ in range(tags):
        tag, size = buf[pos], buf[pos + 1]
        pos += 2
        if tag <= last_tag or size >= 0x80 or pos + size > end:
            raise _Refused
        last_tag = tag
        if tag == 0 and size == 1:
            recovery = buf[pos] - 256 if buf[pos] >= 0x80 else buf[pos]  # an int8
        elif tag in (1, 2) and version >= 2 and size >= 1:
            array, after = _nullable_int_array(buf, pos, pos + size)
            if after != pos + size:
                raise _Refused
            if tag == 1:
                elr = array
            else:
                last_known = array
        else:
            raise _Refused  # a tag this version does not define, or a size that does not fit it
        pos += size
    return recovery, elr, last_known, pos


def _nullable_int_array(buf: bytes, pos: int, end: int) -> tuple[tuple, int]:
    """An ELR: null and empty both read as () (PartitionRegistration keeps no difference)."""
    if buf[pos] == 0:
        return (), pos + 1
    return _int_array(buf, pos, end)


def cached_pieces() -> int:
    """How many decoded pieces are shared (for tests and the curious)."""
    return len(_INT_ARRAYS) + len(_DIRECTORIES) + sum(map(len, _STATES))


__all__ = ["cached_pieces", "decode_topic_partitions"]
