"""AlterClientQuotas (49): client quotas are metadata, kept by the controller.

Kafka's ClientQuotaControlManager rules. An entity is a map of entity type to name (a None
name is the type's default): "user" and/or "client-id", or "ip" alone. User and client-id
entities take producer_byte_rate and consumer_byte_rate (whole numbers), request_percentage and
controller_mutation_rate (any); an ip entity takes connection_creation_rate (a whole int). A
value must be greater than 0; removing a key that is not set does nothing; setting a key to
the value it has writes nothing. One bad op refuses its whole entity, and only it.

DescribeClientQuotas (48) is not here: Kafka's controller does not serve it (brokers answer
from their metadata image).
"""

from __future__ import annotations

import ipaddress
import math
import re
from datetime import timedelta
from typing import Any, Iterable, Mapping

from engine.common.api_keys import ApiKeys
from engine.controller.controller_result import Command, ControllerContext, ControllerResult
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, f64, protocol_module

USER, CLIENT_ID, IP = "user", "client-id", "ip"

# Kafka 4.1's QuotaConfig.userAndClientQuotaConfigs() and ipConfigs(): key -> ConfigDef type
USER_AND_CLIENT_QUOTAS = {"producer_byte_rate": "LONG", "consumer_byte_rate": "LONG",
                          "request_percentage": "DOUBLE", "controller_mutation_rate": "DOUBLE"}
IP_QUOTAS = {"connection_creation_rate": "INT"}
# Java compares the double value with the integer limit widened to double
_LIMITS = {"SHORT": (float(2**15 - 1), "a SHORT"), "INT": (float(2**31 - 1), "an INT"),
           "LONG": (float(2**63 - 1), "a LONG")}

_response = protocol_module("alter_client_quotas", 1, "response")
Entity = tuple  # ((type, name | None), ...) sorted by type, as Kafka's entity map lists them


def entity_of(entity_data: Iterable[Any]) -> Entity:
    """The entity a request entry names: a later entry of the same type replaces an earlier one,
    as Kafka builds its entity map."""
    by_type: dict[str, str | None] = {}
    for data in entity_data:
        by_type[data.entity_type] = data.entity_name
    return tuple(sorted(by_type.items()))


def entity_text(entity: Entity) -> str:
    """Kafka's ClientQuotaEntity.toString, which its messages quote."""
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={'null' if n is None else n}" for t, n in entity) + "})"


def current_quotas(image: MetadataImage, entity: Entity) -> Mapping[str, float]:
    """The quotas of ``entity`` in the image, whatever order the records listed its types in."""
    found = image.client_quotas.get(entity)
    if found is not None:
        return found
    for key, values in image.client_quotas.items():
        if tuple(sorted(key)) == entity:
            return values
    return {}


_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def _is_valid_ip_entity(name: str | None) -> bool:
    """Kafka asks InetAddress.getByName, which takes an IP literal or a host name it can
    resolve. The controller resolves nothing (no sockets here): a literal, in Java's forms, or
    a well-formed host name passes."""
    if name is None:
        return True
    text = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    try:
        ipaddress.IPv6Address(text)
        return True
    except ValueError:
        pass
    if re.fullmatch(r"[0-9.]+", name):
        return _is_java_ipv4(name)
    labels = name.rstrip(".").split(".")
    return len(name) <= 253 and all(_HOST_LABEL.fullmatch(label) for label in labels)


def _is_java_ipv4(text: str) -> bool:
    # Java takes a.b.c.d, a.b.c (c fills 16 bits), a.b (b fills 24 bits) and a (32 bits)
    parts = text.split(".")
    if not 1 <= len(parts) <= 4 or not all(p.isdigit() and len(p) <= 10 for p in parts):
        return False
    *head, last = (int(p) for p in parts)
    return all(v < 256 for v in head) and last < 256 ** (5 - len(parts))


def _entity_error(entity: Entity) -> str | None:
    """Why Kafka refuses this entity (INVALID_REQUEST), or None."""
    if not entity:
        return "Invalid empty client quota entity"
    for entity_type, name in entity:
        if entity_type not in (USER, CLIENT_ID, IP):
            return f"Unhandled client quota entity type: {entity_type}"
        if name == "":
            return f"Empty {entity_type} not supported"
    types = dict(entity)
    if IP in types:
        if len(types) > 1:
            # Kafka's message, missing space included
            return "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
        if not _is_valid_ip_entity(types[IP]):
            return f"{types[IP]} is not a valid IP or resolvable host."
    return None


def _value_error(valid_keys: Mapping[str, str], key: str, value: float) -> str | None:
    kind = valid_keys.get(key)
    if kind is None:
        return f"Invalid configuration key {key}"
    if value <= 0.0:
        return f"Quota {key} must be greater than 0"
    if kind == "DOUBLE":
        return _finite_error(key, value)
    limit, name = _LIMITS[kind]
    if value > limit:
        return f"Proposed value for {key} is too large for {name}."
    if abs(math.fmod(value, 1.0)) > 1e-6:
        return f"{key} cannot be a fractional value."
    return _finite_error(key, value)


def _finite_error(key: str, value: float) -> str | None:
    # Kafka 4.1.2 stores NaN and Infinity where no check above catches them; a record here
    # holds only finite doubles (kio's f64), so they are refused instead
    return None if math.isfinite(value) else f"Quota {key} must be a finite number"


def _entity_records(image: MetadataImage, entity: Entity, ops: dict[str, float | None]) -> tuple[list, str | None]:
    """The records altering one entity, or the message refusing it."""
    error = _entity_error(entity)
    if error is not None:
        return [], error
    valid_keys = IP_QUOTAS if entity[0][0] == IP else USER_AND_CLIENT_QUOTAS
    current = current_quotas(image, entity)
    records = []

    def record(key: str, value: float, remove: bool) -> Any:
        data = tuple(m.ClientQuotaRecordV0EntityData(entity_type=t, entity_name=n) for t, n in entity)
        return m.ClientQuotaRecordV0(entity=data, key=key, value=f64(value), remove=remove)

    for key, value in ops.items():
        if value is None:  # a removal: no check of the key, and nothing to do when unset
            if key in current:
                records.append(record(key, 0.0, True))
            continue
        error = _value_error(valid_keys, key, value)
        if error is not None:
            return [], error
        if current.get(key) != value:
            records.append(record(key, value, False))
    return records, None


def alter_client_quotas(ctx: ControllerContext, request: Any) -> ControllerResult:
    records: list[Any] = []
    results: dict[Entity, str | None] = {}  # entity -> refusal message (None: done)
    for entry in request.entries:
        entity = entity_of(entry.entity)
        ops: dict[str, float | None] = {}
        for op in entry.ops:
            if op.key in ops:
                results[entity] = (f"Duplicate quota key {op.key} not updating quota for this entity "
                                   f"{entity_text(entity)}")
            else:
                ops[op.key] = None if op.remove else float(op.value)
        if entity in results:
            # Kafka's quirk, kept: a second entry for an entity (or a duplicate key, whose message
            # this replaces) refuses the entity, though records of its first entry stay
            results[entity] = f"Ignoring duplicate entity {entity_text(entity)}"
            continue
        entity_records, results[entity] = _entity_records(ctx.image, entity, ops)
        records.extend(entity_records)
    entries = tuple(_entry(entity, ErrorCode.none if message is None else ErrorCode.invalid_request, message)
                    for entity, message in results.items())
    response = _response.AlterClientQuotasResponse(throttle_time=timedelta(0), entries=entries)
    return ControllerResult([] if request.validate_only else records, response, atomic=True)


def _entry(entity: Entity, code: Any, message: str | None) -> Any:
    data = tuple(_response.EntityData(entity_type=t, entity_name=n) for t, n in entity)
    return _response.EntryData(error_code=code, error_message=message, entity=data)


def error_response(request: Any, code: Any, message: str | None) -> Any:
    """Every entity of the request refused with ``code`` (the response has no top-level error)."""
    entities = dict.fromkeys(entity_of(entry.entity) for entry in request.entries)
    return _response.AlterClientQuotasResponse(
        throttle_time=timedelta(0), entries=tuple(_entry(entity, code, message) for entity in entities))


COMMANDS: list[Command] = [
    Command(ApiKeys.ALTER_CLIENT_QUOTAS, "alter_client_quotas", 0, 1, alter_client_quotas, error_response),
]
