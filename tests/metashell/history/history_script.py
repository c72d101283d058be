"""A scripted cluster history, written with our own log writer, for the log/diff tables.

Offsets (one batch per line, time 1_000 * (offset + 1) ms for the batch's first record):

     0  LEADER_CHANGE leader 1, epoch 1                     (control)
     1  metadata.version 27
     2  broker 1 registers (epoch 11, incarnation A), fenced
     3  broker 1 unfenced
   4-6  topic orders (id OLD) + retention.ms=86400000 + orders-0 (leader 1, isr [1])
     7  retention.ms=3600000
     8  ACL ACL_ID: User:alice READ topic orders
     9  quota user=alice producer_byte_rate 1024
    10  SCRAM-SHA-256 alice (4096 iterations)
 11-13  BEGIN, cleanup.policy=compact, ABORT                (aborted: no effect)
 14-17  BEGIN, max.message.bytes=2000, orders-0 isr [1,2], END   (committed at 17)
    18  orders (OLD) deleted
 19-20  orders created again (id NEW) + orders-0 (leader 1, isr [1])
    21  broker 1 registers again (epoch 30, incarnation B), fenced
    22  broker 1 unfenced
    23  broker 1 in controlled shutdown
 24-25  kraft.version 1, voters {1, 2}                      (control)
    26  ACL ACL_ID removed
    27  quota user=alice producer_byte_rate removed
    28  SCRAM-SHA-256 alice replaced (8192 iterations)
    29  LEADER_CHANGE leader 2, epoch 2                     (control)
    30  orders-0 leader 2 (ELR [1]); NoOpRecord at 31
 32-33  BEGIN, retention.ms=1 (on the new orders)          (still open where the log ends)
"""

from __future__ import annotations

import uuid
from pathlib import Path

from engine.records import kio_codec as kio
from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i16, i32, i64, u16
from engine.records.metadata_record_serde import control_record
from engine.storage.metadata_log import MetadataLog

OLD, NEW, ACL_ID = uuid.UUID(int=0xA1), uuid.UUID(int=0xA2), uuid.UUID(int=0xAC1)
INCARNATION_A, INCARNATION_B = uuid.UUID(int=0xA), uuid.UUID(int=0xB)
BEGIN, END, ABORT = m.BeginTransactionRecordV0(name="t"), m.EndTransactionRecordV0(), m.AbortTransactionRecordV0()


def _leader(leader_id: int) -> object:
    voters = tuple(kio.LeaderChangeVoter(voter_id=i32(v)) for v in (1, 2))
    return control_record(kio.LeaderChangeMessage(version=i16(0), leader_id=i32(leader_id), voters=voters,
                                                  granting_voters=voters[:1]))


def _voters() -> object:
    versions = kio.KRaftVersionFeature(min_supported_version=i16(0), max_supported_version=i16(1))
    return control_record(kio.VotersRecord(version=i16(0), voters=tuple(kio.VotersVoter(
        voter_id=i32(v), voter_directory_id=uuid.UUID(int=0xD0 + v), k_raft_version_feature=versions,
        endpoints=(kio.VotersEndpoint(name="CONTROLLER", host=f"c{v}", port=u16(9093)),)) for v in (1, 2))))


def register(epoch: int, incarnation: uuid.UUID) -> m.RegisterBrokerRecordV3:
    endpoint = m.RegisterBrokerRecordV3BrokerEndpoint(name="PLAINTEXT", host="b1", port=u16(9092),
                                                      security_protocol=i16(0))
    return m.RegisterBrokerRecordV3(broker_id=i32(1), is_migrating_zk_broker=False, incarnation_id=incarnation,
                                    broker_epoch=i64(epoch), end_points=(endpoint,), features=(), rack=None,
                                    fenced=True, in_controlled_shutdown=False, log_dirs=())


def _registration_change(epoch: int, **fields) -> m.BrokerRegistrationChangeRecordV2:
    return m.BrokerRegistrationChangeRecordV2(broker_id=i32(1), broker_epoch=i64(epoch), **fields)


def _partition(topic_id: uuid.UUID) -> m.PartitionRecordV2:
    return m.PartitionRecordV2(
        partition_id=i32(0), topic_id=topic_id, replicas=(i32(1), i32(2)), isr=(i32(1),), removing_replicas=(),
        adding_replicas=(), leader=i32(1), leader_recovery_state=i8(0), leader_epoch=i32(0),
        partition_epoch=i32(0), directories=(None, None), eligible_leader_replicas=None, last_known_elr=None)


def _config(key: str, value: str | None) -> m.ConfigRecordV0:
    return m.ConfigRecordV0(resource_type=i8(2), resource_name="orders", name=key, value=value)


def _quota(value: float | None) -> m.ClientQuotaRecordV0:
    entity = (m.ClientQuotaRecordV0EntityData(entity_type="user", entity_name="alice"),)
    return m.ClientQuotaRecordV0(entity=entity, key="producer_byte_rate", value=value or 0.0, remove=value is None)


def _scram(iterations: int) -> m.UserScramCredentialRecordV0:
    return m.UserScramCredentialRecordV0(name="alice", mechanism=i8(1), salt=b"salt-%d" % iterations,
                                         stored_key=b"stored-%d" % iterations, server_key=b"server-%d" % iterations,
                                         iterations=i32(iterations))


ACL = m.AccessControlEntryRecordV0(id=ACL_ID, resource_type=i8(2), resource_name="orders", pattern_type=i8(3),
                                   principal="User:alice", host="*", operation=i8(3), permission_type=i8(3))

# (records, control): one batch each, in log order
STORY: list[tuple[list, bool]] = [
    ([_leader(1)], True),
    ([m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27))], False),
    ([register(11, INCARNATION_A)], False),
    ([_registration_change(11, fenced=i8(-1))], False),
    ([m.TopicRecordV0(name="orders", topic_id=OLD), _config("retention.ms", "86400000"), _partition(OLD)], False),
    ([_config("retention.ms", "3600000")], False),
    ([ACL], False),
    ([_quota(1024.0)], False),
    ([_scram(4096)], False),
    ([BEGIN, _config("cleanup.policy", "compact"), ABORT], False),
    ([BEGIN, _config("max.message.bytes", "2000")], False),
    ([m.PartitionChangeRecordV2(partition_id=i32(0), topic_id=OLD, isr=(i32(1), i32(2))), END], False),
    ([m.RemoveTopicRecordV0(topic_id=OLD)], False),
    ([m.TopicRecordV0(name="orders", topic_id=NEW), _partition(NEW)], False),
    ([register(30, INCARNATION_B)], False),
    ([_registration_change(30, fenced=i8(-1))], False),
    ([_registration_change(30, in_controlled_shutdown=i8(1))], False),
    ([control_record(kio.KRaftVersionRecord(version=i16(0), k_raft_version=i16(1))), _voters()], True),
    ([m.RemoveAccessControlEntryRecordV0(id=ACL_ID)], False),
    ([_quota(None)], False),
    ([_scram(8192)], False),
    ([_leader(2)], True),
    ([m.PartitionChangeRecordV2(partition_id=i32(0), topic_id=NEW, leader=i32(2),
                                eligible_leader_replicas=(i32(1),)), m.NoOpRecordV0()], False),
    ([BEGIN, m.ConfigRecordV0(resource_type=i8(2), resource_name="orders", name="retention.ms", value="1")], False),
]


def write_story(directory: Path, batches: list[tuple[list, bool]] | None = None) -> Path:
    """The story as a node's log directory (``directory``/__cluster_metadata-0); returns ``directory``."""
    with MetadataLog.create(directory, fsync_policy="never") as log:
        for records, control in batches or STORY:
            offset = log.end_offset
            log.append(records, epoch=1 if offset < 29 else 2, timestamp_ms=1_000 * (offset + 1), control=control)
    return directory
