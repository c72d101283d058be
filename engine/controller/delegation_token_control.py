"""Delegation tokens (KIP-48): CreateDelegationToken (38), RenewDelegationToken (39) and
ExpireDelegationToken (40), and the periodic sweep of expired tokens, as Kafka 4.1's
DelegationTokenControlManager and ControllerApis do them.

A token is a ``DelegationTokenRecord`` in the log, a DelegationTokenData in the image
(``image.delegation_tokens``, by token id).
Its password is the HMAC-SHA512 of the token id keyed by ``delegation.token.secret.key`` (both
UTF-8), never written to the log: every node with the same secret derives it, and a client
names its token by that HMAC when it renews or expires it.

Kafka's rules, in Kafka's order:

- no secret: DELEGATION_TOKEN_AUTH_DISABLED; metadata.version below 3.6-IV2: UNSUPPORTED_VERSION;
- create: the owner is the request's owner principal when it names one, else the requester;
  every renewer must be a ``User`` (INVALID_PRINCIPAL_TYPE); the max timestamp is now + the
  configured max lifetime (or the request's, when positive and smaller); the expiry is now +
  the configured expiry time, capped by the max timestamp;
- renew: unknown HMAC is DELEGATION_TOKEN_NOT_FOUND; a token past its expiry or max timestamp
  is DELEGATION_TOKEN_EXPIRED; only the owner or a renewer may renew
  (DELEGATION_TOKEN_OWNER_MISMATCH); the new expiry is now + the configured expiry time (or the
  request's period, when positive and smaller), capped by the max timestamp;
- expire: unknown HMAC, then the owner/renewer check; a negative period removes the token at
  once (even an expired one); otherwise an expired token is DELEGATION_TOKEN_EXPIRED, else the
  expiry becomes now + the period, capped by the max timestamp (0 = expires now, removed by the
  next sweep);
- the sweep removes every token whose expiry or max timestamp has passed, at most 1000 per run
  (Kafka's MAX_RECORDS_PER_EXPIRATION); a full run is followed at once by another, else the next
  one is an expiry check interval later. Kafka 4.1 registers it whether or not tokens are on.

ControllerApis' own checks are not here: a token-authenticated requester (or a non-forwarded
PLAINTEXT one) gets DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, and creating a token for another owner
needs CREATE_TOKENS on that user (DELEGATION_TOKEN_AUTHORIZATION_FAILED); ``ctx.principal`` carries
neither the token flag nor an authorizer's answer.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import random
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any, Iterable

from engine.common.api_keys import ApiKeys
from engine.common.kafka_uuid import RESERVED_UUIDS, uuid_to_kafka
from engine.controller.controller_result import ApiError, Command, ControllerContext, ControllerResult
from engine.image.delegation_token_image import DelegationTokenData
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i64, protocol_module

USER_TYPE = "User"  # KafkaPrincipal.USER_TYPE: the only principal type a renewer may have
ANONYMOUS = "User:ANONYMOUS"
MAX_RECORDS_PER_SWEEP = 1000  # Kafka's DelegationTokenControlManager.MAX_RECORDS_PER_EXPIRATION
LONG_MAX = (1 << 63) - 1

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# the latest instant a datetime holds: a timestamp capped at Long.MAX_VALUE answers with it
_LATEST = datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=timezone.utc)
_ZERO = timedelta(0)

_create = protocol_module("create_delegation_token", 3, "response")
_renew = protocol_module("renew_delegation_token", 2, "response")
_expire = protocol_module("expire_delegation_token", 2, "response")


# -- the pieces ---------------------------------------------------------------------------------

@functools.lru_cache(maxsize=4096)  # a lookup by HMAC derives every token's; ids never change
def token_hmac(secret: str, token_id: str) -> bytes:
    """The token's password: HMAC-SHA512 over the token id keyed by the secret, both UTF-8, as
    Kafka's DelegationTokenControlManager.createHmac makes it."""
    return hmac.new(secret.encode("utf-8"), token_id.encode("utf-8"), hashlib.sha512).digest()


def parse_principal(text: str) -> tuple[str, str]:
    """("User", "alice") from "User:alice" (KafkaPrincipal's text form: type, first colon, name)."""
    principal_type, colon, name = text.partition(":")
    return (principal_type, name) if colon else (USER_TYPE, text)


def new_token_id(rng: random.Random, taken: Iterable[str] = ()) -> str:
    """A token id as Kafka's ``Uuid.randomUuid().toString()`` makes it (a random version-4 uuid in
    Kafka's 22-character URL-safe base64), drawn from ``rng`` so a seeded run repeats; reserved
    ids, ids starting with '-' and ids already in use are drawn again."""
    used = set(taken)
    while True:
        u = uuid.UUID(int=rng.getrandbits(128), version=4)
        text = uuid_to_kafka(u)
        if u not in RESERVED_UUIDS and not text.startswith("-") and text not in used:
            return text


def find_token(image: MetadataImage, secret: str, password: bytes) -> DelegationTokenData | None:
    """The token whose HMAC is ``password`` (Kafka's token cache by HMAC)."""
    for token in image.delegation_tokens.values():
        if hmac.compare_digest(token_hmac(secret, token.token_id), bytes(password)):
            return token
    return None


def expired(token: Any, now_ms: int) -> bool:
    """Past its max timestamp or its expiry (Kafka compares strictly: a token lives through its
    expiry millisecond)."""
    return token.max_timestamp < now_ms or token.expiration_timestamp < now_ms


def allowed_to_renew(token: Any, principal: str) -> bool:
    return principal == token.owner or principal in token.renewers


def _plus(now_ms: int, duration_ms: int) -> int:
    """now + duration, capped at Long.MAX_VALUE (Kafka's saturating sum)."""
    return LONG_MAX if now_ms > LONG_MAX - duration_ms else now_ms + duration_ms


def _ms(period: timedelta | None) -> int:
    return 0 if period is None else period // timedelta(milliseconds=1)


def _when(ms: int) -> datetime:
    """A response timestamp (kio's datetime_i64) for epoch milliseconds."""
    try:
        return min(_EPOCH + timedelta(milliseconds=ms), _LATEST)
    except OverflowError:
        return _LATEST


def _refusal(ctx: ControllerContext) -> tuple[Any, str] | None:
    """Kafka's first two checks of every token request."""
    if not ctx.config.delegation_token_secret_key:
        return ErrorCode.delegation_token_auth_disabled, "Delegation tokens are not enabled"
    if not ctx.versions.delegation_tokens:
        return ErrorCode.unsupported_version, "The current metadata.version does not support delegation tokens"
    return None


def _token_record(token: DelegationTokenData, expiration_timestamp: int) -> m.DelegationTokenRecordV0:
    """The token rewritten with a new expiry (renew, expire): everything else kept."""
    return token._replace(expiration_timestamp=i64(expiration_timestamp)).to_record()


# -- CreateDelegationToken (38) -----------------------------------------------------------------

def create_delegation_token(ctx: ControllerContext, request: Any) -> ControllerResult:
    requester = ctx.principal
    owner = requester
    if request.owner_principal_name:
        if request.owner_principal_type is None:
            # KafkaPrincipal refuses a null type: Kafka's request fails as an unexpected error
            raise ApiError(ErrorCode.unknown_server_error, "Principal type cannot be null")
        owner = f"{request.owner_principal_type}:{request.owner_principal_name}"

    def answer(code: Any, issue_ms: int = 0, expiry_ms: int = 0, max_ms: int = 0, token_id: str = "",
               password: bytes = b"") -> ControllerResult:
        records = [] if code != ErrorCode.none else [m.DelegationTokenRecordV0(
            owner=owner, requester=requester, renewers=renewers, issue_timestamp=i64(issue_ms),
            max_timestamp=i64(max_ms), expiration_timestamp=i64(expiry_ms), token_id=token_id)]
        return ControllerResult(records, _create_response(code, owner, requester, issue_ms, expiry_ms, max_ms,
                                                          token_id, password), atomic=True)

    renewers: tuple[str, ...] = ()
    refused = _refusal(ctx)
    if refused is not None:
        return answer(refused[0])
    now_ms = ctx.now_ms
    max_lifetime_ms = ctx.config.delegation_token_max_lifetime_ms
    if _ms(request.max_lifetime) > 0:
        max_lifetime_ms = min(max_lifetime_ms, _ms(request.max_lifetime))
    max_ms = _plus(now_ms, max_lifetime_ms)
    expiry_ms = min(max_ms, _plus(now_ms, ctx.config.delegation_token_expiry_time_ms))
    if any(r.principal_type != USER_TYPE for r in request.renewers):
        return answer(ErrorCode.invalid_principal_type)
    renewers = tuple(f"{r.principal_type}:{r.principal_name}" for r in request.renewers)
    token_id = new_token_id(_rng(ctx), ctx.image.delegation_tokens)
    password = token_hmac(ctx.config.delegation_token_secret_key, token_id)
    return answer(ErrorCode.none, now_ms, expiry_ms, max_ms, token_id, password)


def _rng(ctx: ControllerContext) -> random.Random:
    rng = getattr(ctx.soft, "rng", None)
    return rng if rng is not None else random.Random()


def _create_response(code: Any, owner: str, requester: str, issue_ms: int, expiry_ms: int, max_ms: int,
                     token_id: str, password: bytes) -> Any:
    owner_type, owner_name = parse_principal(owner)
    requester_type, requester_name = parse_principal(requester)
    return _create.CreateDelegationTokenResponse(
        error_code=code, principal_type=owner_type, principal_name=owner_name,
        token_requester_principal_type=requester_type, token_requester_principal_name=requester_name,
        issue_timestamp=_when(issue_ms), expiry_timestamp=_when(expiry_ms), max_timestamp=_when(max_ms),
        token_id=token_id, hmac=password, throttle_time=_ZERO)


def create_error_response(request: Any, code: Any, message: str | None) -> Any:
    """Kafka's CreateDelegationTokenRequest.getErrorResponse: anonymous owner and requester,
    timestamps -1, no token."""
    return _create_response(code, ANONYMOUS, ANONYMOUS, -1, -1, -1, "", b"")


TOKEN_API_KEYS = (ApiKeys.CREATE_DELEGATION_TOKEN, ApiKeys.RENEW_DELEGATION_TOKEN, ApiKeys.EXPIRE_DELEGATION_TOKEN)


def not_allowed_response(api_key: int, request: Any, principal: str) -> Any:
    """What Kafka's ControllerApis answers when token requests are not allowed on the connection
    (a token-authenticated requester, or one not forwarded by a broker on a PLAINTEXT listener):
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, before the controller is asked. Which connections
    those are is the server edge's to say; the answer's shape is here."""
    code = ErrorCode.delegation_token_request_not_allowed
    if api_key == ApiKeys.CREATE_DELEGATION_TOKEN:
        owner = (f"{request.owner_principal_type}:{request.owner_principal_name}"
                 if request.owner_principal_name else principal)
        return _create_response(code, owner, principal, -1, -1, -1, "", b"")
    response = (_renew.RenewDelegationTokenResponse if api_key == ApiKeys.RENEW_DELEGATION_TOKEN
                else _expire.ExpireDelegationTokenResponse)
    return response(error_code=code, expiry_timestamp=_when(-1), throttle_time=_ZERO)


# -- RenewDelegationToken (39) and ExpireDelegationToken (40) -------------------------------------

def _answer(response_class: Any, code: Any, expiry_ms: int = 0, records: list | None = None) -> ControllerResult:
    return ControllerResult(records or [], response_class(
        error_code=code, expiry_timestamp=_when(expiry_ms), throttle_time=_ZERO), atomic=True)


def _named_token(ctx: ControllerContext, request: Any) -> tuple[Any | None, Any]:
    """(the token the request's HMAC names, NONE), or (None, why not): the checks renew and
    expire share, in Kafka's order."""
    refused = _refusal(ctx)
    if refused is not None:
        return None, refused[0]
    token = find_token(ctx.image, ctx.config.delegation_token_secret_key, request.hmac)
    return (token, ErrorCode.none) if token is not None else (None, ErrorCode.delegation_token_not_found)


def renew_delegation_token(ctx: ControllerContext, request: Any) -> ControllerResult:
    answer = functools.partial(_answer, _renew.RenewDelegationTokenResponse)
    token, code = _named_token(ctx, request)
    if token is None:
        return answer(code)
    if expired(token, ctx.now_ms):
        return answer(ErrorCode.delegation_token_expired)
    if not allowed_to_renew(token, ctx.principal):
        return answer(ErrorCode.delegation_token_owner_mismatch)
    renew_ms = ctx.config.delegation_token_expiry_time_ms
    if _ms(request.renew_period) > 0:
        renew_ms = min(renew_ms, _ms(request.renew_period))
    expiry_ms = min(token.max_timestamp, ctx.now_ms + renew_ms)
    return answer(ErrorCode.none, expiry_ms, [_token_record(token, expiry_ms)])


def expire_delegation_token(ctx: ControllerContext, request: Any) -> ControllerResult:
    answer = functools.partial(_answer, _expire.ExpireDelegationTokenResponse)
    token, code = _named_token(ctx, request)
    if token is None:
        return answer(code)
    if not allowed_to_renew(token, ctx.principal):
        return answer(ErrorCode.delegation_token_owner_mismatch)
    period_ms = _ms(request.expiry_time_period)
    if period_ms < 0:  # expire now: the token is gone, whatever its state
        return answer(ErrorCode.none, ctx.now_ms, [m.RemoveDelegationTokenRecordV0(token_id=token.token_id)])
    if expired(token, ctx.now_ms):
        return answer(ErrorCode.delegation_token_expired)
    expiry_ms = min(token.max_timestamp, _plus(ctx.now_ms, period_ms))
    return answer(ErrorCode.none, expiry_ms, [_token_record(token, expiry_ms)])


def renew_error_response(request: Any, code: Any, message: str | None) -> Any:
    return _renew.RenewDelegationTokenResponse(error_code=code, expiry_timestamp=_EPOCH, throttle_time=_ZERO)


def expire_error_response(request: Any, code: Any, message: str | None) -> Any:
    return _expire.ExpireDelegationTokenResponse(error_code=code, expiry_timestamp=_EPOCH, throttle_time=_ZERO)


# -- the expiry sweep -------------------------------------------------------------------------------

@dataclass
class TokenSweepState:
    """When the active controller next sweeps (``ctx.soft.delegation_token_sweep``); None = not
    scheduled yet: the first poll after activation schedules it one interval later, as Kafka's
    periodic tasks start."""

    next_sweep_ms: int | None = None


def sweep_expired_tokens(ctx: ControllerContext) -> ControllerResult | None:
    """The periodic task: a RemoveDelegationTokenRecord for each expired token, when due."""
    state: TokenSweepState | None = getattr(ctx.soft, "delegation_token_sweep", None)
    if state is None:
        return None
    interval_ms = ctx.config.delegation_token_expiry_check_interval_ms
    if state.next_sweep_ms is None:
        state.next_sweep_ms = ctx.now_ms + interval_ms
        return None
    if ctx.now_ms < state.next_sweep_ms:
        return None
    records = expired_token_removals(ctx.image, ctx.now_ms)
    # a full batch may leave more behind: Kafka runs the task again at once
    state.next_sweep_ms = ctx.now_ms if len(records) >= MAX_RECORDS_PER_SWEEP else ctx.now_ms + interval_ms
    return ControllerResult(records, None) if records else None


def expired_token_removals(image: MetadataImage, now_ms: int, limit: int = MAX_RECORDS_PER_SWEEP) -> list[Any]:
    """Removal records for the image's expired tokens, at most ``limit``."""
    removals = []
    for token in image.delegation_tokens.values():
        if expired(token, now_ms):
            removals.append(m.RemoveDelegationTokenRecordV0(token_id=token.token_id))
            if len(removals) >= limit:
                break
    return removals


# -- the manager's hooks (engine.controller.commands) -------------------------------------------

# Kafka 4.1's controller serves 38 v1-3, 39 v1-2, 40 v1-2 (ApiKeys); DescribeDelegationToken (41)
# is a broker's answer from its own metadata: ControllerApis does not handle it.
COMMANDS: list[Command] = [
    Command(ApiKeys.CREATE_DELEGATION_TOKEN, "create_delegation_token",
            1, 3, create_delegation_token, create_error_response),
    Command(ApiKeys.RENEW_DELEGATION_TOKEN, "renew_delegation_token",
            1, 2, renew_delegation_token, renew_error_response),
    Command(ApiKeys.EXPIRE_DELEGATION_TOKEN, "expire_delegation_token",
            1, 2, expire_delegation_token, expire_error_response),
]
PERIODIC = [sweep_expired_tokens]


def new_soft_state(config: Any) -> SimpleNamespace:
    return SimpleNamespace(delegation_token_sweep=TokenSweepState())


def on_activation(soft: Any, image: MetadataImage, now_ms: int) -> None:
    """A new active controller schedules its first sweep afresh (one interval after its first poll)."""
    state = getattr(soft, "delegation_token_sweep", None)
    if state is not None:
        state.next_sweep_ms = None


__all__ = ["COMMANDS", "MAX_RECORDS_PER_SWEEP", "PERIODIC", "TOKEN_API_KEYS", "TokenSweepState", "allowed_to_renew",
           "create_delegation_token", "expire_delegation_token", "expired", "expired_token_removals", "find_token",
           "new_soft_state", "new_token_id", "not_allowed_response", "on_activation", "parse_principal", "renew_delegation_token",
           "sweep_expired_tokens", "token_hmac"]
