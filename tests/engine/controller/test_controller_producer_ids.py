"""AllocateProducerIds (67) on the controller: blocks of 1000 ids, in order, to registered
brokers at their current epoch (Kafka's ProducerIdControlManagerTest rhythm: command,
response, replay, state)."""

from __future__ import annotations

import uuid

import pytest

from engine.controller.controller_result import ApiError, ControllerResult
from engine.controller.producer_id_control import COMMANDS, PRODUCER_ID_BLOCK_SIZE, allocate_producer_ids, error_response
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i16, i32, i64, u16
from engine.records.metadata_record_serde import decode_metadata_value, encode_metadata_value
from tests.controller_helpers import bootstrapped, context, replayed, request


def with_broker(image: MetadataImage, broker_id: int = 1, epoch: int = 100) -> MetadataImage:
    endpoint = m.RegisterBrokerRecordV3BrokerEndpoint(name="PLAINTEXT", host="h", port=u16(9092),
                                                      security_protocol=i16(0))
    record = m.RegisterBrokerRecordV3(broker_id=i32(broker_id), is_migrating_zk_broker=False,
                                      incarnation_id=uuid.UUID(int=(1 << 64) + broker_id), broker_epoch=i64(epoch),
                                      end_points=(endpoint,), features=(), rack=None, fenced=False,
                                      in_controlled_shutdown=False, log_dirs=())
    return replayed(image, ControllerResult([record], None))


def allocate(image: MetadataImage, broker_id: int = 1, epoch: int = 100):
    return allocate_producer_ids(context(image), request("allocate_producer_ids", 0,
                                                         broker_id=i32(broker_id), broker_epoch=i64(epoch)))


def test_the_first_block_starts_at_zero_and_the_next_follows():
    image = with_broker(bootstrapped())
    assert image.producer_ids.next_producer_id == -1
    result = allocate(image)
    assert (result.response.error_code, result.response.producer_id_start, result.response.producer_id_len) == \
        (ErrorCode.none, 0, PRODUCER_ID_BLOCK_SIZE)
    assert result.records == [m.ProducerIdsRecordV0(broker_id=i32(1), broker_epoch=i64(100),
                                                    next_producer_id=i64(1000))]
    assert decode_metadata_value(encode_metadata_value(result.records[0])) == result.records[0]
    image = replayed(image, result)
    assert image.producer_ids.next_producer_id == 1000
    second = allocate(image)
    assert second.response.producer_id_start == 1000
    assert replayed(image, second).producer_ids.next_producer_id == 2000


def test_any_registered_broker_gets_the_next_block():
    image = with_broker(with_broker(bootstrapped(), 1, 100), 2, 200)
    image = replayed(image, allocate(image, 1, 100))
    result = allocate(image, 2, 200)
    assert result.response.producer_id_start == 1000
    assert result.records[0].broker_id == 2 and result.records[0].broker_epoch == 200


@pytest.mark.parametrize("broker_id, epoch, message", [
    (7, 100, "No broker registration found for broker id 7"),
    (1, 99, "Expected broker epoch 100, but got broker epoch 99"),
    (1, -1, "Expected broker epoch 100, but got broker epoch -1"),
])
def test_an_unknown_broker_or_another_epoch_is_stale(broker_id, epoch, message):
    image = with_broker(bootstrapped())
    with pytest.raises(ApiError) as err:
        allocate(image, broker_id, epoch)
    assert err.value.code == ErrorCode.stale_broker_epoch and err.value.message == message


def test_the_last_block_of_int64_is_refused():
    image = with_broker(bootstrapped())
    near_end = m.ProducerIdsRecordV0(broker_id=i32(1), broker_epoch=i64(100),
                                     next_producer_id=i64((1 << 63) - PRODUCER_ID_BLOCK_SIZE))
    image = replayed(image, ControllerResult([near_end], None))
    with pytest.raises(ApiError) as err:
        allocate(image)
    assert err.value.code == ErrorCode.unknown_server_error


def test_the_error_response_carries_only_the_code():
    req = request("allocate_producer_ids", 0, broker_id=i32(1), broker_epoch=i64(5))
    response = error_response(req, ErrorCode.not_controller, "gone")
    assert (response.error_code, response.producer_id_start, response.producer_id_len) == \
        (ErrorCode.not_controller, 0, 0)
    assert [(c.api_key, c.name, c.min_version, c.max_version, c.read_only) for c in COMMANDS] == \
        [(67, "allocate_producer_ids", 0, 0, False)]
