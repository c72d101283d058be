"""What Kafka's image keeps as a sorted list or a map, ours keeps and writes back alike: a
broker's log directories (BrokerRegistration sorts them by Uuid.compareTo, halves compared
signed) and a client quota entity (a map of type to name, whatever order a record lists them
in). tests/differential/test_diff_image_replay.py checks both against Kafka's own image."""

from __future__ import annotations

import uuid

from engine.image.client_quotas_image import ClientQuotasDelta, ClientQuotasImage
from engine.image.cluster_image import ClusterDelta, ClusterImage
from engine.image.image_writer import image_records
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m

LOW, HIGH, SIGNED = uuid.UUID(int=7 << 64), uuid.UUID(int=(7 << 64) + 1), uuid.UUID(int=(1 << 127) + 9)


def _register(log_dirs: tuple) -> m.RegisterBrokerRecordV3:
    return m.RegisterBrokerRecordV3(broker_id=1, is_migrating_zk_broker=False, incarnation_id=uuid.UUID(int=5),
                                    broker_epoch=10, end_points=(), features=(), rack=None, fenced=True,
                                    in_controlled_shutdown=False, log_dirs=log_dirs)


def test_a_registration_keeps_its_directories_sorted_as_signed_halves() -> None:
    delta = ClusterDelta(ClusterImage.EMPTY)
    delta.replay_register_broker(_register((HIGH, None, SIGNED, LOW)))
    # the top bit set is a negative half in Java, so it sorts first; None is the all-zero id
    assert delta.apply().brokers[1].directories == (SIGNED, None, LOW, HIGH)


def test_a_change_of_directories_is_sorted_too_and_written_back_so() -> None:
    delta = ClusterDelta(ClusterImage.EMPTY)
    delta.replay_register_broker(_register((LOW,)))
    delta.replay_broker_registration_change(m.BrokerRegistrationChangeRecordV2(
        broker_id=1, broker_epoch=10, fenced=-1, in_controlled_shutdown=0, log_dirs=(HIGH, LOW, SIGNED)))
    image = MetadataImage(cluster=delta.apply())
    written = [r for r in image_records(image) if r.record_name == "RegisterBrokerRecord"]
    assert [r.log_dirs for r in written] == [(SIGNED, LOW, HIGH)]


def _quota(entity: list[tuple[str, str | None]], value: float) -> m.ClientQuotaRecordV0:
    return m.ClientQuotaRecordV0(entity=tuple(m.ClientQuotaRecordV0EntityData(entity_type=t, entity_name=n)
                                              for t, n in entity), key="producer_byte_rate", value=value, remove=False)


def test_a_quota_entity_is_the_same_whatever_order_a_record_lists_its_types_in() -> None:
    delta = ClientQuotasDelta(ClientQuotasImage.EMPTY)
    delta.replay_client_quota(_quota([("user", "alice"), ("client-id", "app")], 1.0))
    delta.replay_client_quota(_quota([("client-id", "app"), ("user", "alice")], 2.0))
    image = MetadataImage(client_quotas=delta.apply())
    assert dict(image.client_quotas) == {(("client-id", "app"), ("user", "alice")): {"producer_byte_rate": 2.0}}
    written = [r for r in image_records(image) if r.record_name == "ClientQuotaRecord"]
    assert [[(e.entity_type, e.entity_name) for e in r.entity] for r in written] == [
        [("client-id", "app"), ("user", "alice")]]
