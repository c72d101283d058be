"""Every version of every request the controller serves reads as the version its command takes:
generated requests (kio's Hypothesis strategies) convert without error, and the renamed or
reshaped fields keep their meaning."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.controller.commands import all_commands
from engine.net.kafka_protocol import request_class
from engine.net.message_versions import convert_message
from engine.records.kio_codec import i8, i16, i32, i64, protocol_module
from engine.server.request_upgrades import SAFE_DOWNGRADE, UPGRADE, upgrade_fields

SERVED = [(key, version) for key, command in sorted(all_commands().items())
          for version in range(command.min_version, command.max_version + 1)]


def upgraded(api_key: int, version: int, request):
    newest = all_commands()[api_key].max_version
    return convert_message(request, request_class(api_key, newest), upgrade_fields(api_key, version, request))


@pytest.mark.parametrize("api_key, version", SERVED, ids=[f"{k}v{v}" for k, v in SERVED])
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_served_version_reads_as_its_commands_version(api_key: int, version: int, data) -> None:
    request = data.draw(st.from_type(request_class(api_key, version)))
    assert type(upgraded(api_key, version, request)).__version__ == all_commands()[api_key].max_version


def test_delete_topics_by_name_from_before_v6() -> None:
    old = protocol_module("delete_topics", 5, "request").DeleteTopicsRequest(topic_names=("a", "b"), timeout=i32(1))
    assert [(t.name, t.topic_id) for t in upgraded(20, 5, old).topics] == [("a", None), ("b", None)]


def test_alter_partition_v2_isr_without_broker_epochs() -> None:
    v2 = protocol_module("alter_partition", 2, "request")
    old = v2.AlterPartitionRequest(broker_id=i32(1), broker_epoch=i64(7), topics=(v2.TopicData(
        topic_id=None, partitions=(v2.PartitionData(partition_index=i32(0), leader_epoch=i32(3), new_isr=(i32(1), i32(2)),
                                                    leader_recovery_state=i8(0), partition_epoch=i32(4)),)),))
    partition = upgraded(56, 2, old).topics[0].partitions[0]
    assert [(b.broker_id, b.broker_epoch) for b in partition.new_isr_with_epochs] == [(1, -1), (2, -1)]
    assert (partition.leader_epoch, partition.partition_epoch) == (3, 4)


def test_update_features_v0_downgrade_flag_and_elect_leaders_v0() -> None:
    v0 = protocol_module("update_features", 0, "request")
    old = v0.UpdateFeaturesRequest(timeout=datetime.timedelta(seconds=1), feature_updates=(
        v0.FeatureUpdateKey(feature="group.version", max_version_level=i16(0), allow_downgrade=True),
        v0.FeatureUpdateKey(feature="metadata.version", max_version_level=i16(27), allow_downgrade=False)))
    assert [u.upgrade_type for u in upgraded(57, 0, old).feature_updates] == [SAFE_DOWNGRADE, UPGRADE]
    elect = protocol_module("elect_leaders", 0, "request").ElectLeadersRequest(topic_partitions=None,
                                                                                timeout=i32(1000))
    assert upgraded(43, 0, elect).election_type == 0


def test_create_delegation_token_before_v3_is_for_the_requester_and_answers_without_its_fields() -> None:
    v1 = protocol_module("create_delegation_token", 1, "request")
    old = v1.CreateDelegationTokenRequest(renewers=(v1.CreatableRenewers(principal_type="User", principal_name="bob"),),
                                          max_lifetime=datetime.timedelta(milliseconds=-1))
    new = upgraded(38, 1, old)
    assert (new.owner_principal_type, new.owner_principal_name) == (None, None)
    assert [(r.principal_type, r.principal_name) for r in new.renewers] == [("User", "bob")]
    v3 = protocol_module("create_delegation_token", 3, "response")
    answer = v3.CreateDelegationTokenResponse(
        error_code=i16(0), principal_type="User", principal_name="alice", token_requester_principal_type="User",
        token_requester_principal_name="alice", issue_timestamp=datetime.datetime.fromtimestamp(1, datetime.UTC),
        expiry_timestamp=datetime.datetime.fromtimestamp(2, datetime.UTC),
        max_timestamp=datetime.datetime.fromtimestamp(3, datetime.UTC), token_id="t", hmac=b"h",
        throttle_time=datetime.timedelta(0))
    back = convert_message(answer, protocol_module("create_delegation_token", 1, "response").CreateDelegationTokenResponse)
    assert (back.principal_name, back.token_id, back.hmac) == ("alice", "t", b"h")
