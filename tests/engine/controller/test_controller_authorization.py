"""The controller's authorizer on real sockets: a kraftd controller with authorizer.class.name set
refuses what its ACLs do not allow, with Kafka's error codes, and serves what they do.

One standalone controller, run twice on the same log: first with super.users=User:ANONYMOUS
(our test client connects as ANONYMOUS) to write the ACLs, then without super users, when
only those ACLs speak. Forwarded requests are authorized as the Envelope's principal."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path

from engine.net.kafka_client import KafkaClient
from engine.net.kafka_protocol import decode_response_frame, encode_request
from engine.raft.raft_messages import describe_quorum_request, vote_request
from engine.raft.voter_set import ReplicaKey
from engine.records.kio_codec import ErrorCode, encode_entity, i8, i16, i32, protocol_module
from engine.server.controller_node import ControllerNode, load_controller_settings
from engine.controller.standard_authorizer import (
    ALLOW, CLUSTER, CREATE, DESCRIBE, LITERAL, PREFIXED, STANDARD_AUTHORIZER, TOPIC,
)
from engine.controller.api_permissions import NOT_READY_MESSAGE
from engine.net.ports import pick_ports
from engine.net.security_config import client_security
from tests.node_quorum import make_quorum, start_quorum, wait_until

_topics = protocol_module("create_topics", 7, "request")
_acls = protocol_module("create_acls", 3, "request")


def _create_topics(*names: str) -> object:
    return _topics.CreateTopicsRequest(topics=tuple(
        _topics.CreatableTopic(name=n, num_partitions=i32(1), replication_factor=i16(-1), assignments=(), configs=())
        for n in names), timeout=datetime.timedelta(seconds=30), validate_only=True)


def _allow(principal: str, operation: int, resource_type: int, name: str, pattern: int = LITERAL) -> object:
    return _acls.AclCreation(resource_type=i8(resource_type), resource_name=name, resource_pattern_type=i8(pattern),
                             principal=principal, host="*", operation=i8(operation), permission_type=i8(ALLOW))


def _envelope(inner: object, principal: str) -> object:
    module = protocol_module("default_principal_data", 0, "data")
    kind, _, name = principal.partition(":")
    data = (0).to_bytes(2, "big") + encode_entity(module.DefaultPrincipalData(type_=kind, name=name,
                                                                               token_authenticated=False))
    return protocol_module("envelope", 0, "request").EnvelopeRequest(
        request_data=encode_request(inner, 9, "broker")[4:], request_principal=data,
        client_host_address=bytes([127, 0, 0, 1]))


PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
PASSED = ErrorCode.invalid_replication_factor  # what the command answers a topic with no broker registered


def _results(response) -> dict[str, int]:
    return {t.name: int(t.error_code) for t in response.topics}


def test_the_controller_enforces_its_acls_and_answers_kafkas_error_codes(tmp_path: Path) -> None:
    async def scenario():
        configs, (node,) = await start_quorum(tmp_path, 1, **{"authorizer.class.name": STANDARD_AUTHORIZER,
                                                               "super.users": "User:ANONYMOUS"})
        client = KafkaClient(client_id="test")
        try:
            await wait_until(lambda: node.controller.core.is_active and node.image.metadata_version, 30, "active")
            address = node.driver.address
            # as a super user: the ACLs; and alice, forwarded by a broker, is judged as alice
            acls = await client.send(address, _acls.CreateAclsRequest(creations=(
                _allow("User:ANONYMOUS", CREATE, TOPIC, "ok-", PREFIXED),
                _allow("User:ANONYMOUS", DESCRIBE, CLUSTER, "kafka-cluster"),
                _allow("User:alice", CREATE, CLUSTER, "kafka-cluster"))))
            assert [r.error_code for r in acls.results] == [ErrorCode.none] * 3
            forwarded_as_bob = await client.send(address, _envelope(_create_topics("b1"), "User:bob"))
            forwarded_as_alice = await client.send(address, _envelope(_create_topics("a1"), "User:alice"))
            await wait_until(lambda: len(node.image.acls) == 3, 30, "the ACLs committed")
        finally:
            await node.stop()
        # again, without super users: only the ACLs speak
        text = configs[0].read_text().replace("super.users=User:ANONYMOUS", "super.users=User:admin")
        configs[0].write_text(text)
        node = ControllerNode(load_controller_settings(configs[0]))
        await node.start()
        try:
            await wait_until(lambda: node.controller.core.is_active and len(node.image.acls) == 3, 30, "active")
            address = node.driver.address
            created = await client.send(address, _create_topics("ok-1", "nope"))
            quorum = await client.send(address, describe_quorum_request())
            acl_write = await client.send(address, _acls.CreateAclsRequest(creations=(
                _allow("User:ANONYMOUS", CREATE, CLUSTER, "kafka-cluster"),)))
            vote = await client.send(address, vote_request(node.meta.cluster_id, ReplicaKey(7, None), 1,
                                                           ReplicaKey(node.settings.node_id, None), 0, 0, False))
            envelope = await client.send(address, _envelope(_create_topics("ok-2"), "User:admin"))
            return forwarded_as_bob, forwarded_as_alice, created, quorum, acl_write, vote, envelope, \
                len(node.image.acls)
        finally:
            await client.close()
            await node.stop()

    bob, alice, created, quorum, acl_write, vote, envelope, acl_count = asyncio.run(asyncio.wait_for(scenario(), 120))
    _, bob_inner = decode_response_frame(bob.response_data, 19, 7)
    _, alice_inner = decode_response_frame(alice.response_data, 19, 7)
    assert _results(bob_inner) == {"b1": ErrorCode.topic_authorization_failed}
    assert bob_inner.topics[0].error_message == "Authorization failed."
    # allowed means the command judged it: with no broker registered, INVALID_REPLICATION_FACTOR
    assert _results(alice_inner) == {"a1": PASSED}  # CREATE on the cluster covers every topic
    # per topic: the prefixed ACL allows ok-1, nothing allows nope
    assert _results(created) == {"ok-1": PASSED, "nope": ErrorCode.topic_authorization_failed}
    assert quorum.error_code == ErrorCode.none  # DESCRIBE on the cluster is granted
    assert [r.error_code for r in acl_write.results] == [ErrorCode.cluster_authorization_failed]
    assert acl_count == 3  # the refused CreateAcls wrote nothing
    # a Raft peer without CLUSTER_ACTION, and a "broker" without it forwarding for a super user
    assert vote.error_code == ErrorCode.cluster_authorization_failed
    assert (envelope.error_code, envelope.response_data) == (ErrorCode.cluster_authorization_failed, None)


def test_until_the_acls_are_loaded_only_super_users_are_served(tmp_path: Path) -> None:
    """A controller that has not caught up with the high watermark judges nobody by the ACLs it has
    replayed so far: as Kafka's StandardAuthorizer before its initial load, it answers every check of
    a non-super user with UNKNOWN_SERVER_ERROR (retriable), even with allow.everyone.if.no.acl.found,
    and serves super users. The controllers reach each other as ``ctl``, a super user, as Kafka needs
    of them (their CLUSTER_ACTION ACL would be in the log they are yet to read); ``alice`` is a client.
    Once a leader is elected and its log applied, the ACLs speak."""
    jaas = (f'{PLAIN_MODULE} required username="ctl" password="ctl-secret" user_ctl="ctl-secret" '
            f'user_alice="alice-secret";')
    alice = client_security({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                             "sasl.jaas.config": f'{PLAIN_MODULE} required username="alice" password="alice-secret";'},
                            "alice.properties")

    async def scenario():
        configs = make_quorum(tmp_path / "q", pick_ports(3), **{
            "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.controller.protocol": "PLAIN", "listener.name.controller.plain.sasl.jaas.config": jaas,
            "authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:ctl",
            "allow.everyone.if.no.acl.found": "true"})
        nodes = [ControllerNode(load_controller_settings(c)) for c in configs]
        client = KafkaClient(client_id="test", security=alice)
        try:
            await nodes[0].start()  # one voter of three: no leader, no high watermark
            address = nodes[0].driver.address
            early = (await client.send(address, _create_topics("t1")),
                     await client.send(address, describe_quorum_request()),
                     await client.send(address, vote_request(nodes[0].meta.cluster_id, ReplicaKey(7, None), 1,
                                                             ReplicaKey(1, None), 0, 0, False)),
                     await client.send(address, _envelope(_create_topics("t2"), "User:ctl")))
            loaded_early = nodes[0].controller.acls_loaded()
            for node in nodes[1:]:
                await node.start()
            await wait_until(lambda: nodes[0].controller.acls_loaded(), 30, "the ACLs loaded on node 1")
            later = await client.send(address, _create_topics("t3"))
            return early, loaded_early, later
        finally:
            await client.close()
            for node in nodes:
                await node.stop()

    (created, quorum, vote, envelope), loaded_early, later = asyncio.run(asyncio.wait_for(scenario(), 120))
    assert not loaded_early
    assert _results(created) == {"t1": ErrorCode.unknown_server_error}
    assert created.topics[0].error_message == NOT_READY_MESSAGE
    assert quorum.error_code == ErrorCode.unknown_server_error
    assert vote.error_code == ErrorCode.unknown_server_error
    assert (envelope.error_code, envelope.response_data) == (ErrorCode.unknown_server_error, None)
    # loaded: no ACL names the topic, so allow.everyone.if.no.acl.found lets it through to the command
    # (which answers as the active controller would, or sends the caller to it)
    assert _results(later)["t3"] in (PASSED, ErrorCode.not_controller)


def test_a_broker_forwards_its_clients_principal_and_address() -> None:
    """The simulated broker's Envelope carries who the client's connection authenticated as (not a
    fixed ANONYMOUS) and its address: what the controller authorizes the inner request as."""
    from engine.broker.forwarding import envelope_of
    from engine.net.channel_security import KafkaPrincipal
    from engine.net.kafka_server import RequestContext
    from engine.server.controller_apis import client_host, read_principal_data

    ctx = RequestContext(19, 7, 5, "admin", ("10.1.2.3", 40000), "PLAINTEXT", principal=KafkaPrincipal("User", "alice"))
    envelope = envelope_of(ctx, _create_topics("t"))
    assert read_principal_data(envelope.request_principal) == ("User:alice", False)
    assert client_host(envelope.client_host_address) == "10.1.2.3"


def test_acl_hosts_are_compared_with_javas_form_of_the_address() -> None:
    """Kafka compares an ACL's host with InetAddress.getHostAddress: IPv6 uncompressed."""
    from engine.server.controller_server import java_host_address

    assert java_host_address("127.0.0.1") == "127.0.0.1"
    assert java_host_address("::1") == "0:0:0:0:0:0:0:1"
    assert java_host_address("fe80::ab:1%eth0") == "fe80:0:0:0:0:0:ab:1"
