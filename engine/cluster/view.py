"""What a running ``kraftd cluster`` looks like from the outside: the quorum and the brokers' states.

The quorum comes from DescribeQuorum (engine.admin.quorum_client.find_leader) to the controllers
whose processes run: the leader's high watermark and every voter's and observer's log end offset
(brokers fetch the metadata log as observers). A broker's state is the controller's: its
registration in the metadata log the active controller committed, read from that controller's
metadata directory up to the high watermark (fenced, in controlled shutdown, or neither);
when that cannot be read, DescribeCluster v2 with include_fenced_brokers to a live broker
(fenced or not). Nothing answering is "unknown", never an error.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from engine.common.api_keys import EndpointType
from engine.common.errors import MetadataError
from engine.cluster import security as cluster_security
from engine.cluster.layout import Layout, Node, process_state
from engine.admin.quorum_client import QuorumInfo, default_send, find_leader, pretty_table

PROBE_TIMEOUT_MS = 1500  # a paused or dying node must not hold `status` for the admin client's 30 s
# a secured probe is a new connection's TLS handshake and SASL login before its one request
SECURED_PROBE_TIMEOUT_MS = 4000
UNKNOWN = "unknown"
UNFENCED = "unfenced"
NOT_REGISTERED = "not registered"


@dataclass
class ClusterView:
    quorum: QuorumInfo | None = None
    broker_states: dict[int, str] = field(default_factory=dict)  # node id -> unfenced / fenced / ...
    processes: dict[str, str] = field(default_factory=dict)  # name -> running / paused / down
    image: Any = None  # the committed MetadataImage the broker states come from, when it was read

    def min_replication_factor(self) -> int | None:
        """The smallest replica count of any partition (None: no image, or no partitions)."""
        if self.image is None:
            return None
        return min((len(p.replicas) for t in self.image.topics.by_id.values() for p in t.partitions.values()),
                   default=None)

    def controller_state(self, node: Node) -> str:
        q = self.quorum
        if q is None:
            return UNKNOWN
        if node.node_id == q.leader_id:
            return "leader"
        if any(v.replica_id == node.node_id for v in q.voters):
            return "voter"
        return "observer" if any(o.replica_id == node.node_id for o in q.observers) else UNKNOWN

    def state(self, node: Node) -> str:
        if node.role == "controller":
            return self.controller_state(node)
        return self.broker_states.get(node.node_id, UNKNOWN)

    def lag(self, node: Node) -> str:
        """The leader's high watermark minus the node's log end offset, as the leader last saw it."""
        q = self.quorum
        if q is None:
            return "-"
        if q.high_watermark < 0:
            return "-"
        for replica in (*q.voters, *q.observers):
            if replica.replica_id == node.node_id and replica.log_end_offset >= 0:  # -1: not heard from yet
                return str(max(0, q.high_watermark - replica.log_end_offset))
        return "-"


def _registration_state(registration: Any) -> str:
    if registration.fenced:
        return "fenced"
    return "controlled-shutdown" if registration.in_controlled_shutdown else UNFENCED


def committed_image(layout: Layout, quorum: QuorumInfo) -> Any | None:
    """The metadata image as of the leader's high watermark, from its metadata log (None when
    it cannot be read now: a snapshot deleted under us, a file mid-roll; ask again later)."""
    from engine.image.metadata_loader import load_log_dir  # late: kio loads only when asked
    leader = next((n for n in layout.of_role("controller") if n.node_id == quorum.leader_id), None)
    if leader is None or quorum.high_watermark <= 0:
        return None
    try:
        image, _ = load_log_dir(layout.metadata_dir(leader), offset=quorum.high_watermark - 1)
    except (MetadataError, OSError):
        return None
    return image


def controller_images(layout: Layout, timeout_s: float = 60.0) -> tuple[int, dict[str, Any]]:
    """Every controller's image at one committed offset, read from its own metadata log (the
    check after chaos that no controller diverged): the high watermark as the leader tells it,
    once every voter's log reaches it. (offset, name -> image); an image that cannot be read is
    None."""
    from engine.image.metadata_loader import load_log_dir  # late: kio loads only when asked

    send = _send(layout, PROBE_TIMEOUT_MS)
    controllers = layout.of_role("controller")
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            _, quorum = find_leader([("127.0.0.1", n.port) for n in controllers], send)
        except (MetadataError, OSError):
            quorum = None
        if quorum is not None and quorum.high_watermark > 0 and \
                all(v.log_end_offset >= quorum.high_watermark for v in quorum.voters):
            break
        if time.monotonic() >= deadline:
            raise MetadataError(f"the controllers did not all reach one committed offset within {timeout_s:g} s")
        time.sleep(0.2)
    offset = quorum.high_watermark - 1
    images = {}
    for node in controllers:
        try:
            images[node.name], _ = load_log_dir(layout.metadata_dir(node), offset=offset)
        except (MetadataError, OSError):
            images[node.name] = None
    return offset, images


def _states_from_image(layout: Layout, image: Any) -> dict[int, str]:
    brokers = image.cluster.brokers
    return {n.node_id: _registration_state(brokers[n.node_id]) if n.node_id in brokers else NOT_REGISTERED
            for n in layout.of_role("broker")}


def _states_from_brokers(layout: Layout, running: list[Node], send) -> dict[int, str] | None:
    """DescribeCluster v2 (include_fenced_brokers) to the first live broker that answers."""
    import engine.records.kio_codec as kio
    req = kio.protocol_module("describe_cluster", 2, "request")
    request = req.DescribeClusterRequest(include_cluster_authorized_operations=False,
                                         endpoint_type=kio.i8(EndpointType.BROKER), include_fenced_brokers=True)
    for node in running:
        try:
            response = send(("127.0.0.1", node.port), request)
        except (MetadataError, OSError):
            continue
        if response.error_code != kio.ErrorCode.none:
            continue
        fenced = {int(b.broker_id): bool(b.is_fenced) for b in response.brokers}
        return {n.node_id: NOT_REGISTERED if n.node_id not in fenced else "fenced" if fenced[n.node_id] else UNFENCED
                for n in layout.of_role("broker")}
    return None


def observe(layout: Layout, timeout_ms: int = PROBE_TIMEOUT_MS) -> ClusterView:
    """The cluster as it answers now; parts no one answers for are left unknown."""
    view = ClusterView(processes={n.name: process_state(n) for n in layout.nodes})
    send = _send(layout, timeout_ms)
    running = [n for n in layout.nodes if view.processes[n.name] == "running"]
    controllers = [("127.0.0.1", n.port) for n in running if n.role == "controller"]
    if controllers:
        try:
            _, view.quorum = find_leader(controllers, send)
        except (MetadataError, OSError):
            view.quorum = None
    view.image = committed_image(layout, view.quorum) if view.quorum is not None else None
    states = _states_from_image(layout, view.image) if view.image is not None else None
    if states is None:
        states = _states_from_brokers(layout, [n for n in running if n.role == "broker"], send)
    view.broker_states = states or {}
    return view


def _send(layout: Layout, timeout_ms: int):
    """One request a connection, as the cluster's client.properties says to connect."""
    if layout.settings.security_protocol != "PLAINTEXT":
        timeout_ms = max(timeout_ms, SECURED_PROBE_TIMEOUT_MS)
    return default_send(timeout_ms, cluster_security.client_security_of(layout))


def high_watermark(quorum: QuorumInfo) -> str:
    """The leader's high watermark, or "unknown": a leader newly elected knows it only once it has
    committed a record of its own epoch (DescribeQuorum says -1 until then, as Kafka's does)."""
    return str(quorum.high_watermark) if quorum.high_watermark >= 0 else "unknown"


STATUS_HEADERS = ("NAME", "ID", "ROLE", "PID", "PROCESS", "STATE", "LAG")


def status_lines(layout: Layout, view: ClusterView) -> list[str]:
    """The node table, then one line about the quorum."""
    rows = [[n.name, str(n.node_id), n.role, str(n.pid) if view.processes[n.name] != "down" else "-",
             view.processes[n.name], view.state(n), view.lag(n)] for n in layout.nodes]
    lines = [line.rstrip() for line in pretty_table(STATUS_HEADERS, rows)]
    q = view.quorum
    if q is None:
        lines.append("quorum: unknown (no controller answered)")
    else:
        leader = next((n.name for n in layout.nodes if n.node_id == q.leader_id), str(q.leader_id))
        lines.append(f"quorum: leader {leader} ({q.leader_id}), epoch {q.leader_epoch}, "
                     f"high watermark {high_watermark(q)}")
    return lines


__all__ = ["ClusterView", "committed_image", "high_watermark", "NOT_REGISTERED", "STATUS_HEADERS", "UNFENCED", "UNKNOWN", "observe",
           "status_lines"]
