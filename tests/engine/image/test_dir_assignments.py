"""Directory assignment (KIP-858) of the simulated broker against our real controller core, in
one process: the cluster of tests/engine/broker/test_replica_sim.py, whose brokers have two log dirs each, so
the controller places new replicas UNASSIGNED and the brokers assign them."""

from __future__ import annotations

import datetime
import random
import uuid
from collections import Counter
from typing import Any

import pytest

import tests.engine.broker.test_replica_sim as rs
from engine.broker.dir_assignments import BATCH_DELAY_MS, DirAssignments
from engine.common.directory_id import LOST, UNASSIGNED
from engine.image.metadata_delta import MetadataDelta
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i32, protocol_module
from tests.controller_helpers import bootstrapped, new_uuid

_RESPONSE = protocol_module("assign_replicas_to_dirs", 0, "response")


@pytest.fixture(scope="module")
def assigned() -> tuple[rs.ReplicaCluster, uuid.UUID]:
    c = rs.running(1, 2)
    t = c.create_topic("t", [(1, 2), (2, 1), (1, 2), (2, 1), (1, 2), (2, 1)])
    assert all(set(p.directories) == {UNASSIGNED} for p in c.image.topics.by_id[t].partitions.values())
    c.run_until(lambda: all(n.dirs.pending() == 0 for n in c.nodes.values())
                and UNASSIGNED not in {d for p in c.image.topics.by_id[t].partitions.values() for d in p.directories},
                limit_ms=5000)
    return c, t


def test_unassigned_replicas_land_on_the_brokers_online_dirs_evenly(assigned: Any) -> None:
    c, t = assigned
    for broker_id in (1, 2):
        dirs = set(c.registration(broker_id).directories)
        placed = Counter(p.directories[p.replicas.index(broker_id)]
                         for p in c.image.topics.by_id[t].partitions.values())
        assert set(placed) == dirs and sorted(placed.values()) == [3, 3]
        node = c.nodes[broker_id]
        assert node.dirs.counters.requests_sent == 1 and node.dirs.counters.assigned == 6  # one batch
    c.run(2000)
    assert all(n.dirs.counters.requests_sent == 1 for n in c.nodes.values())  # the image shows it: done


def test_the_request_carries_the_image_broker_epoch_grouped_by_directory(assigned: Any) -> None:
    c, t = assigned
    core = DirAssignments(1, c.nodes[1].dirs.log_dir_ids)
    core.set_image(_with_directory(c, t, 0, 1, UNASSIGNED), 0)
    assert core.poll(BATCH_DELAY_MS - 1) == []
    (request,) = core.poll(BATCH_DELAY_MS)
    assert request.__version__ == 0 and request.broker_id == 1
    assert request.broker_epoch == c.registration(1).epoch
    ((directory, topic_id, partitions),) = [(d.id_, tp.topic_id, [p.partition_index for p in tp.partitions])
                                           for d in request.directories for tp in d.topics]
    assert topic_id == t and partitions == [0] and directory in c.registration(1).directories


def _with_directory(c: rs.ReplicaCluster, topic_id: uuid.UUID, partition: int, broker_id: int,
                    directory: uuid.UUID) -> Any:
    """The cluster's image with one replica's directory changed (as a controller record would)."""
    return _with_directory_on(c.image, topic_id, partition, broker_id, directory)


def test_lost_and_foreign_dirs_are_reassigned_a_failed_dir_is_left_offline(assigned: Any) -> None:
    c, t = assigned
    core = DirAssignments(1, c.nodes[1].dirs.log_dir_ids)
    image = _with_directory(c, t, 0, 1, LOST)
    image = _with_directory_on(image, t, 2, 1, new_uuid(777))  # a dir broker 1 does not have
    failed = image.topics.by_id[t].partitions[4].directories[0]
    core.set_failed_dirs([failed])
    core.set_image(image, 0)
    (request,) = core.poll(BATCH_DELAY_MS)
    assigned_to = {(tp.topic_id, int(p.partition_index)): d.id_
                   for d in request.directories for tp in d.topics for p in tp.partitions}
    assert set(assigned_to) == {(t, 0), (t, 2)}  # partition 4 sits on the failed dir: offline
    assert set(assigned_to.values()) <= set(core.online_dirs) and failed not in assigned_to.values()


def _with_directory_on(image: Any, topic_id: uuid.UUID, partition: int, broker_id: int, directory: uuid.UUID) -> Any:
    p = image.topics.by_id[topic_id].partitions[partition]
    dirs = tuple(directory if r == broker_id else d for r, d in zip(p.replicas, p.directories))
    delta = MetadataDelta(image)
    delta.replay(m.PartitionChangeRecordV2(partition_id=i32(partition), topic_id=topic_id, directories=dirs),
                 image.provenance.last_offset + 1)
    return delta.apply()


def _answer(request: Any, codes: dict[tuple[uuid.UUID, int], ErrorCode], top: ErrorCode = ErrorCode.none) -> Any:
    return _RESPONSE.AssignReplicasToDirsResponse(
        throttle_time=datetime.timedelta(0), error_code=top, directories=tuple(
            _RESPONSE.DirectoryData(id_=d.id_, topics=tuple(
                _RESPONSE.TopicData(topic_id=tp.topic_id, partitions=tuple(
                    _RESPONSE.PartitionData(partition_index=p.partition_index,
                                            error_code=codes[(tp.topic_id, int(p.partition_index))])
                    for p in tp.partitions if (tp.topic_id, int(p.partition_index)) in codes))
                for tp in d.topics))
            for d in request.directories))


def test_failures_retry_with_kafkas_backoff_and_one_request_in_flight(assigned: Any) -> None:
    c, t = assigned
    core = DirAssignments(1, c.nodes[1].dirs.log_dir_ids)  # no rng: no jitter
    image = _with_directory(c, t, 0, 1, UNASSIGNED)
    image = _with_directory_on(image, t, 2, 1, UNASSIGNED)
    core.set_image(image, 0)
    (first,) = core.poll(100)
    assert core.pending() == 2 and core.next_poll_ms(100) is None  # waiting for the answer
    core.set_image(_with_directory_on(image, t, 4, 1, UNASSIGNED), 150)
    assert core.poll(250) == []  # one in flight: the third waits
    assert not core.handle_response(object(), None, 260)
    assert core.handle_response(first, None, 300)  # lost: everything back, first failure backoff
    assert core.next_poll_ms(300) == 300 + 200  # the send planned at 250 ran (and found one in flight)
    (second,) = core.poll(500)
    keys = {(tp.topic_id, int(p.partition_index)) for d in second.directories for tp in d.topics for p in tp.partitions}
    assert keys == {(t, 0), (t, 2), (t, 4)}
    top = _answer(second, {}, ErrorCode.stale_broker_epoch)
    assert core.handle_response(second, top, 600) and core.next_poll_ms(600) == 600 + 400  # 2 failures: 400 ms
    (third,) = core.poll(1000)
    codes = {(t, 0): ErrorCode.none, (t, 2): ErrorCode.unknown_topic_or_partition}  # (t, 4) left out
    assert core.handle_response(third, _answer(third, codes), 1010)
    assert core.counters.assigned == 1 and core.counters.partition_errors == 1 and core.pending() == 2
    assert core.next_poll_ms(1010) == 1010 + BATCH_DELAY_MS  # failures reset by the answer
    (fourth,) = core.poll(1110)
    keys = {(tp.topic_id, int(p.partition_index)) for d in fourth.directories for tp in d.topics for p in tp.partitions}
    assert keys == {(t, 2), (t, 4)}


def test_the_backoff_jitter_draws_from_the_injected_random(assigned: Any) -> None:
    c, t = assigned
    delays = set()
    for seed in range(5):
        core = DirAssignments(1, c.nodes[1].dirs.log_dir_ids, random.Random(seed))
        core.set_image(_with_directory(c, t, 0, 1, UNASSIGNED), 0)
        (request,) = core.poll(100)
        core.handle_response(request, None, 1000)
        delay = core.next_poll_ms(1000) - 1000
        assert 196 <= delay <= 204  # 200 ms +-2 %
        delays.add(delay)
    assert len(delays) > 1
    again = DirAssignments(1, c.nodes[1].dirs.log_dir_ids, random.Random(0))
    again.set_image(_with_directory(c, t, 0, 1, UNASSIGNED), 0)
    again.handle_response(again.poll(100)[0], None, 1000)
    assert again.next_poll_ms(1000) - 1000 in delays  # seeded: the same draw again


def test_nothing_is_assigned_before_metadata_version_has_directories() -> None:
    image = bootstrapped("3.7-IV1")
    delta = MetadataDelta(image)
    topic_id = new_uuid(50)
    delta.replay(m.TopicRecordV0(name="old", topic_id=topic_id), 10)
    delta.replay(m.PartitionRecordV0(partition_id=i32(0), topic_id=topic_id, replicas=(i32(1),), isr=(i32(1),),
                                     removing_replicas=(), adding_replicas=(), leader=i32(1),
                                     leader_epoch=i32(0), partition_epoch=i32(0)), 11)
    core = DirAssignments(1, (new_uuid(1), new_uuid(2)))
    core.set_image(delta.apply(), 0)
    assert core.pending() == 0 and core.poll(1000) == []
