"""StandardAuthorizer's rules over ACL records (engine/controller/standard_authorizer.py), a table
of cases as Kafka's StandardAuthorizerTest has them, and its config keys."""

from __future__ import annotations

import pytest

from engine.common.errors import ConfigError
from engine.controller.controller_config import ControllerConfig
from engine.controller.standard_authorizer import (
    ALL, ALLOW, ALTER, ALTER_CONFIGS, CLUSTER, CLUSTER_ACTION, CREATE, DELETE, DENY, DESCRIBE, DESCRIBE_CONFIGS,
    GROUP, LITERAL, PREFIXED, READ, STANDARD_AUTHORIZER, TOPIC, WRITE, AuthorizerConfig, authorize,
)
from engine.records import metadata_records as m
from engine.records.kio_codec import i8
from tests.controller_helpers import new_uuid


def acl(resource_type: int, name: str, pattern: int, principal: str, operation: int, permission: int,
        host: str = "*") -> m.AccessControlEntryRecordV0:
    return m.AccessControlEntryRecordV0(id=new_uuid(1), resource_type=i8(resource_type), resource_name=name,
                                        pattern_type=i8(pattern), principal=principal, host=host,
                                        operation=i8(operation), permission_type=i8(permission))


ON = AuthorizerConfig(enabled=True, super_users=frozenset({"User:admin"}))
EVERYONE = AuthorizerConfig(enabled=True, allow_everyone_if_no_acl_found=True)
ALICE_READS_FOO = acl(TOPIC, "foo", LITERAL, "User:alice", READ, ALLOW)

# (what, config, acls, principal, host, operation, resource type, name, allowed)
CASES = [
    ("no authorizer allows all", AuthorizerConfig(), [], "User:bob", "1.2.3.4", ALTER, CLUSTER, "kafka-cluster",
     True),
    ("no ACL: denied by default", ON, [], "User:bob", "1.2.3.4", READ, TOPIC, "foo", False),
    ("a super user needs no ACL", ON, [], "User:admin", "1.2.3.4", ALTER, CLUSTER, "kafka-cluster", True),
    ("a super user is not denied either", ON, [acl(TOPIC, "foo", LITERAL, "User:admin", READ, DENY)],
     "User:admin", "h", READ, TOPIC, "foo", True),
    ("a literal ALLOW", ON, [ALICE_READS_FOO], "User:alice", "h", READ, TOPIC, "foo", True),
    ("another principal", ON, [ALICE_READS_FOO], "User:bob", "h", READ, TOPIC, "foo", False),
    ("another operation", ON, [ALICE_READS_FOO], "User:alice", "h", WRITE, TOPIC, "foo", False),
    ("a literal is not a prefix", ON, [ALICE_READS_FOO], "User:alice", "h", READ, TOPIC, "foobar", False),
    ("another resource type", ON, [ALICE_READS_FOO], "User:alice", "h", READ, GROUP, "foo", False),
    ("deny beats allow", ON, [ALICE_READS_FOO, acl(TOPIC, "foo", LITERAL, "User:alice", READ, DENY)],
     "User:alice", "h", READ, TOPIC, "foo", False),
    ("a wildcard principal's deny beats a literal allow",
     ON, [ALICE_READS_FOO, acl(TOPIC, "f", PREFIXED, "User:*", ALL, DENY)], "User:alice", "h", READ, TOPIC, "foo",
     False),
    ("a prefixed ALLOW", ON, [acl(TOPIC, "fo", PREFIXED, "User:alice", READ, ALLOW)], "User:alice", "h", READ,
     TOPIC, "foobar", True),
    ("a prefix that does not match", ON, [acl(TOPIC, "fx", PREFIXED, "User:alice", READ, ALLOW)], "User:alice",
     "h", READ, TOPIC, "foobar", False),
    ("the wildcard resource", ON, [acl(TOPIC, "*", LITERAL, "User:alice", READ, ALLOW)], "User:alice", "h", READ,
     TOPIC, "anything", True),
    ("a prefixed '*' is no wildcard", ON, [acl(TOPIC, "*", PREFIXED, "User:alice", READ, ALLOW)], "User:alice",
     "h", READ, TOPIC, "anything", False),
    ("the wildcard principal", ON, [acl(TOPIC, "foo", LITERAL, "User:*", READ, ALLOW)], "User:carol", "h", READ,
     TOPIC, "foo", True),
    ("the host must match", ON, [acl(TOPIC, "foo", LITERAL, "User:alice", READ, ALLOW, host="10.0.0.1")],
     "User:alice", "10.0.0.2", READ, TOPIC, "foo", False),
    ("the host matches", ON, [acl(TOPIC, "foo", LITERAL, "User:alice", READ, ALLOW, host="10.0.0.1")],
     "User:alice", "10.0.0.1", READ, TOPIC, "foo", True),
    ("ALL allows anything", ON, [acl(CLUSTER, "kafka-cluster", LITERAL, "User:b", ALL, ALLOW)], "User:b", "h",
     CLUSTER_ACTION, CLUSTER, "kafka-cluster", True),
    ("READ implies DESCRIBE", ON, [ALICE_READS_FOO], "User:alice", "h", DESCRIBE, TOPIC, "foo", True),
    ("DELETE implies DESCRIBE", ON, [acl(TOPIC, "foo", LITERAL, "User:alice", DELETE, ALLOW)], "User:alice", "h",
     DESCRIBE, TOPIC, "foo", True),
    ("CREATE does not imply DESCRIBE", ON, [acl(TOPIC, "foo", LITERAL, "User:alice", CREATE, ALLOW)],
     "User:alice", "h", DESCRIBE, TOPIC, "foo", False),
    ("ALTER_CONFIGS implies DESCRIBE_CONFIGS", ON, [acl(TOPIC, "foo", LITERAL, "User:alice", ALTER_CONFIGS, ALLOW)],
     "User:alice", "h", DESCRIBE_CONFIGS, TOPIC, "foo", True),
    ("DESCRIBE implies nothing else", ON, [acl(TOPIC, "foo", LITERAL, "User:alice", DESCRIBE, ALLOW)],
     "User:alice", "h", READ, TOPIC, "foo", False),
    ("a DENY of READ does not deny DESCRIBE",
     ON, [acl(TOPIC, "foo", LITERAL, "User:alice", DESCRIBE, ALLOW), acl(TOPIC, "foo", LITERAL, "User:alice", READ,
                                                                         DENY)],
     "User:alice", "h", DESCRIBE, TOPIC, "foo", True),
    ("allow.everyone with no ACL on the resource", EVERYONE, [ALICE_READS_FOO], "User:bob", "h", READ, TOPIC, "bar",
     True),
    ("allow.everyone not when an ACL names the resource", EVERYONE, [ALICE_READS_FOO], "User:bob", "h", READ, TOPIC,
     "foo", False),
    ("allow.everyone not when a prefixed ACL covers it", EVERYONE,
     [acl(TOPIC, "f", PREFIXED, "User:alice", WRITE, ALLOW)], "User:bob", "h", READ, TOPIC, "foo", False),
]


@pytest.mark.parametrize("what,config,acls,principal,host,operation,resource_type,name,allowed", CASES,
                         ids=[case[0] for case in CASES])
def test_standard_authorizer_rules(what, config, acls, principal, host, operation, resource_type, name,
                                   allowed) -> None:
    assert authorize(acls, config, principal, host, operation, resource_type, name) is allowed


def test_the_config_keys_are_read_into_the_controller_config() -> None:
    config = ControllerConfig.from_properties(1, {
        "authorizer.class.name": STANDARD_AUTHORIZER, "super.users": " User:admin ;User:CN=a,O=b;;",
        "allow.everyone.if.no.acl.found": "TRUE"})
    assert config.authorizer == AuthorizerConfig(enabled=True, super_users=frozenset({"User:admin", "User:CN=a,O=b"}),
                                                 allow_everyone_if_no_acl_found=True)
    assert ControllerConfig.from_properties(1, {}).authorizer == AuthorizerConfig()


@pytest.mark.parametrize("props,message", [
    ({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}, "is not supported"),
    ({"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "admin"}, "is not a principal"),
    ({"authorizer.class.name": STANDARD_AUTHORIZER, "allow.everyone.if.no.acl.found": "yes"}, "true or false"),
])
def test_a_bad_authorizer_setting_is_one_line(props, message) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        ControllerConfig.from_properties(1, props, "c.properties")
    assert "\n" not in str(caught.value)
