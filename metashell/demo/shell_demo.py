"""A small generated cluster history, written by the engine's own codec.

Three brokers register and unfence, a topic is created, broker 2 is fenced
(ISR shrinks), comes back (ISR expands), and the quorum leader changes once.
Later issues grow it into the dashboard's demo.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from engine.records import metadata_records as m
from engine.records.kio_codec import LeaderChangeMessage, LeaderChangeVoter, i8, i16, i32, i64, u16
from engine.storage.metadata_log import MetadataLog
from engine.records.metadata_record_serde import MetadataRecord, control_record

START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
TOPIC_ID = uuid.UUID("6f1b3c1e-8f5e-4a55-9a5e-0d3c2f9b7a11")


def _leader_change(leader: int, voters: tuple[int, ...]):
    members = tuple(LeaderChangeVoter(voter_id=i32(v)) for v in voters)
    return control_record(LeaderChangeMessage(version=i16(0), leader_id=i32(leader), voters=members,
                                              granting_voters=members))


def _broker(broker_id: int) -> MetadataRecord:
    endpoint = m.RegisterBrokerRecordV3BrokerEndpoint(name="PLAINTEXT", host=f"broker-{broker_id}",
                                                      port=u16(9092), security_protocol=i16(0))
    feature = m.RegisterBrokerRecordV3BrokerFeature(name="metadata.version", min_supported_version=i16(7),
                                                    max_supported_version=i16(27))
    return m.RegisterBrokerRecordV3(
        broker_id=i32(broker_id), is_migrating_zk_broker=False,
        incarnation_id=uuid.UUID(int=broker_id * 7919), broker_epoch=i64(10 + broker_id),
        end_points=(endpoint,), features=(feature,), rack=f"rack-{broker_id % 2}", fenced=True,
        in_controlled_shutdown=False)


def _fence(broker_id: int, fenced: bool) -> MetadataRecord:
    return m.BrokerRegistrationChangeRecordV2(
        broker_id=i32(broker_id), broker_epoch=i64(10 + broker_id), fenced=i8(1 if fenced else -1))


def _isr(partition: int, isr: tuple[int, ...], leader: int = -2) -> MetadataRecord:
    return m.PartitionChangeRecordV2(
        partition_id=i32(partition), topic_id=TOPIC_ID, isr=tuple(i32(b) for b in isr), leader=i32(leader))


def demo_batches() -> list[tuple[int, list, bool]]:
    """(leader epoch, records, control?) batches in log order."""
    features = [m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27))]
    topic = [m.TopicRecordV0(name="orders", topic_id=TOPIC_ID)] + [
        m.PartitionRecordV2(
            partition_id=i32(p), topic_id=TOPIC_ID, replicas=(i32(1), i32(2), i32(3)),
            isr=(i32(1), i32(2), i32(3)), removing_replicas=(), adding_replicas=(), leader=i32(1 + p % 3),
            leader_epoch=i32(0), partition_epoch=i32(0), directories=(None, None, None))
        for p in range(3)]
    return [
        (1, [_leader_change(1, (1, 2, 3))], True),
        (1, features, False),
        (1, [_broker(b) for b in (1, 2, 3)], False),
        (1, [_fence(b, False) for b in (1, 2, 3)], False),
        (1, topic, False),
        (1, [_fence(2, True), _isr(0, (1, 3)), _isr(1, (1, 3), leader=3), _isr(2, (1, 3))], False),
        (2, [_leader_change(3, (1, 2, 3))], True),
        (2, [_fence(2, False), _isr(0, (1, 2, 3)), _isr(1, (1, 3, 2)), _isr(2, (1, 3, 2))], False),
    ]


def write_demo_log_dir(directory: Path) -> Path:
    """Write the demo history under ``directory``; returns the node's log directory."""
    with MetadataLog.create(directory, fsync_policy="never") as log:
        for step, (epoch, records, control) in enumerate(demo_batches()):
            log.append(records, epoch=epoch, timestamp_ms=START_MS + step * 1000, control=control)
    return Path(directory)
