"""``kraftd bench controller`` runs at toy sizes and prints its figures; no timing is asserted.

One run of our three controllers (50 partitions, 20 brokers, one failover) and, with Kafka's jars
present, one run of Kafka's controllers driven by the same load client.
"""

from __future__ import annotations

import re

import pytest

from engine.bench.controller import bench_controller
from engine.bench.controller_load import batches, topic_specs

# processes, sockets and timers of their own: out of the fast tier
pytestmark = pytest.mark.slow

NUMBER = r"[0-9][0-9,]*(?:\.[0-9]+)?"


def _run(failovers: int = 1, **how) -> tuple[list, list[str]]:
    lines: list[str] = []
    results = bench_controller(topics=5, partitions=10, brokers=4, heartbeat_brokers=20, heartbeat_seconds=2,
                               interval_ms=500, failovers=failovers, out=lines.append, **how)
    return results, lines


def _check(result, lines: list[str], name: str, failovers: int = 1) -> None:
    assert result.name == name and result.partitions == 50
    assert result.heartbeat_ms and len(result.failover_ms) == failovers and len(result.peak_rss_mb) == 3
    text = "\n".join(lines)
    assert re.search(rf"^{name}: 50 partitions created in {NUMBER} s \({NUMBER} partitions/s\); CPU per controller "
                     rf"meanwhile: 1: {NUMBER} s, 2: {NUMBER} s, 3: {NUMBER} s \(sum {NUMBER} s\)$", text, re.M)
    assert re.search(rf"^{name}: 20 brokers heartbeating every 500 ms for 2 s: {NUMBER} heartbeats, latency "
                     rf"p50 {NUMBER} / p99 {NUMBER} / max {NUMBER} ms$", text, re.M)
    assert re.search(rf"^{name}: peak memory per controller, with any snapshot writer's own pages \(its VmHWM "
                     rf"alone\): 1: {NUMBER} MB \({NUMBER}\), 2: {NUMBER} MB \({NUMBER}\), 3: {NUMBER} MB \({NUMBER}\)$",
                     text, re.M)
    # a node's peak is never below what the controller process alone held
    pairs = re.findall(rf"[123]: ({NUMBER}) MB \(({NUMBER})\)", text)
    assert len(pairs) == 3 and all(float(a.replace(",", "")) >= float(b.replace(",", "")) for a, b in pairs)
    assert re.search(rf"^{name}: failover 1: killed active controller [123]; CreateTopics answered by controller "
                     rf"[123] {NUMBER} ms after the kill$", text, re.M)
    assert re.search(rf"^  {name}: create 50 partitions {NUMBER} s; heartbeat p50 .* peak RSS", text, re.M)


def test_our_controllers(tmp_path):
    results, lines = _run(failovers=2)
    assert lines[0].startswith("settings: ") and lines[1].startswith("machine: ") and lines[-2] == "summary:"
    _check(results[0], lines, "kraftd", failovers=2)
    # between the kills, the killed node came back and caught up (DescribeQuorum) before the next
    text = "\n".join(lines)
    restarted = re.search(rf"^kraftd: controller ([123]) restarted and caught up in {NUMBER} s$", text, re.M)
    assert restarted and re.search(rf"^kraftd: failover 1: killed active controller {restarted.group(1)};", text, re.M)
    assert re.search(rf"^kraftd: failover 2: killed active controller [123]; CreateTopics answered by controller "
                     rf"[123] {NUMBER} ms after the kill$", text, re.M)


@pytest.mark.kafka
def test_kafka_controllers_by_the_same_client(kafka_dist):
    results, lines = _run(kafka_libs=kafka_dist.libs, kafka_heap="256M", skip_ours=True)
    _check(results[0], lines, f"Kafka {kafka_dist.version}")


def test_requests_stay_under_kafkas_record_bound():
    specs = topic_specs(250, 100)
    assert [spec[2] for spec in specs[:4]] == [1, 2, 3, 1]
    sent = batches(specs, 10_000)
    assert [len(b) for b in sent] == [99, 99, 52]  # 99 TopicRecords + 9,900 PartitionRecords each
    assert [s for b in sent for s in b] == specs
