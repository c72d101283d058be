"""The simulated broker's client APIs on real sockets: a one-controller quorum in-process, a
broker registered in its metadata with raw BrokerRegistration/BrokerHeartbeat requests, and
BrokerApis served by a KafkaServer on 127.0.0.1 whose image is the controller's committed one.

- Metadata, DescribeCluster, DescribeTopicPartitions and the Describe* are answered from the
  image, at several versions, with Kafka's errors for what is unknown or refused;
- the admin writes go to the controller inside an Envelope and come back at the client's
  version; NOT_CONTROLLER is retried at the next controller; no controller is REQUEST_TIMED_OUT;
  an Envelope answer that does not read is UNKNOWN_SERVER_ERROR;
- Produce, Fetch, ListOffsets, ListGroups, FindCoordinator say there is no data;
- real admin clients (confluent-kafka, kafka-python) create and describe a topic through it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from engine.broker.broker_apis import LOCAL_APIS, BrokerApis
from engine.broker.forwarding import forwarded_apis
from engine.net.errors import NetworkError
from engine.net.kafka_client import KafkaClient
from engine.net.kafka_protocol import ApiSpec
from engine.net.kafka_server import KafkaServer
from engine.net.ports import pick_ports
from engine.records.kio_codec import ErrorCode, f64, i8, i16, i32, i64, protocol_module, u16
from tests.controller_helpers import request
from tests.node_quorum import CLUSTER_ID, start_quorum, wait_until

BROKER_ID = 100
FENCED_ID = 101
DEADLINE_S = 30


def _registration(broker_id: int, port: int, image: Any) -> Any:
    module = protocol_module("broker_registration", 4, "request")
    levels = {**image.features, "kraft.version": image.quorum.kraft_version or 0}
    features = tuple(module.Feature(name=name, min_supported_version=i16(1 if name == "metadata.version" else 0),
                                    max_supported_version=i16(level)) for name, level in sorted(levels.items()))
    return module.BrokerRegistrationRequest(
        broker_id=i32(broker_id), cluster_id=CLUSTER_ID, incarnation_id=uuid.uuid4(),
        listeners=(module.Listener(name="PLAINTEXT", host="127.0.0.1", port=u16(port), security_protocol=i16(0)),),
        features=features, rack="rack-a", log_dirs=(uuid.uuid4(),), previous_broker_epoch=i64(-1))


async def _heartbeats(client: KafkaClient, address: Any, node: Any, epoch: int) -> None:
    """The broker's heartbeats (unfencing it once caught up), until cancelled."""
    while True:
        beat = request("broker_heartbeat", 1, broker_id=i32(BROKER_ID), broker_epoch=i64(epoch),
                       current_metadata_offset=i64(node.image.provenance.last_offset), want_fence=False,
                       want_shut_down=False, offline_log_dirs=())
        try:
            await client.send(address, beat, timeout_ms=2000)
        except NetworkError:
            pass
        await asyncio.sleep(0.5)


async def _envelope_server(answer: Any) -> KafkaServer:
    """A real server on the controller listener answering every Envelope with ``answer``."""
    async def handler(ctx: Any, envelope: Any) -> Any:
        return answer

    server = KafkaServer(handler, apis={58: ApiSpec(58, "envelope", 0, 0)}, listener_name="CONTROLLER")
    await server.start()
    return server


async def _start(root: Any, closers: list) -> SimpleNamespace:
    _, nodes = await start_quorum(root, 1)
    node = nodes[0]
    closers.append(node.stop)
    await wait_until(lambda: node.controller is not None and node.controller.core.is_active, DEADLINE_S, "active")
    await wait_until(lambda: node.image.metadata_version, DEADLINE_S, "metadata.version")
    controller = node.driver.address
    to_controller = KafkaClient(client_id="broker-100-forwarder", request_timeout_ms=5000)
    closers.append(to_controller.close)

    async def send_to_controller(envelope: Any) -> Any:
        return await to_controller.send(controller, envelope, timeout_ms=5000)

    def make_apis(**options: Any) -> BrokerApis:
        return BrokerApis(broker_id=BROKER_ID, cluster_id=CLUSTER_ID, image=lambda: node.image,
                          send_to_controller=options.pop("send", send_to_controller), **options)

    async def serve(apis: BrokerApis) -> tuple[str, int]:
        server = KafkaServer(apis.handle, apis=apis.apis, listener_name="PLAINTEXT",
                             finalized_features=apis.finalized_features)
        closers.append(server.close)
        return await server.start()

    apis = make_apis()
    address = await serve(apis)
    acl_address = await serve(make_apis(authorizer=True))
    client = KafkaClient(client_id="test-admin", request_timeout_ms=10000)
    closers.append(client.close)
    registered = await client.send(controller, _registration(BROKER_ID, address[1], node.image))
    assert registered.error_code == ErrorCode.none, registered
    # a second broker that stays fenced (it never heartbeats): DescribeCluster v2 lists it on request
    fenced = await client.send(controller, _registration(FENCED_ID, pick_ports(1)[0], node.image))
    assert fenced.error_code == ErrorCode.none, fenced
    beats = asyncio.create_task(_heartbeats(client, controller, node, int(registered.broker_epoch)))

    async def stop_beats() -> None:
        beats.cancel()
        await asyncio.gather(beats, return_exceptions=True)
    closers.append(stop_beats)
    await wait_until(lambda: BROKER_ID in node.image.cluster.brokers
                     and not node.image.cluster.brokers[BROKER_ID].fenced, DEADLINE_S, "the broker unfenced")
    return SimpleNamespace(node=node, controller=controller, apis=apis, address=address, acl_address=acl_address,
                           client=client, make_apis=make_apis, serve=serve)


async def _close(closers: list) -> None:
    for close in reversed(closers):
        await close()


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Any:
    loop = asyncio.new_event_loop()
    closers: list = []
    try:
        state = loop.run_until_complete(asyncio.wait_for(_start(tmp_path_factory.mktemp("broker_apis"), closers), 60))
        state.loop = loop
        state.closers = closers
        yield state
    finally:
        loop.run_until_complete(_close(closers))
        loop.close()


def run(rig: Any, coro: Any) -> Any:
    return rig.loop.run_until_complete(asyncio.wait_for(coro, DEADLINE_S))


def ask(rig: Any, message: Any, address: Any = None) -> Any:
    return run(rig, rig.client.send(address or rig.address, message))


def _create_topic(rig: Any, name: str, partitions: int = 2, version: int = 7) -> Any:
    module = protocol_module("create_topics", version, "request")
    topic = module.CreatableTopic(name=name, num_partitions=i32(partitions), replication_factor=i16(1),
                                  assignments=(), configs=())
    answer = ask(rig, module.CreateTopicsRequest(topics=(topic,), timeout=timedelta(seconds=10), validate_only=False))
    run(rig, wait_until(lambda: rig.node.image.topics.topic(name), DEADLINE_S, f"topic {name}"))
    return answer


def _metadata(rig: Any, version: int, names: list[str] | None, **fields: Any) -> Any:
    module = protocol_module("metadata", version, "request")
    topics = None if names is None else tuple(
        module.MetadataRequestTopic(**({"topic_id": None} if version >= 10 else {}), name=n) for n in names)
    if version >= 4:
        fields.setdefault("allow_auto_topic_creation", False)
    if version >= 8:
        fields.setdefault("include_topic_authorized_operations", False)
    if 8 <= version <= 10:
        fields.setdefault("include_cluster_authorized_operations", False)
    return ask(rig, module.MetadataRequest(topics=topics if version else (topics or ()), **fields))


# -- ApiVersions ----------------------------------------------------------------------------

def test_the_api_table_has_local_and_forwarded_apis_and_no_envelope(rig: Any) -> None:
    ranges = run(rig, rig.client.api_versions(rig.address))
    assert ranges[3] == (0, 13) and ranges[60] == (0, 2) and ranges[75] == (0, 0) and ranges[32] == (1, 4)
    assert ranges[19] == (2, 7) and ranges[20] == (1, 6) and ranges[55] == (0, 2) and ranges[45] == (0, 0)
    assert 58 not in ranges and 62 not in ranges and 63 not in ranges  # controller-only APIs
    assert set(ranges) == {18, *LOCAL_APIS, *forwarded_apis()}


# -- Metadata -------------------------------------------------------------------------------

def test_metadata_from_the_image_at_several_versions(rig: Any) -> None:
    created = _create_topic(rig, "orders", 2)
    assert [(t.name, t.error_code) for t in created.topics] == [("orders", ErrorCode.none)]
    topic_id = rig.node.image.topics.by_name["orders"]
    for version in (0, 1, 4, 9, 12, 13):
        answer = _metadata(rig, version, ["orders", "missing", "bad name!"])
        by_name = {t.name: t for t in answer.topics}
        assert by_name["missing"].error_code == ErrorCode.unknown_topic_or_partition
        assert by_name["bad name!"].error_code == ErrorCode.invalid_topic_exception
        orders = by_name["orders"]
        assert orders.error_code == ErrorCode.none
        assert [(p.partition_index, p.leader_id, p.replica_nodes, p.isr_nodes) for p in orders.partitions] == \
            [(0, BROKER_ID, (BROKER_ID,), (BROKER_ID,)), (1, BROKER_ID, (BROKER_ID,), (BROKER_ID,))]
        assert [(b.node_id, b.host, b.port) for b in answer.brokers] == [(BROKER_ID, *rig.address)]
        if version >= 1:
            assert answer.controller_id == BROKER_ID  # KRaft: a random unfenced broker
        if version >= 2:
            assert answer.cluster_id == CLUSTER_ID
        if version >= 10:
            assert orders.topic_id == topic_id
    everything = _metadata(rig, 1, None)
    assert "orders" in {t.name for t in everything.topics}
    assert _metadata(rig, 1, []).topics == ()  # v1+: an empty list asks for no topic
    assert "orders" in {t.name for t in _metadata(rig, 0, []).topics}  # v0: the empty list is all
    # topic ids: v12 reads them; before v12 one is refused
    module = protocol_module("metadata", 12, "request")
    unknown = uuid.uuid4()
    by_id = ask(rig, module.MetadataRequest(topics=(module.MetadataRequestTopic(topic_id=topic_id, name=None),
                                                    module.MetadataRequestTopic(topic_id=unknown, name=None)),
                                            allow_auto_topic_creation=False, include_topic_authorized_operations=True))
    assert {(t.name, t.topic_id, t.error_code) for t in by_id.topics} == {
        ("orders", topic_id, ErrorCode.none), (None, unknown, ErrorCode.unknown_topic_id)}
    assert next(t for t in by_id.topics if t.name == "orders").topic_authorized_operations == 3576
    v10 = protocol_module("metadata", 10, "request")
    refused = ask(rig, v10.MetadataRequest(topics=(v10.MetadataRequestTopic(topic_id=topic_id, name="orders"),),
                                           allow_auto_topic_creation=False, include_cluster_authorized_operations=True,
                                           include_topic_authorized_operations=False))
    assert [t.error_code for t in refused.topics] == [ErrorCode.invalid_request]


def test_describe_cluster_and_describe_topic_partitions(rig: Any) -> None:
    _create_topic(rig, "pages", 3)
    v0 = ask(rig, request("describe_cluster", 0, include_cluster_authorized_operations=False))
    assert (v0.error_code, v0.cluster_id, v0.controller_id) == (ErrorCode.none, CLUSTER_ID, BROKER_ID)
    assert [(b.broker_id, b.host, b.port, b.rack) for b in v0.brokers] == [(BROKER_ID, *rig.address, "rack-a")]
    wrong = ask(rig, request("describe_cluster", 1, include_cluster_authorized_operations=False, endpoint_type=i8(2)))
    assert wrong.error_code == ErrorCode.mismatched_endpoint_type
    unknown = ask(rig, request("describe_cluster", 1, include_cluster_authorized_operations=False,
                               endpoint_type=i8(7)))
    assert unknown.error_code == ErrorCode.unsupported_endpoint_type
    fenced = ask(rig, request("describe_cluster", 2, include_cluster_authorized_operations=True, endpoint_type=i8(1),
                              include_fenced_brokers=True))
    assert [(b.broker_id, b.is_fenced) for b in fenced.brokers] == [(BROKER_ID, False), (FENCED_ID, True)]
    assert fenced.cluster_authorized_operations == 8096

    module = protocol_module("describe_topic_partitions", 0, "request")
    first = ask(rig, module.DescribeTopicPartitionsRequest(
        topics=(module.TopicRequest(name="pages"), module.TopicRequest(name="nope")), response_partition_limit=i32(2)))
    assert [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in first.topics] == \
        [("nope", ErrorCode.unknown_topic_or_partition, []), ("pages", ErrorCode.none, [0, 1])]
    assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == ("pages", 2)
    assert first.topics[1].partitions[0].eligible_leader_replicas == ()
    second = ask(rig, module.DescribeTopicPartitionsRequest(
        topics=(module.TopicRequest(name="pages"), module.TopicRequest(name="nope")), response_partition_limit=i32(2),
        cursor=module.Cursor(topic_name="pages", partition_index=i32(2))))
    # names before the cursor's are past: only the rest of "pages"
    assert [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in second.topics] == \
        [("pages", ErrorCode.none, [2])]
    assert second.next_cursor is None
    # a cursor on a topic not asked for is refused, and the connection serves on
    refused = ask(rig, module.DescribeTopicPartitionsRequest(
        topics=(module.TopicRequest(name="pages"),), cursor=module.Cursor(topic_name="zzz", partition_index=i32(0))))
    assert [t.error_code for t in refused.topics] == [ErrorCode.invalid_request]
    everything = ask(rig, module.DescribeTopicPartitionsRequest(topics=()))
    assert "pages" in {t.name for t in everything.topics}
