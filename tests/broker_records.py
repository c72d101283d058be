"""Hand-made broker records for tests that build small histories record by record (the demo
histories are the controller's, metashell.demo.controller_driver): a registration and a
fencing change of broker N, at epoch 10 + N."""

from __future__ import annotations

import uuid

from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i16, i32, i64, u16
from engine.records.metadata_record_serde import MetadataRecord


def broker_registration(broker_id: int) -> MetadataRecord:
    """RegisterBrokerRecord of a fenced broker on rack ``rack-{id % 2}``, metadata.version 7-27."""
    endpoint = m.RegisterBrokerRecordV3BrokerEndpoint(name="PLAINTEXT", host=f"broker-{broker_id}",
                                                      port=u16(9092), security_protocol=i16(0))
    feature = m.RegisterBrokerRecordV3BrokerFeature(name="metadata.version", min_supported_version=i16(7),
                                                    max_supported_version=i16(27))
    return m.RegisterBrokerRecordV3(
        broker_id=i32(broker_id), is_migrating_zk_broker=False,
        incarnation_id=uuid.UUID(int=broker_id * 7919), broker_epoch=i64(10 + broker_id),
        end_points=(endpoint,), features=(feature,), rack=f"rack-{broker_id % 2}", fenced=True,
        in_controlled_shutdown=False)


def broker_fencing(broker_id: int, fenced: bool) -> MetadataRecord:
    """BrokerRegistrationChangeRecord fencing (or unfencing) the broker."""
    return m.BrokerRegistrationChangeRecordV2(
        broker_id=i32(broker_id), broker_epoch=i64(10 + broker_id), fenced=i8(1 if fenced else -1))
