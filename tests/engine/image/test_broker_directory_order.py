"""A broker's log directories in the order Kafka's BrokerRegistration keeps and writes them
(sorted by Uuid.compareTo, halves compared signed); tests/differential/test_diff_image_replay.py
checks the same against Kafka's own image."""

from __future__ import annotations

import uuid

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
