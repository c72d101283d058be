"""Delegation tokens (KIP-48) on the controller: CreateDelegationToken (38), RenewDelegationToken
(39), ExpireDelegationToken (40) and the expiry sweep, in Kafka's DelegationTokenControlManagerTest
rhythm (command, response, replay, state). The HMACs are values Kafka 4.1.2's own
DelegationTokenControlManager.createHmac gave (jshell, by reflection) for the same secret and id."""

from __future__ import annotations

import dataclasses
import random
from datetime import timedelta
from types import SimpleNamespace

import pytest

from engine.common.kafka_uuid import kafka_to_uuid
from engine.controller.controller_config import ControllerConfig
from engine.controller.controller_result import ApiError, ControllerResult
from engine.controller.delegation_token_control import (
    COMMANDS, MAX_RECORDS_PER_SWEEP, PERIODIC, create_delegation_token, create_error_response,
    expire_delegation_token, expire_error_response, new_soft_state, new_token_id, on_activation,
    renew_delegation_token, renew_error_response, sweep_expired_tokens, token_hmac)
from engine.image.delegation_token_image import DelegationTokenData
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, encode_entity, i64, protocol_module
from engine.records.metadata_record_serde import decode_metadata_value, encode_metadata_value
from tests.controller_helpers import bootstrapped, context, replayed, request

HOUR, DAY = 3_600_000, 86_400_000
SECRET = "s3cr3t-key"
CONFIG = ControllerConfig(delegation_token_secret_key=SECRET)  # Kafka's defaults: 7 days, 1 day, 1 hour
NOW = 1_700_000_000_000
_renewer = protocol_module("create_delegation_token", 3, "request").CreatableRenewers

# DelegationTokenControlManager.createHmac (Kafka 4.1.2, jshell via reflection), hex:
#   secret "s3cr3t-key", token id "E0o6n9ohRVqSbtT5WcA-Fw"
KAFKA_HMAC = ("4e1fb6ccd5ff642d46774d39306f83157765d79525317beb2351f679124bfb58"
              "7090b880c95b81da29e6ba9f772e05bcb4776b5bec3cd2c0cfbc995da7fe84d0")
#   secret "pässwörd", token id "tökén-ïd" (both UTF-8)
KAFKA_HMAC_UTF8 = ("2d9a9f3deac79d2a0bb8e72f2a5dd6daf300599037fb605b96bbfec8945648f5"
                   "9fb112483b2a24f1271b301a59f6c5ba1fc309e67dc50b0c8bdd30b31609e27e")


def ms(when) -> int:
    """A response's datetime_i64 as kio writes it."""
    return round(when.timestamp() * 1000)


def ctx(image: MetadataImage, principal: str = "User:alice", now_ms: int = NOW, config: ControllerConfig = CONFIG,
        soft=None):
    soft = soft if soft is not None else SimpleNamespace(rng=random.Random(7))
    return dataclasses.replace(context(image, now_ms=now_ms, config=config, soft=soft), principal=principal)


def create(image, principal="User:alice", owner=None, renewers=("bob",), max_lifetime_ms=-1, **kw):
    owner_type, owner_name = owner.split(":", 1) if owner else (None, None)
    return create_delegation_token(ctx(image, principal, **kw), request(
        "create_delegation_token", 3, owner_principal_type=owner_type, owner_principal_name=owner_name,
        renewers=tuple(_renewer(principal_type="User", principal_name=r) for r in renewers),
        max_lifetime=timedelta(milliseconds=max_lifetime_ms)))


def renew(image, hmac, principal="User:alice", period_ms=-1, **kw):
    return renew_delegation_token(ctx(image, principal, **kw), request(
        "renew_delegation_token", 2, hmac=hmac, renew_period=timedelta(milliseconds=period_ms)))


def expire(image, hmac, principal="User:alice", period_ms=-1, **kw):
    return expire_delegation_token(ctx(image, principal, **kw), request(
        "expire_delegation_token", 2, hmac=hmac, expiry_time_period=timedelta(milliseconds=period_ms)))


def with_token(release: str = "4.1-IV1", **kw):
    """An image holding one token created by alice at NOW (renewer bob), and its HMAC."""
    image = bootstrapped(release)
    result = create(image, **kw)
    assert result.response.error_code == ErrorCode.none
    return replayed(image, result), result.response.hmac


def token_of(image: MetadataImage):
    """The image's one token, as its DelegationTokenRecord."""
    (token,) = image.delegation_tokens.values()
    return token.to_record()


# -- facts ------------------------------------------------------------------------------------------

def test_the_hmac_is_kafkas():
    assert token_hmac(SECRET, "E0o6n9ohRVqSbtT5WcA-Fw").hex() == KAFKA_HMAC
    assert token_hmac("pässwörd", "tökén-ïd").hex() == KAFKA_HMAC_UTF8


def test_token_ids_are_kafka_random_uuids_from_the_rng():
    ids = [new_token_id(random.Random(1)) for _ in range(2)]
    assert ids[0] == ids[1]  # the seeded rng decides: the core stays deterministic
    text = new_token_id(random.Random(2))
    u = kafka_to_uuid(text)  # Kafka's Uuid.toString form: 22 URL-safe base64 characters
    assert len(text) == 22 and u.version == 4 and not text.startswith("-")
    # an id already in use is drawn again
    assert new_token_id(random.Random(2), {text}) != text


def test_commands_are_the_versions_kafkas_controller_serves():
    # ApiKeys.*_DELEGATION_TOKEN oldestVersion..latestVersion in Kafka 4.1.2; 41 (Describe) is not the controller's
    assert {(c.api_key, c.min_version, c.max_version) for c in COMMANDS} == {(38, 1, 3), (39, 1, 2), (40, 1, 2)}
    assert not any(c.read_only for c in COMMANDS)
    assert PERIODIC == [sweep_expired_tokens]


# -- CreateDelegationToken ------------------------------------------------------------------------------

def test_create_replay_then_state():
    image = bootstrapped()
    result = create(image, renewers=("bob", "carol"))
    r = result.response
    assert r.error_code == ErrorCode.none and result.atomic
    assert (r.principal_type, r.principal_name) == ("User", "alice")
    assert (r.token_requester_principal_type, r.token_requester_principal_name) == ("User", "alice")
    # max lifetime -1: the configured 7 days; expiry: the configured 1 day
    assert (ms(r.issue_timestamp), ms(r.expiry_timestamp), ms(r.max_timestamp)) == (NOW, NOW + DAY, NOW + 7 * DAY)
    assert r.hmac == token_hmac(SECRET, r.token_id) and len(r.hmac) == 64
    assert result.records == [m.DelegationTokenRecordV0(
        owner="User:alice", requester="User:alice", renewers=("User:bob", "User:carol"), issue_timestamp=i64(NOW),
        max_timestamp=i64(NOW + 7 * DAY), expiration_timestamp=i64(NOW + DAY), token_id=r.token_id)]
    assert decode_metadata_value(encode_metadata_value(result.records[0])) == result.records[0]
    encode_entity(r)  # kio writes it

    image = replayed(image, result)
    assert image.delegation_tokens == {r.token_id: DelegationTokenData.from_record(result.records[0])}
    # a second token on the new state gets another id
    second = create(image)
    assert second.response.token_id != r.token_id
    assert len(replayed(image, second).delegation_tokens) == 2


def test_create_for_another_owner():
    result = create(bootstrapped(), principal="User:admin", owner="User:alice", renewers=())
    r = result.response
    assert (r.principal_type, r.principal_name) == ("User", "alice")
    assert (r.token_requester_principal_type, r.token_requester_principal_name) == ("User", "admin")
    assert (result.records[0].owner, result.records[0].requester, result.records[0].renewers) == (
        "User:alice", "User:admin", ())


@pytest.mark.parametrize("max_lifetime_ms, max_ms, expiry_ms", [
    (-1, 7 * DAY, DAY),  # the server's default
    (0, 7 * DAY, DAY),  # not positive: the default
    (3 * DAY, 3 * DAY, DAY),  # shorter than the configured max
    (30 * DAY, 7 * DAY, DAY),  # longer: capped by the configured max
    (HOUR, HOUR, HOUR),  # shorter than the expiry time: the expiry is capped by the max
])
def test_create_lifetimes(max_lifetime_ms, max_ms, expiry_ms):
    record = create(bootstrapped(), max_lifetime_ms=max_lifetime_ms).records[0]
    assert (record.max_timestamp, record.expiration_timestamp) == (NOW + max_ms, NOW + expiry_ms)


def test_create_with_a_renewer_that_is_not_a_user():
    req = request("create_delegation_token", 3, owner_principal_type=None, owner_principal_name=None,
                  renewers=(_renewer(principal_type="Group", principal_name="ops"),),
                  max_lifetime=timedelta(milliseconds=-1))
    result = create_delegation_token(ctx(bootstrapped()), req)
    r = result.response
    assert r.error_code == ErrorCode.invalid_principal_type and result.records == []
    assert (r.principal_name, r.token_requester_principal_name, r.token_id, r.hmac) == ("alice", "alice", "", b"")


# -- refusals of every request ---------------------------------------------------------------------------

def all_three(image, hmac=b"x" * 64, **kw):
    return [create(image, **kw), renew(image, hmac, **kw), expire(image, hmac, **kw)]


def test_disabled_without_a_secret():
    image, hmac = with_token()
    for result in all_three(image, hmac, config=ControllerConfig()):
        assert result.response.error_code == ErrorCode.delegation_token_auth_disabled and result.records == []
    r = create(image, principal="User:bob", config=ControllerConfig()).response
    # the create answer still names the owner and requester, as Kafka's
    assert (r.principal_name, r.token_requester_principal_name, ms(r.issue_timestamp)) == ("bob", "bob", 0)


@pytest.mark.parametrize("release, code", [
    ("3.3-IV3", ErrorCode.unsupported_version), ("3.6-IV1", ErrorCode.unsupported_version),
    ("3.6-IV2", ErrorCode.none), ("4.3-IV0", ErrorCode.none)])
def test_metadata_version_gate(release, code):
    image = bootstrapped(release)
    result = create(image)
    assert result.response.error_code == code and len(result.records) == (code == ErrorCode.none)
    if code != ErrorCode.none:
        assert [r.response.error_code for r in all_three(image)] == [code] * 3


def test_error_responses_for_a_refused_request():
    r = create_error_response(None, ErrorCode.not_controller, "gone")
    assert r.error_code == ErrorCode.not_controller
    # CreateDelegationTokenRequest.getErrorResponse: anonymous principals, timestamps -1, no token
    assert (r.principal_type, r.principal_name, r.token_requester_principal_name) == ("User", "ANONYMOUS", "ANONYMOUS")
    assert (ms(r.issue_timestamp), ms(r.expiry_timestamp), ms(r.max_timestamp), r.token_id, r.hmac) == (
        -1, -1, -1, "", b"")
    assert encode_entity(r)
    for response in (renew_error_response(None, ErrorCode.not_controller, None),
                     expire_error_response(None, ErrorCode.not_controller, None)):
        assert response.error_code == ErrorCode.not_controller and ms(response.expiry_timestamp) == 0
        assert encode_entity(response)


# -- RenewDelegationToken ---------------------------------------------------------------------------------

def test_renew_replay_then_state():
    image, hmac = with_token()
    later = NOW + HOUR
    result = renew(image, hmac, now_ms=later)
    assert result.response.error_code == ErrorCode.none and result.atomic
    assert ms(result.response.expiry_timestamp) == later + DAY
    old = token_of(image)
    assert result.records == [dataclasses.replace(old, expiration_timestamp=i64(later + DAY))]
    image = replayed(image, result)
    assert token_of(image).expiration_timestamp == later + DAY and token_of(image).issue_timestamp == NOW
    # a renewer renews too, with a shorter period of its own
    again = renew(image, hmac, principal="User:bob", period_ms=HOUR, now_ms=later)
    assert ms(again.response.expiry_timestamp) == later + HOUR
    assert token_of(replayed(image, again)).expiration_timestamp == later + HOUR


@pytest.mark.parametrize("period_ms, expiry_after_ms", [(-1, DAY), (0, DAY), (HOUR, HOUR), (3 * DAY, DAY)])
def test_renew_period(period_ms, expiry_after_ms):
    image, hmac = with_token()
    assert ms(renew(image, hmac, period_ms=period_ms).response.expiry_timestamp) == NOW + expiry_after_ms


def test_renew_never_passes_the_max_timestamp():
    week = dataclasses.replace(CONFIG, delegation_token_expiry_time_ms=7 * DAY)
    image, hmac = with_token(config=week)  # it lives its whole max lifetime unless expired
    near_end = NOW + 7 * DAY - HOUR
    assert ms(renew(image, hmac, now_ms=near_end, config=week).response.expiry_timestamp) == NOW + 7 * DAY


def test_renew_refusals():
    image, hmac = with_token()
    assert renew(image, b"\0" * 64).response.error_code == ErrorCode.delegation_token_not_found
    assert renew(image, hmac, principal="User:carol").response.error_code == ErrorCode.delegation_token_owner_mismatch
    # the owner's name under another principal type is another principal
    assert renew(image, hmac, principal="Group:alice").response.error_code == ErrorCode.delegation_token_owner_mismatch
    # a token lives through its expiry millisecond; after it, expired (checked before the owner)
    assert renew(image, hmac, now_ms=NOW + DAY).response.error_code == ErrorCode.none
    for who in ("User:alice", "User:carol"):
        result = renew(image, hmac, principal=who, now_ms=NOW + DAY + 1)
        assert result.response.error_code == ErrorCode.delegation_token_expired and result.records == []
        assert ms(result.response.expiry_timestamp) == 0


def test_another_secret_finds_no_token():
    image, hmac = with_token()
    other = ControllerConfig(delegation_token_secret_key="another")
    assert renew(image, hmac, config=other).response.error_code == ErrorCode.delegation_token_not_found


# -- ExpireDelegationToken --------------------------------------------------------------------------------

def test_expire_at_once_replay_then_state():
    image, hmac = with_token()
    result = expire(image, hmac, principal="User:bob", period_ms=-1, now_ms=NOW + 5)
    assert result.response.error_code == ErrorCode.none and ms(result.response.expiry_timestamp) == NOW + 5
    assert result.records == [m.RemoveDelegationTokenRecordV0(token_id=token_of(image).token_id)]
    image = replayed(image, result)
    assert image.delegation_tokens == {}
    assert expire(image, hmac).response.error_code == ErrorCode.delegation_token_not_found


def test_expire_later_replay_then_state():
    image, hmac = with_token()
    result = expire(image, hmac, period_ms=HOUR)
    assert ms(result.response.expiry_timestamp) == NOW + HOUR
    image = replayed(image, result)
    assert token_of(image).expiration_timestamp == NOW + HOUR and token_of(image).max_timestamp == NOW + 7 * DAY
    # a period of 0 expires it now; the sweep removes it once now has passed
    now = replayed(image, expire(image, hmac, period_ms=0))
    assert token_of(now).expiration_timestamp == NOW
    # capped by the max timestamp
    assert ms(expire(image, hmac, period_ms=30 * DAY).response.expiry_timestamp) == NOW + 7 * DAY


def test_expire_refusals():
    image, hmac = with_token()
    gone = NOW + DAY + 1
    assert expire(image, b"\1" * 64).response.error_code == ErrorCode.delegation_token_not_found
    # the owner check comes before the expiry check
    for now in (NOW, gone):
        assert expire(image, hmac, principal="User:carol", now_ms=now).response.error_code == \
            ErrorCode.delegation_token_owner_mismatch
    result = expire(image, hmac, period_ms=HOUR, now_ms=gone)
    assert result.response.error_code == ErrorCode.delegation_token_expired and result.records == []
    # but an expired token is still removed at once on request
    removed = expire(image, hmac, period_ms=-1, now_ms=gone)
    assert removed.response.error_code == ErrorCode.none and len(removed.records) == 1


# -- the expiry sweep -------------------------------------------------------------------------------------

def tokens(image: MetadataImage, expirations: list[int], max_ms: int = NOW + 10 * DAY) -> MetadataImage:
    records = [m.DelegationTokenRecordV0(
        owner="User:alice", requester="User:alice", renewers=(), issue_timestamp=i64(0), max_timestamp=i64(max_ms),
        expiration_timestamp=i64(e), token_id=f"token-{i:05d}") for i, e in enumerate(expirations)]
    return replayed(image, ControllerResult(records, None))


def test_sweep_on_an_injected_clock():
    soft = new_soft_state(CONFIG)
    image = tokens(bootstrapped(), [NOW, NOW + HOUR, NOW + 3 * HOUR])
    on_activation(soft, image, NOW)

    def poll(at):
        return sweep_expired_tokens(ctx(image, now_ms=at, soft=soft))

    assert poll(NOW) is None  # the first poll schedules the first sweep an interval later
    assert soft.delegation_token_sweep.next_sweep_ms == NOW + HOUR
    assert poll(NOW + HOUR - 1) is None  # not due
    result = poll(NOW + HOUR)  # due: token-00000 expired at NOW; token-00001 lives through NOW + HOUR
    assert result.records == [m.RemoveDelegationTokenRecordV0(token_id="token-00000")] and not result.atomic
    image = replayed(image, result)
    assert set(image.delegation_tokens) == {"token-00001", "token-00002"}
    assert poll(NOW + 2 * HOUR - 1) is None
    result = poll(NOW + 2 * HOUR)
    assert [r.token_id for r in result.records] == ["token-00001"]
    image = replayed(image, result)
    # nothing expired: no records, the next one an interval later
    assert poll(NOW + 3 * HOUR) is None and soft.delegation_token_sweep.next_sweep_ms == NOW + 4 * HOUR
    # a new active controller starts the clock again
    on_activation(soft, image, NOW + 10 * HOUR)
    assert poll(NOW + 10 * HOUR) is None and soft.delegation_token_sweep.next_sweep_ms == NOW + 11 * HOUR


def test_sweep_removes_at_most_a_thousand_then_runs_again_at_once():
    soft = new_soft_state(CONFIG)
    image = tokens(bootstrapped(), [0] * (MAX_RECORDS_PER_SWEEP + 5))
    soft.delegation_token_sweep.next_sweep_ms = NOW
    first = sweep_expired_tokens(ctx(image, soft=soft))
    assert len(first.records) == MAX_RECORDS_PER_SWEEP
    assert soft.delegation_token_sweep.next_sweep_ms == NOW  # more left: the next poll sweeps again
    image = replayed(image, first)
    second = sweep_expired_tokens(ctx(image, now_ms=NOW + 1, soft=soft))
    assert len(second.records) == 5 and soft.delegation_token_sweep.next_sweep_ms == NOW + 1 + HOUR
    assert replayed(image, second).delegation_tokens == {}


def test_sweep_by_max_timestamp_and_without_soft_state():
    image = tokens(bootstrapped(), [NOW + 20 * DAY], max_ms=NOW - 1)  # its max timestamp has passed
    soft = new_soft_state(CONFIG)
    soft.delegation_token_sweep.next_sweep_ms = NOW
    assert [r.token_id for r in sweep_expired_tokens(ctx(image, soft=soft)).records] == ["token-00000"]
    assert sweep_expired_tokens(context(image, now_ms=NOW)) is None  # no soft state: not the active controller


def test_create_with_an_owner_name_but_no_type_is_refused_whole():
    # KafkaPrincipal refuses a null type: Kafka answers the request as an unexpected error
    req = request("create_delegation_token", 3, owner_principal_type=None, owner_principal_name="alice",
                  renewers=(), max_lifetime=timedelta(milliseconds=-1))
    with pytest.raises(ApiError) as refused:
        create_delegation_token(ctx(bootstrapped()), req)
    assert refused.value.code == ErrorCode.unknown_server_error
