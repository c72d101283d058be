"""UpdateFeatures (57): Kafka 4.1's FeatureControlManager rules, and the KIP-966 safety records.

Rhythm of Kafka's FeatureControlManagerTest: command, response, replay, state. Messages are
Kafka 4.1.2's (FeatureControlManager, QuorumFeatures, Feature.validateVersion)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest

from engine.controller.controller_config import ControllerConfig
from engine.controller.feature_control import (COMMANDS, METADATA_CHANGED_LEVELS, legacy_results,
                                               supported_feature_ranges, update_features)
from engine.image.metadata_image import QuorumImage, Voter
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i8, i16, i32, protocol_module
from tests.controller_helpers import context, new_uuid, replayed, request
from tests.engine.controller.test_controller_configs import cluster, config

UPGRADE, SAFE, UNSAFE = 1, 2, 3
ELR = "eligible.leader.replicas.version"
FAILED = "The update failed for all features since the following feature had an error: "
_req = protocol_module("update_features", 2, "request")


def update(*updates: tuple[str, int, int], validate_only: bool = False) -> Any:
    return request("update_features", 2, validate_only=validate_only, feature_updates=tuple(
        _req.FeatureUpdateKey(feature=name, max_version_level=i16(level), upgrade_type=i8(kind))
        for name, level, kind in updates))


def outcome(result: Any) -> tuple[Any, str | None]:
    return result.response.error_code, result.response.error_message


def refused(message: str) -> tuple[Any, str]:
    return ErrorCode.invalid_update_version, FAILED + message


def feature(name: str, level: int) -> Any:
    return m.FeatureLevelRecordV0(name=name, feature_level=i16(level))


def test_supported_ranges_are_kafka_4_3_controllers_with_metadata_version_to_4_3():
    assert supported_feature_ranges() == {
        "metadata.version": (7, 30), "kraft.version": (0, 1), "group.version": (0, 1),
        "transaction.version": (0, 2), ELR: (0, 1), "share.version": (0, 1), "streams.version": (0, 1)}
    assert [(c.api_key, c.min_version, c.max_version) for c in COMMANDS] == [(57, 0, 2)]


def test_metadata_version_changed_levels_are_kafkas():
    assert sorted(METADATA_CHANGED_LEVELS) == [7, 8, 11, 13, 14, 15, 17, 23, 30, 32, 33]


def test_enabling_elr_writes_the_safety_records_first():
    image = cluster("4.0-IV3", configs={(4, "1"): {"min.insync.replicas": "3"}})
    result = update_features(context(image, config=ControllerConfig(min_insync_replicas=2)), update((ELR, 1, UPGRADE)))
    assert outcome(result) == (ErrorCode.none, None)
    assert result.records == [config(4, "", "min.insync.replicas", "2"), config(4, "1", "min.insync.replicas", None),
                              feature(ELR, 1)] and result.atomic
    image = replayed(image, result)
    assert image.features[ELR] == 1 and image.configs[(4, "")] == {"min.insync.replicas": "2"}
    assert (4, "1") not in image.configs
    # once safe, enabling again writes the feature record alone
    again = update_features(context(image), update((ELR, 1, UPGRADE)))
    assert again.records == [feature(ELR, 1)]


def test_elr_needs_metadata_version_4_0_iv1():
    result = update_features(context(cluster("4.0-IV0")), update((ELR, 1, UPGRADE)))
    assert outcome(result) == refused("Invalid update version 1 for feature eligible.leader.replicas.version. "
                                      "eligible.leader.replicas.version could not be set to 1 because it depends "
                                      "on metadata.version level 23")
    assert result.records == []
    # the same request upgrading metadata.version with it passes
    both = update_features(context(cluster("4.0-IV0")), update(("metadata.version", 23, UPGRADE), (ELR, 1, UPGRADE)))
    assert outcome(both) == (ErrorCode.none, None)
    assert both.records[-2:] == [feature("metadata.version", 23), feature(ELR, 1)]


def test_disabling_a_feature_removes_it():
    image = cluster("4.1-IV1")
    result = update_features(context(image), update(("group.version", 0, SAFE)))
    assert result.records == [feature("group.version", 0)]
    assert "group.version" not in replayed(image, result).features


def test_every_broker_must_support_the_level():
    image = cluster("4.0-IV1", brokers={1: {"transaction.version": (0, 2)}, 2: {"transaction.version": (0, 1)}})
    assert outcome(update_features(context(image), update(("transaction.version", 1, UPGRADE)))) == (
        ErrorCode.none, None)
    assert outcome(update_features(context(image), update(("transaction.version", 2, UPGRADE)))) == refused(
        "Invalid update version 2 for feature transaction.version. Broker 2 only supports versions 0-1")
    image = cluster("4.0-IV3", elr=False, brokers={1: {"group.version": (0, 1)}, 2: {}})
    assert outcome(update_features(context(image), update((ELR, 1, UPGRADE)))) == refused(
        "Invalid update version 1 for feature eligible.leader.replicas.version. Broker 1 does not support this feature.")
    image = cluster("4.1-IV1", brokers={1: {"metadata.version": (7, 26)}})
    assert outcome(update_features(context(image), update(("metadata.version", 27, UPGRADE)))) == (
        ErrorCode.invalid_update_version, FAILED + "Invalid update version 27 for feature metadata.version. "
        "Broker 1 only supports versions 7-26")


def test_the_local_controller_range():
    image = cluster("4.1-IV1")
    assert outcome(update_features(context(image), update(("foo", 1, UPGRADE)))) == refused(
        "Invalid update version 1 for feature foo. Local controller 0 does not support this feature.")
    assert outcome(update_features(context(image), update(("foo", 0, SAFE)))) == refused(
        "Invalid update version 0 for feature foo. Feature foo not found.")
    assert outcome(update_features(context(image, config=ControllerConfig(node_id=3)),
                                   update(("metadata.version", 31, UPGRADE)))) == refused(
        "Invalid update version 31 for feature metadata.version. Local controller 3 only supports versions 7-30")


def register_controller(controller_id: int, features: dict[str, tuple[int, int]]) -> Any:
    return m.RegisterControllerRecordV0(
        controller_id=i32(controller_id), incarnation_id=new_uuid(controller_id), zk_migration_ready=False,
        end_points=(), features=tuple(m.RegisterControllerRecordV0ControllerFeature(
            name=n, min_supported_version=i16(lo), max_supported_version=i16(hi)) for n, (lo, hi) in features.items()))


def test_other_controllers_must_support_it_and_voters_must_have_registered():
    image = cluster("4.1-IV1", brokers={})
    image = replayed(image, type("R", (), {"records": [register_controller(1, {"group.version": (0, 0)})]})())
    assert outcome(update_features(context(image), update(("group.version", 1, UPGRADE)))) == refused(
        "Invalid update version 1 for feature group.version. Controller 1 does not support this feature.")
    voters = tuple(Voter(i, uuid.UUID(int=i + 200), (), (0, 1)) for i in (0, 1, 2))
    image = dataclasses.replace(image, quorum=QuorumImage(voters=voters))
    assert outcome(update_features(context(image), update(("transaction.version", 1, SAFE)))) == refused(
        "Invalid update version 1 for feature transaction.version. Controller 1 does not support this feature.")
    image = replayed(image, type("R", (), {"records": [register_controller(1, supported_feature_ranges())]})())
    assert outcome(update_features(context(image), update(("transaction.version", 1, SAFE)))) == refused(
        "Invalid update version 1 for feature transaction.version. "
        "controller 2 has not registered, and may not support this feature")


def test_before_controller_registrations_only_brokers_are_checked():
    image = cluster("3.6-IV2", brokers={1: {"metadata.version": (7, 30)}})
    image = dataclasses.replace(image, quorum=QuorumImage(voters=(Voter(5, None, (), (0, 1)),)))
    result = update_features(context(image), update(("metadata.version", 15, UPGRADE)))
    assert outcome(result) == (ErrorCode.none, None) and result.records == [feature("metadata.version", 15)]


@pytest.mark.parametrize("level, kind, message", [
    (26, UPGRADE, "Invalid update version 26 for feature metadata.version. Can't downgrade the version of this "
                  "feature without setting the upgrade type to either safe or unsafe downgrade."),
    (22, SAFE, "Invalid metadata.version 22. Refusing to perform the requested downgrade because it might delete "
               "metadata information."),
    (22, UNSAFE, "Invalid metadata.version 22. Unsafe metadata downgrade is not supported in this version."),
    (-1, SAFE, "Invalid update version -1 for feature metadata.version. A feature version cannot be less than 0."),
    (27, 0, "Invalid update version 27 for feature metadata.version. The controller does not support the given "
            "upgrade type."),
])
def test_metadata_version_downgrade_rules(level, kind, message):
    result = update_features(context(cluster("4.1-IV1")), update(("metadata.version", level, kind)))
    assert outcome(result) == refused(message) and result.records == []


def test_safe_downgrade_across_unchanged_levels_and_upgrade():
    image = cluster("4.1-IV1")
    down = update_features(context(image), update(("metadata.version", 24, SAFE)))
    assert outcome(down) == (ErrorCode.none, None) and down.records == [feature("metadata.version", 24)]
    assert replayed(image, down).metadata_version == 24
    up = update_features(context(image), update(("metadata.version", 30, UPGRADE)))
    assert up.records == [feature("metadata.version", 30)]
    newer = update_features(context(image), update(("group.version", 1, SAFE), ("transaction.version", 2, SAFE),
                                                   ("metadata.version", 28, SAFE)))
    assert outcome(newer) == refused("Invalid update version 28 for feature metadata.version. "
                                     "Can't downgrade to a newer version.")
    assert newer.records == []  # the first two passed, but nothing is written


def test_validate_only_writes_nothing_not_even_safety_records():
    result = update_features(context(cluster("4.0-IV3")), update((ELR, 1, UPGRADE), validate_only=True))
    assert outcome(result) == (ErrorCode.none, None) and result.records == []


def test_kraft_version_is_the_raft_layers():
    image = cluster("4.1-IV1")
    same = update_features(context(image), update(("kraft.version", 0, UPGRADE)))
    assert outcome(same) == (ErrorCode.none, None) and same.records == [m.NoOpRecordV0()]
    assert outcome(update_features(context(image), update(("kraft.version", 1, UPGRADE))))[0] == \
        ErrorCode.invalid_update_version
    image = dataclasses.replace(image, quorum=QuorumImage(kraft_version=1))
    assert outcome(update_features(context(image), update(("kraft.version", 0, SAFE)))) == refused(
        "Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature.")


def test_a_feature_named_twice_takes_the_last_level():
    result = update_features(context(cluster("4.0-IV3")), update(("group.version", 0, SAFE), ("group.version", 1, UPGRADE)))
    assert result.records == [feature("group.version", 1)]


def test_legacy_results_and_error_response():
    req = update(("group.version", 1, UPGRADE), ("transaction.version", 2, UPGRADE))
    ok = update_features(context(cluster("4.1-IV1")), req)
    assert [(r.feature, r.error_code, r.error_message) for r in legacy_results(req, ok.response)] == [
        ("group.version", ErrorCode.none, "NONE"), ("transaction.version", ErrorCode.none, "NONE")]
    failed = COMMANDS[0].error_response(req, ErrorCode.not_controller, None)
    assert failed.error_code == ErrorCode.not_controller and legacy_results(req, failed) == ()
