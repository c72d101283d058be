"""The Describe* a broker answers from its own image: DescribeConfigs (32) and DescribeAcls (29)
through the controller's own read-only commands (one reading of configs and ACLs, as Kafka's
broker and controller share the metadata module), DescribeClientQuotas (48) and
DescribeUserScramCredentials (50) as Kafka's ClientQuotasImage and ScramImage describe them.

Facts carried over from Kafka 4.x:
- a broker describes its own broker resource and the cluster default ("") only; another id is
  INVALID_REQUEST "Unexpected broker id, expected X or empty string, but received Y" (clients
  send a broker's DescribeConfigs to that broker);
- its own broker resource lists every broker config it knows, set or not (Kafka's allConfigs;
  kafka-python's alter_configs refuses a name the broker's describe does not list), where the
  cluster default lists only what is set;
- DescribeAcls without authorizer.class.name is SECURITY_DISABLED "No Authorizer is configured
  on the broker";
- DescribeClientQuotas filters: EXACT (0) needs a match, DEFAULT (1) and SPECIFIED (2) none;
  a type at most once, no IP beside user/client-id, types other than user, client-id and ip are
  UNSUPPORTED_VERSION; ``strict`` also wants the entity to have no other types;
- DescribeUserScramCredentials: no users means all; a user named twice is DUPLICATE_RESOURCE,
  one without credentials RESOURCE_NOT_FOUND.
"""

from __future__ import annotations

import dataclasses
import time
from datetime import timedelta
from typing import Any

from engine.common.api_keys import ApiKeys
from engine.common.config_resource import BROKER_DEFAULT, ConfigResourceType, broker_resource
from engine.controller import acl_control, config_control
from engine.controller import config_defs as defs
from engine.controller.controller_config import ControllerConfig
from engine.controller.controller_result import ApiError, Command, ControllerContext
from engine.image.metadata_image import MetadataImage
from engine.net.kafka_protocol import request_class, response_class
from engine.net.message_versions import convert_message
from engine.records.kio_codec import ErrorCode, f64, i8, i32, protocol_module

EXACT, DEFAULT, SPECIFIED = 0, 1, 2
QUOTA_TYPES = ("user", "client-id", "ip")
_ZERO = timedelta(0)
_quotas = protocol_module("describe_client_quotas", 1, "response")
_scram = protocol_module("describe_user_scram_credentials", 0, "response")
_configs = protocol_module("describe_configs", 4, "response")


def _command(commands: list[Command], api_key: int) -> Command:
    return next(c for c in commands if c.api_key == api_key)


DESCRIBE_CONFIGS = _command(config_control.COMMANDS, ApiKeys.DESCRIBE_CONFIGS)
DESCRIBE_ACLS = _command(acl_control.COMMANDS, ApiKeys.DESCRIBE_ACLS)


def run_read_command(command: Command, image: MetadataImage, config: ControllerConfig, request: Any,
                     version: int) -> Any:
    """A controller's read-only command over the broker's image, at the client's version."""
    newest = command.max_version
    request = convert_message(request, request_class(command.api_key, newest))
    ctx = _context(image, config)
    try:
        response = command.handle(ctx, request).response
    except ApiError as err:
        response = command.error_response(request, err.code, err.message)
    return convert_message(response, response_class(command.api_key, version))


# -- DescribeConfigs ------------------------------------------------------------------------

def _refusal(resource: Any, broker_id: int) -> tuple[Any, str] | None:
    """Kafka's broker-side refusals the controller's reading does not make."""
    rtype, name = int(resource.resource_type), resource.resource_name
    if rtype == ConfigResourceType.BROKER and name:
        if not name.strip().lstrip("-").isdigit():
            return ErrorCode.invalid_request, f"Broker id must be an integer, but it is: {name}"
        if int(name) != broker_id:
            return (ErrorCode.invalid_request,
                    f"Unexpected broker id, expected {broker_id} or empty string, but received {name}")
    if rtype == ConfigResourceType.BROKER_LOGGER:
        return (ErrorCode.invalid_request,
                "this simulated broker has no log4j loggers to describe (broker-loggers are local to a real broker)")
    return None


def _context(image: MetadataImage, config: ControllerConfig) -> ControllerContext:
    return ControllerContext(image=image, now_ms=time.time_ns() // 1_000_000,
                             next_offset=image.provenance.last_offset + 1, config=config)


def _own_broker_result(image: MetadataImage, config: ControllerConfig, request: Any, resource: Any) -> Any:
    """This broker's own resource: every broker config known here (Kafka's defaults table, the
    dynamic ones) and any set in the image, each with the controller's reading of its layers."""
    name = resource.resource_name
    names = set(defs.BROKER_DYNAMIC_CONFIGS) | set(defs.SERVER_DEFAULTS)
    names |= set(image.configs.config_map(BROKER_DEFAULT)) | set(image.configs.config_map(broker_resource(name)))
    wanted = resource.configuration_keys
    ctx = _context(image, config)
    describe = (request.include_synonyms, request.include_documentation)
    entries = tuple(_broker_config(ctx, name, key, describe) for key in sorted(names) if not wanted or key in wanted)
    return _configs.DescribeConfigsResult(error_code=ErrorCode.none, error_message=None,
                                          resource_type=resource.resource_type, resource_name=name, configs=entries)


def _broker_config(ctx: ControllerContext, broker: str, name: str, describe: tuple[bool, bool]) -> Any:
    """One broker config as the controller reads its layers; one set nowhere and without a default
    (ssl.keystore.location, ...) is null from DEFAULT_CONFIG, as Kafka lists it."""
    configs = ctx.image.configs
    key = defs.BROKER_DYNAMIC_CONFIGS.get(name)
    unset = name not in configs.config_map(broker_resource(broker)) and name not in configs.config_map(BROKER_DEFAULT)
    if unset and key is not None and key.default is None and name not in defs.SERVER_DEFAULTS:
        return config_control.config_entry(describe, name, None, key.type == "PASSWORD", [], key.type, read_only=False)
    return config_control.broker_entry(ctx, broker, name, describe)


def describe_configs(image: MetadataImage, config: ControllerConfig, request: Any, version: int) -> Any:
    newest = convert_message(request, request_class(ApiKeys.DESCRIBE_CONFIGS, DESCRIBE_CONFIGS.max_version))
    refused = {i: _refusal(r, config.node_id) for i, r in enumerate(newest.resources)}
    own = {i for i, r in enumerate(newest.resources)
           if refused[i] is None and int(r.resource_type) == ConfigResourceType.BROKER and r.resource_name}
    rest = tuple(r for i, r in enumerate(newest.resources) if refused[i] is None and i not in own)
    answered = list(run_read_command(DESCRIBE_CONFIGS, image, config, dataclasses.replace(newest, resources=rest),
                                     DESCRIBE_CONFIGS.max_version).results)
    results = []
    for i, resource in enumerate(newest.resources):
        if i in own:
            results.append(_own_broker_result(image, config, newest, resource))
        elif refused[i] is None:
            results.append(answered.pop(0))
        else:
            code, message = refused[i]
            results.append(_configs.DescribeConfigsResult(
                error_code=code, error_message=message, resource_type=resource.resource_type,
                resource_name=resource.resource_name, configs=()))
    response = _configs.DescribeConfigsResponse(throttle_time=_ZERO, results=tuple(results))
    return convert_message(response, response_class(ApiKeys.DESCRIBE_CONFIGS, version))


# -- DescribeAcls ---------------------------------------------------------------------------

def describe_acls(image: MetadataImage, config: ControllerConfig, request: Any, version: int,
                  authorizer: bool) -> Any:
    if not authorizer:
        response = DESCRIBE_ACLS.error_response(request, ErrorCode.security_disabled,
                                                "No Authorizer is configured on the broker")
        return convert_message(response, response_class(ApiKeys.DESCRIBE_ACLS, version))
    return run_read_command(DESCRIBE_ACLS, image, config, request, version)


# -- DescribeClientQuotas ---------------------------------------------------------------------

class _Refused(Exception):
    def __init__(self, code: Any, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def _quota_filter(components: Any) -> tuple[dict[str, str | None], set[str]]:
    exact: dict[str, str | None] = {}
    typed: set[str] = set()
    for c in components:
        kind = c.entity_type
        if not kind:
            raise _Refused(ErrorCode.invalid_request, "Invalid empty entity type.")
        if kind in exact or kind in typed:
            raise _Refused(ErrorCode.invalid_request, f"Entity type {kind} cannot appear more than once in the filter.")
        if kind not in QUOTA_TYPES:
            raise _Refused(ErrorCode.unsupported_version, f"Unsupported entity type {kind}")
        if c.match_type == EXACT:
            if c.match is None:
                raise _Refused(ErrorCode.invalid_request,
                               "Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[kind] = c.match
        elif c.match_type == DEFAULT:
            if c.match is not None:
                raise _Refused(ErrorCode.invalid_request,
                               "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[kind] = None
        elif c.match_type == SPECIFIED:
            if c.match is not None:
                raise _Refused(ErrorCode.invalid_request,
                               "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
            typed.add(kind)
        else:
            raise _Refused(ErrorCode.invalid_request, f"Unknown match type {c.match_type}")
    named = set(exact) | typed
    if "ip" in named and named & {"user", "client-id"}:
        raise _Refused(ErrorCode.invalid_request, "Invalid entity filter component combination. IP filter component "
                                                  "should not be used with user or clientId filter component.")
    return exact, typed


def _quota_matches(entity: dict[str, str | None], exact: dict[str, str | None], typed: set[str],
                   strict: bool) -> bool:
    if strict and len(entity) != len(exact) + len(typed):
        return False
    return all(k in entity and entity[k] == v for k, v in exact.items()) and all(k in entity for k in typed)


def describe_client_quotas(image: MetadataImage, request: Any, version: int) -> Any:
    try:
        exact, typed = _quota_filter(request.components)
    except _Refused as refused:
        return describe_client_quotas_error(version, refused.code, refused.message)
    entries = []
    for key, values in sorted(image.client_quotas.items(), key=lambda kv: [(t, n or "") for t, n in kv[0]]):
        entity = dict(key)
        if values and _quota_matches(entity, exact, typed, bool(request.strict)):
            entries.append(_quotas.EntryData(
                entity=tuple(_quotas.EntityData(entity_type=t, entity_name=n) for t, n in sorted(entity.items())),
                values=tuple(_quotas.ValueData(key=k, value=f64(v)) for k, v in sorted(values.items()))))
    response = _quotas.DescribeClientQuotasResponse(throttle_time=_ZERO, error_code=ErrorCode.none,
                                                    error_message=None, entries=tuple(entries))
    return convert_message(response, response_class(ApiKeys.DESCRIBE_CLIENT_QUOTAS, version))


def describe_client_quotas_error(version: int, code: Any, message: str | None) -> Any:
    response = _quotas.DescribeClientQuotasResponse(throttle_time=_ZERO, error_code=code, error_message=message,
                                                    entries=None)
    return convert_message(response, response_class(ApiKeys.DESCRIBE_CLIENT_QUOTAS, version))


# -- DescribeUserScramCredentials -------------------------------------------------------------

def describe_user_scram_credentials(image: MetadataImage, request: Any) -> Any:
    by_user: dict[str, list[Any]] = {}
    for (mechanism, user), record in sorted(image.scram.items()):
        by_user.setdefault(user, []).append(_scram.CredentialInfo(mechanism=i8(mechanism),
                                                                  iterations=i32(record.iterations)))
    if request.users:
        named: dict[str, bool] = {}
        for user in request.users:
            named[user.name] = user.name in named  # True: asked twice
    else:
        named = {user: False for user in by_user}
    results = []
    for user, twice in named.items():
        if twice:
            code, message, infos = (ErrorCode.duplicate_resource,
                                    f"Cannot describe SCRAM credentials for the same user twice in a single "
                                    f"request: {user}", ())
        elif user in by_user:
            code, message, infos = ErrorCode.none, None, tuple(by_user[user])
        else:
            code, message, infos = (ErrorCode.resource_not_found,
                                    f"Attempt to describe a user credential that does not exist: {user}", ())
        results.append(_scram.DescribeUserScramCredentialsResult(user=user, error_code=code, error_message=message,
                                                                 credential_infos=infos))
    return _scram.DescribeUserScramCredentialsResponse(throttle_time=_ZERO, error_code=ErrorCode.none,
                                                       error_message=None, results=tuple(results))


def describe_user_scram_credentials_error(code: Any, message: str | None) -> Any:
    return _scram.DescribeUserScramCredentialsResponse(throttle_time=_ZERO, error_code=code, error_message=message,
                                                       results=())


__all__ = ["describe_acls", "describe_client_quotas", "describe_client_quotas_error", "describe_configs", "describe_user_scram_credentials",
           "describe_user_scram_credentials_error", "run_read_command"]
