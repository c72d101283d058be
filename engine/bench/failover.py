"""``kraftd bench failover``: how long three controller processes take to replace a killed leader.

Each round waits for a leader whose high watermark moves (the KIP-835 no-ops), SIGKILLs it,
and polls DescribeQuorum on the survivors until one answers as leader in a higher epoch; the
killed process then restarts on its disk and must catch up before the next round. Prints every
round and the distribution; asserts nothing (the figures go into docs/performance.md).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

from engine.bench.quorum import BenchError
from engine.cluster.processes import ProcessCluster
from engine.common.errors import MetadataError
from engine.records.kio_codec import ErrorCode
from engine.raft.raft_messages import describe_quorum_request, only_partition

POLL_S = 0.015


def _describe(cluster: ProcessCluster, node_id: int):
    from engine.net.kafka_client import request_once

    try:
        part = only_partition(request_once(cluster.address(node_id), describe_quorum_request(), timeout_ms=500))
    except (MetadataError, OSError):
        return None
    return part if part is not None and part.error_code == ErrorCode.none else None


def _wait(predicate: Callable[[], object], timeout_s: float, what: str) -> object:
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise BenchError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(POLL_S)


def _leader(cluster: ProcessCluster, alive: list[int]):
    for node_id in alive:
        part = _describe(cluster, node_id)
        if part is not None:
            return node_id, part
    return None


def _round(cluster: ProcessCluster) -> tuple[int, int, float]:
    alive = sorted(cluster.procs)
    leader_id, part = _wait(lambda: _leader(cluster, alive), 20, "a leader")
    first_hw = part.high_watermark
    _wait(lambda: (p := _describe(cluster, leader_id)) and p.high_watermark > first_hw, 10,
          "the high watermark to move")
    epoch = part.leader_epoch
    cluster.procs[leader_id].kill()
    killed_at = time.monotonic()
    cluster.procs[leader_id].wait()
    survivors = [i for i in alive if i != leader_id]
    new_id, new = _wait(lambda: (found := _leader(cluster, survivors)) and found[1].leader_epoch > epoch and found,
                        30, "a new leader")
    elapsed_ms = (time.monotonic() - killed_at) * 1000
    restarted_ms = time.time() * 1000
    cluster.restart(leader_id)

    def caught_up() -> bool:
        # The leader saw it fetch at its log end after the restart (DescribeQuorum's wall-clock times).
        p = _describe(cluster, new_id)
        states = {v.replica_id: v for v in p.current_voters} if p else {}
        state = states.get(leader_id)
        return state is not None and state.log_end_offset >= 0 and state.last_caught_up_timestamp >= restarted_ms

    _wait(caught_up, 20, f"controller {leader_id} to catch up again")
    return leader_id, new_id, elapsed_ms


def bench_failover(*, rounds: int = 20, fetch_timeout_ms: int = 1000, election_timeout_ms: int = 1000,
                   out: Callable[[str], None] = print) -> list[float]:
    root = Path(tempfile.mkdtemp(prefix="kraftd-bench-failover-"))
    cluster = ProcessCluster(root, {"controller.quorum.election.timeout.ms": election_timeout_ms,
                                    "controller.quorum.fetch.timeout.ms": fetch_timeout_ms})
    out(f"3 controllers on 127.0.0.1, election.timeout.ms={election_timeout_ms}, "
        f"fetch.timeout.ms={fetch_timeout_ms}, {rounds} rounds")
    times = []
    try:
        cluster.launch()
        for number in range(1, rounds + 1):
            killed, new, elapsed_ms = _round(cluster)
            times.append(elapsed_ms)
            out(f"  round {number}: killed {killed}, controller {new} leads after {elapsed_ms:.0f} ms")
    finally:
        cluster.stop()
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    over = sum(t > 2 * election_timeout_ms for t in times)
    out(f"failover min {ordered[0]:.0f} / median {statistics.median(ordered):.0f} / p90 {p90:.0f} / "
        f"max {ordered[-1]:.0f} ms; {over} of {len(times)} over 2 x election timeout (logs in {root})")
    return times
