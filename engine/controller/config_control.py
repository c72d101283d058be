"""Dynamic configs: IncrementalAlterConfigs (44), AlterConfigs (33), DescribeConfigs (32).

The rules of Kafka 4.1's ConfigurationControlManager and ControllerConfigurationValidator:
- a resource is a topic (2) or a broker (4: a node id, or "" for the cluster default); a topic
  must exist (UNKNOWN_TOPIC_OR_PARTITION), a broker id must be a registered broker or a
  controller (BROKER_ID_NOT_REGISTERED); every resource succeeds or fails on its own, and the
  records of all that succeed go in one batch;
- a topic's configs are checked as LogConfig checks them (unknown name, type, range: INVALID_CONFIG).
  Kafka's controller checks no broker config values (the broker does, before it forwards); we
  also check the types of Kafka's dynamic broker configs, so a value the broker would refuse never
  reaches the log (min.insync.replicas above all, which the ELR rules read);
- a broker resource's records are written even when the value does not change (KAFKA-14136: a
  broker reloads on the record);
- while ELR is on (KIP-966), a broker-level min.insync.replicas is refused and the cluster-level
  one cannot be removed; every min.insync.replicas record is followed by a ClearElrRecord (the
  topic's, or "" for all topics).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any, Callable, Iterable

from engine.common.api_keys import ApiKeys
from engine.common.config_resource import (BROKER_DEFAULT, ConfigResource, ConfigResourceType, broker_resource,
                                           topic_resource)
from engine.controller import config_defs as defs
from engine.controller.config_defs import ConfigKey, ConfigValueError
from engine.controller.controller_config import ControllerConfig
from engine.controller.controller_result import (MINIMUM_KRAFT_LEVEL, ApiError, Command, ControllerContext,
                                                 ControllerResult)
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_version import record_versions
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i8, protocol_module

TOPIC, BROKER = ConfigResourceType.TOPIC, ConfigResourceType.BROKER
MIN_ISR = "min.insync.replicas"
ELR_FEATURE = "eligible.leader.replicas.version"
MAX_VALUE_LENGTH = 32767  # a ConfigRecord value is a Java string of at most Short.MAX_VALUE chars
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")

Error = tuple[Any, "str | None"]  # (error code, message)

_incremental = protocol_module("incremental_alter_configs", 1, "response")
_legacy = protocol_module("alter_configs", 2, "response")
_describe = protocol_module("describe_configs", 4, "response")


def elr_enabled(image: MetadataImage) -> bool:
    """KIP-966 on: the metadata.version writes ELR and eligible.leader.replicas.version >= 1."""
    return (record_versions(image.metadata_version or MINIMUM_KRAFT_LEVEL).elr
            and image.features.get(ELR_FEATURE, 0) >= 1)


def config_record(resource_type: int, name: str, key: str, value: str | None) -> Any:
    return m.ConfigRecordV0(resource_type=i8(int(resource_type)), resource_name=name, name=key, value=value)


# -- validation ----------------------------------------------------------------------------

def _topic_name_error(name: str) -> Error | None:
    """Kafka's Topic.validate, and "" (a default topic resource) refused."""
    if not name:
        return ErrorCode.invalid_request, "Default topic resources are not allowed."
    if name in (".", ".."):
        return ErrorCode.invalid_topic_exception, "Topic name cannot be \".\" or \"..\""
    if len(name) > 249:
        return (ErrorCode.invalid_topic_exception,
                f"Topic name is illegal, it can't be longer than 249 characters, topic name: {name}")
    if not _LEGAL_TOPIC.fullmatch(name):
        return (ErrorCode.invalid_topic_exception, f"Topic name \"{name}\" is illegal, it contains a character "
                "other than ASCII alphanumerics, '.', '_' and '-'")
    return None


def _broker_id(name: str) -> int | Error:
    """A broker resource's node id (Java's Integer.valueOf), or the refusal."""
    if not re.fullmatch(r"[+-]?[0-9]+", name) or not -(1 << 31) <= int(name) < (1 << 31):
        return ErrorCode.invalid_request, "Unable to parse broker name as a base 10 number."
    if int(name) < 0:
        return ErrorCode.invalid_request, "Invalid negative broker ID."
    return int(name)


def resource_name_error(resource_type: int, name: str) -> Error | None:
    """What ControllerConfigurationValidator says of a resource's name alone."""
    if resource_type == TOPIC:
        return _topic_name_error(name)
    if resource_type == BROKER:
        node = _broker_id(name) if name else 0
        return node if isinstance(node, tuple) else None
    return ErrorCode.invalid_request, f"Unknown resource type {ConfigResourceType.for_id(resource_type).name}"


def _values_error(resource_type: int, configs: dict[str, str]) -> Error | None:
    """LogConfig.validate for a topic (names, then values, then cross checks); the dynamic
    broker configs' types for a broker."""
    if resource_type == TOPIC:
        unknown = [key for key in configs if key not in defs.TOPIC_CONFIGS]
        if unknown:
            return ErrorCode.invalid_config, f"Unknown topic config name: {unknown[0]}"
        table = defs.TOPIC_CONFIGS
    else:
        table = defs.BROKER_DYNAMIC_CONFIGS
    parsed = {}
    try:
        for key, value in configs.items():
            if key in table:
                parsed[key] = defs.parse(table[key], value)
    except ConfigValueError as error:
        return ErrorCode.invalid_config, str(error)
    low, high = parsed.get("min.compaction.lag.ms"), parsed.get("max.compaction.lag.ms")
    if resource_type == TOPIC and low is not None and high is not None and low > high:
        return (ErrorCode.invalid_config,
                f"conflict topic config setting min.compaction.lag.ms ({low}) > max.compaction.lag.ms ({high})")
    return None


def _existence_error(ctx: ControllerContext, resource_type: int, name: str) -> Error | None:
    if resource_type == TOPIC and ctx.image.topics.topic(name) is None:
        return ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist."
    if resource_type == BROKER and name:
        node = _broker_id(name)
        if isinstance(node, tuple):
            return ErrorCode.invalid_request, f"Invalid broker name {name}"
        if node not in ctx.image.cluster.brokers and node not in controller_ids(ctx):
            return ErrorCode.broker_id_not_registered, f"No node with id {node} found."
    return None


def effective_min_isr(topic_name: str, value: str | None, default: int) -> int:
    """The min.insync.replicas a partition change uses, read as Kafka's controller reads it
    (ReplicationControlManager.getTopicEffectiveMinIsr: Integer.parseInt of the effective value;
    ``default``, the node's static setting, when no level sets one). CreateTopics and
    IncrementalAlterConfigs refuse a value that is not a number (INVALID_CONFIG), but the log
    can still hold one Integer.parseInt refuses (" 2" passes ConfigDef, which trims; a record
    from another writer): then the operation fails whole, UNKNOWN_SERVER_ERROR as Kafka's
    (a NumberFormatException there), instead of taking some default silently."""
    if value is None:
        return default
    parsed = defs.java_int(value)
    if parsed is None:
        raise ApiError(ErrorCode.unknown_server_error,
                       f"min.insync.replicas for topic {topic_name} is not an integer: {value!r}")
    return parsed


def controller_ids(ctx: ControllerContext) -> set[int]:
    """The quorum's nodes as the log knows them: registered controllers, voters, and this node."""
    ids = set(ctx.image.cluster.controllers) | {ctx.config.node_id}
    ids |= {voter.id for voter in ctx.image.quorum.voters or ()}
    return ids


def _elr_error(elr: bool, record: Any) -> Error | None:
    if not elr or record.name != MIN_ISR or record.resource_type != BROKER:
        return None
    if record.resource_name:
        return ErrorCode.invalid_config, "Broker-level min.insync.replicas cannot be altered while ELR is enabled."
    if record.value is None:
        return ErrorCode.invalid_config, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
    return None


def _check(ctx: ControllerContext, resource_type: int, name: str, explicit: list[Any],
           implicit: list[Any], newly_created: bool) -> Error | None:
    """Kafka's validateAlterConfig over the records one resource would write."""
    elr = elr_enabled(ctx.image)
    configs = dict(ctx.image.configs.config_map(ConfigResource(resource_type, name)))
    for record in explicit:
        error = _elr_error(elr, record)
        if error:
            return error
        if record.value is None:
            configs.pop(record.name, None)
        elif len(record.value.encode("utf-16-le")) // 2 > MAX_VALUE_LENGTH:
            return (ErrorCode.invalid_config, "The configuration value cannot be added because it exceeds "
                    f"the maximum value size of {MAX_VALUE_LENGTH} bytes.")
        else:
            configs[record.name] = record.value
    for record in implicit:
        error = _elr_error(elr, record)
        if error:
            return error
        configs.pop(record.name, None)
    error = resource_name_error(resource_type, name) or _values_error(resource_type, configs)
    if error is None and not newly_created:
        error = _existence_error(ctx, resource_type, name)
    return error


def clear_elr_records(image: MetadataImage, records: Iterable[Any]) -> list[Any]:
    """Kafka's createClearElrRecordsAsNeeded: with ELR on, a ClearElrRecord per min.insync.replicas
    record (the topic's name, or "" for every topic when the record is a broker's)."""
    if not elr_enabled(image):
        return []
    return [m.ClearElrRecordV0(topic_name=r.resource_name if r.resource_type == TOPIC else "")
            for r in records if isinstance(r, m.ConfigRecordV0) and r.name == MIN_ISR]


# -- the alter paths -----------------------------------------------------------------------

def _key(resource_type: int, key: str) -> ConfigKey | None:
    return (defs.TOPIC_CONFIGS if resource_type == TOPIC else defs.BROKER_DYNAMIC_CONFIGS).get(key)


def _java_split(text: str) -> list[str]:
    """Java's String.split(","): trailing empty parts dropped, but "" stays [""]."""
    parts = text.split(",")
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


def _incremental_value(resource_type: int, key: str, op: int, value: str | None,
                       current: str | None) -> str | None | Error:
    if op == SET:
        return value
    if op == DELETE:
        return None
    if op not in (APPEND, SUBTRACT):
        return ErrorCode.invalid_request, f"Unknown config operation {op}."
    config = _key(resource_type, key)
    if config is None or config.type != "LIST":
        return ErrorCode.invalid_config, f"Can't {_OP_NAMES[op]} to key {key} because its type is not LIST."
    base = current if current is not None else config.default
    parts = [p for p in (base or "").split(",") if p]
    for item in _java_split(value or ""):
        if op == APPEND and item not in parts:
            parts.append(item)
        elif op == SUBTRACT and item in parts:
            parts.remove(item)
    return ",".join(parts)


def alter_resource(ctx: ControllerContext, resource_type: int, name: str,
                   changes: dict[str, tuple[int, str | None]], newly_created: bool = False) -> tuple[list[Any], Error | None]:
    """The ConfigRecords one resource's incremental changes ({key: (op, value)}) write, or why not.
    CreateTopics uses it for a new topic's configs (``newly_created``: no existence check)."""
    current = ctx.image.configs.config_map(ConfigResource(resource_type, name))
    records = []
    for key, (op, value) in changes.items():
        new = _incremental_value(resource_type, key, op, value, current.get(key))
        if isinstance(new, tuple):
            return [], new
        if new != current.get(key) or resource_type == BROKER:
            records.append(config_record(resource_type, name, key, new))
    error = _check(ctx, resource_type, name, records, [], newly_created)
    return ([], error) if error else (records, None)


def _replace_resource(ctx: ControllerContext, resource_type: int, name: str,
                      configs: dict[str, str | None]) -> tuple[list[Any], Error | None]:
    """AlterConfigs: the given keys set, every other key of the resource deleted."""
    current = ctx.image.configs.config_map(ConfigResource(resource_type, name))
    explicit = [config_record(resource_type, name, key, value) for key, value in configs.items()
                if value != current.get(key) or resource_type == BROKER]
    implicit = [config_record(resource_type, name, key, None) for key in current if key not in configs]
    error = _check(ctx, resource_type, name, explicit, implicit, False)
    return ([], error) if error else (explicit + implicit, None)


def _alter(ctx: ControllerContext, request: Any, module: Any, changes_of: Callable[[Any], Any],
           apply: Callable[..., tuple[list[Any], Error | None]]) -> ControllerResult:
    """The frame both alter APIs share (ControllerApis): unknown types, duplicates, then each
    resource on its own; the records of those that pass in one batch, none when validate_only."""
    answers: list[Any] = []
    seen: dict[tuple[int, str], Any] = {}
    duplicates: set[tuple[int, str]] = set()
    for resource in request.resources:
        ident = (int(resource.resource_type), resource.resource_name)
        if ConfigResourceType.for_id(resource.resource_type) is ConfigResourceType.UNKNOWN:
            answers.append((ident, (ErrorCode.unsupported_version, f"Unknown resource type {resource.resource_type}.")))
        elif ident in duplicates:
            continue
        elif ident in seen:
            del seen[ident]
            duplicates.add(ident)
            answers.append((ident, (ErrorCode.invalid_request, "Duplicate resource.")))
        else:
            seen[ident] = resource
    records: list[Any] = []
    for ident, resource in seen.items():
        if ident[0] not in (TOPIC, BROKER):
            # loggers are not metadata; client-metrics and group configs are not served here
            answers.append((ident, (ErrorCode.invalid_request,
                                    f"Unknown resource type {ConfigResourceType.for_id(ident[0]).name}")))
            continue
        resource_records, error = apply(ctx, ident[0], ident[1], changes_of(resource))
        records.extend(resource_records)
        answers.append((ident, error or (ErrorCode.none, None)))
    records.extend(clear_elr_records(ctx.image, records))
    responses = tuple(module.AlterConfigsResourceResponse(
        error_code=code, error_message=message, resource_type=i8(rtype), resource_name=rname)
        for (rtype, rname), (code, message) in answers)
    response_class = getattr(module, "IncrementalAlterConfigsResponse", None) or module.AlterConfigsResponse
    response = response_class(throttle_time=timedelta(0), responses=responses)
    return ControllerResult([] if request.validate_only else records, response, atomic=True)


def _incremental_changes(resource: Any) -> dict[str, tuple[int, str | None]]:
    # a key given twice: the last one counts, as in Kafka's map
    return {config.name: (int(config.config_operation), config.value) for config in resource.configs}


def incremental_alter_configs(ctx: ControllerContext, request: Any) -> ControllerResult:
    return _alter(ctx, request, _incremental, _incremental_changes, alter_resource)


def alter_configs(ctx: ControllerContext, request: Any) -> ControllerResult:
    return _alter(ctx, request, _legacy, lambda r: {c.name: c.value for c in r.configs}, _replace_resource)


def _alter_error_response(module: Any) -> Callable[[Any, Any, str | None], Any]:
    def error_response(request: Any, code: Any, message: str | None) -> Any:
        responses = tuple(module.AlterConfigsResourceResponse(
            error_code=code, error_message=message, resource_type=i8(r.resource_type),
            resource_name=r.resource_name) for r in request.resources)
        cls = getattr(module, "IncrementalAlterConfigsResponse", None) or module.AlterConfigsResponse
        return cls(throttle_time=timedelta(0), responses=responses)
    return error_response


# -- ELR safety (UpdateFeatures turning eligible.leader.replicas.version on) ------------------

def elr_safety_records(image: MetadataImage, config: ControllerConfig) -> list[Any]:
    """Kafka's maybeGenerateElrSafetyRecords: a cluster-level min.insync.replicas (the controller's
    static value) when there is none, and every broker-level one deleted."""
    records = []
    if MIN_ISR not in image.configs.config_map(BROKER_DEFAULT):
        records.append(config_record(BROKER, "", MIN_ISR, str(config.min_insync_replicas)))
    brokers = sorted((int(name), name) for (rtype, name), values in image.configs.items()
                     if rtype == BROKER and name and MIN_ISR in values and name.lstrip("-").isdigit())
    records.extend(config_record(BROKER, name, MIN_ISR, None) for _, name in brokers)
    return records


# -- DescribeConfigs -------------------------------------------------------------------------

def _static_configs(config: ControllerConfig) -> dict[str, str]:
    """What this controller was started with, where it differs from Kafka's default (a setting
    left at its default cannot be told from one written out)."""
    static = {}
    if config.min_insync_replicas != 1:
        static[MIN_ISR] = str(config.min_insync_replicas)
    if config.unclean_leader_election_enable:
        static["unclean.leader.election.enable"] = "true"
    return static


def _broker_layers(ctx: ControllerContext, node: str | None) -> list[tuple[int, dict[str, str]]]:
    """The broker-side layers a value comes from, first wins: the node's dynamic configs, the
    cluster default, the static ones, Kafka's defaults."""
    configs = ctx.image.configs
    layers = [] if node is None else [(defs.DYNAMIC_BROKER_CONFIG, dict(configs.config_map(broker_resource(node))))]
    return layers + [(defs.DYNAMIC_DEFAULT_BROKER_CONFIG, dict(configs.config_map(BROKER_DEFAULT))),
                     (defs.STATIC_BROKER_CONFIG, _static_configs(ctx.config)),
                     (defs.DEFAULT_CONFIG, defs.SERVER_DEFAULTS)]


def _topic_entry(ctx: ControllerContext, topic: str, key: ConfigKey, describe: Any) -> Any:
    override = ctx.image.configs.config_map(topic_resource(topic)).get(key.name)
    names = defs.TOPIC_SYNONYMS.get(key.name, ())
    synonyms = [] if override is None else [(key.name, defs.canonical(key, override), defs.TOPIC_CONFIG)]
    layers = _broker_layers(ctx, str(ctx.config.node_id))
    for source, layer in layers:  # Kafka lists every synonym of a layer before the next layer
        synonyms += [(name, layer[name], source) for name, _ in names if name in layer]
    value = key.default if override is None else synonyms[0][1]
    if override is None:
        for name, factor in names:  # the broker's value: its first synonym set in any layer
            found = next((layer[name] for _, layer in layers if name in layer), None)
            if found is not None:
                value = _scaled(key, found, factor)
                break
    return config_entry(describe, key.name, value, False, synonyms, key.type, read_only=False)


def _scaled(key: ConfigKey, text: str, factor: int) -> str:
    if factor == 1:
        return defs.canonical(key, text)
    return str(int(text.strip()) * factor) if re.fullmatch(r"\s*[+-]?[0-9]+\s*", text) else text


def broker_entry(ctx: ControllerContext, node: str | None, name: str, describe: Any) -> Any:
    key = defs.BROKER_DYNAMIC_CONFIGS.get(name)
    kind = key.type if key else defs.SERVER_TYPES.get(name)
    sensitive = kind is None or kind == "PASSWORD"  # KafkaConfig.maybeSensitive: untyped names are hidden
    layers = _broker_layers(ctx, node)[:-1]  # Kafka's defaults: this config's own, below
    synonyms = [(name, layer[name], source) for source, layer in layers if name in layer]
    default = key.default if key else defs.SERVER_DEFAULTS.get(name)
    if default is not None:
        synonyms.append((name, default, defs.DEFAULT_CONFIG))
    return config_entry(describe, name, synonyms[0][1], sensitive, synonyms, kind, read_only=key is None)


def config_entry(describe: Any, name: str, value: str | None, sensitive: bool,
           synonyms: list[tuple[str, str, int]], kind: str | None, read_only: bool) -> Any:
    include, _ = describe
    return _describe.DescribeConfigsResourceResult(
        name=name, value=None if sensitive else value, read_only=read_only,
        config_source=i8(synonyms[0][2] if synonyms else defs.DEFAULT_CONFIG), is_sensitive=sensitive,
        synonyms=tuple(_describe.DescribeConfigsSynonym(name=n, value=None if sensitive else v, source=i8(src))
                       for n, v, src in synonyms) if include else (),
        config_type=i8(defs.CONFIG_TYPE_IDS.get(kind or "", 0)),
        # Kafka's documentation strings are its prose: not carried here
        documentation=None)


def _describe_resource(ctx: ControllerContext, resource: Any, describe: Any) -> tuple[Error, list[Any]]:
    rtype, name = int(resource.resource_type), resource.resource_name
    wanted = resource.configuration_keys
    if rtype == TOPIC:
        error = _topic_name_error(name) if name else (ErrorCode.invalid_topic_exception,
                                                    "Topic name is illegal, it can't be empty")
        if error is None and ctx.image.topics.topic(name) is None:
            error = ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist."
        if error:
            return error, []
        keys = [key for key in defs.TOPIC_CONFIGS.values() if not key.internal]
        return (ErrorCode.none, None), [_topic_entry(ctx, name, key, describe) for key in keys
                                        if wanted is None or key.name in wanted]
    if rtype == BROKER:
        node = _broker_id(name) if name else None
        if isinstance(node, tuple):
            return node, []
        node_name = None if node is None else name
        names = set(ctx.image.configs.config_map(BROKER_DEFAULT))
        if node_name is not None:
            names |= set(ctx.image.configs.config_map(broker_resource(node_name)))
        return (ErrorCode.none, None), [broker_entry(ctx, node_name, key, describe) for key in sorted(names)
                                        if wanted is None or key in wanted]
    return (ErrorCode.invalid_request, f"Unsupported resource type: {ConfigResourceType.for_id(rtype).name}"), []


def describe_configs(ctx: ControllerContext, request: Any) -> ControllerResult:
    describe = (request.include_synonyms, request.include_documentation)
    results = []
    for resource in request.resources:
        (code, message), entries = _describe_resource(ctx, resource, describe)
        results.append(_describe.DescribeConfigsResult(
            error_code=code, error_message=message, resource_type=resource.resource_type,
            resource_name=resource.resource_name, configs=tuple(entries)))
    return ControllerResult([], _describe.DescribeConfigsResponse(throttle_time=timedelta(0), results=tuple(results)))


def describe_error_response(request: Any, code: Any, message: str | None) -> Any:
    return _describe.DescribeConfigsResponse(throttle_time=timedelta(0), results=tuple(
        _describe.DescribeConfigsResult(error_code=code, error_message=message, resource_type=r.resource_type,
                                        resource_name=r.resource_name, configs=()) for r in request.resources))


COMMANDS: list[Command] = [
    Command(ApiKeys.INCREMENTAL_ALTER_CONFIGS, "incremental_alter_configs",
            0, 1, incremental_alter_configs, _alter_error_response(_incremental)),
    Command(ApiKeys.ALTER_CONFIGS, "alter_configs", 0, 2, alter_configs, _alter_error_response(_legacy)),
    Command(ApiKeys.DESCRIBE_CONFIGS, "describe_configs",
            1, 4, describe_configs, describe_error_response, read_only=True),
]
