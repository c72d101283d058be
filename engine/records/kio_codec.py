"""The one door to kio: every kio import of the project goes through here.

kio supplies Kafka's protocol dataclasses, its primitive types, the native
entity reader and the entity writer. Metadata records (engine.records.metadata_records)
are our own dataclasses in kio's form, so the same machinery encodes them.

kio's own record-batch reader is not used for batches: it rounds record
timestamps to whole seconds and has no compression support, and we need
byte-identical re-encoding. Batches are framed in engine.records.record_batch with
kio's varint primitives instead.
"""

from __future__ import annotations

import io
import os
from typing import Any

# kio registers hypothesis strategies at import when hypothesis is installed (the test
# extras), and hypothesis then keeps a cache in ./.hypothesis of the user's working
# directory. Point it at a cache directory of ours instead, unless told otherwise.
_CACHE_HOME = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(_CACHE_HOME, "metashell", "hypothesis"))

from crc32c import crc32c  # noqa: E402 - kio's own checksum dependency
from kio.schema.control_record_type_schema.v0.data import ControlRecordTypeSchema
from kio.schema.k_raft_version_record.v0.data import KRaftVersionRecord
from kio.schema.leader_change_message.v0.data import LeaderChangeMessage, Voter as LeaderChangeVoter
from kio.schema.snapshot_footer_record.v0.data import SnapshotFooterRecord
from kio.schema.snapshot_header_record.v0.data import SnapshotHeaderRecord
from kio.schema.voters_record.v0.data import (
    Endpoint as VotersEndpoint,
    KRaftVersionFeature,
    Voter as VotersVoter,
    VotersRecord,
)
from kio.serial import entity_reader, entity_writer
# kio's schema introspection, for engine.records.fast_encode (it compiles its own writers from
# the same field facts kio's writer reads, so the two agree on every field's wire shape)
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)
from kio.serial.errors import BufferUnderflow, SerialError
from kio.serial.readers import read_signed_varint, read_signed_varlong, read_unsigned_varint
from kio.serial.writers import write_signed_varint, write_signed_varlong, write_unsigned_varint
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map as API_NAMES  # Kafka api key -> kio module name
from kio.static.constants import EntityType
from kio.static.primitive import f64, i8, i16, i32, i64, u16

__all__ = [
    "API_NAMES",
    "BoundsError", "BufferUnderflow", "ErrorCode", "protocol_module", "DECODE_ERRORS", "ControlRecordTypeSchema", "EntityType", "KRaftVersionFeature",
    "KRaftVersionRecord", "LeaderChangeMessage", "LeaderChangeVoter", "SnapshotFooterRecord",
    "SnapshotHeaderRecord", "VotersEndpoint", "VotersRecord", "VotersVoter", "crc32c",
    "encode_entity", "encode_unsigned_varint", "entity_reader", "is_unknown_tag_error", "f64", "i8", "i16", "i32", "i64", "u16",
    "read_signed_varint", "read_signed_varlong", "read_unsigned_varint",
    "write_signed_varint", "write_signed_varlong", "write_unsigned_varint",
    "EntityField", "EntityTupleField", "PrimitiveField", "PrimitiveTupleField",
    "classify_field", "get_field_tag", "get_schema_field_type", "is_optional",
]

# Everything kio's readers raise on bad bytes (KeyError: an unknown tagged field, which
# engine.records.tagged_fields can decode around: see is_unknown_tag_error).
DECODE_ERRORS = (SerialError, KeyError, ValueError, TypeError, IndexError, UnicodeDecodeError, OverflowError)


def is_unknown_tag_error(exc: BaseException) -> bool:
    """Whether kio refused a message only for a tag its class does not define (kio's native
    reader raises KeyError("Unknown tagged field tag: N") and stops there)."""
    return isinstance(exc, KeyError) and "tagged field" in str(exc)

_writers: dict[type, Any] = {}


class BoundsError(ValueError):
    """Message bytes whose declared lengths do not fit them (refused before kio reads them)."""


def encode_entity(entity: Any) -> bytes:
    """Encode one kio-style entity in Kafka's wire form."""
    entity_type = type(entity)
    writer = _writers.get(entity_type)
    if writer is None:
        writer = _writers[entity_type] = entity_writer(entity_type)
    out = io.BytesIO()
    writer(out, entity)
    return out.getvalue()


def encode_unsigned_varint(value: int) -> bytes:
    out = io.BytesIO()
    write_unsigned_varint(out, value)
    return out.getvalue()


def protocol_module(api_name: str, version: int, kind: str) -> Any:
    """kio's module for one Kafka protocol message: e.g. ("vote", 2, "request").

    ``kind`` is "request", "response", "header" (for request_header / response_header) or
    "data" (a plain structure, e.g. default_principal_data). Modules are imported on first use
    and cached by Python.
    """
    import importlib

    if kind not in ("request", "response", "header", "data"):
        raise ValueError(f"unknown message kind {kind!r}")
    return importlib.import_module(f"kio.schema.{api_name}.v{version}.{kind}")
