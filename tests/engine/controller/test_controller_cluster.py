"""BrokerRegistration, UnregisterBroker, ControllerRegistration and DescribeCluster, in the rhythm
of Kafka's ClusterControlManagerTest: command, response, replay, state. The rules are Kafka
4.1.2's (read off its ClusterControlManager and QuorumController classes)."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from engine.controller import cluster_control as cc
from engine.controller.broker_heartbeat_manager import new_soft_state
from engine.controller.controller_config import ControllerConfig
from engine.controller.controller_result import ApiError
from engine.image.metadata_version import BY_NAME
from engine.records.kio_codec import ErrorCode, i16, i32, i64, protocol_module, u16
from tests.controller_helpers import bootstrapped, context, new_uuid, replayed, request

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"
CONFIG = ControllerConfig(node_id=3000, cluster_id=CLUSTER)
_REQ = protocol_module("broker_registration", 4, "request")
_CREQ = protocol_module("controller_registration", 0, "request")
ALL_FEATURES = ("metadata.version", "kraft.version", "group.version", "transaction.version",
                "eligible.leader.replicas.version", "share.version", "streams.version")


def features(**ranges: tuple[int, int]) -> tuple:
    """Every known feature with a wide range (metadata.version 7..30), overridden by ``ranges``."""
    wide = {name: (0, 5) for name in ALL_FEATURES}
    wide["metadata.version"] = (7, 30)
    wide.update({k.replace("_", "."): v for k, v in ranges.items()})
    return tuple(_REQ.Feature(name=n, min_supported_version=i16(lo), max_supported_version=i16(hi))
                 for n, (lo, hi) in wide.items() if lo is not None)


def registration(broker_id: int = 1, incarnation: uuid.UUID | None = None, log_dirs: tuple | None = None,
                 cluster_id: str = CLUSTER, previous_broker_epoch: int = -1, feature_list: tuple | None = None,
                 rack: str | None = None):
    return request("broker_registration", 4, broker_id=i32(broker_id), cluster_id=cluster_id,
                   incarnation_id=incarnation or new_uuid(broker_id),
                   listeners=(_REQ.Listener(name="PLAINTEXT", host=f"b{broker_id}", port=u16(9092 + broker_id),
                                            security_protocol=i16(0)),),
                   features=features() if feature_list is None else feature_list, rack=rack,
                   log_dirs=(new_uuid(1000 + broker_id),) if log_dirs is None else log_dirs,
                   previous_broker_epoch=i64(previous_broker_epoch))


def register(image, req, soft, now_ms: int = 1_000_000, next_offset: int | None = None):
    ctx = context(image, now_ms=now_ms, next_offset=next_offset, config=CONFIG, soft=soft)
    result = cc.register_broker(ctx, req)
    return result, replayed(image, result, ctx.next_offset)


def refused(image, req, soft, now_ms: int = 1_000_000) -> ApiError:
    with pytest.raises(ApiError) as caught:
        cc.register_broker(context(image, now_ms=now_ms, config=CONFIG, soft=soft), req)
    return caught.value


# -- a first registration ------------------------------------------------------------------

def test_a_new_broker_registers_fenced_with_the_offset_of_its_record_as_epoch():
    image, soft = bootstrapped("4.1-IV1"), new_soft_state(CONFIG)
    result, after = register(image, registration(1, rack="r1"), soft, next_offset=42)
    assert result.response.error_code == ErrorCode.none and result.response.broker_epoch == 42
    [record] = result.records
    assert (record.type_name, record.version) == ("REGISTER_BROKER_RECORD", 3)
    broker = after.cluster.brokers[1]
    assert (broker.epoch, broker.fenced, broker.in_controlled_shutdown, broker.rack) == (42, True, False, "r1")
    assert broker.directories == (new_uuid(1001),)
    assert [e.name for e in broker.endpoints] == ["PLAINTEXT"] and broker.endpoints[0].port == 9093
    assert {f.name for f in broker.supported_features} == set(ALL_FEATURES)
    # a registration is no contact: no session yet (Kafka 4.1's tracker)
    assert soft.heartbeats.contact_ms(1, 42) is None


@pytest.mark.parametrize("release, version, with_dirs", [
    ("3.3-IV3", 1, False), ("3.7-IV2", 3, True), ("4.1-IV1", 3, True), ("4.3-IV0", 4, True)])
def test_register_broker_record_version_follows_metadata_version(release, version, with_dirs):
    image, soft = bootstrapped(release), new_soft_state(CONFIG)
    result, after = register(image, registration(1), soft)
    [record] = result.records
    assert record.version == version == context(image).versions.register_broker
    assert after.cluster.brokers[1].directories == ((new_uuid(1001),) if with_dirs else ())
    assert BY_NAME[release].level in (7, 17, 27, 30)


# -- validations ---------------------------------------------------------------------------

def test_another_cluster_id_is_refused():
    error = refused(bootstrapped(), registration(1, cluster_id="other"), new_soft_state(CONFIG))
    assert error.code == ErrorCode.inconsistent_cluster_id
    reply = cc.registration_error(registration(1), error.code, error.message)
    assert (reply.error_code, reply.broker_epoch) == (ErrorCode.inconsistent_cluster_id, -1)


def test_a_zk_broker_is_refused():
    req = dataclasses.replace(registration(1), is_migrating_zk_broker=True)
    assert refused(bootstrapped(), req, new_soft_state(CONFIG)).code == ErrorCode.broker_id_not_registered


@pytest.mark.parametrize("log_dirs, why", [
    ((), "No directories"),
    ((uuid.UUID(int=99),), "Reserved"),
    ((None,), "Reserved"),  # MIGRATING reads as None
    ((new_uuid(7), new_uuid(7)), "Duplicate"),
])
def test_log_directories_are_checked_from_3_7_iv2(log_dirs, why):
    error = refused(bootstrapped("3.7-IV2"), registration(1, log_dirs=log_dirs), new_soft_state(CONFIG))
    assert error.code == ErrorCode.invalid_registration and why in error.message


def test_log_directories_are_not_checked_before_3_7_iv2():
    result, after = register(bootstrapped("3.7-IV1"), registration(1, log_dirs=()), new_soft_state(CONFIG))
    assert result.response.error_code == ErrorCode.none and after.cluster.brokers[1].directories == ()


def test_a_directory_of_another_broker_is_refused():
    soft = new_soft_state(CONFIG)
    _, image = register(bootstrapped(), registration(1, log_dirs=(new_uuid(50),)), soft)
    error = refused(image, registration(2, log_dirs=(new_uuid(51), new_uuid(50))), soft)
    assert error.code == ErrorCode.invalid_registration and "Broker 1" in error.message
    # the same broker may name its own directory again (a new incarnation keeps its disks)
    result, _ = register(image, registration(1, incarnation=new_uuid(77), log_dirs=(new_uuid(50),)), soft)
    assert result.response.error_code == ErrorCode.none


@pytest.mark.parametrize("ranges, code", [
    ({"metadata_version": (7, 26)}, ErrorCode.unsupported_version),  # finalized 27 outside the range
    ({"group_version": (2, 3)}, ErrorCode.unsupported_version),
    ({"group_version": (None, None)}, ErrorCode.unsupported_version),  # finalized non-zero, not named
    ({"metadata_version": (None, None)}, ErrorCode.invalid_registration),  # must name metadata.version
    ({"kraft_version": (1, 1)}, ErrorCode.unsupported_version),  # kraft.version counts, 0 when unset
    ({"share_version": (1, 1)}, ErrorCode.unsupported_version),  # unfinalized is level 0
])
def test_every_finalized_feature_must_lie_in_the_brokers_range(ranges, code):
    error = refused(bootstrapped("4.1-IV1"), registration(1, feature_list=features(**ranges)), new_soft_state(CONFIG))
    assert error.code == code


def test_unnamed_features_finalized_at_zero_need_nothing():
    only = features(group_version=(None, None), transaction_version=(None, None),
                    eligible_leader_replicas_version=(None, None), kraft_version=(None, None),
                    share_version=(None, None), streams_version=(None, None))
    result, _ = register(bootstrapped("3.7-IV2"), registration(1, feature_list=only), new_soft_state(CONFIG))
    assert result.response.error_code == ErrorCode.none


# -- incarnations --------------------------------------------------------------------------

def _unfenced(image, soft, broker_id: int, now_ms: int = 1_000_000):
    """The broker heartbeats until unfenced (no topics: no partition effects)."""
    epoch = image.cluster.brokers[broker_id].epoch
    hb = request("broker_heartbeat", 1, broker_id=i32(broker_id), broker_epoch=i64(epoch),
                 current_metadata_offset=i64(image.provenance.last_offset), want_fence=False, want_shut_down=False)
    ctx = context(image, now_ms=now_ms, config=CONFIG, soft=soft)
    result = cc.broker_heartbeat(ctx, hb)
    assert result.response.is_fenced is False
    return replayed(image, result, ctx.next_offset)


def test_the_same_incarnation_amends_and_keeps_epoch_and_state():
    soft = new_soft_state(CONFIG)
    _, image = register(bootstrapped(), registration(1), soft, next_offset=20)
    image = _unfenced(image, soft, 1)
    result, after = register(image, registration(1, rack="r9"), soft, next_offset=90)
    [record] = result.records
    assert (record.broker_epoch, record.fenced, result.response.broker_epoch) == (20, False, 20)
    broker = after.cluster.brokers[1]
    assert (broker.epoch, broker.fenced, broker.rack) == (20, False, "r9")
    # caught up means the amended record's offset now
    assert soft.heartbeats.registration_offset(1, 20) == 90


def test_a_new_incarnation_with_a_live_session_is_a_duplicate():
    soft = new_soft_state(CONFIG)
    _, image = register(bootstrapped(), registration(1), soft, next_offset=20)
    image = _unfenced(image, soft, 1, now_ms=1_000_000)
    error = refused(image, registration(1, incarnation=new_uuid(99)), soft, now_ms=1_009_000)
    assert error.code == ErrorCode.duplicate_broker_registration
    # once the session expired (last contact + 9000 < now) the new incarnation may register
    result, after = register(image, registration(1, incarnation=new_uuid(99)), soft, now_ms=1_009_001, next_offset=70)
    assert result.response.broker_epoch == 70
    broker = after.cluster.brokers[1]
    assert (broker.epoch, broker.incarnation_id, broker.fenced) == (70, new_uuid(99), True)


def test_a_new_incarnation_of_a_fenced_broker_without_session_registers_at_once():
    soft = new_soft_state(CONFIG)
    _, image = register(bootstrapped(), registration(1), soft, next_offset=20)
    result, after = register(image, registration(1, incarnation=new_uuid(99), previous_broker_epoch=20), soft,
                             next_offset=30)
    assert result.response.broker_epoch == 30 and after.cluster.brokers[1].incarnation_id == new_uuid(99)


# -- UnregisterBroker ----------------------------------------------------------------------

def test_unregister_removes_the_broker_at_its_epoch():
    soft = new_soft_state(CONFIG)
    _, image = register(bootstrapped(), registration(1), soft, next_offset=20)
    ctx = context(image, config=CONFIG, soft=soft)
    result = cc.unregister_broker(ctx, request("unregister_broker", 0, broker_id=i32(1)))
    [record] = result.records
    assert (record.type_name, record.broker_epoch) == ("UNREGISTER_BROKER_RECORD", 20)
    assert result.response.error_code == ErrorCode.none
    after = replayed(image, result)
    assert 1 not in after.cluster.brokers
    with pytest.raises(ApiError) as caught:
        cc.unregister_broker(context(after, config=CONFIG, soft=soft), request("unregister_broker", 0, broker_id=i32(1)))
    assert caught.value.code == ErrorCode.broker_id_not_registered
    assert cc.unregister_error(None, caught.value.code, caught.value.message).error_message == caught.value.message


# -- ControllerRegistration and DescribeCluster ---------------------------------------------

def controller_registration(controller_id: int, host: str):
    return request("controller_registration", 0, controller_id=i32(controller_id), incarnation_id=new_uuid(controller_id),
                   zk_migration_ready=True,
                   listeners=(_CREQ.Listener(name="CONTROLLER", host=host, port=u16(9093), security_protocol=i16(0)),
                              _CREQ.Listener(name="INTERNAL", host=host, port=u16(9094), security_protocol=i16(0))),
                   features=(_CREQ.Feature(name="metadata.version", min_supported_version=i16(7),
                                           max_supported_version=i16(27)),))


def test_controller_registration_writes_its_record_and_describe_cluster_lists_it():
    image = bootstrapped("3.7-IV0")
    for node in (3000, 3001):
        result = cc.register_controller(context(image, config=CONFIG), controller_registration(node, f"c{node}"))
        [record] = result.records
        assert (record.type_name, record.version, record.zk_migration_ready) == ("REGISTER_CONTROLLER_RECORD", 0, False)
        assert result.atomic and result.response.error_code == ErrorCode.none
        image = replayed(image, result)
    assert image.cluster.controllers[3001].endpoints[0].host == "c3001"
    describe = request("describe_cluster", 2, include_cluster_authorized_operations=False, endpoint_type=2,
                       include_fenced_brokers=False)
    reply = cc.describe_cluster(context(image, config=CONFIG), describe)
    assert reply.records == ()
    response = reply.response
    assert (response.error_code, response.cluster_id, response.controller_id, response.endpoint_type) == (
        ErrorCode.none, CLUSTER, 3000, 2)
    assert [(b.broker_id, b.host, b.port, b.rack) for b in response.brokers] == [
        (3000, "c3000", 9093, None), (3001, "c3001", 9093, None)]
    # an active controller not registered yet is not named
    other = ControllerConfig(node_id=3002, cluster_id=CLUSTER)
    assert cc.describe_cluster(context(image, config=other), describe).response.controller_id == -1


def test_controller_registration_and_describe_cluster_need_3_7_iv0():
    image = bootstrapped("3.6-IV2")
    for call, req in ((cc.register_controller, controller_registration(3000, "c")),
                      (cc.describe_cluster, request("describe_cluster", 2, include_cluster_authorized_operations=False,
                                                    endpoint_type=2, include_fenced_brokers=False))):
        with pytest.raises(ApiError) as caught:
            call(context(image, config=CONFIG), req)
        assert caught.value.code == ErrorCode.unsupported_version


@pytest.mark.parametrize("endpoint_type, code", [(1, ErrorCode.mismatched_endpoint_type),
                                                 (5, ErrorCode.unsupported_endpoint_type)])
def test_describe_cluster_on_a_controller_answers_for_controllers_only(endpoint_type, code):
    req = request("describe_cluster", 2, include_cluster_authorized_operations=False, endpoint_type=endpoint_type,
                  include_fenced_brokers=True)
    with pytest.raises(ApiError) as caught:
        cc.describe_cluster(context(bootstrapped(), config=CONFIG), req)
    assert caught.value.code == code
    assert cc.describe_error(req, code, caught.value.message).error_code == code


def test_the_command_table_entries():
    by_key = {c.api_key: c for c in cc.COMMANDS}
    assert {k: (c.min_version, c.max_version) for k, c in by_key.items()} == {
        62: (0, 4), 63: (0, 2), 64: (0, 0), 70: (0, 0), 60: (0, 2)}
    assert by_key[60].read_only and not by_key[62].read_only
    assert cc.PERIODIC == [cc.expire_sessions]


@pytest.mark.parametrize("release, recorded", [("4.3-IV0", True), ("4.1-IV1", False)])
def test_cordoned_log_dirs_in_a_heartbeat_are_recorded_from_4_3(release: str, recorded: bool) -> None:
    """KIP-1066: a v2 heartbeat naming cordoned directories changes the registration (record v3),
    once; before 4.3-IV0 there is nowhere to keep them."""
    image, soft = bootstrapped(release), new_soft_state(CONFIG)
    _, image = register(image, registration(1), soft)
    epoch = image.cluster.brokers[1].epoch
    directory = new_uuid(1001)
    beat = request("broker_heartbeat", 2, broker_id=i32(1), broker_epoch=i64(epoch), current_metadata_offset=i64(epoch),
                   want_fence=True, want_shut_down=False, offline_log_dirs=(), cordoned_log_dirs=(directory,))
    result = cc.broker_heartbeat(context(image, config=CONFIG, soft=soft), beat)
    assert result.response.error_code == ErrorCode.none
    changes = [r for r in result.records if r.type_name == "BROKER_REGISTRATION_CHANGE_RECORD"]
    if not recorded:
        assert changes == []
        return
    assert [(r.__version__, r.cordoned_log_dirs) for r in changes] == [(3, (directory,))]
    image = replayed(image, result)
    assert image.cluster.brokers[1].cordoned_directories == (directory,)
    again = cc.broker_heartbeat(context(image, config=CONFIG, soft=soft), beat)
    assert not [r for r in again.records if r.type_name == "BROKER_REGISTRATION_CHANGE_RECORD"]
