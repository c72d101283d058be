"""The quorum controller on real sockets: kraftd controllers on 127.0.0.1, formatted with
``kraftd storage format``, asked over Kafka's wire protocol.

- The first active controller writes the bootstrap records of bootstrap.checkpoint, as one
  metadata transaction, metadata.version first; a new leader after a failover writes none.
- ApiVersions tells the finalized features and serves Envelope.
- An Envelope carries a request the controller serves; its answer comes back inside.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.net.kafka_client import KafkaClient
from engine.records.kio_codec import ErrorCode, protocol_module
from engine.server.controller_server import ENVELOPE_KEY, read_bootstrap_records
from engine.storage.log_reader import read_log_dir
from tests.node_quorum import start_quorum, wait_until


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
        _, nodes = await start_quorum(tmp_path, 1)
        client = KafkaClient(client_id="test")
        try:
            node = await wait_until(lambda: _active(nodes), 30, "an active controller")
            await wait_until(lambda: node.image.metadata_version, 30, "metadata.version")
            address = node.driver.address
            ranges = await client.api_versions(address)
            request = protocol_module("api_versions", 3, "request").ApiVersionsRequest(
                client_software_name="test", client_software_version="1")
            response = await client.send(address, request)
            return ranges, response, dict(node.image.features)
        finally:
            await client.close()
            for node in nodes:
                await node.stop()

    ranges, response, features = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert ENVELOPE_KEY in ranges
    assert response.error_code == ErrorCode.none
    assert {f.name: int(f.max_version_level) for f in response.finalized_features} == features
    assert int(response.finalized_features_epoch) >= 0
