"""ACLs against Kafka's own classes: which bindings a filter matches (AclBindingFilter.matches;
ours: acl_control.acl_matches, what DeleteAcls and DescribeAcls select) and what the authorizer
answers (StandardAuthorizer, configured with super.users and allow.everyone.if.no.acl.found and
loaded with the ACLs; ours: standard_authorizer.authorize, over the host as the controller
writes a client's address, controller_server.java_host_address).

Names are drawn from a few that are prefixes of one another ("f", "fo", "foo", "foobar") and the
wildcard "*", principals include User:* and other principal types, hosts "*", IPv4 and IPv6
written several ways, operations every concrete one (ALL too) so that READ, WRITE, DELETE and
ALTER imply DESCRIBE and ALTER_CONFIGS implies DESCRIBE_CONFIGS, for ALLOW only."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import example, given, settings, strategies as st
from kafka_peer.harness import DIFF_EXAMPLES

from engine.controller.acl_control import acl_matches
from engine.controller.standard_authorizer import AuthorizerConfig, STANDARD_AUTHORIZER, authorize, cidr_contains
from engine.image.acls_image import StandardAcl
from engine.records.kio_codec import protocol_module
from engine.server.controller_server import java_host_address

pytestmark = pytest.mark.kafka

_DeleteAclsFilter = protocol_module("delete_acls", 3, "request").DeleteAclsFilter


def _filter(resource_type, name, pattern_type, principal, host, operation, permission_type):
    """A DeleteAcls filter, as the controller receives one."""
    return _DeleteAclsFilter(resource_type_filter=resource_type, resource_name_filter=name,
                             pattern_type_filter=pattern_type, principal_filter=principal, host_filter=host,
                             operation=operation, permission_type=permission_type)

DESCRIBE, DESCRIBE_CONFIGS = 8, 10
RESOURCE_TYPES = [2, 3, 4, 5, 6, 7]  # TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER
OPERATIONS = list(range(2, 15))  # ALL, READ, ... DESCRIBE_TOKENS
NAMES = ["f", "fo", "foo", "foobar", "fooc", "bar", "*", "kafka-cluster", "F\u00f6\u00f6", "fo*"]
PRINCIPALS = ["User:alice", "User:bob", "User:*", "Group:alice", "User:", "User:a:b"]
# CIDR blocks: Kafka 4.4's authorizer reads them (before, a host like any other string)
ACL_HOSTS = ["*", "10.0.0.1", "10.0.0.2", "0:0:0:0:0:0:0:1", "::1", "localhost", "10.0.0.0/24", "10.0.0.1/32",
             "010.0.0.0/8", "0.0.0.0/0", "10.0.0.0/33", "10.0.0.256/24", "::/0", "::1/128", "fe80::/10",
             "::ffff:10.0.0.0/104", "fe80::/+10", "10.0.0.0/", "/24"]
CLIENT_HOSTS = ["10.0.0.1", "10.0.0.2", "10.0.1.1", "::1", "0:0:0:0:0:0:0:1", "::ffff:10.0.0.1", "fe80::1",
                "127.0.0.1", "0.0.0.0"]

# "*" as the host half the time: a host that covers the caller is what lets the rest be compared
bindings = st.tuples(st.sampled_from(RESOURCE_TYPES), st.sampled_from(NAMES), st.sampled_from([3, 4]),
                     st.sampled_from(PRINCIPALS), st.one_of(st.just("*"), st.sampled_from(ACL_HOSTS)),
                     st.sampled_from(OPERATIONS), st.sampled_from([2, 3]))


def _field(draw, copied, any_value, others):
    """A filter's field: "any" half the time, else the target binding's value or another."""
    return draw(st.sampled_from([any_value, any_value, copied, draw(st.sampled_from(others))]))


@st.composite
def filters_and_bindings(draw):
    """Bindings, and a filter aimed at one of them (each field any, the same, or another), so
    that matches and near misses both come up."""
    acls = draw(st.lists(bindings, min_size=1, max_size=8))
    target = draw(st.sampled_from(acls))
    acl_filter = (
        _field(draw, target[0], 1, RESOURCE_TYPES),
        draw(st.sampled_from([None, target[1], draw(st.sampled_from(NAMES)),
                              target[1] + draw(st.sampled_from(["", "o", "bar"]))])),
        draw(st.sampled_from([1, 2, 2, target[2], 3, 4])),
        _field(draw, target[3], None, PRINCIPALS),
        _field(draw, target[4], None, ACL_HOSTS),
        _field(draw, target[5], 1, OPERATIONS),
        _field(draw, target[6], 1, [2, 3]),
    )
    return acl_filter, acls


def _acl(binding) -> StandardAcl:
    return StandardAcl(*binding)


@settings(max_examples=DIFF_EXAMPLES, deadline=None)
@given(filters_and_bindings())
def test_filters_match_the_bindings_kafkas_match(kafka_classes, case):
    acl_filter, acls = case
    kafkas = kafka_classes.call("AclBindingFilterMatches", filter=list(acl_filter), bindings=[list(b) for b in acls])
    ours = [acl_matches(_acl(b), _filter(*acl_filter)) for b in acls]
    assert ours == kafkas


# not User:* as the caller: Kafka's StandardAuthorizer throws on it (its set of the caller and the
# wildcard principal refuses the duplicate), which no client can arrange short of a user named "*"
CALLERS = ["User:alice", "User:bob", "Group:alice", "User:root", "User:"]


@st.composite
def authorizations(draw):
    """ACLs (some twinned with the opposite permission), and requests half of them aimed at one
    of the ACLs: its resource (a name under it when PREFIXED), its principal and an address its
    host covers, its operation or one it may imply."""
    acls = draw(st.lists(bindings, max_size=10, unique=True))
    # twins of opposite permission, through the wildcard principal or host at times, so that an
    # ALLOW and a DENY often both apply to one request
    for twin in draw(st.lists(st.sampled_from(acls), max_size=3)) if acls else ():
        flipped = (*twin[:3], draw(st.sampled_from([twin[3], "User:*"])), draw(st.sampled_from([twin[4], "*"])),
                   draw(st.sampled_from([twin[5], 2])), 5 - twin[6])
        if flipped not in acls:
            acls.append(flipped)
    actions = []
    for _ in range(draw(st.integers(1, 6))):
        if acls and draw(st.booleans()):
            resource_type, name, pattern, principal, host, operation, _ = draw(st.sampled_from(acls))
            if pattern == 4 or name == "*":
                name = name.rstrip("*") + draw(st.sampled_from(["", "o", "bar"]))
            caller = principal if principal in CALLERS else draw(st.sampled_from(CALLERS))
            client = host if host in CLIENT_HOSTS else draw(st.sampled_from(CLIENT_HOSTS))
            # the ACL's operation, one it may imply (DESCRIBE, DESCRIBE_CONFIGS), or any
            asked = draw(st.sampled_from([operation, DESCRIBE, DESCRIBE_CONFIGS, draw(st.sampled_from(OPERATIONS))]))
            actions.append((caller, client, asked, resource_type, name or "f"))
        else:
            actions.append((draw(st.sampled_from(CALLERS)), draw(st.sampled_from(CLIENT_HOSTS)),
                            draw(st.sampled_from(OPERATIONS)), draw(st.sampled_from(RESOURCE_TYPES)),
                            draw(st.sampled_from(NAMES[:-1]))))
    return acls, actions


def _implications(test):
    """Each operation that may imply DESCRIBE or DESCRIBE_CONFIGS (READ, WRITE, DELETE, ALTER,
    ALTER_CONFIGS), one ACL alone, ALLOW and DENY, asked both: random draws meet these rarely."""
    for operation in (3, 4, 6, 7, 11):
        for permission in (2, 3):
            test = example(([(2, "f", 3, "User:alice", "*", operation, permission)],
                            [("User:alice", "10.0.0.1", asked, 2, "f") for asked in (8, 10)]), [], False)(test)
    return test


@settings(max_examples=DIFF_EXAMPLES, deadline=None)
@given(authorizations(), st.lists(st.sampled_from(["User:root", "User:alice", "Group:alice"]), max_size=2, unique=True),
       st.booleans())
@_implications
# found by this test: Java reads an IPv4-mapped IPv6 address as the IPv4 one
@example(([(2, "f", 3, "User:alice", "10.0.0.1", 3, 3)], [("User:alice", "::ffff:10.0.0.1", 3, 2, "f")]), [], False)
# found by this test: Kafka 4.4 reads an ACL host written as a CIDR block
@example(([(2, "f", 3, "User:alice", "10.0.0.0/24", 3, 3)],
          [("User:alice", "10.0.0.1", 3, 2, "f"), ("User:alice", "10.0.1.1", 3, 2, "f")]), [], False)
def test_the_authorizer_answers_as_kafkas(kafka_classes, case, super_users, allow_everyone):
    acls, actions = case
    super_text = "; ".join(super_users)
    kafkas = kafka_classes.call("StandardAuthorize", acls=[list(b) for b in acls], super_users=super_text,
                                allow_everyone=allow_everyone, requests=[list(r) for r in actions])
    config = AuthorizerConfig.from_properties({"authorizer.class.name": STANDARD_AUTHORIZER,
                                               "super.users": super_text,
                                               "allow.everyone.if.no.acl.found": str(allow_everyone).lower()})
    standard = [_acl(b) for b in acls]
    cidr = tuple(int(p) for p in kafka_classes.version.split(".")[:2]) >= (4, 4)
    for (principal, client, operation, resource_type, name), (allowed, kafka_host) in zip(actions, kafkas):
        host = java_host_address(client)
        assert host == kafka_host, client
        assert authorize(standard, config, principal, host, operation, resource_type, name, cidr=cidr) == allowed, \
            (principal, client, operation, resource_type, name)


@st.composite
def cidr_pairs(draw) -> tuple[str, str]:
    """A client address and a block, often near each other; sometimes malformed."""
    if draw(st.booleans()):
        address = draw(st.ip_addresses(v=4))
        block = ipaddress.ip_network(f"{address}/{draw(st.integers(0, 32))}", strict=False)
        client = draw(st.one_of(st.just(address), st.ip_addresses(v=4), st.sampled_from(["0.0.0.0"])))
        bits = draw(st.sampled_from([str(block.prefixlen), "33", "", "+8", "-1"]))
        return str(client), f"{draw(st.sampled_from([block.network_address, address]))}/{bits}"
    address = draw(st.ip_addresses(v=6))
    block = ipaddress.ip_network(f"{address}/{draw(st.integers(0, 128))}", strict=False)
    client = draw(st.one_of(st.just(address), st.ip_addresses(v=6)))
    bits = draw(st.sampled_from([str(block.prefixlen), "129", "", "+64", "-0"]))
    network = draw(st.sampled_from([block.network_address.compressed, block.network_address.exploded]))
    return java_host_address(str(client)), f"{network}/{bits}"


@settings(max_examples=DIFF_EXAMPLES, deadline=None)
@given(st.lists(cidr_pairs(), min_size=1, max_size=10))
def test_cidr_blocks_cover_the_addresses_kafkas_cover(kafka_classes, pairs):
    if tuple(int(p) for p in kafka_classes.version.split(".")[:2]) < (4, 4):
        pytest.skip(f"Kafka {kafka_classes.version} reads no CIDR block (4.4 does)")
    kafkas = kafka_classes.call("CidrInRange", pairs=[list(p) for p in pairs])
    assert [cidr_contains(cidr, host) for host, cidr in pairs] == kafkas, pairs
