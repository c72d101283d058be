"""A controller's leader answers an observer's parked Fetch through the listener's direct path:
parked at the log end, answered with the new high watermark once a commit moves it, in the
version it was asked in (v18 here, the core's is older)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.net.kafka_client import KafkaClient
from engine.raft import raft_messages as rm
from engine.raft.log_follower import ANONYMOUS, fetch_at_version
from engine.records.metadata_records import NoOpRecordV0
from tests.node_quorum import start_quorum, wait_until


def test_a_parked_observer_fetch_is_answered_when_the_high_watermark_moves(tmp_path: Path) -> None:
    async def scenario() -> tuple[int, int, int, int]:
        (_,), (node,) = await start_quorum(tmp_path, count=1)
        client = KafkaClient(client_id="observer")
        try:
            await wait_until(lambda: node.driver.is_leader and node.last_committed_offset >= 1, 10, "the leader")
            driver = node.driver
            address = driver.address
            served = (await client.api_versions(address))[1]  # Fetch
            while True:  # the controller may still be appending its first records: fetch at the end until parked
                await wait_until(lambda: driver.client.high_watermark == driver.client.log.end_offset, 10, "committed")
                hw = end = driver.client.high_watermark
                epoch = driver.client.epoch
                # Parked at the log end with everything committed: only a move of the high
                # watermark answers it before its (long) max wait.
                request = fetch_at_version(rm.fetch_request(None, ANONYMOUS, epoch, end, epoch, 60_000, 1 << 20),
                                           served, hw)
                answer = asyncio.create_task(client.send(address, request, timeout_ms=90_000))
                await wait_until(lambda: answer.done() or len(driver.client.parked_fetches) == 1, 10, "an answer")
                if not answer.done():
                    break
            driver.schedule_append([NoOpRecordV0()])
            response = await asyncio.wait_for(answer, 30)
            part = rm.only_partition(response)
            return hw, part.high_watermark, type(response).__version__, type(request).__version__
        finally:
            await client.close()
            await node.stop()

    parked_hw, answered_hw, answered_version, asked_version = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert answered_hw > parked_hw
    assert answered_version == asked_version == 18
