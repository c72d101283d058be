"""Small helpers for the controller's tests: an image bootstrapped at a metadata.version, a
command context on it, and a result replayed through MetadataDelta (command, response,
replay, state: the rhythm of Kafka's *ControlManagerTest)."""

from __future__ import annotations

import uuid
from typing import Any

from engine.controller.controller_config import ControllerConfig
from engine.controller.controller_result import ControllerContext, ControllerResult
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_version import BY_NAME, default_feature_levels
from engine.records import metadata_records as m
from engine.records.kio_codec import i16, protocol_module


def bootstrapped(release: str = "4.1-IV1", features: dict[str, int] | None = None) -> MetadataImage:
    """An image after the bootstrap records of a new cluster at ``release``."""
    mv = BY_NAME[release]
    levels = default_feature_levels(mv) if features is None else features
    delta = MetadataDelta(MetadataImage())
    delta.replay(m.FeatureLevelRecordV0(name="metadata.version", feature_level=i16(mv.level)), 0)
    for i, (name, level) in enumerate(sorted(levels.items()), start=1):
        delta.replay(m.FeatureLevelRecordV0(name=name, feature_level=i16(level)), i)
    return delta.apply()


def context(image: MetadataImage, now_ms: int = 1_000_000, next_offset: int | None = None,
            config: ControllerConfig | None = None, soft: Any = None) -> ControllerContext:
    offset = image.provenance.last_offset + 1 if next_offset is None else next_offset
    return ControllerContext(image=image, now_ms=now_ms, next_offset=max(offset, 0),
                             config=config or ControllerConfig(), soft=soft)


def replayed(image: MetadataImage, result: ControllerResult, first_offset: int | None = None) -> MetadataImage:
    """The image after ``result``'s records, at the offsets the log would give them."""
    offset = image.provenance.last_offset + 1 if first_offset is None else first_offset
    delta = MetadataDelta(image)
    for i, record in enumerate(result.records):
        delta.replay(record, offset + i)
    return delta.apply()


def request(api: str, version: int, **fields: Any) -> Any:
    """A kio request by module name, e.g. request("create_topics", 7, topics=(...), ...)."""
    module = protocol_module(api, version, "request")
    cls = next(getattr(module, n) for n in dir(module) if n.endswith("Request") and not n.startswith("_"))
    return cls(**fields)


def new_uuid(n: int) -> uuid.UUID:
    """A fixed, non-reserved uuid (the first 100 are Kafka's reserved directory ids)."""
    return uuid.UUID(int=(1 << 64) + n)
