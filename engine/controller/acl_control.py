"""CreateAcls (30), DeleteAcls (31), DescribeAcls (29): ACLs are metadata (KIP-801's
StandardAuthorizer reads them from the log); the controller keeps them.

Rules of Kafka 4.1's AclApis and AclControlManager. A new ACL names a concrete resource type
(not ANY), a LITERAL or PREFIXED pattern, a concrete operation and ALLOW or DENY, a non-empty
resource name ("kafka-cluster" for CLUSTER) and a "Type:name" principal; each bad one is
refused alone (INVALID_REQUEST) and an ACL that exists already, or earlier in the request, is
taken without a second record. A filter (delete, describe) may say ANY, and MATCH for the
pattern: the ACLs that would apply to that name. An UNKNOWN element anywhere makes Kafka's
request parser fail; here the whole request is refused with INVALID_REQUEST.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any, Iterable

from engine.common.api_keys import ApiKeys
from engine.common.kafka_uuid import random_kafka_uuid
from engine.controller.controller_result import (
    MAX_RECORDS_PER_USER_OP, ApiError, Command, ControllerContext, ControllerResult,
)
from engine.image.acls_image import StandardAcl
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, protocol_module

# Kafka's enums by code; a code not listed reads as UNKNOWN (0)
RESOURCE_TYPES = {1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN",
                  7: "USER"}
PATTERN_TYPES = {1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
OPERATIONS = {1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER", 8: "DESCRIBE",
              9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS", 12: "IDEMPOTENT_WRITE",
              13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
PERMISSION_TYPES = {1: "ANY", 2: "DENY", 3: "ALLOW"}
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
CLUSTER = 4
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"

_create = protocol_module("create_acls", 3, "response")
_delete = protocol_module("delete_acls", 3, "response")
_describe = protocol_module("describe_acls", 3, "response")


def _name(codes: dict[int, str], code: int) -> str:
    return codes.get(code, "UNKNOWN")


def _refuse_unknown(items: Iterable[Any], fields: tuple[str, ...], what: str) -> None:
    """Kafka's request parser throws on an UNKNOWN type, pattern, operation or permission."""
    tables = (RESOURCE_TYPES, PATTERN_TYPES, OPERATIONS, PERMISSION_TYPES)
    for item in items:
        for table, field in zip(tables, fields):
            if getattr(item, field) not in table:
                raise ApiError(ErrorCode.invalid_request, f"{what} contain UNKNOWN elements")


# -- matching (Kafka's ResourcePatternFilter and AccessControlEntryFilter) -----------------

def _pattern_matches(filter_type: int, filter_name: str | None, filter_pattern: int, acl: Any) -> bool:
    if filter_type != ANY and filter_type != acl.resource_type:
        return False
    if filter_pattern not in (ANY, MATCH) and filter_pattern != acl.pattern_type:
        return False
    if filter_name is None:
        return True
    if filter_pattern in (ANY, acl.pattern_type):
        return filter_name == acl.resource_name
    # MATCH: the ACLs that apply to the named resource
    if acl.pattern_type == LITERAL:
        return filter_name == acl.resource_name or acl.resource_name == WILDCARD
    if acl.pattern_type == PREFIXED:
        return filter_name.startswith(acl.resource_name)
    return False


def acl_matches(acl: StandardAcl, filter: Any) -> bool:
    """Whether an ACL matches a DeleteAcls filter or a DescribeAcls request (anything with their
    *_filter, operation and permission_type fields)."""
    if not _pattern_matches(filter.resource_type_filter, filter.resource_name_filter, filter.pattern_type_filter,
                            acl):
        return False
    if filter.principal_filter is not None and filter.principal_filter != acl.principal:
        return False
    if filter.host_filter is not None and filter.host_filter != acl.host:
        return False
    if filter.operation != ANY and filter.operation != acl.operation:
        return False
    return filter.permission_type == ANY or filter.permission_type == acl.permission_type


# -- CreateAcls ----------------------------------------------------------------------------

def _creation_error(creation: Any) -> str | None:
    """Why Kafka refuses this ACL (INVALID_REQUEST), or None: AclApis' checks, then
    AclControlManager's."""
    if creation.resource_type == CLUSTER and creation.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not creation.resource_name:
        return "Invalid empty resource name"
    if creation.resource_type == ANY:
        return f"Invalid resourceType {_name(RESOURCE_TYPES, creation.resource_type)}"
    if creation.resource_pattern_type not in (LITERAL, PREFIXED):
        return f"Invalid patternType {_name(PATTERN_TYPES, creation.resource_pattern_type)}"
    if creation.operation == ANY:
        return f"Invalid operation {_name(OPERATIONS, creation.operation)}"
    if creation.permission_type == ANY:
        return f"Invalid permissionType {_name(PERMISSION_TYPES, creation.permission_type)}"
    if ":" not in creation.principal:
        return (f"Could not parse principal from `{creation.principal}` (no colon is present separating the "
                "principal type from the principal name)")
    return None


def new_acl_id(image: MetadataImage, taken: set[uuid.UUID]) -> uuid.UUID:
    """A random id no ACL has (Kafka's Uuid.randomUuid: never a reserved id)."""
    while True:
        acl_id = random_kafka_uuid()
        if acl_id not in image.acls and acl_id not in taken:
            return acl_id


def create_acls(ctx: ControllerContext, request: Any) -> ControllerResult:
    _refuse_unknown(request.creations, ("resource_type", "resource_pattern_type", "operation", "permission_type"),
                    "CreatableAcls")
    existing = set(ctx.image.acls.values())  # two ACLs with the same binding are the same ACL, whatever their ids
    taken: set[uuid.UUID] = set()
    records: list[Any] = []
    results = []
    for creation in request.creations:
        error = _creation_error(creation)
        if error is not None:
            results.append(_create.AclCreationResult(error_code=ErrorCode.invalid_request, error_message=error))
            continue
        binding = StandardAcl(creation.resource_type, creation.resource_name, creation.resource_pattern_type,
                              creation.principal, creation.host, creation.operation, creation.permission_type)
        if binding not in existing:  # an ACL that exists is a success with nothing to write
            existing.add(binding)
            if len(records) >= MAX_RECORDS_PER_USER_OP:
                raise ApiError(ErrorCode.unknown_server_error, "Cannot add another element to the list because "
                               f"it would exceed the maximum length of {MAX_RECORDS_PER_USER_OP}")
            acl_id = new_acl_id(ctx.image, taken)
            taken.add(acl_id)
            records.append(binding.to_record(acl_id))
        results.append(_create.AclCreationResult(error_code=ErrorCode.none, error_message=None))
    return ControllerResult(records, _create.CreateAclsResponse(throttle_time=timedelta(0), results=tuple(results)),
                            atomic=True)


def create_error_response(request: Any, code: Any, message: str | None) -> Any:
    results = tuple(_create.AclCreationResult(error_code=code, error_message=message) for _ in request.creations)
    return _create.CreateAclsResponse(throttle_time=timedelta(0), results=results)


# -- DeleteAcls ----------------------------------------------------------------------------

_FILTER_FIELDS = ("resource_type_filter", "pattern_type_filter", "operation", "permission_type")


def delete_acls(ctx: ControllerContext, request: Any) -> ControllerResult:
    _refuse_unknown(request.filters, _FILTER_FIELDS, "Filters")
    removed: dict[uuid.UUID, Any] = {}  # one record per ACL, however many filters match it
    filter_results = []
    for acl_filter in request.filters:
        matching = []
        for acl_id, acl in ctx.image.acls.items():
            if not acl_matches(acl, acl_filter):
                continue
            if len(removed) >= MAX_RECORDS_PER_USER_OP:
                raise ApiError(ErrorCode.invalid_request, "Cannot remove more than "
                               f"{MAX_RECORDS_PER_USER_OP} acls in a single delete operation.")
            removed.setdefault(acl_id, m.RemoveAccessControlEntryRecordV0(id=acl_id))
            matching.append(_delete.DeleteAclsMatchingAcl(
                error_code=ErrorCode.none, error_message=None, resource_type=acl.resource_type,
                resource_name=acl.resource_name, pattern_type=acl.pattern_type, principal=acl.principal,
                host=acl.host, operation=acl.operation, permission_type=acl.permission_type))
        filter_results.append(_delete.DeleteAclsFilterResult(error_code=ErrorCode.none, error_message=None,
                                                             matching_acls=tuple(matching)))
    response = _delete.DeleteAclsResponse(throttle_time=timedelta(0), filter_results=tuple(filter_results))
    return ControllerResult(list(removed.values()), response, atomic=True)


def delete_error_response(request: Any, code: Any, message: str | None) -> Any:
    results = tuple(_delete.DeleteAclsFilterResult(error_code=code, error_message=message, matching_acls=())
                    for _ in request.filters)
    return _delete.DeleteAclsResponse(throttle_time=timedelta(0), filter_results=results)


# -- DescribeAcls --------------------------------------------------------------------------

def describe_acls(ctx: ControllerContext, request: Any) -> ControllerResult:
    _refuse_unknown([request], _FILTER_FIELDS, "DescribeAclsRequest")
    resources: dict[tuple, list[Any]] = {}  # (type, name, pattern) -> its ACLs, as Kafka groups them
    for acl in ctx.image.acls.values():
        if acl_matches(acl, request):
            resources.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(
                _describe.AclDescription(principal=acl.principal, host=acl.host, operation=acl.operation,
                                         permission_type=acl.permission_type))
    described = tuple(_describe.DescribeAclsResource(resource_type=t, resource_name=n, pattern_type=p,
                                                     acls=tuple(acls))
                      for (t, n, p), acls in resources.items())
    return ControllerResult((), _describe.DescribeAclsResponse(
        throttle_time=timedelta(0), error_code=ErrorCode.none, error_message=None, resources=described))


def describe_error_response(request: Any, code: Any, message: str | None) -> Any:
    return _describe.DescribeAclsResponse(throttle_time=timedelta(0), error_code=code, error_message=message,
                                          resources=())


COMMANDS: list[Command] = [
    # version 0 of the three went with Kafka 4.0 (KIP-896); kio has 1..3
    Command(ApiKeys.DESCRIBE_ACLS, "describe_acls", 1, 3, describe_acls, describe_error_response, read_only=True),
    Command(ApiKeys.CREATE_ACLS, "create_acls", 1, 3, create_acls, create_error_response),
    Command(ApiKeys.DELETE_ACLS, "delete_acls", 1, 3, delete_acls, delete_error_response),
]
