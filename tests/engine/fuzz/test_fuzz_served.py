"""The served fuzz targets against a live controller and a live simulated broker in this process:
every hostile frame answered or its connection closed, the node still serving a normal request
after each, connections back to their baseline, memory flat over repeated runs, no crash logged;
a seeded bounded run of ``kraftd fuzz``; the checks themselves catch a crash and a dead listener.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from engine.fuzz.fuzzer import CORPUS_ROOT
from engine.fuzz.served_frames import complete_frames, frame_of, framed, hostile_inputs, stream_of
from engine.fuzz.served_nodes import CLUSTER_ID, NodeBroken
from engine.fuzz.served_targets import serve_case, served_nodes, shutdown

# nodes, sockets and timers of their own: out of the fast tier
pytestmark = pytest.mark.slow

LISTENERS = ("controller", "broker")


@pytest.fixture(scope="module")
def nodes():
    yield served_nodes()
    shutdown()


def _answers(listener: str) -> dict[str, list[int]]:
    return {name: serve_case(listener, data) for name, data in hostile_inputs(listener).items()}


@pytest.mark.parametrize("listener", LISTENERS)
def test_hostile_frames_are_answered_or_closed_and_the_node_serves_on(nodes, listener: str):
    # serve_case raises NodeBroken when a case crashed the node, kept its connection or left it
    # unable to answer ApiVersions and DescribeQuorum / Metadata on a new connection
    restarts = served_nodes().stats.restarts  # other tests of the module restart the nodes on purpose
    answers = _answers(listener)
    assert answers["unknown-api-versions-v99"] == [7]  # KIP-511: answered in v0, UNSUPPORTED_VERSION
    assert answers["api-versions-flood-300"] == [7] * 300  # backpressure, not a queue without bound
    assert answers["api-versions-then-garbage"] == [7]  # the good frame answered before the close
    for closed in ("api-key-999", "size-negative", "size-over-the-limit", "size-2gib-then-close", "size-zero",
                   "client-id-not-utf8", "tls-client-hello", "create-topics-huge-topic-count"):
        assert answers[closed] == [], closed
    assert served_nodes().stats.restarts == restarts


def test_envelopes_the_controller_must_refuse(nodes):
    # an Envelope inside an Envelope, without a principal, with a garbage one: each answered (with
    # the Envelope's error), none served as the inner request
    answers = _answers("controller")
    for name in ("envelope-in-an-envelope", "envelope-without-principal", "envelope-principal-garbage",
                 "envelope-carrying-api-versions", "envelope-carrying-garbage"):
        assert answers[name] == [7], name
    # the broker's listener does not serve Envelope at all: the connection is closed
    assert serve_case("broker", hostile_inputs("broker")["envelope-unserved-or-unprivileged"]) == []


@pytest.mark.parametrize("listener", LISTENERS)
def test_crash_inputs_found_by_the_fuzzer_leave_the_node_serving(nodes, listener: str):
    crashes = sorted((CORPUS_ROOT / f"served-{listener}").glob("crash-*"))
    for path in crashes:
        serve_case(listener, path.read_bytes())  # NodeBroken before the fix (see docs/reliability.md)
    assert crashes or listener == "broker"


def test_memory_and_tasks_return_to_their_level_over_repeated_runs(nodes):
    for listener in LISTENERS:
        _answers(listener)  # warm: caches and the nodes' first records
    tracemalloc.start()
    try:
        for listener in LISTENERS:
            _answers(listener)
        after_one, _ = tracemalloc.get_traced_memory()
        for listener in LISTENERS:
            _answers(listener)
        after_two, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # one more pass of every hostile frame on both listeners (some 140 connections) keeps nothing
    # that grows with them: a connection's buffers or handler tasks kept would be megabytes
    assert after_two - after_one < 500_000, (after_one, after_two)
    stats = served_nodes().stats
    assert stats.tasks_now <= stats.baseline_tasks + 8, (stats.baseline_tasks, stats.tasks_now)
    for listener in LISTENERS:
        assert served_nodes().connections(listener) <= 2  # the nodes' own (the broker's fetches, heartbeats)


def test_a_seeded_bounded_kraftd_fuzz_run(nodes, tmp_path: Path):
    from tests.engine.fuzz.test_fuzz_cli import _kraftd, _report

    served_nodes().ensure_started()
    cases_before = served_nodes().stats.cases
    code, out, err = _kraftd("fuzz", "served-broker", "--runs", "80", "--seed", "7", "--engine", "hypothesis",
                             "--findings", str(tmp_path))
    report = _report(out)
    assert (code, err, report["findings"]) == (0, [], "0"), out
    executions = int(report["executions"].split()[0])
    assert 80 <= executions < 200  # the seeds, then mutations to the count (a chunk's rounding past it)
    assert served_nodes().stats.cases - cases_before == executions + 1  # and the warm-up on no bytes
    assert report["served cases"].startswith(f"{served_nodes().stats.cases},")
    assert list(tmp_path.iterdir()) == []


def test_the_checks_catch_a_handler_that_raises(nodes, monkeypatch):
    # a bug planted in the broker's Metadata answer: caught, answered UNKNOWN_SERVER_ERROR and logged;
    # the served target reports it, and the next case runs on fresh nodes
    from engine.broker import metadata_answers

    def broken(*args, **kwargs):
        raise TypeError("planted")

    monkeypatch.setattr(metadata_answers, "metadata", broken)
    restarts = served_nodes().stats.restarts
    with pytest.raises(NodeBroken, match="metadata v12 .* failed: TypeError: planted"):
        serve_case("broker", hostile_inputs("broker")["unknown-api-versions-v99"])
    monkeypatch.undo()
    assert served_nodes().stats.restarts == restarts + 1
    serve_case("broker", hostile_inputs("broker")["unknown-api-versions-v99"])


def test_the_checks_catch_a_listener_that_stopped_serving(nodes):
    node = served_nodes()
    node.ensure_started()
    node.run(node.broker.servers[0].close, 10)
    with pytest.raises((NodeBroken, OSError)):
        serve_case("broker", hostile_inputs("broker")["unknown-api-versions-v99"])
    serve_case("broker", hostile_inputs("broker")["unknown-api-versions-v99"])  # fresh nodes


def test_a_forged_begin_quorum_epoch_from_no_voter_is_refused(nodes):
    # one frame with the cluster id and a leader (99) that is no voter, in the last epoch an int32 holds:
    # the controller followed 99, then elected itself in epoch 2**31, where its Raft core died
    # (struct.error writing the epoch); now refused, INCONSISTENT_VOTER_SET (Kafka 4.1.2 halts on it)
    nodes = served_nodes()
    nodes.ensure_started()
    quorum = nodes.controller.driver.client.quorum
    leader_before, epoch_before = quorum.leader_id, quorum.epoch
    assert serve_case("controller", framed(frame_of(_begin_quorum_epoch(leader_id=99, epoch=2**31 - 1))[4:])) == [7]
    quorum = nodes.controller.driver.client.quorum  # the same node: serve_case restarts only a broken one
    assert (quorum.leader_id, quorum.epoch) == (leader_before, epoch_before), "the forged leader was followed"


def _begin_quorum_epoch(leader_id: int, epoch: int):
    from engine.records.kio_codec import i32, protocol_module

    m = protocol_module("begin_quorum_epoch", 1, "request")
    return m.BeginQuorumEpochRequest(cluster_id=CLUSTER_ID, voter_id=i32(1), leader_endpoints=(), topics=(
        m.TopicData(topic_name="__cluster_metadata", partitions=(m.PartitionData(
            partition_index=i32(0), voter_directory_id=None, leader_id=i32(leader_id), leader_epoch=i32(epoch)),)),))


def test_a_finding_noticed_later_keeps_the_input_that_caused_it(tmp_path: Path):
    from engine.fuzz.fuzzer import FindingLog

    line = FindingLog(tmp_path, "served-controller").record(b"the next case", NodeBroken("broke", b"the case"))
    (saved,) = tmp_path.iterdir()
    assert saved.read_bytes() == b"the case" and "NodeBroken: broke" in line


def test_input_modes():
    # byte 0: 0 frames the rest, 1 sends it as is
    assert stream_of(b"\x00abc") == b"\x00\x00\x00\x03abc"
    assert stream_of(b"\x01abc") == b"abc"
    two = b"\x00\x00\x00\x08" + b"\x00\x12\x00\x03" + b"\x00\x00\x00\x05"
    assert complete_frames(two * 2 + b"\x00\x00\x00\x09") == [5, 5]
