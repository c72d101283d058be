"""The served fuzz targets: arbitrary bytes on a connection to our controller's listener or to a
simulated broker's, both running in this process (engine.fuzz.served_nodes).

One input is one connection (engine.fuzz.served_frames says how its bytes go out). The node may
answer or close that connection; a finding is a case after which it crashed, kept the
connection, answered out of order, or no longer answered ApiVersions and DescribeQuorum
(controller) or Metadata (broker) on a new connection. The nodes are started on the first case
and stopped when the process exits (or by ``shutdown``); after a finding the next case gets
fresh ones, so one broken node is one finding, not a run of them.
"""

from __future__ import annotations

import atexit

from engine.fuzz.served_frames import REPLY_WAIT_S, send_case, stream_of
from engine.fuzz.served_nodes import NodeBroken, ServedNodes, rss_kb

_nodes: ServedNodes | None = None


def served_nodes() -> ServedNodes:
    """This process's served nodes (created, not yet started, on first use)."""
    global _nodes
    if _nodes is None:
        _nodes = ServedNodes()
        atexit.register(shutdown)
    return _nodes


def shutdown() -> None:
    """Stop the served nodes, if any (the next case starts new ones)."""
    global _nodes
    nodes, _nodes = _nodes, None
    if nodes is not None:
        nodes.close()


def serve_case(listener: str, data: bytes) -> list[int]:
    """One input on a new connection to ``listener``; the correlation ids answered. NodeBroken
    (or the send's own error) when the case broke the node."""
    nodes = served_nodes()
    try:
        nodes.check_between(nodes.last_input)
    except NodeBroken:
        nodes.restart()
        raise
    nodes.ensure_started()
    nodes.last_input = data
    before = nodes.connections(listener)
    try:
        answered = nodes.run(lambda: send_case(nodes.address(listener), stream_of(data)), REPLY_WAIT_S + 5)
        nodes.check(listener, before)
    except BaseException:
        nodes.restart()
        raise
    return answered


def served_summary() -> list[str]:
    """The report's lines about the nodes: cases, restarts, memory and tasks against the start."""
    nodes = _nodes
    if nodes is None or nodes.stats.cases == 0:
        return []
    s = nodes.stats
    lines = [f"served cases: {s.cases}, node restarts after a finding: {s.restarts}",
             f"rss: {s.rss_start_kb // 1024} MB before the nodes started, {s.rss_now_kb // 1024} MB after the last case",
             f"asyncio tasks: {s.baseline_tasks} once started, {s.tasks_now} after the last case"]
    if s.traced_start_kb is not None and s.traced_now_kb is not None:  # PYTHONTRACEMALLOC=1
        lines.append(f"tracemalloc: {s.traced_start_kb} KB once the nodes started, {s.traced_now_kb} KB after "
                     f"the last case (the fuzzer's own pool and coverage included)")
    return lines


__all__ = ["rss_kb", "serve_case", "served_nodes",
           "served_summary", "shutdown"]
