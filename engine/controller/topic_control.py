"""Topics: CreateTopics, DeleteTopics, CreatePartitions and AssignReplicasToDirs (KIP-858).

Kafka 4.1's rules (ReplicationControlManager with what ControllerApis checks before it), in
our code: a request's records go in one atomic batch; validate_only answers as if done and
writes nothing. A new partition's replicas come from the striped placer (replica_placer) or
the request; its ISR is the replicas that are active (unfenced, not shutting down), the first
of them leads, epochs start at 0, and each replica's directory is its broker's default.
No authorizer and no mutation quota here: every topic is allowed and described.
"""

from __future__ import annotations

import datetime
import random
import uuid
from typing import Any, Iterable

from engine.common.api_keys import ApiKeys
from engine.common.config_resource import BROKER_DEFAULT, ConfigResourceType
from engine.common.kafka_uuid import RESERVED_UUIDS, uuid_to_kafka
from engine.controller.controller_result import (
    MAX_RECORDS_PER_USER_OP, ApiError, Command, ControllerContext, ControllerResult,
)
from engine.controller.partition_change import (
    Election, directory_for_new_replica, directory_online, partition_change)
from engine.controller.replication_control import leader_and_isr_updates
from engine.controller.replica_placer import PlacementError, is_active, place, usable_brokers
from engine.controller.config_control import SET, alter_resource, clear_elr_records
from engine.controller.config_defs import (
    DEFAULT_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, TOPIC_CONFIG, TOPIC_CONFIGS, TOPIC_SYNONYMS)
from engine.image.metadata_image import MetadataImage, TopicImage
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i8, i16, i32, protocol_module

CREATE_REQ, CREATE_RESP = protocol_module("create_topics", 7, "request"), protocol_module("create_topics", 7, "response")
DELETE_RESP = protocol_module("delete_topics", 6, "response")
PARTITIONS_RESP = protocol_module("create_partitions", 3, "response")
DIRS_RESP = protocol_module("assign_replicas_to_dirs", 0, "response")

METADATA_TOPIC = "__cluster_metadata"
MAX_TOPIC_NAME_LENGTH = 249
MAX_PARTITIONS_PER_REQUEST = 10_000  # Kafka refuses a CreateTopics that would make more
_LEGAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_ZERO_MS = datetime.timedelta(0)
_UNKNOWN_TOPIC_ID = "This server does not host this topic ID."
_UNKNOWN_TOPIC = "This server does not host this topic-partition."
_DEFAULT_RNG = random.Random()


class _Refused(Exception):
    """One topic refused (Kafka's per-topic ApiError)."""

    def __init__(self, code: Any, message: str | None = None):
        super().__init__(message)
        self.code, self.message = code, message


# -- shared ------------------------------------------------------------------------------


def new_topic_id(rng: random.Random) -> uuid.UUID:
    """A random topic id as Kafka's Uuid.randomUuid makes them: never a reserved id (zero, the
    metadata topic's), never one whose text starts with '-'."""
    while True:
        candidate = uuid.UUID(int=rng.getrandbits(128), version=4)
        if candidate not in RESERVED_UUIDS and not uuid_to_kafka(candidate).startswith("-"):
            return candidate


def topic_name_error(name: str) -> str | None:
    """Kafka's Topic.validate message for an illegal name, or None."""
    if not name:
        return "Topic name is invalid: the empty string is not allowed"
    if name in (".", ".."):
        return f"Topic name is invalid: '{name}' is not allowed"
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return (f"Topic name is invalid: the length of '{name}' is longer than the max allowed "
                f"length {MAX_TOPIC_NAME_LENGTH}")
    if not set(name) <= _LEGAL:
        return (f"Topic name is invalid: '{name}' contains one or more characters other than "
                "ASCII alphanumerics, '.', '_' and '-'")
    return None


def _unified(name: str) -> str:
    """'.' and '_' collide in metric names: Kafka treats names equal after unifying them as one."""
    return name.replace(".", "_")


def _rng(ctx: ControllerContext) -> random.Random:
    return getattr(ctx.soft, "rng", None) or _DEFAULT_RNG


def _new_partition_record(ctx: ControllerContext, topic_id: uuid.UUID, partition_id: int,
                          replicas: list[int], isr: list[int], directories: "_Directories | None" = None) -> Any:
    """A new partition's PartitionRecord at the image's version: directories from 3.7-IV2 (v1+),
    empty ELR lists left out (null) as Kafka writes them from 4.0-IV1 (v2). ``directories``:
    the request's table of default directories (one per request: a CreateTopics of 10,000
    partitions asks for the same few replica lists again and again)."""
    version = ctx.versions.partition
    replicas = tuple(replicas)
    # Plain ints, not kio's checked wrappers (half of a 10,000-partition CreateTopics' time): the
    # ids are registered brokers' and the encoder's struct packing refuses one out of range.
    if version >= 1:
        dirs = (directories or _Directories(ctx)).of(replicas)
        return m.RECORD_CLASSES[(3, version)](
            partition_id=partition_id, topic_id=topic_id, replicas=replicas, isr=tuple(isr), removing_replicas=(),
            adding_replicas=(), leader=isr[0], leader_recovery_state=0, leader_epoch=0, partition_epoch=0,
            directories=dirs)
    return m.RECORD_CLASSES[(3, version)](
        partition_id=partition_id, topic_id=topic_id, replicas=replicas, isr=tuple(isr), removing_replicas=(),
        adding_replicas=(), leader=isr[0], leader_recovery_state=0, leader_epoch=0, partition_epoch=0)


class _Directories:
    """Each replica's default directory (its broker's), per replica list, for one request's image."""

    def __init__(self, ctx: ControllerContext):
        self._default_dir = directory_for_new_replica(ctx.image)
        self._by_replicas: dict[tuple[int, ...], tuple[uuid.UUID, ...]] = {}

    def of(self, replicas: tuple[int, ...]) -> tuple[uuid.UUID, ...]:
        dirs = self._by_replicas.get(replicas)
        if dirs is None:
            dirs = self._by_replicas[replicas] = tuple(self._default_dir(r) for r in replicas)
        return dirs


def _check_manual(image: MetadataImage, replicas: Iterable[int], replication_factor: int | None) -> list[int]:
    """Kafka's manual assignment rules (INVALID_REPLICA_ASSIGNMENT): not empty, registered
    brokers, none twice, as many replicas as the others (checked in broker id order)."""
    replicas = [int(r) for r in replicas]
    if not replicas:
        raise _Refused(ErrorCode.invalid_replica_assignment,
                       "The manual partition assignment includes an empty replica list.")
    previous = None
    for broker_id in sorted(replicas):
        if broker_id not in image.cluster.brokers:
            raise _Refused(ErrorCode.invalid_replica_assignment, "The manual partition assignment includes "
                           f"broker {broker_id}, but no such broker is registered.")
        if broker_id == previous:
            raise _Refused(ErrorCode.invalid_replica_assignment, "The manual partition assignment includes "
                           f"the broker {broker_id} more than once.")
        previous = broker_id
    if replication_factor is not None and len(replicas) != replication_factor:
        raise _Refused(ErrorCode.invalid_replica_assignment, "The manual partition assignment includes a "
                       f"partition with {len(replicas)} replica(s), but this is not consistent with previous "
                       f"partitions, which have {replication_factor} replica(s).")
    return replicas


def _active(image: MetadataImage, replicas: Iterable[int]) -> list[int]:
    return [r for r in replicas if is_active(image.cluster.brokers.get(r))]


def _unable(replication_factor: int, reason: str) -> _Refused:
    return _Refused(ErrorCode.invalid_replication_factor,
                    f"Unable to replicate the partition {replication_factor} time(s): {reason}")


_ALL_FENCED = "All brokers are currently fenced or in controlled shutdown."


# -- CreateTopics ---------------------------------------------------------------------------


def create_topics(ctx: ControllerContext, request: Any) -> ControllerResult:
    """CreateTopics v7: every topic checked and created (or refused) on its own; one atomic batch."""
    names = [t.name for t in request.topics]
    seen: dict[str, int] = {}
    for name in names:
        seen[name] = seen.get(name, 0) + 1
    duplicates = [n for n in seen if seen[n] > 1]
    topics = [t for t in request.topics if seen[t.name] == 1 and t.name != METADATA_TOPIC]
    total = 0
    for t in topics:  # Kafka 4.1 refuses the whole request past 10,000 new partitions
        if t.assignments:
            total += len(t.assignments)
        else:
            total += ctx.config.num_partitions if t.num_partitions == -1 else max(int(t.num_partitions), 0)
    if total > MAX_PARTITIONS_PER_REQUEST:
        raise ApiError(ErrorCode.policy_violation, "Excessively large number of partitions per request.")

    errors: dict[str, _Refused] = {}
    colliding: dict[str, str] = {}
    for existing in ctx.image.topics.by_name:
        if "." in existing or "_" in existing:
            colliding.setdefault(_unified(existing), existing)
    for t in topics:
        problem = topic_name_error(t.name)
        if problem:
            errors[t.name] = _Refused(ErrorCode.invalid_topic_exception, problem)
        if ("." in t.name or "_" in t.name) and _unified(t.name) in colliding:
            errors[t.name] = _Refused(ErrorCode.invalid_topic_exception,
                                      f"Topic '{t.name}' collides with existing topic: {colliding[_unified(t.name)]}")
        if t.name in ctx.image.topics.by_name:
            errors[t.name] = _Refused(ErrorCode.topic_already_exists, f"Topic '{t.name}' already exists.")
    for t in topics:
        nulls = [c.name for c in t.configs if c.value is None]
        if t.name not in errors and nulls:
            errors[t.name] = _Refused(ErrorCode.invalid_config,
                                      "Null value not supported for topic configs: " + ",".join(nulls))

    records: list[Any] = []
    results: list[Any] = []
    used_ids: set[uuid.UUID] = set()
    directories = _Directories(ctx)  # the request's image: the same brokers' directories throughout
    for t in topics:
        if t.name not in errors:
            try:
                topic_records, result = _create_topic(ctx, t, used_ids, directories)
                records.extend(topic_records)
                results.append(result)
                continue
            except _Refused as refused:
                errors[t.name] = refused
        results.append(_topic_error(t.name, errors[t.name].code, errors[t.name].message))
    results += [_topic_error(n, ErrorCode.invalid_request, "Duplicate topic name.") for n in duplicates]
    if METADATA_TOPIC in seen and seen[METADATA_TOPIC] == 1:
        results.append(_topic_error(METADATA_TOPIC, ErrorCode.invalid_request,
                                    f"Creation of internal topic {METADATA_TOPIC} is prohibited."))
    response = CREATE_RESP.CreateTopicsResponse(throttle_time=_ZERO_MS, topics=tuple(results))
    return ControllerResult([] if request.validate_only else records, response, atomic=True)


def _create_topic(ctx: ControllerContext, topic: Any, used_ids: set[uuid.UUID],
                  directories: "_Directories") -> tuple[list[Any], Any]:
    image = ctx.image
    configs = {c.name: c.value for c in topic.configs}
    # the configs as an incremental alter of a newly created topic, as Kafka checks them
    config_records, error = alter_resource(ctx, ConfigResourceType.TOPIC, topic.name,
                                           {k: (SET, v) for k, v in configs.items()}, newly_created=True)
    if error:
        raise _Refused(*error)
    assignments: dict[int, tuple[list[int], list[int]]] = {}
    if topic.assignments:
        if topic.replication_factor != -1:
            raise _Refused(ErrorCode.invalid_request, "A manual partition assignment was specified, "
                           "but replication factor was not set to -1.")
        if topic.num_partitions != -1:
            raise _Refused(ErrorCode.invalid_request, "A manual partition assignment was specified, "
                           "but numPartitions was not set to -1.")
        replication_factor = None
        for a in topic.assignments:
            if a.partition_index in assignments:
                raise _Refused(ErrorCode.invalid_replica_assignment,
                               f"Found multiple manual partition assignments for partition {a.partition_index}")
            replicas = _check_manual(image, a.broker_ids, replication_factor)
            replication_factor = len(replicas)
            isr = _active(image, replicas)
            if not isr:
                raise _Refused(ErrorCode.invalid_replica_assignment, "All brokers specified in the manual "
                               f"partition assignment for partition {a.partition_index} are fenced or in "
                               "controlled shutdown.")
            assignments[int(a.partition_index)] = (replicas, isr)
        if any(i not in assignments for i in range(len(assignments))):
            raise _Refused(ErrorCode.invalid_replica_assignment,
                           "partitions should be a consecutive 0-based integer sequence")
    elif topic.replication_factor < -1 or topic.replication_factor == 0:
        raise _Refused(ErrorCode.invalid_replication_factor,
                       "Replication factor must be larger than 0, or -1 to use the default value.")
    elif topic.num_partitions < -1 or topic.num_partitions == 0:
        raise _Refused(ErrorCode.invalid_partitions, "Number of partitions was set to an invalid non-positive value.")
    else:
        count = ctx.config.num_partitions if topic.num_partitions == -1 else int(topic.num_partitions)
        factor = ctx.config.default_replication_factor if topic.replication_factor == -1 else int(topic.replication_factor)
        try:
            placed = place(_rng(ctx), usable_brokers(image), count, factor,
                           cordoning=ctx.versions.cordoned_log_dirs)
        except PlacementError as e:
            raise _unable(factor, str(e)) from None
        for partition_id, replicas in enumerate(placed):
            isr = _active(image, replicas)
            if not isr:
                raise _unable(factor, _ALL_FENCED)
            assignments[partition_id] = (replicas, isr)

    topic_id = new_topic_id(_rng(ctx))
    while topic_id in image.topics.by_id or topic_id in used_ids:
        topic_id = new_topic_id(_rng(ctx))
    used_ids.add(topic_id)
    records: list[Any] = [m.TopicRecordV0(name=topic.name, topic_id=topic_id)]
    # the configs go between the topic and its partitions, as Kafka writes them
    records += config_records + clear_elr_records(image, config_records)
    for partition_id in sorted(assignments):
        replicas, isr = assignments[partition_id]
        records.append(_new_partition_record(ctx, topic_id, partition_id, replicas, isr, directories))
    return records, CREATE_RESP.CreatableTopicResult(
        name=topic.name, topic_id=topic_id, error_code=ErrorCode.none, error_message=None,
        topic_config_error_code=i16(0), num_partitions=i32(len(assignments)),
        replication_factor=i16(len(assignments[0][0])), configs=_effective_configs(ctx, configs))


def _effective_configs(ctx: ControllerContext, configs: dict[str, str]) -> tuple[Any, ...]:
    """Every (not internal) topic config, by name, as a CreateTopics v5+ answer lists them: the
    topic's own, else a cluster-wide broker config it falls back to, else the controller's own
    setting (of those it has, where not Kafka's default), else Kafka's default."""
    cluster = ctx.image.configs.config_map(BROKER_DEFAULT)
    static = {"min.insync.replicas": str(ctx.config.min_insync_replicas),
              "unclean.leader.election.enable": str(ctx.config.unclean_leader_election_enable).lower()}
    static = {k: v for k, v in static.items() if v != TOPIC_CONFIGS[k].default}
    out = []
    for name in sorted(n for n, key in TOPIC_CONFIGS.items() if not key.internal):
        value, source = _resolve(name, configs, cluster, static)
        out.append(CREATE_RESP.CreatableTopicConfigs(name=name, value=value, read_only=False,
                                                     config_source=i8(source), is_sensitive=False))
    return tuple(out)


def _resolve(name: str, topic: dict[str, str], cluster: Any, static: dict[str, str]) -> tuple[str | None, int]:
    if name in topic:
        return topic[name], TOPIC_CONFIG
    for configs, source in ((cluster, DYNAMIC_DEFAULT_BROKER_CONFIG), (static, STATIC_BROKER_CONFIG)):
        for synonym, factor in TOPIC_SYNONYMS.get(name, ()):
            if synonym in configs:
                value = configs[synonym]
                if factor != 1 and value.strip().lstrip("-").isdigit():
                    value = str(int(value.strip()) * factor)
                return value, source
    return TOPIC_CONFIGS[name].default, DEFAULT_CONFIG


def _topic_error(name: str, code: Any, message: str | None) -> Any:
    return CREATE_RESP.CreatableTopicResult(name=name, topic_id=None, error_code=code, error_message=message,
                                            configs=None)


def create_topics_error(request: Any, code: Any, message: str | None) -> Any:
    return CREATE_RESP.CreateTopicsResponse(throttle_time=_ZERO_MS, topics=tuple(
        _topic_error(t.name, code, message) for t in request.topics))


# -- DeleteTopics ---------------------------------------------------------------------------


def delete_topics(ctx: ControllerContext, request: Any) -> ControllerResult:
    """DeleteTopics v6, by name or by id: one RemoveTopicRecord each (the image drops the topic's
    partitions and configs with it, as Kafka's replay does)."""
    if not getattr(ctx.config, "delete_topic_enable", True):
        raise ApiError(ErrorCode.topic_deletion_disabled, None)
    answers: list[Any] = []

    def answer(name: str | None, topic_id: uuid.UUID | None, code: Any, message: str | None = None) -> None:
        answers.append(DELETE_RESP.DeletableTopicResult(name=name, topic_id=topic_id, error_code=code,
                                                        error_message=message))

    names: dict[str, int] = {}
    ids: dict[uuid.UUID, int] = {}
    for t in request.topics:
        has_id = t.topic_id is not None and t.topic_id.int != 0
        if t.name is None and not has_id:
            answer(None, None, ErrorCode.invalid_request, "Neither topic name nor id were specified.")
        elif t.name is None:
            ids[t.topic_id] = ids.get(t.topic_id, 0) + 1
        elif has_id:
            answer(t.name, t.topic_id, ErrorCode.invalid_request, "You may not specify both topic name and topic id.")
        else:
            names[t.name] = names.get(t.name, 0) + 1
    for name in [n for n, count in names.items() if count > 1]:
        answer(name, None, ErrorCode.invalid_request, "Duplicate topic name.")
    duplicate_ids = {i for i, count in ids.items() if count > 1}
    for topic_id in duplicate_ids:
        answer(None, topic_id, ErrorCode.invalid_request, "Duplicate topic id.")
    to_delete: dict[uuid.UUID, str] = {}
    for topic_id in (i for i, count in ids.items() if count == 1):
        topic = ctx.image.topics.by_id.get(topic_id)
        if topic is None:
            answer(None, topic_id, ErrorCode.unknown_topic_id, _UNKNOWN_TOPIC_ID)
        else:
            to_delete[topic_id] = topic.name
    for name in (n for n, count in names.items() if count == 1):
        topic_id = ctx.image.topics.by_name.get(name)
        if topic_id is None:
            answer(name, None, ErrorCode.unknown_topic_or_partition, _UNKNOWN_TOPIC)
        elif topic_id in duplicate_ids or topic_id in to_delete:
            # the name maps to an id also given: Kafka deletes neither and answers for the name only
            duplicate_ids.add(topic_id)
            to_delete.pop(topic_id, None)
            answer(name, topic_id, ErrorCode.invalid_request,
                   "The provided topic name maps to an ID that was already supplied.")
        else:
            to_delete[topic_id] = name
    records = [m.RemoveTopicRecordV0(topic_id=topic_id) for topic_id in to_delete]
    for topic_id, name in to_delete.items():
        answer(name, topic_id, ErrorCode.none)
    response = DELETE_RESP.DeleteTopicsResponse(throttle_time=_ZERO_MS, responses=tuple(answers))
    return ControllerResult(records, response, atomic=True)


def delete_topics_error(request: Any, code: Any, message: str | None) -> Any:
    return DELETE_RESP.DeleteTopicsResponse(throttle_time=_ZERO_MS, responses=tuple(
        DELETE_RESP.DeletableTopicResult(name=t.name, topic_id=t.topic_id, error_code=code, error_message=message)
        for t in request.topics))


# -- CreatePartitions -----------------------------------------------------------------------


def create_partitions(ctx: ControllerContext, request: Any) -> ControllerResult:
    """CreatePartitions v3: more partitions for existing topics, placed or as assigned."""
    counts: dict[str, int] = {}
    for t in request.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    results = [PARTITIONS_RESP.CreatePartitionsTopicResult(
        name=n, error_code=ErrorCode.invalid_request, error_message="Duplicate topic name.")
        for n, count in counts.items() if count > 1]
    records: list[Any] = []
    done: set[str] = set()
    for t in request.topics:
        if counts[t.name] > 1 or t.name in done:
            continue
        done.add(t.name)
        code, message = ErrorCode.none, None
        try:
            added = _add_partitions(ctx, t)
            if len(records) + len(added) > MAX_RECORDS_PER_USER_OP:
                raise _Refused(ErrorCode.unknown_server_error,
                               "The server experienced an unexpected error when processing the request.")
            records += added
        except (_Refused, PlacementError) as e:
            code = e.code if isinstance(e, _Refused) else ErrorCode.invalid_replication_factor
            message = e.message if isinstance(e, _Refused) else str(e)
        results.append(PARTITIONS_RESP.CreatePartitionsTopicResult(name=t.name, error_code=code, error_message=message))
    response = PARTITIONS_RESP.CreatePartitionsResponse(throttle_time=_ZERO_MS, results=tuple(results))
    return ControllerResult([] if request.validate_only else records, response, atomic=True)


def _add_partitions(ctx: ControllerContext, t: Any) -> list[Any]:
    image = ctx.image
    topic: TopicImage | None = image.topics.topic(t.name)
    if topic is None:
        raise _Refused(ErrorCode.unknown_topic_or_partition, None)
    current = len(topic.partitions)
    if t.count == current:
        raise _Refused(ErrorCode.invalid_partitions, f"Topic already has {current} partition(s).")
    if t.count < current:
        raise _Refused(ErrorCode.invalid_partitions, f"The topic {t.name} currently has {current} partition(s); "
                       f"{t.count} would not be an increase.")
    additional = int(t.count) - current
    if t.assignments is not None and len(t.assignments) != additional:
        raise _Refused(ErrorCode.invalid_replica_assignment, f"Attempted to add {additional} additional "
                       f"partition(s), but only {len(t.assignments)} assignment(s) were specified.")
    if not topic.partitions:
        raise _Refused(ErrorCode.unknown_server_error, f"Invalid state: topic {t.name} appears to have no partitions.")
    if additional > MAX_RECORDS_PER_USER_OP:  # before placing: a count of 2**31 must not build 2**31 lists
        raise _Refused(ErrorCode.unknown_server_error,
                       "The server experienced an unexpected error when processing the request.")
    factor = len(topic.partitions[min(topic.partitions)].replicas)
    placed: list[tuple[list[int], list[int]]] = []
    if t.assignments is not None:
        for i, a in enumerate(t.assignments):
            replicas = _check_manual(image, a.broker_ids, factor)
            isr = _active(image, replicas)
            if not isr:
                raise _Refused(ErrorCode.invalid_replica_assignment, "All brokers specified in the manual "
                               f"partition assignment for partition {current + i} are fenced or in "
                               "controlled shutdown.")
            placed.append((replicas, isr))
    else:
        for replicas in place(_rng(ctx), usable_brokers(image), additional, factor,
                              cordoning=ctx.versions.cordoned_log_dirs):
            isr = _active(image, replicas)
            if not isr:
                raise _unable(factor, _ALL_FENCED)
            placed.append((replicas, isr))
    return [_new_partition_record(ctx, topic.id, current + i, replicas, isr)
            for i, (replicas, isr) in enumerate(placed)]


def create_partitions_error(request: Any, code: Any, message: str | None) -> Any:
    return PARTITIONS_RESP.CreatePartitionsResponse(throttle_time=_ZERO_MS, results=tuple(
        PARTITIONS_RESP.CreatePartitionsTopicResult(name=t.name, error_code=code, error_message=message)
        for t in request.topics))


# -- AssignReplicasToDirs (KIP-858) ------------------------------------------------------------


def assign_replicas_to_dirs(ctx: ControllerContext, request: Any) -> ControllerResult:
    """AssignReplicasToDirs v0: a broker tells which directory holds each of its replicas."""
    if not ctx.versions.directory_assignment:
        raise ApiError(ErrorCode.unsupported_version, "Directory assignment is not supported yet.")
    broker_id = int(request.broker_id)
    broker = ctx.image.cluster.brokers.get(broker_id)
    if broker is None:
        raise ApiError(ErrorCode.stale_broker_epoch, f"No broker registration found for broker id {broker_id}")
    if broker.epoch != request.broker_epoch:
        raise ApiError(ErrorCode.stale_broker_epoch,
                       f"Expected broker epoch {broker.epoch}, but got broker epoch {request.broker_epoch}")
    records: list[Any] = []
    offline: list[tuple[uuid.UUID, int]] = []
    directories = []
    for d in request.directories:
        directory = d.id_ or uuid.UUID(int=0)  # kio reads the all-zero id (MIGRATING) as None
        online = directory_online(directory, broker.directories)
        topics = []
        for t in d.topics:
            topic = ctx.image.topics.by_id.get(t.topic_id) if t.topic_id is not None else None
            partitions = []
            for p in t.partitions:
                code = _assign_one(ctx, topic, int(p.partition_index), broker_id, directory, records)
                if code == ErrorCode.none and not online:
                    offline.append((topic.id, int(p.partition_index)))
                partitions.append(DIRS_RESP.PartitionData(partition_index=p.partition_index, error_code=code))
            topics.append(DIRS_RESP.TopicData(topic_id=t.topic_id, partitions=tuple(partitions)))
        directories.append(DIRS_RESP.DirectoryData(id_=d.id_, topics=tuple(topics)))
    # replicas placed in a directory the broker does not have online leave the ISR and leadership
    by_id = ctx.image.topics.by_id
    records += leader_and_isr_updates(ctx, ((by_id[t], p) for t, p in dict.fromkeys(offline)), removed=broker_id)
    response = DIRS_RESP.AssignReplicasToDirsResponse(throttle_time=_ZERO_MS, error_code=ErrorCode.none,
                                                      directories=tuple(directories))
    return ControllerResult(records, response)


def _assign_one(ctx: ControllerContext, topic: TopicImage | None, partition_id: int, broker_id: int,
                directory: uuid.UUID, records: list[Any]) -> Any:
    if topic is None:
        return ErrorCode.unknown_topic_id
    partition = topic.partitions.get(partition_id)
    if partition is None:
        return ErrorCode.unknown_topic_or_partition
    if broker_id not in partition.replicas:
        return ErrorCode.not_leader_or_follower
    # Kafka's builder with the default (online) election: in practice only the directory moves
    record = partition_change(ctx, topic, partition_id, election=Election.ONLINE,
                              target_directories={broker_id: directory})
    if record is not None:
        records.append(record)
    return ErrorCode.none


def assign_replicas_to_dirs_error(request: Any, code: Any, message: str | None) -> Any:
    return DIRS_RESP.AssignReplicasToDirsResponse(throttle_time=_ZERO_MS, error_code=code, directories=())


COMMANDS = [
    Command(ApiKeys.CREATE_TOPICS, "create_topics", 2, 7, create_topics, create_topics_error),
    Command(ApiKeys.DELETE_TOPICS, "delete_topics", 1, 6, delete_topics, delete_topics_error),  # kio and Kafka 4: no v0
    Command(ApiKeys.CREATE_PARTITIONS, "create_partitions", 0, 3, create_partitions, create_partitions_error),
    Command(ApiKeys.ASSIGN_REPLICAS_TO_DIRS, "assign_replicas_to_dirs",
            0, 0, assign_replicas_to_dirs, assign_replicas_to_dirs_error),
]
