"""One pass over a snapshot's bytes that finds each topic's records without decoding its partitions.

Kafka writes a snapshot image domain by image domain, and the topics one by one: a topic's
TopicRecord, then a PartitionRecord for each of its partitions (TopicImage.write). So the
records of one topic are one run of the file, and a run can be found by reading, per record,
only its framing, its api key and, for a PartitionRecord, the 16 bytes of its topic id (they
stand at a fixed place: after the frame version, api key, version and the int32 partition id).
``index_snapshot`` walks every batch so, checks every batch's CRC, decodes the TopicRecords and
the few records of the other domains, and notes each topic's runs as byte ranges. The
partitions are decoded when ``SnapshotIndex.topic_partitions`` is first asked for a topic
(engine.image.lazy_topics): in Kafka's shape straight into registrations
(engine.image.partition_decode), else by the general path, the eager replay's.

The index answers None (the caller loads the file eagerly, as before) for anything that is not
that shape, so a lazy image is never a guess: a PartitionRecord that does not follow its
topic's TopicRecord, a topic id named by two TopicRecords, a record type that acts across
topics (PartitionChangeRecord, RemoveTopicRecord, ClearElrRecord, transaction markers), a
compressed batch, a record the fast framing does not read, or a file that does not start with
its SnapshotHeader and end with its SnapshotFooter (the eager reader's errors say why).

The index works on bytes, from any source: a file read once, or a FetchSnapshot answer.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from engine.common.errors import MetadataError
from engine.image.gc_pause import collector_paused
from engine.image.domain_delta import ReplayJournal
from engine.image.partition_decode import decode_topic_partitions
from engine.image.topics_image import TopicsDelta, TopicsImage
from engine.records import metadata_records as m
from engine.records.compression import NONE
from engine.records.metadata_record_serde import FAST_READER_TABLE
from engine.records.record_batch import HEADER_SIZE, RecordBatch, decode_batch
from engine.storage.log_reader import LogEntry, entries_in_place, entries_of_batch

TOPIC_RECORD, PARTITION_RECORD = 2, 3

# api keys of the records replayed at once, beside the topics: none of them reads or changes a
# topic (MetadataDelta's only cross-domain rule is RemoveTopicRecord's, which is not here)
_OTHER_DOMAINS = frozenset(key for (key, _), cls in m.RECORD_CLASSES.items() if cls.record_name in {
    "RegisterBrokerRecord", "UnregisterBrokerRecord", "FenceBrokerRecord", "UnfenceBrokerRecord",
    "BrokerRegistrationChangeRecord", "RegisterControllerRecord", "UnregisterControllerRecord", "ConfigRecord",
    "ClientQuotaRecord", "FeatureLevelRecord", "ZkMigrationStateRecord", "ProducerIdsRecord",
    "AccessControlEntryRecord", "RemoveAccessControlEntryRecord", "UserScramCredentialRecord",
    "RemoveUserScramCredentialRecord", "DelegationTokenRecord", "RemoveDelegationTokenRecord", "NoOpRecord",
})
_KNOWN_PARTITION_VERSIONS = frozenset(version for (key, version) in m.RECORD_CLASSES if key == PARTITION_RECORD)

# topics asked for, one by one, after which the rest are decoded in one go (see topic_partitions)
DECODE_AHEAD = 64

# a run of one topic's records inside one batch:
# (batch number, index of its first record in the batch, how many, first byte, byte past the last)
Run = tuple[int, int, int, int, int]


@dataclass(slots=True)
class IndexedTopic:
    record: Any  # its TopicRecord
    runs: list[Run]
    partitions: Mapping | None = None  # once decoded


class NotGrouped(Exception):
    """The bytes are not a snapshot in Kafka's grouped shape: load them eagerly."""


class SnapshotIndex:
    """Where each topic's records stand in a snapshot's bytes, and the records of the other domains.

    ``entries``: every record outside the topics' runs (the control records included), in file
    order; ``topics``: the topics in file order. The bytes are kept until every topic's
    partitions were asked for, then let go."""

    def __init__(self, buf: bytes, where: str, headers: list[RecordBatch], positions: list[int],
                 entries: list[LogEntry], topics: list[IndexedTopic]) -> None:
        self.where = where
        self.entries = entries
        self.topics = topics
        self._buf: bytes | None = buf
        self._headers = headers
        self._positions = positions
        self._lock = threading.Lock()  # two threads asking for one topic decode it once
        self._pending = len(topics)
        self._asked = 0  # topics decoded because someone asked for them
        self.skipped = 0  # records of the topics decoded so far that did not apply

    @property
    def pending_topics(self) -> int:
        """Topics whose partitions were not asked for yet."""
        return self._pending

    def topic_partitions(self, topic: IndexedTopic) -> Mapping[int, Any]:
        """The partitions of ``topic`` as the eager replay builds them: its records replayed on
        their own, in file order (no other record of the file reads or changes them).

        Once DECODE_AHEAD topics were asked for, the question is taken for a whole-image one
        (a summary, ``find``, an export walk every topic) and the rest are decoded at once, the
        collector paused throughout: decoded topic by topic, the collector's passes over a
        heap that keeps growing cost a quarter more."""
        with self._lock, collector_paused():
            if topic.partitions is None:
                self._decode(topic)
                self._asked += 1
                if self._asked == DECODE_AHEAD:
                    for other in self.topics:
                        if other.partitions is None:
                            self._decode(other)
            return topic.partitions

    def _decode(self, topic: IndexedTopic) -> None:
        fast = decode_topic_partitions(self._buf, [(start, end, count) for _, _, count, start, end in topic.runs])
        if fast is not None:  # Kafka's shape: read straight into registrations (engine.image.partition_decode)
            partitions, skipped = fast
            self.skipped += skipped
            self._decoded(topic, partitions)
            return
        delta = TopicsDelta(TopicsImage.EMPTY, ReplayJournal())
        for record in self._records(topic):
            if isinstance(record, m.TopicRecordV0):
                delta.replay_topic(record)
            elif getattr(record, "record_name", None) == "PartitionRecord":
                delta.replay_partition(record)
            else:  # a record that did not decode (an UnknownRecord): the eager replay skips it too
                delta.journal.skipped += 1
        self.skipped += delta.journal.skipped
        self._decoded(topic, delta.changed_topics()[topic.record.topic_id].partitions)

    def _decoded(self, topic: IndexedTopic, partitions: dict) -> None:
        topic.partitions = MappingProxyType(partitions)
        topic.runs = []
        self._pending -= 1
        if self._pending == 0:
            self._buf = None  # every topic decoded: the bytes are no longer needed

    def _records(self, topic: IndexedTopic) -> list[Any]:
        buf, records = self._buf, []
        for batch, first, count, start, end in topic.runs:
            header = self._headers[batch]
            entries = entries_in_place(buf, header, start, end, count, True)
            if entries is None:  # a record off the fast path: the general decoder, as the eager load
                try:
                    whole, _ = decode_batch(buf, self._positions[batch], verify_crc=False)
                except MetadataError as exc:
                    raise exc.at(path=self.where) from None
                entries = list(entries_of_batch(whole, True))[first:first + count]
            records.extend(entry.record for entry in entries)
        return records


def index_snapshot(buf: bytes, where: str) -> SnapshotIndex | None:
    """The index of a snapshot's bytes; None when they are not in the grouped shape. Damage a
    batch's header or CRC shows is raised (naming ``where`` and the byte offset) as the eager
    reader raises it. One process: engine.image.index_in_two walks on two where that pays."""
    headers, positions = _batch_headers(buf, where)
    return walk_alone(buf, where, headers, positions)


def walk_alone(buf: bytes, where: str, headers: list[RecordBatch], positions: list[int]) -> SnapshotIndex | None:
    """The one walk over batches whose headers are read: the index, or None when not grouped."""
    try:
        indexer = _Indexer(buf, where, headers, positions)
        indexer.walk(0, len(headers))
        return indexer.finish()
    except NotGrouped:
        return None


def _batch_headers(buf: bytes, where: str) -> tuple[list[RecordBatch], list[int]]:
    """Every batch's header and position, its CRC checked (3 GB/s: a small part of the first answer)."""
    headers, positions, pos = [], [], 0
    while pos < len(buf):
        try:
            header, end = decode_batch(buf, pos, decode_records=False)
        except MetadataError as exc:
            raise exc.at(path=where) from None
        headers.append(header)
        positions.append(pos)
        pos = end
    positions.append(pos)  # the end of the last batch
    return headers, positions


class _Indexer:
    """The walk over a span of batches. ``leading``: the span may begin inside a topic's run
    (the second half of a walk in two): PartitionRecords before its first TopicRecord are kept
    as the runs of a topic known only by its id, for the first half's last topic to claim."""

    def __init__(self, buf: bytes, where: str, headers: list[RecordBatch], positions: list[int],
                 leading: bool = False) -> None:
        self.buf, self.where = buf, where
        self.headers, self.positions = headers, positions
        self.entries: list[LogEntry] = []
        self.topics: list[IndexedTopic] = []
        self.seen: set[bytes] = set()
        # the topic whose PartitionRecords may come next, and its id's bytes (None: not known yet)
        self.leading = IndexedTopic(None, []) if leading else None
        self.current: IndexedTopic | None = self.leading
        self.current_id: bytes | None = None
        self.lead_id: bytes | None = None  # the leading topic's id, once its first PartitionRecord is read

    def walk(self, first: int, end: int) -> None:
        """Batches ``first`` to ``end`` (excluded)."""
        buf, headers, positions = self.buf, self.headers, self.positions
        for batch in range(first, end):
            header, pos = headers[batch], positions[batch]
            if header.is_control or header.compression != NONE:
                if not header.is_control:
                    raise NotGrouped  # a compressed data batch: Kafka's snapshots are not
                self.current = self.current_id = None
                whole, _ = decode_batch(buf, pos, verify_crc=False)
                self.entries.extend(entries_of_batch(whole, True))
            else:
                self._walk(batch, header, pos + HEADER_SIZE, positions[batch + 1])

    def finish(self) -> SnapshotIndex:
        entries, headers = self.entries, self.headers
        if not entries or entries[0].record.type_name != "SNAPSHOT_HEADER" \
                or entries[-1].record.type_name != "SNAPSHOT_FOOTER" or not headers[-1].is_control \
                or not headers[0].is_control:
            raise NotGrouped  # the eager reader says what is wrong with such a file
        return SnapshotIndex(self.buf, self.where, headers, self.positions, entries, self.topics)

    def _walk(self, batch: int, header: RecordBatch, start: int, end: int) -> None:
        """Frame every record of an uncompressed data batch (KRaft's shape: short varints, no
        key, no headers, one timestamp); note topic runs; decode the rest. The hot loop of the
        first answer: a PartitionRecord costs a dozen byte reads and one ``startswith``."""
        buf = self.buf
        count = int.from_bytes(buf[start - 4:start], "big", signed=True)
        same_topic = buf.startswith
        pos, index = start, 0
        run_first = run_start = -1  # the open run of the current topic in this batch
        current_id = self.current_id
        while pos < end:
            record = pos
            length = buf[pos]
            if length < 0x80:
                pos += 1
            else:
                c = buf[pos + 1]
                if c >= 0x80:
                    raise NotGrouped
                length = (length & 0x7F) | (c << 7)
                pos += 2
            record_end = pos + (length >> 1)
            if length & 1 or buf[pos + 1] or record_end > end:
                raise NotGrouped  # a negative length, a timestamp delta, or a record past the batch
            q = pos + 2  # the offset delta: one to three bytes
            if buf[q] < 0x80:
                q += 1
            elif buf[q + 1] < 0x80:
                q += 2
            elif buf[q + 2] < 0x80:
                q += 3
            else:
                raise NotGrouped
            value_len = buf[q + 1]
            if value_len < 0x80:
                value = q + 2
            else:
                c = buf[q + 2]
                if c >= 0x80:
                    raise NotGrouped
                value_len, value = (value_len & 0x7F) | (c << 7), q + 3
            value_end = value + (value_len >> 1)
            # a null key, a value of frame version 1 that ends where the record's headers (none) begin
            if buf[q] != 1 or value_len & 1 or value_end + 1 != record_end or buf[value_end] or buf[value] != 1:
                raise NotGrouped
            api = buf[value + 1]
            if api == PARTITION_RECORD:
                if current_id is None:
                    current_id = self._lead(buf, value)
                if buf[value + 2] not in _KNOWN_PARTITION_VERSIONS \
                        or not same_topic(current_id, value + 7):
                    raise NotGrouped
                if run_first < 0:
                    run_first, run_start = index, record
            else:
                if run_first >= 0:
                    self.current.runs.append((batch, run_first, index - run_first, run_start, record))
                    run_first = -1
                version = buf[value + 2]
                if api == TOPIC_RECORD and version == 0:
                    current_id = self._topic(buf, value + 3, value_end)
                    run_first, run_start = index, record
                elif api in _OTHER_DOMAINS and version < 64:
                    self.current = self.current_id = current_id = None  # a topic's run ends where another domain's records begin
                    message = FAST_READER_TABLE[(api << 6) | version](buf, value + 3, value_end)
                    if message is None:
                        raise NotGrouped
                    self.entries.append(LogEntry(header.base_offset + index, header.partition_leader_epoch,
                                                 header.base_timestamp, message, False, True))
                else:
                    raise NotGrouped
            pos = record_end
            index += 1
        if pos != end or index != count:
            raise NotGrouped
        if run_first >= 0:
            self.current.runs.append((batch, run_first, index - run_first, run_start, end))

    def _lead(self, buf: bytes, value: int) -> bytes:
        """A PartitionRecord with no topic before it: the id of the topic whose run the span
        began inside, at the start of a second half; anywhere else, not the grouped shape."""
        if self.current is None or self.current is not self.leading or self.leading.runs:
            raise NotGrouped
        self.current_id = self.lead_id = buf[value + 7:value + 23]
        return self.current_id

    def _topic(self, buf: bytes, start: int, end: int) -> bytes:
        """A TopicRecord: a new topic begins; its id's bytes (its PartitionRecords carry them)."""
        record = FAST_READER_TABLE[TOPIC_RECORD << 6](buf, start, end)
        if record is None or record.topic_id is None:
            raise NotGrouped
        topic_id = record.topic_id.bytes
        if topic_id in self.seen:
            raise NotGrouped  # a topic made anew: the eager replay's rules decide
        self.seen.add(topic_id)
        self.current, self.current_id = IndexedTopic(record, []), topic_id
        self.topics.append(self.current)
        return topic_id


__all__ = ["IndexedTopic", "NotGrouped", "SnapshotIndex", "index_snapshot"]
