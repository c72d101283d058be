"""The controller's per-API permission table (engine/controller/api_permissions.py), as Kafka's
ControllerApis asks its authorizer: whole refusals, and per-item denials taken out of the
request and answered beside the command's answers."""

from __future__ import annotations

import datetime
import uuid

from engine.controller.api_permissions import authorize_request, cluster_denial, covered_api_keys
from engine.controller.commands import all_commands
from engine.controller.controller_config import ControllerConfig
from engine.controller.standard_authorizer import (
    ALLOW, ALTER_CONFIGS, CLUSTER, CLUSTER_ACTION, DELETE, DESCRIBE, LITERAL, READ, TOPIC, AuthorizerConfig, Caller,
)
from engine.image.metadata_delta import MetadataDelta
from engine.server.controller_apis import controller_listener_apis
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i8, protocol_module
from tests.controller_helpers import bootstrapped, new_uuid, request

COMMANDS = all_commands()
ON = AuthorizerConfig(enabled=True)
SEEN, HIDDEN = new_uuid(1), new_uuid(2)


def _image():
    delta = MetadataDelta(bootstrapped())
    delta.replay(m.TopicRecordV0(name="seen", topic_id=SEEN), 100)
    delta.replay(m.TopicRecordV0(name="hidden", topic_id=HIDDEN), 101)
    return delta.apply()


def _acl(name: str, operation: int, resource_type: int = TOPIC) -> m.AccessControlEntryRecordV0:
    return m.AccessControlEntryRecordV0(id=uuid.uuid4(), resource_type=i8(resource_type), resource_name=name,
                                        pattern_type=i8(LITERAL), principal="User:alice", host="*",
                                        operation=i8(operation), permission_type=i8(ALLOW))


def _alice(*acls) -> Caller:
    return Caller(ON, tuple(acls), "User:alice", "127.0.0.1")


def test_every_api_the_controller_listener_serves_has_a_rule() -> None:
    served = set(controller_listener_apis(COMMANDS))
    assert served - covered_api_keys() == set()


def test_a_cluster_operation_refuses_the_whole_request() -> None:
    command = COMMANDS[51]  # AlterUserScramCredentials: ALTER on the cluster
    scram = protocol_module("alter_user_scram_credentials", 0, "request")
    req = scram.AlterUserScramCredentialsRequest(deletions=(scram.ScramCredentialDeletion(name="u", mechanism=i8(1)),),
                                                 upsertions=())
    verdict = authorize_request(_alice(_acl("kafka-cluster", DESCRIBE, CLUSTER)), command, req, _image())
    assert verdict.request is None
    assert [(r.user, r.error_code) for r in verdict.answer.results] == [("u", ErrorCode.cluster_authorization_failed)]
    assert cluster_denial(_alice(_acl("kafka-cluster", CLUSTER_ACTION, CLUSTER)), 52) is None  # Vote
    assert cluster_denial(_alice(), 55)[0] == ErrorCode.cluster_authorization_failed  # DescribeQuorum
    assert authorize_request(Caller(AuthorizerConfig(), (), "User:x", "h"), command, req, _image()).request is req


def test_delete_topics_tells_a_denied_topic_only_to_who_may_see_it() -> None:
    topics = protocol_module("delete_topics", 6, "request")
    req = request("delete_topics", 6, timeout=datetime.timedelta(seconds=1), topics=(
        topics.DeleteTopicState(name=None, topic_id=SEEN), topics.DeleteTopicState(name=None, topic_id=HIDDEN),
        topics.DeleteTopicState(name="hidden", topic_id=None), topics.DeleteTopicState(name="gone", topic_id=None),
        topics.DeleteTopicState(name="mine", topic_id=None)))
    caller = _alice(_acl("seen", READ), _acl("gone", DESCRIBE), _acl("mine", DELETE))
    verdict = authorize_request(caller, COMMANDS[20], req, _image())
    # left for the command: an unknown topic it may see (UNKNOWN_TOPIC_OR_PARTITION), one it may delete
    assert [t.name for t in verdict.request.topics] == ["gone", "mine"]
    empty = protocol_module("delete_topics", 6, "response").DeleteTopicsResponse(
        throttle_time=datetime.timedelta(0), responses=())
    answered = [(r.name, r.topic_id, r.error_code) for r in verdict.finish(empty).responses]
    denied = ErrorCode.topic_authorization_failed
    assert answered == [("seen", SEEN, denied), (None, HIDDEN, denied), ("hidden", None, denied)]
    # with delete.topic.enable=false the command refuses all of it first, as Kafka's ControllerApis does
    disabled = ControllerConfig(delete_topic_enable=False)
    assert authorize_request(caller, COMMANDS[20], req, _image(), disabled).request is req


def test_create_topics_hides_the_configs_of_a_topic_it_may_not_describe() -> None:
    req = request("create_topics", 7, timeout=datetime.timedelta(seconds=1), validate_only=True, topics=tuple(
        protocol_module("create_topics", 7, "request").CreatableTopic(
            name=n, num_partitions=1, replication_factor=1, assignments=(), configs=()) for n in ("a", "b")))
    verdict = authorize_request(_alice(_acl("kafka-cluster", 5, CLUSTER), _acl("a", ALTER_CONFIGS)), COMMANDS[19],
                                req, _image())
    assert [t.name for t in verdict.request.topics] == ["a", "b"]  # CREATE on the cluster: every topic
    module = protocol_module("create_topics", 7, "response")
    served = module.CreateTopicsResponse(throttle_time=datetime.timedelta(0), topics=tuple(
        module.CreatableTopicResult(name=n, topic_id=None, error_code=ErrorCode.none, error_message=None,
                                    configs=()) for n in ("a", "b")))
    results = {t.name: int(t.topic_config_error_code) for t in verdict.finish(served).topics}
    assert results == {"a": 0, "b": ErrorCode.topic_authorization_failed}


def test_alter_configs_are_denied_per_resource_with_the_resource_types_code() -> None:
    inc = protocol_module("incremental_alter_configs", 1, "request")
    req = inc.IncrementalAlterConfigsRequest(validate_only=True, resources=tuple(
        inc.AlterConfigsResource(resource_type=i8(t), resource_name=n, configs=())
        for t, n in ((4, "1"), (2, "seen"), (2, "mine"), (32, "g"))))
    verdict = authorize_request(_alice(_acl("mine", ALTER_CONFIGS)), COMMANDS[44], req, _image())
    assert [r.resource_name for r in verdict.request.resources] == ["mine"]
    empty = protocol_module("incremental_alter_configs", 1, "response").IncrementalAlterConfigsResponse(
        throttle_time=datetime.timedelta(0), responses=())
    answered = {(r.resource_type, r.resource_name): (r.error_code, r.error_message)
                for r in verdict.finish(empty).responses}
    assert answered == {(4, "1"): (ErrorCode.cluster_authorization_failed, "Cluster authorization failed."),
                        (2, "seen"): (ErrorCode.topic_authorization_failed, "Topic authorization failed."),
                        (32, "g"): (ErrorCode.group_authorization_failed, "Group authorization failed.")}


def test_describe_configs_is_allowed_by_alter_configs_and_denied_otherwise() -> None:
    desc = protocol_module("describe_configs", 4, "request")
    req = desc.DescribeConfigsRequest(include_synonyms=False, include_documentation=False, resources=tuple(
        desc.DescribeConfigsResource(resource_type=i8(2), resource_name=n, configuration_keys=None)
        for n in ("mine", "seen")))
    verdict = authorize_request(_alice(_acl("mine", ALTER_CONFIGS)), COMMANDS[32], req, _image())
    assert [r.resource_name for r in verdict.request.resources] == ["mine"]
    empty = protocol_module("describe_configs", 4, "response").DescribeConfigsResponse(
        throttle_time=datetime.timedelta(0), results=())
    assert [(r.resource_name, r.error_code) for r in verdict.finish(empty).results] == [
        ("seen", ErrorCode.topic_authorization_failed)]


def test_a_token_for_someone_else_needs_create_tokens_on_that_user() -> None:
    module = protocol_module("create_delegation_token", 3, "request")
    req = module.CreateDelegationTokenRequest(owner_principal_type="User", owner_principal_name="bob", renewers=(),
                                              max_lifetime=datetime.timedelta(milliseconds=-1))
    verdict = authorize_request(_alice(), COMMANDS[38], req, _image())
    assert verdict.request is None
    assert verdict.answer.error_code == ErrorCode.delegation_token_authorization_failed
    own = module.CreateDelegationTokenRequest(owner_principal_type=None, owner_principal_name=None, renewers=(),
                                              max_lifetime=datetime.timedelta(milliseconds=-1))
    assert authorize_request(_alice(), COMMANDS[38], own, _image()).request is own


def test_before_the_acls_are_loaded_only_super_users_pass() -> None:
    """Kafka's StandardAuthorizer before its initial load: AuthorizerNotReadyException, answered as
    UNKNOWN_SERVER_ERROR, for everyone but super users, whatever the ACLs or the no-ACL default say."""
    from engine.controller.api_permissions import NOT_READY_MESSAGE

    config = AuthorizerConfig(enabled=True, super_users=frozenset({"User:admin"}), allow_everyone_if_no_acl_found=True)
    create = request("create_topics", 7, timeout=datetime.timedelta(seconds=1), validate_only=True, topics=(
        protocol_module("create_topics", 7, "request").CreatableTopic(
            name="t", num_partitions=1, replication_factor=1, assignments=(), configs=()),))
    waiting = Caller(config, (), "User:alice", "127.0.0.1", loaded=False)
    verdict = authorize_request(waiting, COMMANDS[19], create, _image())
    assert verdict.request is None
    assert [(t.name, t.error_code, t.error_message) for t in verdict.answer.topics] == \
        [("t", ErrorCode.unknown_server_error, NOT_READY_MESSAGE)]
    assert cluster_denial(waiting, 52) == (ErrorCode.unknown_server_error, NOT_READY_MESSAGE)  # Vote
    admin = Caller(config, (), "User:admin", "127.0.0.1", loaded=False)
    assert authorize_request(admin, COMMANDS[19], create, _image()).request == create
    assert cluster_denial(admin, 52) is None
    loaded = Caller(config, (), "User:alice", "127.0.0.1")
    assert authorize_request(loaded, COMMANDS[19], create, _image()).request == create
    assert cluster_denial(loaded, 52) is None
