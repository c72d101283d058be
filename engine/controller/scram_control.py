"""AlterUserScramCredentials (51): SCRAM users are metadata (KIP-554), kept by the controller.

Kafka's ScramControlManager rules: a user may appear once per request (a second deletion or
upsertion of the same user, whatever the mechanism, is DUPLICATE_RESOURCE for that user); the
user name must not be empty; the mechanism is SCRAM-SHA-256 (1) or SCRAM-SHA-512 (2); an upsertion
has 4096..16384 iterations; a deletion names a credential that exists. The client sends the
salted password; the controller keeps only the stored key and the server key derived from it
(RFC 5802), so the password itself never reaches the log.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta
from typing import Any

from engine.common.api_keys import ApiKeys
from engine.controller.controller_result import Command, ControllerContext, ControllerResult
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i8, i32, protocol_module

MECHANISMS = {1: ("SCRAM-SHA-256", hashlib.sha256), 2: ("SCRAM-SHA-512", hashlib.sha512)}
MIN_ITERATIONS = 4096  # both mechanisms' minimum in Kafka's ScramMechanism
MAX_ITERATIONS = 16384

_response = protocol_module("alter_user_scram_credentials", 0, "response")
_DUPLICATE = (ErrorCode.duplicate_resource, "A user credential cannot be altered twice in the same request")
_UNSUPPORTED = (ErrorCode.unsupported_version, "The current metadata.version does not support SCRAM")


def scram_keys(mechanism: int, salted_password: bytes) -> tuple[bytes, bytes]:
    """(stored key, server key) of a salted password: H(HMAC(p, "Client Key")), HMAC(p, "Server Key")."""
    digest = MECHANISMS[mechanism][1]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    return digest(client_key).digest(), hmac.new(salted_password, b"Server Key", digest).digest()


def _name_and_mechanism_error(name: str, mechanism: int) -> tuple[Any, str] | None:
    if not name:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    if mechanism not in MECHANISMS:
        return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
    return None


def _deletion_error(ctx: ControllerContext, deletion: Any) -> tuple[Any, str] | None:
    error = _name_and_mechanism_error(deletion.name, deletion.mechanism)
    if error is None and (deletion.mechanism, deletion.name) not in ctx.image.scram:
        error = ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist"
    return error


def _upsertion_error(upsertion: Any) -> tuple[Any, str] | None:
    error = _name_and_mechanism_error(upsertion.name, upsertion.mechanism)
    if error is None and upsertion.iterations < MIN_ITERATIONS:
        error = ErrorCode.unacceptable_credential, "Too few iterations"
    elif error is None and upsertion.iterations > MAX_ITERATIONS:
        error = ErrorCode.unacceptable_credential, "Too many iterations"
    return error


def alter_user_scram_credentials(ctx: ControllerContext, request: Any) -> ControllerResult:
    supported = ctx.versions.scram
    deletions: dict[str, Any] = {}
    upsertions: dict[str, Any] = {}
    errors: dict[str, tuple[Any, str]] = {}

    def take(item: Any, into: dict[str, Any], check: Any) -> None:
        name = item.name
        if name in errors:
            return  # the user already failed: later entries for it add nothing
        if deletions.pop(name, None) is not None or upsertions.pop(name, None) is not None:
            errors[name] = _DUPLICATE
            return
        error = _UNSUPPORTED if not supported else check(item)
        if error is None:
            into[name] = item
        else:
            errors[name] = error

    # deletions first, then upsertions: an upsertion of a user deleted above is the duplicate
    for deletion in request.deletions:
        take(deletion, deletions, lambda d: _deletion_error(ctx, d))
    for upsertion in request.upsertions:
        take(upsertion, upsertions, _upsertion_error)

    records: list[Any] = []
    results: list[Any] = []
    for name, deletion in deletions.items():
        records.append(m.RemoveUserScramCredentialRecordV0(name=name, mechanism=i8(deletion.mechanism)))
        results.append(_result(name, ErrorCode.none, None))
    for name, upsertion in upsertions.items():
        stored_key, server_key = scram_keys(upsertion.mechanism, upsertion.salted_password)
        records.append(m.UserScramCredentialRecordV0(
            name=name, mechanism=i8(upsertion.mechanism), salt=upsertion.salt, stored_key=stored_key,
            server_key=server_key, iterations=i32(upsertion.iterations)))
        results.append(_result(name, ErrorCode.none, None))
    results.extend(_result(name, code, message) for name, (code, message) in errors.items())
    return ControllerResult(records, _response.AlterUserScramCredentialsResponse(
        throttle_time=timedelta(0), results=tuple(results)), atomic=True)


def _result(user: str, code: Any, message: str | None) -> Any:
    return _response.AlterUserScramCredentialsResult(user=user, error_code=code, error_message=message)


def error_response(request: Any, code: Any, message: str | None) -> Any:
    """Every user of the request refused with ``code`` (the response has no top-level error)."""
    users = dict.fromkeys(item.name for item in (*request.deletions, *request.upsertions))
    return _response.AlterUserScramCredentialsResponse(
        throttle_time=timedelta(0), results=tuple(_result(user, code, message) for user in users))


MECHANISM_CODES = {name: code for code, (name, _) in MECHANISMS.items()}  # SASL's names -> record codes


COMMANDS: list[Command] = [
    Command(ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, "alter_user_scram_credentials",
            0, 0, alter_user_scram_credentials, error_response),
]
