"""AllocateProducerIds (67): a broker asks for the next block of producer ids.

Kafka's ProducerIdControlManager: the controller hands out blocks of 1000 ids, in order, to
registered brokers only. The log keeps the first id of the next block (ProducerIdsRecord), so
a new leader continues where the old one stopped and no id is ever given twice.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from engine.common.api_keys import ApiKeys
from engine.controller.controller_result import ApiError, Command, ControllerContext, ControllerResult
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i32, i64, protocol_module

PRODUCER_ID_BLOCK_SIZE = 1000  # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
_MAX_ID = (1 << 63) - 1

_response = protocol_module("allocate_producer_ids", 0, "response")


def check_broker_epoch(image: MetadataImage, broker_id: int, broker_epoch: int) -> None:
    """Refuse (STALE_BROKER_EPOCH) a broker that is not registered, or not at this epoch:
    a broker that restarted must not act on the registration it had before."""
    registration = image.cluster.brokers.get(broker_id)
    if registration is None:
        raise ApiError(ErrorCode.stale_broker_epoch, f"No broker registration found for broker id {broker_id}")
    if registration.epoch != broker_epoch:
        raise ApiError(ErrorCode.stale_broker_epoch,
                       f"Expected broker epoch {registration.epoch}, but got broker epoch {broker_epoch}")


def allocate_producer_ids(ctx: ControllerContext, request: Any) -> ControllerResult:
    check_broker_epoch(ctx.image, request.broker_id, request.broker_epoch)
    # an image with no ProducerIdsRecord yet starts at 0 (Kafka's empty block)
    start = max(ctx.image.producer_ids.next_producer_id, 0)
    if start > _MAX_ID - PRODUCER_ID_BLOCK_SIZE:
        raise ApiError(ErrorCode.unknown_server_error,
                       "Exhausted all producerIds as the next block's end producerId has exceeded the int64 type limit")
    record = m.ProducerIdsRecordV0(broker_id=i32(request.broker_id), broker_epoch=i64(request.broker_epoch),
                                   next_producer_id=i64(start + PRODUCER_ID_BLOCK_SIZE))
    response = _response.AllocateProducerIdsResponse(
        throttle_time=timedelta(0), error_code=ErrorCode.none,
        producer_id_start=i64(start), producer_id_len=i32(PRODUCER_ID_BLOCK_SIZE))
    return ControllerResult([record], response)


def error_response(request: Any, code: Any, message: str | None) -> Any:
    # the response has no message field: the code alone says why
    return _response.AllocateProducerIdsResponse(
        throttle_time=timedelta(0), error_code=code, producer_id_start=i64(0), producer_id_len=i32(0))


COMMANDS: list[Command] = [
    Command(ApiKeys.ALLOCATE_PRODUCER_IDS, "allocate_producer_ids", 0, 0, allocate_producer_ids, error_response),
]
