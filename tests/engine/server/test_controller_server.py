"""The quorum controller on real sockets: kraftd controllers on 127.0.0.1, formatted with
``kraftd storage format``, asked over Kafka's wire protocol.

- The first active controller writes the bootstrap records of bootstrap.checkpoint, as one
  metadata transaction, metadata.version first; a new leader after a failover writes none.
- ApiVersions tells the finalized features and serves Envelope.
- An Envelope carries a request the controller serves, with the client's principal; its answer
  comes back inside; a standby's NOT_CONTROLLER is the Envelope's own error. DescribeQuorum
  forwarded in an Envelope is answered by the Raft layer.
"""

from __future__ import annotations

import asyncio
import datetime
import contextlib
from pathlib import Path

from engine.net.kafka_client import KafkaClient
from engine.net.kafka_protocol import decode_response_frame, encode_request
from engine.raft.raft_messages import describe_quorum_request
from engine.records.kio_codec import ErrorCode, encode_entity, i8, i32, protocol_module
from engine.common.api_keys import ApiKeys
from engine.server.controller_server import read_bootstrap_records
from engine.storage.log_reader import read_log_dir
from tests.node_quorum import start_quorum, wait_until


@contextlib.asynccontextmanager
async def _bootstrapped(tmp_path: Path, count: int):
    """``count`` controllers started, one active with metadata.version; a client; all closed after."""
    _, nodes = await start_quorum(tmp_path, count)
    client = KafkaClient(client_id="test")
    try:
        active = await wait_until(lambda: _active(nodes), 30, "an active controller")
        await wait_until(lambda: active.image.metadata_version, 30, "metadata.version")
        yield nodes, active, client
    finally:
        await client.close()
        for node in nodes:
            await node.stop()


def _active(nodes):
    return next((n for n in nodes if n.controller is not None and n.controller.core.is_active), None)


def _type_names(node) -> list[str]:
    return [e.record.type_name for e in read_log_dir(node.settings.metadata_log_dir) if hasattr(e.record, "type_name")]


def test_the_first_active_controller_writes_the_bootstrap_records_once(tmp_path: Path) -> None:
    async def scenario():
        _, nodes = await start_quorum(tmp_path, 3)
        try:
            first = await wait_until(lambda: _active(nodes), 30, "an active controller")
            await wait_until(lambda: all(n.image.metadata_version for n in nodes), 30, "metadata.version everywhere")
            expected = read_bootstrap_records(first.settings.metadata_log_dir)
            assert {n.image.metadata_version for n in nodes} == {expected[0].feature_level}
            assert all(dict(n.image.features) == {r.name: r.feature_level for r in expected} for n in nodes)
            await first.stop()  # a standby takes over: the log is not empty, no second bootstrap
            rest = [n for n in nodes if n is not first]
            second = await wait_until(lambda: _active(rest), 30, "a new active controller")
            await wait_until(lambda: second.last_committed_offset > first.last_committed_offset + 2, 30, "commits")
            return rest
        finally:
            for node in nodes:
                await node.stop()

    rest = asyncio.run(asyncio.wait_for(scenario(), 120))
    names = _type_names(rest[0])
    data = [n for n in names if n not in ("NO_OP_RECORD",)]
    start = data.index("BEGIN_TRANSACTION_RECORD")
    assert data[start + 1] == "FEATURE_LEVEL_RECORD"
    assert names.count("BEGIN_TRANSACTION_RECORD") == 1 and names.count("END_TRANSACTION_RECORD") == 1
    assert names.count("FEATURE_LEVEL_RECORD") == len(read_bootstrap_records(rest[0].settings.metadata_log_dir))


def test_api_versions_tell_the_finalized_features_and_serve_envelope(tmp_path: Path) -> None:
    async def scenario():
        async with _bootstrapped(tmp_path, 1) as (_, node, client):
            address = node.driver.address
            ranges = await client.api_versions(address)
            request = protocol_module("api_versions", 3, "request").ApiVersionsRequest(
                client_software_name="test", client_software_version="1")
            response = await client.send(address, request)
            return ranges, response, dict(node.image.features)

    ranges, response, features = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert ApiKeys.ENVELOPE in ranges
    assert response.error_code == ErrorCode.none
    # kraft.version as the quorum has it (a one-voter quorum formatted --standalone: 1)
    assert {f.name: int(f.max_version_level) for f in response.finalized_features} == {**features, "kraft.version": 1}
    assert int(response.finalized_features_epoch) >= 0


def _scram_request(user: str) -> object:
    module = protocol_module("alter_user_scram_credentials", 0, "request")
    return module.AlterUserScramCredentialsRequest(deletions=(), upsertions=(module.ScramCredentialUpsertion(
        name=user, mechanism=i8(1), iterations=i32(4096), salt=b"salt", salted_password=b"\x01" * 32),))


def _envelope(inner: object, principal: tuple[str, str] | None, token: bool = False) -> object:
    data = None
    if principal is not None:
        module = protocol_module("default_principal_data", 0, "data")
        data = (0).to_bytes(2, "big") + encode_entity(module.DefaultPrincipalData(
            type_=principal[0], name=principal[1], token_authenticated=token))
    return protocol_module("envelope", 0, "request").EnvelopeRequest(
        request_data=encode_request(inner, 77, "broker-forwarder")[4:], request_principal=data,
        client_host_address=bytes([127, 0, 0, 1]))


def test_an_envelope_carries_a_forwarded_request_and_its_answer(tmp_path: Path) -> None:
    """A broker forwards a client's AlterUserScramCredentials in an Envelope: the active
    controller serves it and answers inside; a standby answers NOT_CONTROLLER inside; an
    Envelope whose inner bytes are not a request gets UNSUPPORTED_VERSION (Kafka's EnvelopeUtils),
    and the connection goes on serving."""
    async def scenario():
        async with _bootstrapped(tmp_path, 3) as (nodes, active, client):
            standby = next(n for n in nodes if n is not active)
            answered = await client.send(active.driver.address, _envelope(_scram_request("alice"), ("User", "admin")))
            anonymous = ("User", "ANONYMOUS")
            refused = await client.send(standby.driver.address, _envelope(_scram_request("bob"), anonymous))
            garbage = protocol_module("envelope", 0, "request").EnvelopeRequest(
                request_data=b"\x00\x01", request_principal=_envelope(_scram_request("x"), anonymous).request_principal,
                client_host_address=b"")
            broken = await client.send(active.driver.address, garbage)
            after = await client.send(active.driver.address, _envelope(_scram_request("carol"), anonymous))
            quorum = await client.send(active.driver.address, _envelope(describe_quorum_request(), anonymous))
            quorum_at_standby = await client.send(standby.driver.address,
                                                  _envelope(describe_quorum_request(), anonymous))
            await wait_until(lambda: all(len(n.image.scram) == 2 for n in nodes), 30, "the credentials everywhere")
            return answered, refused, broken, after, (quorum, quorum_at_standby, active), [n.image for n in nodes]

    answered, refused, broken, after, quorum, images = asyncio.run(asyncio.wait_for(scenario(), 120))
    for envelope, user in ((answered, "alice"), (after, "carol")):
        assert envelope.error_code == ErrorCode.none
        correlation_id, inner = decode_response_frame(envelope.response_data, 51, 0)
        assert correlation_id == 77
        assert [(r.user, r.error_code) for r in inner.results] == [(user, ErrorCode.none)]
    # as Kafka's RequestChannel: NOT_CONTROLLER inside becomes the Envelope's own error, so the broker
    # reconnects to the active controller
    assert (refused.error_code, refused.response_data) == (ErrorCode.not_controller, None)
    assert broken.error_code == ErrorCode.unsupported_version
    at_active, at_standby, active = quorum
    _, described = decode_response_frame(at_active.response_data, 55, type(describe_quorum_request()).__version__)
    assert int(described.topics[0].partitions[0].leader_id) == active.settings.node_id
    assert at_standby.error_code == ErrorCode.not_controller
    for image in images:
        assert sorted(user for _, user in image.scram) == ["alice", "carol"]


def test_every_controller_registers_itself_and_again_after_a_restart(tmp_path: Path) -> None:
    """KIP-919: each controller's RegisterControllerRecord (its incarnation and listener) reaches
    the log, the active one's through its own core, the standbys' by ControllerRegistration; a
    restarted controller registers its new incarnation."""
    async def scenario():
        async with _bootstrapped(tmp_path, 3) as (nodes, active, _):
            def registered() -> bool:
                controllers = active.image.cluster.controllers
                return all(n.controller.registrar.registered(active.image) for n in nodes) and len(controllers) == 3
            await wait_until(registered, 30, "three controllers registered")
            first = {i: c.incarnation_id for i, c in active.image.cluster.controllers.items()}
            standby = next(n for n in nodes if n is not active)
            await standby.stop()
            restarted = type(standby)(standby.settings)
            nodes.append(restarted)
            await restarted.start()
            await wait_until(lambda: restarted.controller.registrar.registered(active.image), 30, "a new incarnation")
            return first, dict(active.image.cluster.controllers), standby.settings.node_id, nodes

    first, after, restarted_id, nodes = asyncio.run(asyncio.wait_for(scenario(), 120))
    assert len(set(first.values())) == 3
    assert after[restarted_id].incarnation_id != first[restarted_id]
    for node in nodes[:3]:
        registration = after[node.settings.node_id]
        assert [(e.name, e.host, e.port) for e in registration.endpoints] == [
            (name, host, port) for name, (host, port) in node.driver.endpoints]
        assert dict((f.name, (f.min_version, f.max_version)) for f in registration.supported_features)["metadata.version"]


def test_a_forwarded_create_delegation_token_is_the_principals_and_lands_in_the_image(tmp_path: Path) -> None:
    """With delegation.token.secret.key set, a broker's forwarded CreateDelegationToken (v1: no
    owner) makes a token owned by the Envelope's principal, HMAC-SHA512 of its id by the secret."""
    import hashlib
    import hmac

    secret = "bench-secret"
    v1 = protocol_module("create_delegation_token", 1, "request")
    request = v1.CreateDelegationTokenRequest(
        renewers=(v1.CreatableRenewers(principal_type="User", principal_name="bob"),),
        max_lifetime=datetime.timedelta(milliseconds=-1))

    async def scenario():
        _, (node,) = await start_quorum(tmp_path, 1, **{"delegation.token.secret.key": secret})
        client = KafkaClient(client_id="test")
        try:
            await wait_until(lambda: node.controller.core.is_active and node.image.metadata_version, 30, "active")
            direct = await _raw_exchange(node.driver.address, encode_request(request, 5, "admin"))
            by_token = await client.send(node.driver.address, _envelope(request, ("User", "eve"), token=True))
            answer = await client.send(node.driver.address, _envelope(request, ("User", "alice")))
            await wait_until(lambda: node.image.delegation_tokens, 30, "the token in the image")
            return (direct, by_token), answer, dict(node.image.delegation_tokens)
        finally:
            await client.close()
            await node.stop()

    (direct, by_token), envelope, tokens = asyncio.run(asyncio.wait_for(scenario(), 120))
    # as Kafka's ControllerApis.allowTokenRequests: not straight to a PLAINTEXT controller listener,
    # and never for a principal that authenticated with a delegation token
    # (read by hand: Kafka answers these with timestamps of -1, which kio refuses to decode)
    assert _token_refusal(direct) == (ErrorCode.delegation_token_request_not_allowed, "User", "ANONYMOUS")
    assert by_token.error_code == ErrorCode.none
    assert _token_refusal(bytes(by_token.response_data)) == (ErrorCode.delegation_token_request_not_allowed,
                                                             "User", "eve")
    assert envelope.error_code == ErrorCode.none
    _, inner = decode_response_frame(envelope.response_data, 38, 1)
    assert (inner.error_code, inner.principal_type, inner.principal_name) == (ErrorCode.none, "User", "alice")
    assert inner.hmac == hmac.new(secret.encode(), inner.token_id.encode(), hashlib.sha512).digest()
    (record,) = tokens.values()
    assert (record.token_id, record.owner, [r for r in record.renewers]) == (inner.token_id, "User:alice", ["User:bob"])


async def _raw_exchange(address, frame: bytes) -> bytes:
    """One request frame sent and one response frame read, with no decoding."""
    reader, writer = await asyncio.open_connection(*address)
    try:
        writer.write(frame)
        await writer.drain()
        size = int.from_bytes(await reader.readexactly(4), "big")
        return await reader.readexactly(size)
    finally:
        writer.close()


def _token_refusal(frame: bytes) -> tuple[int, str, str]:
    """Error code and owner of a CreateDelegationToken v1 response frame (correlation id first)."""
    error = int.from_bytes(frame[4:6], "big", signed=True)
    pos, names = 6, []
    for _ in range(2):
        length = int.from_bytes(frame[pos:pos + 2], "big")
        names.append(frame[pos + 2:pos + 2 + length].decode())
        pos += 2 + length
    return error, names[0], names[1]
