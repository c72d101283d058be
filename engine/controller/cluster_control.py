"""Brokers and controllers joining the cluster: BrokerRegistration (62), BrokerHeartbeat (63),
UnregisterBroker (64), ControllerRegistration (70), DescribeCluster (60), and the session expiry
that fences a broker gone silent.

The rules are Kafka 4.1's ClusterControlManager and ReplicationControlManager, read off Kafka
4.1.2's classes:

- a broker's epoch is the offset of the first record its registration writes; its registration
  is caught up once a heartbeat reports the offset of its RegisterBrokerRecord.
- a new incarnation first takes the old one out of every ISR (and, with ELR on and no clean
  shutdown proven by PreviousBrokerEpoch, out of every ELR); an amended registration (same
  incarnation) keeps its epoch, fenced and controlled-shutdown flags.
- heartbeats move a broker through FENCED, UNFENCED, CONTROLLED_SHUTDOWN and SHUTDOWN_NOW
  (engine/controller/broker_heartbeat_manager.py); a change writes a BrokerRegistrationChangeRecord
  (version 0 to fence or unfence, 1 for controlled shutdown, at every metadata.version, as Kafka
  writes them) with its partition effects (engine/controller/replication_control.py).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from engine.common.api_keys import ApiKeys, EndpointType
from engine.controller.broker_heartbeat_manager import (  # noqa: F401 - new_soft_state, on_activation: the table's hooks
    BrokerControlState, ControllerSoftState, new_soft_state, on_activation)
from engine.controller.controller_result import ApiError, Command, ControllerContext, ControllerResult
from engine.controller.producer_id_control import check_broker_epoch
from engine.controller.replication_control import leader_and_isr_updates
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.image.topic_index import partitions_in_isr
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i8, i16, i32, i64, protocol_module, u16

_ZERO_MS = timedelta(0)
_RESERVED_DIRECTORY_IDS = 100  # Kafka's DirectoryId.reserved: every id below 100
_MINIMUM_KRAFT_LEVEL = 7  # a broker that names no metadata.version range supports 3.3-IV3 only

_registration = protocol_module("broker_registration", 4, "response")
_heartbeat = protocol_module("broker_heartbeat", 2, "response")
_unregister = protocol_module("unregister_broker", 0, "response")
_controller_registration = protocol_module("controller_registration", 0, "response")
_describe = protocol_module("describe_cluster", 2, "response")


def _replication() -> Any:
    # the partition effects of broker changes (ISR, ELR, elections) belong to the replication
    # manager; imported on use, so a cluster without topics never needs it
    from engine.controller import replication_control
    return replication_control


def _heartbeats(ctx: ControllerContext) -> Any:
    return ctx.soft.heartbeats


def _has_partitions(image: MetadataImage) -> bool:
    return bool(image.topics.by_id)


# -- BrokerRegistration ---------------------------------------------------------------------

def _finalized_features(image: MetadataImage) -> dict[str, int]:
    # kraft.version is the quorum's (a FeatureLevelRecord for it is ignored): 0 when unset
    features = {name: level for name, level in image.features.items() if name != "kraft.version"}
    features["kraft.version"] = image.quorum.kraft_version or 0
    return features


def _check_features(request: Any, finalized: dict[str, int]) -> None:
    """Every finalized level must lie in the broker's range (an unnamed feature counts as 0..0),
    and the broker must name metadata.version."""
    named = set()
    for feature in request.features:
        named.add(feature.name)
        level = finalized.get(feature.name, 0)
        if not feature.min_supported_version <= level <= feature.max_supported_version:
            raise ApiError(ErrorCode.unsupported_version,
                           f"Unable to register because the broker does not support finalized version {level} "
                           f"of {feature.name}. The broker wants a version between {feature.min_supported_version} "
                           f"and {feature.max_supported_version}, inclusive.")
    if "metadata.version" not in named:
        raise ApiError(ErrorCode.invalid_registration, "Request features do not contain 'metadata.version'")
    for name, level in sorted(finalized.items()):
        if level != 0 and name not in named:
            raise ApiError(ErrorCode.unsupported_version,
                           f"Unable to register because the broker does not support finalized version {level} "
                           f"of {name}. The broker wants a version between 0 and 0, inclusive.")


def _check_log_dirs(image: MetadataImage, broker_id: int, log_dirs: tuple) -> None:
    if not log_dirs:
        raise ApiError(ErrorCode.invalid_registration, "No directories specified in request")
    if any(d is None or d.int < _RESERVED_DIRECTORY_IDS for d in log_dirs):
        raise ApiError(ErrorCode.invalid_registration, "Reserved directory ID in request")
    if len(set(log_dirs)) != len(log_dirs):
        raise ApiError(ErrorCode.invalid_registration, "Duplicate directory ID in request")
    wanted = set(log_dirs)
    for other in image.cluster.brokers.values():
        if other.id != broker_id:
            for directory in other.directories:
                if directory in wanted:
                    raise ApiError(ErrorCode.invalid_registration,
                                   f"Broker {other.id} is already registered with directory {directory}")


def _register_broker_record(version: int, request: Any, epoch: int, fenced: bool,
                            in_controlled_shutdown: bool, log_dirs: tuple) -> Any:
    endpoint_cls = getattr(m, f"RegisterBrokerRecordV{version}BrokerEndpoint")
    feature_cls = getattr(m, f"RegisterBrokerRecordV{version}BrokerFeature")
    listeners: dict[str, Any] = {}
    for listener in request.listeners:  # one endpoint per name, in the order first named
        listeners[listener.name] = listener
    fields: dict[str, Any] = dict(
        broker_id=i32(request.broker_id), incarnation_id=request.incarnation_id, broker_epoch=i64(epoch),
        end_points=tuple(endpoint_cls(name=e.name, host=e.host, port=u16(e.port),
                                      security_protocol=i16(e.security_protocol)) for e in listeners.values()),
        features=tuple(feature_cls(name=f.name, min_supported_version=i16(f.min_supported_version),
                                   max_supported_version=i16(f.max_supported_version)) for f in request.features),
        rack=request.rack, fenced=fenced, in_controlled_shutdown=in_controlled_shutdown)
    if version >= 2:
        fields["is_migrating_zk_broker"] = False
    if version >= 3:
        fields["log_dirs"] = log_dirs
    return m.RECORD_CLASSES[(0, version)](**fields)


def _shutdown_cleanup(ctx: ControllerContext, broker_id: int, clean: bool) -> list:
    """What a new incarnation writes first: the old one leaves every ISR; when ELR is on and the
    old one did not shut down cleanly, every ELR too (Kafka's handleBrokerShutdown)."""
    if not _has_partitions(ctx.image):
        return []
    replication = _replication()
    if clean:
        return list(replication.clean_shutdown_changes(ctx, broker_id))
    return list(replication.unclean_shutdown_changes(ctx, broker_id))


def register_broker(ctx: ControllerContext, request: Any) -> ControllerResult:
    cluster_id = getattr(ctx.config, "cluster_id", "")
    if request.cluster_id != cluster_id:
        raise ApiError(ErrorCode.inconsistent_cluster_id,
                       f"Expected cluster ID {cluster_id}, but got cluster ID {request.cluster_id}")
    broker_id = request.broker_id
    heartbeats = _heartbeats(ctx)
    existing = ctx.image.cluster.brokers.get(broker_id)
    if (existing is not None and heartbeats.has_valid_session(broker_id, existing.epoch, ctx.now_ms)
            and request.incarnation_id != existing.incarnation_id):
        raise ApiError(ErrorCode.duplicate_broker_registration,
                       "Another broker is registered with that broker id. If the broker was recently restarted "
                       "this should self-resolve once the heartbeat manager expires the broker's session.")
    if request.is_migrating_zk_broker:
        raise ApiError(ErrorCode.broker_id_not_registered, "Controller does not support registering ZK brokers.")
    directories = ctx.versions.directory_assignment
    if directories:
        _check_log_dirs(ctx.image, broker_id, tuple(request.log_dirs))
    _check_features(request, _finalized_features(ctx.image))

    records: list = []
    if existing is not None and request.incarnation_id == existing.incarnation_id:
        # the same process registering again: amend, keeping its epoch and state
        epoch, fenced, shutting_down = existing.epoch, existing.fenced, existing.in_controlled_shutdown
    else:
        # Kafka compares PreviousBrokerEpoch with the stored epoch (-2 when none is stored)
        clean = request.previous_broker_epoch == (existing.epoch if existing is not None else -2)
        records.extend(_shutdown_cleanup(ctx, broker_id, clean))
        epoch, fenced, shutting_down = ctx.next_offset, True, False
    log_dirs = tuple(request.log_dirs) if directories else ()
    records.append(_register_broker_record(ctx.versions.register_broker, request, epoch, fenced,
                                           shutting_down, log_dirs))
    heartbeats.registered(broker_id, ctx.next_offset + len(records) - 1)
    return ControllerResult(records, _registration.BrokerRegistrationResponse(
        throttle_time=_ZERO_MS, error_code=ErrorCode.none, broker_epoch=i64(epoch)))


def registration_error(request: Any, code: Any, message: str | None) -> Any:
    return _registration.BrokerRegistrationResponse(throttle_time=_ZERO_MS, error_code=code, broker_epoch=i64(-1))


# -- BrokerHeartbeat ------------------------------------------------------------------------

def _change_record(broker_id: int, epoch: int, fenced: int = 0, in_controlled_shutdown: int = 0) -> Any:
    # Kafka writes these at fixed versions whatever the metadata.version: 0 to (un)fence, 1 to
    # mark a controlled shutdown (every KRaft level reads both)
    if in_controlled_shutdown:
        return m.BrokerRegistrationChangeRecordV1(broker_id=i32(broker_id), broker_epoch=i64(epoch),
                                                  in_controlled_shutdown=i8(in_controlled_shutdown))
    return m.BrokerRegistrationChangeRecordV0(broker_id=i32(broker_id), broker_epoch=i64(epoch), fenced=i8(fenced))


def fence_records(ctx: ControllerContext, broker_id: int, epoch: int) -> list:
    """Kafka's handleBrokerFenced: the broker leaves every ISR, then the fencing record."""
    effects = list(_replication().fence_broker_changes(ctx, broker_id)) if _has_partitions(ctx.image) else []
    return [*effects, _change_record(broker_id, epoch, fenced=1)]


def _unfence_records(ctx: ControllerContext, broker_id: int, epoch: int) -> list:
    # the record first, then leaders for leaderless partitions the broker may now lead
    effects = list(_replication().unfence_broker_changes(ctx, broker_id)) if _has_partitions(ctx.image) else []
    return [_change_record(broker_id, epoch, fenced=-1), *effects]


def _controlled_shutdown_records(ctx: ControllerContext, broker_id: int, epoch: int) -> list:
    registration = ctx.image.cluster.brokers[broker_id]
    records = [] if registration.in_controlled_shutdown else [_change_record(broker_id, epoch, in_controlled_shutdown=1)]
    if _has_partitions(ctx.image):
        records.extend(_replication().controlled_shutdown_changes(ctx, broker_id))
    return records


def _cordoned_dir_records(ctx: ControllerContext, registration: Any, cordoned: tuple | None) -> list:
    """KIP-1066 (Kafka 4.3): a broker's heartbeat (v2) says which of its log directories are
    cordoned; a change is recorded in its registration (BrokerRegistrationChangeRecord v3)."""
    if cordoned is None or not ctx.versions.cordoned_log_dirs:
        return []
    cordoned = tuple(sorted(cordoned, key=str))
    if tuple(sorted(registration.cordoned_directories or (), key=str)) == cordoned:
        return []
    return [m.BrokerRegistrationChangeRecordV3(broker_id=i32(registration.id), broker_epoch=i64(registration.epoch),
                                                cordoned_log_dirs=cordoned)]


def _offline_dir_records(ctx: ControllerContext, broker_id: int, epoch: int, offline: tuple) -> list:
    """A broker reporting offline directories it is registered with: its registration keeps the
    others (Kafka's handleDirectoriesOffline writes this at version 2)."""
    registration = ctx.image.cluster.brokers[broker_id]
    gone = set(offline)
    if not any(d in gone for d in registration.directories):
        return []
    remaining = tuple(d for d in registration.directories if d not in gone)
    # Kafka's handleDirectoriesOffline: the replicas in those directories leave the ISR and
    # their leaderships first, so no one waits for a replica that can no longer serve
    def on_gone_dir(topic: Any, partition_id: int) -> bool:
        p = topic.partitions[partition_id]
        index = p.replicas.index(broker_id)
        return index < len(p.directories) and p.directories[index] in gone

    affected = [(t, pid) for t, pid in partitions_in_isr(ctx.image, broker_id) if on_gone_dir(t, pid)]
    return [*leader_and_isr_updates(ctx, affected, removed=broker_id),
            m.BrokerRegistrationChangeRecordV2(broker_id=i32(broker_id), broker_epoch=i64(epoch), log_dirs=remaining)]


def broker_heartbeat(ctx: ControllerContext, request: Any) -> ControllerResult:
    broker_id, epoch = request.broker_id, request.broker_epoch
    heartbeats = _heartbeats(ctx)
    # contact is recorded before any check, as Kafka's tracker does on the request thread
    heartbeats.record_contact(broker_id, epoch, ctx.now_ms)
    if broker_id not in ctx.image.cluster.brokers:
        raise ApiError(ErrorCode.stale_broker_epoch, f"Receive a heartbeat from broker {broker_id} before registration")
    check_broker_epoch(ctx.image, broker_id, epoch)
    registration = ctx.image.cluster.brokers[broker_id]
    registration_offset = heartbeats.registration_offset(broker_id, registration.epoch)

    def has_leaderships() -> bool:
        return _has_partitions(ctx.image) and _replication().partitions_led_by(ctx.image, broker_id) > 0

    current, following = heartbeats.next_state(ctx.image, broker_id, registration.fenced, request,
                                               registration_offset, has_leaderships)
    records: list = []
    if current is not following:
        if following in (BrokerControlState.FENCED, BrokerControlState.SHUTDOWN_NOW):
            records = fence_records(ctx, broker_id, epoch)
        elif following is BrokerControlState.UNFENCED:
            records = _unfence_records(ctx, broker_id, epoch)
        else:
            records = _controlled_shutdown_records(ctx, broker_id, epoch)
    # a registration change replayed on the active controller forgets the reported offset
    # (Kafka re-registers the broker in its heartbeat manager), so one written now leaves -1
    changed = any(getattr(r, "type_name", "") == "BROKER_REGISTRATION_CHANGE_RECORD" for r in records)
    heartbeats.touch(broker_id, following.fenced, -1 if changed else request.current_metadata_offset)
    if ctx.versions.directory_assignment and request.offline_log_dirs:
        records.extend(_offline_dir_records(ctx, broker_id, epoch, tuple(request.offline_log_dirs)))
    records.extend(_cordoned_dir_records(ctx, registration, getattr(request, "cordoned_log_dirs", None)))
    if following.in_controlled_shutdown:
        # the end of this result's batch (or the last offset written, if none): once every
        # active broker has it, the leaderships it moved are known everywhere
        heartbeats.maybe_update_controlled_shutdown_offset(broker_id, ctx.next_offset + len(records) - 1)
    return ControllerResult(records, _heartbeat.BrokerHeartbeatResponse(
        throttle_time=_ZERO_MS, error_code=ErrorCode.none,
        is_caught_up=request.current_metadata_offset >= registration_offset,
        is_fenced=following.fenced, should_shut_down=following.should_shut_down))


def heartbeat_error(request: Any, code: Any, message: str | None) -> Any:
    return _heartbeat.BrokerHeartbeatResponse(throttle_time=_ZERO_MS, error_code=code, is_caught_up=False,
                                              is_fenced=True, should_shut_down=False)


# -- UnregisterBroker -----------------------------------------------------------------------

def unregister_broker(ctx: ControllerContext, request: Any) -> ControllerResult:
    registration = ctx.image.cluster.brokers.get(request.broker_id)
    if registration is None:
        raise ApiError(ErrorCode.broker_id_not_registered, f"Broker ID {request.broker_id} is not currently registered")
    records = list(_replication().unregister_broker_changes(ctx, request.broker_id)) if _has_partitions(ctx.image) else []
    records.append(m.UnregisterBrokerRecordV0(broker_id=i32(request.broker_id), broker_epoch=i64(registration.epoch)))
    _heartbeats(ctx).unregistered(request.broker_id)
    return ControllerResult(records, _unregister.UnregisterBrokerResponse(
        throttle_time=_ZERO_MS, error_code=ErrorCode.none, error_message=None))


def unregister_error(request: Any, code: Any, message: str | None) -> Any:
    return _unregister.UnregisterBrokerResponse(throttle_time=_ZERO_MS, error_code=code, error_message=message)


# -- ControllerRegistration -----------------------------------------------------------------

def register_controller(ctx: ControllerContext, request: Any) -> ControllerResult:
    if not ctx.versions.controller_registration:
        raise ApiError(ErrorCode.unsupported_version,
                       "The current MetadataVersion is too old to support controller registrations.")
    listeners: dict[str, Any] = {}
    for listener in request.listeners:
        listeners[listener.name] = listener
    record = m.RegisterControllerRecordV0(
        controller_id=i32(request.controller_id), incarnation_id=request.incarnation_id,
        zk_migration_ready=False,  # Kafka 4.1 writes false whatever the controller says
        end_points=tuple(m.RegisterControllerRecordV0ControllerEndpoint(
            name=e.name, host=e.host, port=u16(e.port), security_protocol=i16(e.security_protocol))
            for e in listeners.values()),
        features=tuple(m.RegisterControllerRecordV0ControllerFeature(
            name=f.name, min_supported_version=i16(f.min_supported_version),
            max_supported_version=i16(f.max_supported_version)) for f in request.features))
    return ControllerResult([record], _controller_registration.ControllerRegistrationResponse(
        throttle_time=_ZERO_MS, error_code=ErrorCode.none, error_message=None), atomic=True)


def controller_registration_error(request: Any, code: Any, message: str | None) -> Any:
    return _controller_registration.ControllerRegistrationResponse(throttle_time=_ZERO_MS, error_code=code,
                                                                   error_message=message)


# -- DescribeCluster ------------------------------------------------------------------------

def describe_cluster(ctx: ControllerContext, request: Any) -> ControllerResult:
    """A controller answers for controllers only (KIP-919): their endpoints on the listener the
    request came in on (``config.controller_listener_name``, else each one's first), and the
    active controller's id when it is among them."""
    if not ctx.versions.controller_registration:
        raise ApiError(ErrorCode.unsupported_version,
                       "Direct-to-controller communication is not supported with the current MetadataVersion.")
    if request.endpoint_type not in (EndpointType.BROKER, EndpointType.CONTROLLER):
        raise ApiError(ErrorCode.unsupported_endpoint_type, f"Unsupported endpoint type {request.endpoint_type}")
    if request.endpoint_type != EndpointType.CONTROLLER:
        raise ApiError(ErrorCode.mismatched_endpoint_type, "The request was sent to an endpoint of type CONTROLLER, "
                       "but we wanted an endpoint of type BROKER")
    listener = getattr(ctx.config, "controller_listener_name", None)
    nodes = []
    for controller in sorted(ctx.image.cluster.controllers.values(), key=lambda c: c.id):
        endpoint = next((e for e in controller.endpoints if listener is None or e.name == listener), None)
        if endpoint is not None:
            nodes.append(_describe.DescribeClusterBroker(broker_id=i32(controller.id), host=endpoint.host,
                                                         port=i32(endpoint.port), rack=None, is_fenced=False))
    active = ctx.config.node_id if any(n.broker_id == ctx.config.node_id for n in nodes) else -1
    return ControllerResult((), _describe.DescribeClusterResponse(
        throttle_time=_ZERO_MS, error_code=ErrorCode.none, error_message=None,
        endpoint_type=i8(EndpointType.CONTROLLER), cluster_id=getattr(ctx.config, "cluster_id", ""),
        controller_id=i32(active), brokers=tuple(nodes)))


def describe_error(request: Any, code: Any, message: str | None) -> Any:
    return _describe.DescribeClusterResponse(throttle_time=_ZERO_MS, error_code=code, error_message=message,
                                             endpoint_type=getattr(request, "endpoint_type", i8(EndpointType.BROKER)),
                                             cluster_id="", brokers=())


# -- session expiry -------------------------------------------------------------------------

def expire_sessions(ctx: ControllerContext) -> ControllerResult | None:
    """Fence up to ``fence_per_poll`` brokers whose session expired (Kafka: one at a time).
    An expired session of an epoch no longer registered is dropped without a record."""
    heartbeats = _heartbeats(ctx)
    records: list = []
    fenced = 0
    while fenced < ctx.config.fence_per_poll:
        session = heartbeats.pop_expired_session(ctx.now_ms)
        if session is None:
            break
        broker_id, epoch = session
        registration = ctx.image.cluster.brokers.get(broker_id)
        if registration is None or registration.epoch != epoch:
            continue
        # each fencing sees the ones before it (ISRs already shrunk): compute on their image
        step = fence_records(_after(ctx, records), broker_id, epoch)
        records.extend(step)
        heartbeats.fenced_by_expiry(broker_id)
        fenced += 1
    return ControllerResult(records, None) if records else None


def _after(ctx: ControllerContext, records: list) -> ControllerContext:
    if not records:
        return ctx
    delta = MetadataDelta(ctx.image)
    for i, record in enumerate(records):
        delta.replay(record, ctx.next_offset + i)
    return ControllerContext(image=delta.apply(), now_ms=ctx.now_ms, next_offset=ctx.next_offset + len(records),
                             config=ctx.config, principal=ctx.principal, soft=ctx.soft)


COMMANDS = [
    Command(ApiKeys.BROKER_REGISTRATION, "broker_registration", 0, 4, register_broker, registration_error),
    Command(ApiKeys.BROKER_HEARTBEAT, "broker_heartbeat", 0, 2, broker_heartbeat, heartbeat_error),
    Command(ApiKeys.UNREGISTER_BROKER, "unregister_broker", 0, 0, unregister_broker, unregister_error),
    Command(ApiKeys.CONTROLLER_REGISTRATION, "controller_registration",
            0, 0, register_controller, controller_registration_error),
    Command(ApiKeys.DESCRIBE_CLUSTER, "describe_cluster", 0, 2, describe_cluster, describe_error, read_only=True),
]

PERIODIC = [expire_sessions]

__all__ = ["COMMANDS", "PERIODIC", "ControllerSoftState", "expire_sessions", "fence_records", "new_soft_state",
           "on_activation"]
