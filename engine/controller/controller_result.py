"""What every controller command returns, and what it is given.

A command reads ``ControllerContext.image`` (the speculative image: what is committed plus
what this leader has appended) and returns a ``ControllerResult``: the records to append and
the response to send once they are committed. It changes nothing; state moves only when the
records are replayed through ``MetadataDelta``, as Kafka's ``ControllerResult`` works.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Sequence, TypeVar

from engine.controller.controller_config import ControllerConfig
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_version import RecordVersions, record_versions

T = TypeVar("T")

# Kafka's QuorumController.MAX_RECORDS_PER_USER_OP: the most records one admin operation may write
MAX_RECORDS_PER_USER_OP = 10_000

# the level a log without a metadata.version record reads as, and the oldest a KRaft controller serves
MINIMUM_KRAFT_LEVEL = 7  # 3.3-IV3


@dataclass(frozen=True, slots=True)
class ControllerResult(Generic[T]):
    records: Sequence[Any]
    response: T
    # the records go in one batch (Kafka's atomic append): a reader never sees part of them
    atomic: bool = False


class ApiError(Exception):
    """A whole request refused: the command's error response with this code and message."""

    def __init__(self, code: Any, message: str | None = None):
        super().__init__(message or str(code))
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class ControllerContext:
    image: MetadataImage  # speculative: committed + appended by this leader
    now_ms: int
    next_offset: int  # the offset the first record of this command's result will take
    config: ControllerConfig = field(default_factory=ControllerConfig)
    principal: str = "User:ANONYMOUS"  # the client's (from Envelope when a broker forwards)
    soft: Any = None  # the controller's soft state (broker heartbeats), never in the log

    @property
    def versions(self) -> RecordVersions:
        return record_versions(self.image.metadata_version or MINIMUM_KRAFT_LEVEL)


Handle = Callable[[ControllerContext, Any], ControllerResult]
ErrorResponse = Callable[[Any, Any, "str | None"], Any]  # (request, error code, message) -> response


@dataclass(frozen=True, slots=True)
class Command:
    """One API the controller serves. The request is read at ``max_version`` (the network edge
    converts older ones to it, and the response back). Writes run on the speculative image and
    answer once their records are committed; reads (``read_only``) run on the committed image
    and answer at once, as Kafka's read events do. ``error_response`` builds the answer to a
    refused request (NOT_CONTROLLER, or an ApiError the handler raised)."""

    api_key: int
    name: str  # kio's module name
    min_version: int
    max_version: int
    handle: Handle
    error_response: ErrorResponse
    read_only: bool = False
    # (request, response) -> fields an older response version needs that the newest lacks
    # (UpdateFeatures v0/v1 carry per-feature results, v2 none): the edge fills them in
    legacy_fields: Callable[[Any, Any], dict[str, Any]] | None = None
