"""CreateAcls (30), DeleteAcls (31), DescribeAcls (29) on the controller (Kafka's
AclControlManagerTest rhythm: command, response, replay, state; and Describe reports what the
replayed records hold). The filter-matching table was checked against Kafka 4.1.2's
AclBindingFilter.matches."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.common.kafka_uuid import RESERVED_UUIDS, uuid_to_kafka
from engine.controller.acl_control import (
    ANY, COMMANDS, LITERAL, MATCH, PREFIXED, acl_matches, create_acls, create_error_response, delete_acls,
    delete_error_response, describe_acls, describe_error_response)
from engine.controller.controller_result import ApiError
from engine.image.metadata_image import MetadataImage
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i8, protocol_module
from engine.records.metadata_record_serde import decode_metadata_value, encode_metadata_value
from tests.controller_helpers import bootstrapped, context, new_uuid, replayed, request

_create = protocol_module("create_acls", 3, "request")
_delete = protocol_module("delete_acls", 3, "request")
TOPIC, GROUP, CLUSTER = 2, 3, 4
READ, WRITE, ALL, DESCRIBE = 3, 4, 2, 8
DENY, ALLOW = 2, 3


def acl(name: str = "orders", principal: str = "User:alice", *, resource_type: int = TOPIC,
        pattern: int = LITERAL, host: str = "*", operation: int = READ, permission: int = ALLOW) -> object:
    return _create.AclCreation(resource_type=i8(resource_type), resource_name=name, resource_pattern_type=i8(pattern),
                               principal=principal, host=host, operation=i8(operation), permission_type=i8(permission))


def acl_filter(name: str | None = None, principal: str | None = None, *, resource_type: int = ANY,
               pattern: int = ANY, host: str | None = None, operation: int = ANY, permission: int = ANY) -> object:
    return _delete.DeleteAclsFilter(resource_type_filter=i8(resource_type), resource_name_filter=name,
                                    pattern_type_filter=i8(pattern), principal_filter=principal,
                                    host_filter=host, operation=i8(operation), permission_type=i8(permission))


def create(image: MetadataImage, *creations):
    return create_acls(context(image), request("create_acls", 3, creations=tuple(creations)))


def delete(image: MetadataImage, *filters):
    return delete_acls(context(image), request("delete_acls", 3, filters=tuple(filters)))


def describe(image: MetadataImage, f=None) -> set[tuple]:
    f = f or acl_filter()
    req = request("describe_acls", 3, resource_type_filter=f.resource_type_filter,
                  resource_name_filter=f.resource_name_filter, pattern_type_filter=f.pattern_type_filter,
                  principal_filter=f.principal_filter, host_filter=f.host_filter, operation=f.operation,
                  permission_type=f.permission_type)
    response = describe_acls(context(image), req).response
    assert response.error_code == ErrorCode.none
    return {(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation, a.permission_type)
            for r in response.resources for a in r.acls}


def binding(c) -> tuple:
    return (c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host, c.operation,
            c.permission_type)


OK = (ErrorCode.none, None)


def codes(result) -> list[tuple]:
    return [(r.error_code, r.error_message) for r in result.response.results]


def test_create_replay_describe_delete():
    image = bootstrapped()
    a, b = acl(), acl("pay", "User:bob", pattern=PREFIXED, operation=WRITE, permission=DENY, host="10.0.0.1")
    result = create(image, a, b)
    assert codes(result) == [OK, OK] and result.atomic
    assert len({r.id for r in result.records}) == 2
    for record in result.records:
        assert record.id not in RESERVED_UUIDS and not uuid_to_kafka(record.id).startswith("-")
        assert decode_metadata_value(encode_metadata_value(record)) == record
    image = replayed(image, result)
    assert set(image.acls) == {r.id for r in result.records}
    # Describe reports what the replayed records hold
    assert describe(image) == {binding(a), binding(b)}

    # creating an existing ACL again succeeds and writes nothing
    again = create(image, a)
    assert codes(again) == [OK] and again.records == []

    removed = delete(image, acl_filter(principal="User:bob"))
    [filter_result] = removed.response.filter_results
    assert filter_result.error_code == ErrorCode.none
    assert [(x.resource_name, x.pattern_type, x.principal, x.host, x.operation, x.permission_type)
            for x in filter_result.matching_acls] == [("pay", PREFIXED, "User:bob", "10.0.0.1", WRITE, DENY)]
    bob_id = next(r.id for r in result.records if r.principal == "User:bob")
    assert removed.records == [m.RemoveAccessControlEntryRecordV0(id=bob_id)]
    image = replayed(image, removed)
    assert describe(image) == {binding(a)}
    # nothing matches any more: an empty result, no records
    nothing = delete(image, acl_filter(principal="User:bob"))
    assert nothing.records == [] and nothing.response.filter_results[0].matching_acls == ()


def test_a_duplicate_inside_one_request_is_written_once():
    result = create(bootstrapped(), acl(), acl(), acl(host="h"))
    assert codes(result) == [OK, OK, OK]
    assert [r.host for r in result.records] == ["*", "h"]


def test_ids_are_fresh_against_the_image():
    image = replayed(bootstrapped(), create(bootstrapped(), acl()))
    result = create(image, acl("other"))
    assert result.records[0].id not in image.acls


INVALID = ErrorCode.invalid_request


@pytest.mark.parametrize("creation, message", [
    (acl("orders", resource_type=CLUSTER), "The only valid name for the CLUSTER resource is kafka-cluster"),
    (acl(""), "Invalid empty resource name"),
    (acl("x", resource_type=ANY), "Invalid resourceType ANY"),
    (acl("x", pattern=ANY), "Invalid patternType ANY"),
    (acl("x", pattern=MATCH), "Invalid patternType MATCH"),
    (acl("x", operation=ANY), "Invalid operation ANY"),
    (acl("x", permission=ANY), "Invalid permissionType ANY"),
    (acl("x", "alice"), "Could not parse principal from `alice` (no colon is present separating the principal "
                        "type from the principal name)"),
])
def test_each_refused_creation(creation, message):
    result = create(bootstrapped(), creation, acl("fine"))
    assert codes(result) == [(INVALID, message), OK]
    assert [r.resource_name for r in result.records] == ["fine"]


def test_the_cluster_resource_and_other_types_are_accepted():
    result = create(bootstrapped(), acl("kafka-cluster", resource_type=CLUSTER, operation=9),
                    acl("g", resource_type=GROUP, operation=ALL), acl("t", resource_type=5, operation=15),
                    acl("User:x", resource_type=7, operation=13), acl("tok", resource_type=6, operation=14))
    assert codes(result) == [OK] * 5


@pytest.mark.parametrize("field, value", [
    ("resource_type", 0), ("resource_type", 8), ("resource_pattern_type", 0), ("resource_pattern_type", 5),
    ("operation", 0), ("operation", 16), ("permission_type", 0), ("permission_type", 4),
])
def test_an_unknown_element_refuses_the_whole_request(field, value):
    bad = replace(acl(), **{field: i8(value)})
    with pytest.raises(ApiError) as err:
        create(bootstrapped(), acl("fine"), bad)
    assert err.value.code == INVALID
    response = create_error_response(request("create_acls", 3, creations=(acl(), bad)), INVALID, err.value.message)
    assert [(r.error_code, r.error_message) for r in response.results] == [(INVALID, err.value.message)] * 2


@pytest.mark.parametrize("field", ["resource_type_filter", "pattern_type_filter", "operation", "permission_type"])
def test_an_unknown_filter_element_refuses_the_whole_request(field):
    bad = replace(acl_filter(), **{field: i8(0)})
    with pytest.raises(ApiError) as err:
        delete(bootstrapped(), bad)
    assert err.value.code == INVALID
    with pytest.raises(ApiError):
        describe(bootstrapped(), bad)
    response = delete_error_response(request("delete_acls", 3, filters=(bad, bad)), INVALID, "x")
    assert [(r.error_code, r.matching_acls) for r in response.filter_results] == [(INVALID, ())] * 2


# (ACL, filter, matches): Kafka 4.1.2's AclBindingFilter.matches gave the same answers
LIT = dict(name="orders", pattern=LITERAL)
MATCHING = [
    (LIT, acl_filter(), True),
    (LIT, acl_filter("orders"), True),
    (LIT, acl_filter("order"), False),
    (LIT, acl_filter("orders", pattern=LITERAL), True),
    (LIT, acl_filter("orders", pattern=PREFIXED), False),
    (LIT, acl_filter("orders", pattern=MATCH), True),
    (LIT, acl_filter(resource_type=TOPIC), True),
    (LIT, acl_filter(resource_type=GROUP), False),
    (dict(name="*", pattern=LITERAL), acl_filter("orders", pattern=MATCH), True),
    (dict(name="*", pattern=LITERAL), acl_filter("orders", pattern=ANY), False),
    (dict(name="*", pattern=LITERAL), acl_filter("*", pattern=ANY), True),
    (dict(name="ord", pattern=PREFIXED), acl_filter("orders", pattern=MATCH), True),
    (dict(name="ord", pattern=PREFIXED), acl_filter("ord", pattern=MATCH), True),
    (dict(name="ord", pattern=PREFIXED), acl_filter("or", pattern=MATCH), False),
    (dict(name="ord", pattern=PREFIXED), acl_filter("orders", pattern=PREFIXED), False),
    (dict(name="ord", pattern=PREFIXED), acl_filter("ord", pattern=PREFIXED), True),
    (dict(name="ord", pattern=PREFIXED), acl_filter(pattern=MATCH), True),
    (LIT, acl_filter(principal="User:alice"), True),
    (LIT, acl_filter(principal="User:bob"), False),
    (LIT, acl_filter(host="*"), True),
    (LIT, acl_filter(host="10.0.0.1"), False),
    (LIT, acl_filter(operation=READ), True),
    (LIT, acl_filter(operation=ALL), False),
    (LIT, acl_filter(permission=ALLOW), True),
    (LIT, acl_filter(permission=DENY), False),
]


@pytest.mark.parametrize("acl_fields, f, expected", MATCHING)
def test_filter_matching(acl_fields, f, expected):
    c = acl(acl_fields["name"], pattern=acl_fields["pattern"])
    record = m.AccessControlEntryRecordV0(
        id=new_uuid(1), resource_type=c.resource_type, resource_name=c.resource_name,
        pattern_type=c.resource_pattern_type, principal=c.principal, host=c.host, operation=c.operation,
        permission_type=c.permission_type)
    assert acl_matches(record, f) is expected


def test_describe_groups_by_resource_and_filters():
    image = bootstrapped()
    image = replayed(image, create(image, acl("orders"), acl("orders", "User:bob"), acl("ord", pattern=PREFIXED),
                                   acl("*"), acl("pay")))
    req = request("describe_acls", 3, resource_type_filter=i8(TOPIC), resource_name_filter="orders",
                  pattern_type_filter=i8(MATCH), principal_filter=None, host_filter=None, operation=i8(ANY),
                  permission_type=i8(ANY))
    resources = describe_acls(context(image), req).response.resources
    assert [(r.resource_name, r.pattern_type, [a.principal for a in r.acls]) for r in resources] == [
        ("orders", LITERAL, ["User:alice", "User:bob"]), ("ord", PREFIXED, ["User:alice"]),
        ("*", LITERAL, ["User:alice"])]


def test_two_filters_matching_one_acl_give_one_record():
    image = replayed(bootstrapped(), create(bootstrapped(), acl(), acl("pay")))
    result = delete(image, acl_filter("orders"), acl_filter(principal="User:alice"))
    assert [len(r.matching_acls) for r in result.response.filter_results] == [1, 2]
    assert len(result.records) == 2 and result.atomic
    assert replayed(image, result).acls == {}


def test_the_error_responses_and_the_table():
    response = describe_error_response(None, ErrorCode.not_controller, "gone")
    assert (response.error_code, response.error_message, response.resources) == (ErrorCode.not_controller, "gone", ())
    assert [(c.api_key, c.name, c.min_version, c.max_version, c.read_only) for c in COMMANDS] == [
        (29, "describe_acls", 1, 3, True), (30, "create_acls", 1, 3, False), (31, "delete_acls", 1, 3, False)]
