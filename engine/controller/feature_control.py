"""UpdateFeatures (57): finalized feature levels, as Kafka 4.1's FeatureControlManager sets them.

Every update is checked against what this controller supports, every registered broker's
supported range, and (from 3.7-IV0, KIP-919) every registered controller's; a downgrade needs a
downgrade type, an upgrade may not use one; metadata.version goes down only where no level in
between changed the metadata format (an unsafe downgrade is not supported, as in Kafka 4.1);
a feature's dependencies must hold (eligible.leader.replicas.version 1 needs metadata.version
23, 4.0-IV1). The first failing update fails the whole request, and nothing is written.
Turning ELR on also writes the KIP-966 safety configs (config_control.elr_safety_records)
ahead of the feature record, in one batch.

Facts read off Kafka 4.1.2's and 4.3.1's Feature, MetadataVersion and QuorumFeatures with jshell.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from engine.common.api_keys import ApiKeys
from engine.controller.config_control import ELR_FEATURE, elr_safety_records
from engine.controller.controller_result import (MINIMUM_KRAFT_LEVEL, Command, ControllerContext,
                                                 ControllerResult)
from engine.image.metadata_image import FeatureRange
from engine.image.metadata_version import BY_LEVEL, BY_NAME
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i16, protocol_module

MV = "metadata.version"
KRAFT = "kraft.version"

# What this controller supports. metadata.version 7..30 (3.3-IV3 .. 4.3-IV0): the newest release
# the project runs end to end against Kafka (LATEST_PRODUCTION, what `kraftd storage format`
# writes) and whose record versions engine/image/metadata_version.py writes; the levels past it
# (4.4, 4.5) change the log in ways this controller does not implement. The other ranges are
# Kafka 4.3.1's controller's (QuorumFeatures.defaultSupportedFeatureMap); 4.1.2's is the same
# less streams.version and with metadata.version up to 27.
_SUPPORTED = {
    MV: (MINIMUM_KRAFT_LEVEL, BY_NAME["4.3-IV0"].level),
    KRAFT: (0, 1),
    "group.version": (0, 1),
    "transaction.version": (0, 2),
    ELR_FEATURE: (0, 1),
    "share.version": (0, 1),
    "streams.version": (0, 1),
}
# Feature.dependencies() of the production features: (feature, level) -> {feature: level needed}
DEPENDENCIES = {(ELR_FEATURE, 1): {MV: BY_NAME["4.0-IV1"].level}}
# MetadataVersion.didMetadataChange(): a downgrade across one of these could lose metadata
METADATA_CHANGED_LEVELS = frozenset(BY_NAME[name].level for name in (
    "3.3-IV3", "3.4-IV0", "3.5-IV2", "3.6-IV1", "3.6-IV2", "3.7-IV0", "3.7-IV2", "4.0-IV1",
    "4.3-IV0", "4.4-IV1", "4.4-IV2"))
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
_FAILED = "The update failed for all features since the following feature had an error: "

_response = protocol_module("update_features", 2, "response")
_v1_response = protocol_module("update_features", 1, "response")


def supported_feature_ranges() -> dict[str, tuple[int, int]]:
    """Feature name -> (min, max) level this controller supports (ApiVersions, ControllerRegistration)."""
    return dict(_SUPPORTED)


class _Refused(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def _range_text(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"  # Kafka's VersionRange.toString


def _not_supported(what: str, level: int, supported: tuple[int, int]) -> str | None:
    low, high = supported
    if low <= level <= high:
        return None
    if high == 0:
        return f"{what} does not support this feature."
    return f"{what} only supports versions {_range_text(low, high)}"


def _ranges(features: tuple[FeatureRange, ...]) -> dict[str, tuple[int, int]]:
    return {f.name: (f.min_version, f.max_version) for f in features}


def _reason_not_supported(ctx: ControllerContext, name: str, level: int) -> str | None:
    """Kafka's reasonNotSupported: this controller, each registered broker, then (when the
    metadata.version has controller registrations) every other controller of the quorum."""
    node = ctx.config.node_id
    reason = _not_supported(f"Local controller {node}", level, _SUPPORTED.get(name, (0, 0)))
    for broker_id, broker in sorted(ctx.image.cluster.brokers.items()):
        reason = reason or _not_supported(f"Broker {broker_id}", level,
                                          _ranges(broker.supported_features).get(name, (0, 0)))
    if reason or not ctx.versions.controller_registration:
        return reason
    controllers = ctx.image.cluster.controllers
    for controller_id, controller in sorted(controllers.items()):
        if controller_id != node:
            reason = reason or _not_supported(f"Controller {controller_id}", level,
                                              _ranges(controller.supported_features).get(name, (0, 0)))
    # the quorum's voters, where the log names them (KIP-853); static voters are not in the image
    for voter in sorted(v.id for v in ctx.image.quorum.voters or ()):
        if reason is None and voter != node and voter not in controllers:
            reason = f"controller {voter} has not registered, and may not support this feature"
    return reason


def _metadata_version_record(current: int, level: int, upgrade_type: int) -> Any:
    if level not in BY_LEVEL:
        raise _Refused(f"Invalid metadata.version {level}. Valid versions are from "
                       f"{MINIMUM_KRAFT_LEVEL} to {max(BY_LEVEL)}.")
    if level < current and any(v in METADATA_CHANGED_LEVELS for v in range(level + 1, current + 1)):
        why = ("Unsafe metadata downgrade is not supported in this version." if upgrade_type == UNSAFE_DOWNGRADE
               else "Refusing to perform the requested downgrade because it might delete metadata information.")
        raise _Refused(f"Invalid metadata.version {level}. {why}")
    return m.FeatureLevelRecordV0(name=MV, feature_level=i16(level))


def _update_records(ctx: ControllerContext, name: str, level: int, upgrade_type: int,
                    proposed: dict[str, int]) -> list[Any]:
    """The records one update writes; _Refused with Kafka's message if it may not."""
    def refuse(why: str) -> _Refused:
        return _Refused(f"Invalid update version {level} for feature {name}. {why}")

    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        raise refuse("The controller does not support the given upgrade type.")
    image = ctx.image
    if name == MV:
        current = image.metadata_version or MINIMUM_KRAFT_LEVEL
    elif name == KRAFT:
        current = image.quorum.kraft_version or 0
    else:
        current = image.features.get(name, 0)
    if level < 0:
        raise refuse("A feature version cannot be less than 0.")
    reason = _reason_not_supported(ctx, name, level)
    if reason:
        raise refuse(reason)
    if level < current and upgrade_type == UPGRADE:
        raise refuse("Can't downgrade the version of this feature without setting the upgrade type "
                     "to either safe or unsafe downgrade.")
    if level > current and upgrade_type != UPGRADE:
        raise refuse("Can't downgrade to a newer version.")
    if name == MV:
        return [_metadata_version_record(current, level, upgrade_type)]
    if name == KRAFT:
        # kraft.version lives in the Raft log (KIP-853); changing it is the Raft layer's, which this
        # command cannot drive. The same level is a no-op, answered after a NoOpRecord commits.
        if level == current:
            return [m.NoOpRecordV0()] if upgrade_type == UPGRADE else []
        raise refuse("Can't downgrade the version of this feature." if upgrade_type != UPGRADE
                     else "This controller does not change kraft.version through UpdateFeatures.")
    if name not in _SUPPORTED:
        raise refuse(f"Feature {name} not found.")
    for needed, needed_level in DEPENDENCIES.get((name, level), {}).items():
        if proposed.get(needed, 0) < needed_level:
            raise refuse(f"{name} could not be set to {level} because it depends on {needed} level {needed_level}")
    return [m.FeatureLevelRecordV0(name=name, feature_level=i16(level))]


def update_features(ctx: ControllerContext, request: Any) -> ControllerResult:
    # a feature named twice: the last update counts (Kafka reads them into a map)
    updates = {u.feature: (int(u.max_version_level), int(u.upgrade_type)) for u in request.feature_updates}
    proposed = dict(ctx.image.features)
    proposed[MV] = ctx.image.metadata_version or MINIMUM_KRAFT_LEVEL
    proposed.update({name: level for name, (level, _) in updates.items()})
    records: list[Any] = []
    try:
        for name, (level, upgrade_type) in updates.items():
            records += _update_records(ctx, name, level, upgrade_type, proposed)
    except _Refused as refused:
        return ControllerResult([], _answer(ErrorCode.invalid_update_version, _FAILED + refused.message))
    if request.validate_only:
        return ControllerResult([], _answer(ErrorCode.none, None))
    if updates.get(ELR_FEATURE, (0, 0))[0] > 0:
        records = elr_safety_records(ctx.image, ctx.config) + records
    return ControllerResult(records, _answer(ErrorCode.none, None), atomic=True)


def _answer(code: Any, message: str | None) -> Any:
    return _response.UpdateFeaturesResponse(throttle_time=timedelta(0), error_code=code, error_message=message)


def error_response(request: Any, code: Any, message: str | None) -> Any:
    return _answer(code, message)


def legacy_results(request: Any, response: Any) -> tuple:
    """The per-feature Results a v0/v1 response carries (v2 has none): one per update, with the
    top-level NONE, only when the whole request succeeded (as Kafka 4.1's controller answers)."""
    if response.error_code != ErrorCode.none:
        return ()
    return tuple(_v1_response.UpdatableFeatureResult(feature=u.feature, error_code=ErrorCode.none,
                                                     error_message="NONE") for u in request.feature_updates)


COMMANDS: list[Command] = [
    Command(ApiKeys.UPDATE_FEATURES, "update_features", 0, 2, update_features, error_response,
            legacy_fields=lambda request, response: {"results": legacy_results(request, response)}),
]
