"""The quorum client: DescribeQuorum, DescribeCluster, AddRaftVoter and RemoveRaftVoter, as Kafka's Admin
client sends them for ``kafka-metadata-quorum`` (the command line is engine/tools/quorum_tool.py).

The output is Kafka's MetadataQuorumCommand's, byte for byte. A controller that is not the leader
answers DescribeQuorum with NOT_LEADER_OR_FOLLOWER (in v2 with the leader's endpoints, if it knows
them): we ask again there. The network is one function, ``send(address, request) -> response``:
``engine.net.kafka_client.request_once`` unless a test sets ``transport``. kio is imported late.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from engine.common.api_keys import EndpointType
from engine.common.errors import ConfigError, MetadataError
from engine.common.kafka_uuid import ZERO_UUID, uuid_to_kafka
from engine.common.server_config import parse_endpoints, parse_list

Address = tuple[str, int]
Send = Callable[[Address, Any], Any]
Endpoint = tuple[str, str, int]  # (listener name, host, port)

METADATA_TOPIC = "__cluster_metadata"
DEFAULT_TIMEOUT_MS = 30_000  # the admin client's request.timeout.ms
# the DescribeCluster endpoint types asked in turn: a controller answers for controllers, a broker for brokers
CONTROLLERS_FIRST = (EndpointType.CONTROLLER, EndpointType.BROKER)
BROKERS_FIRST = (EndpointType.BROKER, EndpointType.CONTROLLER)
TABLE_HEADERS = ("NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                 "LastCaughtUpTimestamp", "Status")
_HOST_PORT = re.compile(r"\[?([0-9a-zA-Z\-%._:]*)\]?:([0-9]+)")  # Kafka's Utils.getHost/getPort
_VALID = "Is this a valid controller configuration file?"

transport: Send | None = None  # tests replace the network here; None means request_once
clock_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000  # noqa: E731 - "now" of --human-readable


class QuorumToolError(MetadataError):
    """An error answer from the quorum, or a quorum that could not be reached."""


def _kio():
    import engine.records.kio_codec as kio  # late: kraftd's parser stays quick to build
    return kio


# ------------------------------------------------------------------ describe: the output
@dataclass(frozen=True)
class QuorumInfo:
    """Kafka's QuorumInfo: the leader's view of voters and observers (kio ReplicaState items)."""
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple = ()
    observers: tuple = ()
    nodes: dict[int, tuple[Endpoint, ...]] = field(default_factory=dict)


def format_address(address: Address) -> str:
    host, port = address
    return f"{'[' + host + ']' if ':' in host else host}:{port}"  # IPv6 in brackets, as Kafka prints it


def format_endpoint(name: str, host: str, port: int) -> str:
    """RaftVoterEndpoint.toString."""
    return f"{name}://{format_address((host, port))}"


def _replica_json(info: QuorumInfo, replica) -> str:
    """MetadataQuorumCommand.Node.toString: no "endpoints" key when the node has none."""
    dir_id = replica.replica_directory_id
    text = f'{{"id": {replica.replica_id}, "directoryId": '
    text += "null" if dir_id in (None, ZERO_UUID) else f'"{uuid_to_kafka(dir_id)}"'
    if endpoints := info.nodes.get(replica.replica_id, ()):
        text += ', "endpoints": [' + ", ".join(f'"{format_endpoint(*e)}"' for e in endpoints) + "]"
    return text + "}"


def _leader_index(info: QuorumInfo) -> int:
    for i, voter in enumerate(info.voters):
        if voter.replica_id == info.leader_id:
            return i
    raise QuorumToolError(f"the leader {info.leader_id} is not among the current voters")


def format_status(info: QuorumInfo, cluster_id: str) -> list[str]:
    """The eight lines of ``describe --status``."""
    leader_index = _leader_index(info)
    leader = info.voters[leader_index]
    lagging = min(range(len(info.voters)), key=lambda i: info.voters[i].log_end_offset)  # the first minimum
    lagger = info.voters[lagging]
    caught_up = (leader.last_caught_up_timestamp, lagger.last_caught_up_timestamp)
    # Kafka compares the objects: 0 only when the leader itself is the (first) most lagging voter
    lag_time = 0 if lagging == leader_index else -1 if -1 in caught_up else caught_up[0] - caught_up[1]
    return [f"ClusterId:              {cluster_id}",
            f"LeaderId:               {info.leader_id}",
            f"LeaderEpoch:            {info.leader_epoch}",
            f"HighWatermark:          {info.high_watermark}",
            f"MaxFollowerLag:         {leader.log_end_offset - lagger.log_end_offset}",
            f"MaxFollowerLagTimeMs:   {lag_time}",
            "CurrentVoters:          [" + ", ".join(_replica_json(info, v) for v in info.voters) + "]",
            "CurrentObservers:       [" + ", ".join(_replica_json(info, o) for o in info.observers) + "]"]


def relative_time_ms(timestamp_ms: int, desc: str, now_ms: int) -> int:
    """MetadataQuorumCommand.relativeTimeMs: refused unless 0 < timestamp <= now."""
    if not 0 < timestamp_ms <= now_ms:
        raise QuorumToolError("Error while computing relative time, possible drift in system clock. "
                              f"Current timestamp is {now_ms}, {desc} timestamp is {timestamp_ms}")
    return now_ms - timestamp_ms


def format_replication(info: QuorumInfo, *, human_readable: bool = False, now_ms: int | None = None) -> list[str]:
    """The table of ``describe --replication``: leader, followers, observers."""
    leader = info.voters[_leader_index(info)]
    now = clock_ms() if human_readable and now_ms is None else now_ms

    def stamp(value: int, desc: str) -> str:
        if value == -1 or not human_readable:
            return str(value)
        return f"{relative_time_ms(value, desc, now)} ms ago"

    rows = []
    for status, replicas in (("Leader", [leader]),
                             ("Follower", [v for v in info.voters if v.replica_id != info.leader_id]),
                             ("Observer", info.observers)):
        rows += [[str(r.replica_id), uuid_to_kafka(r.replica_directory_id), str(r.log_end_offset),
                  str(leader.log_end_offset - r.log_end_offset), stamp(r.last_fetch_timestamp, "last fetch"),
                  stamp(r.last_caught_up_timestamp, "last caught up"), status] for r in replicas]
    return pretty_table(TABLE_HEADERS, rows)


def pretty_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """ToolsUtils.prettyPrintTable: each cell left-justified to its column's width, then a tab."""
    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(headers)]
    return ["".join(cell.ljust(w) + "\t" for cell, w in zip(row, widths)) for row in [headers, *rows]]


# ------------------------------------------------------------------ talking to the quorum
def parse_bootstrap(text: str, config_name: str = "bootstrap.controllers") -> list[Address]:
    """``HOST:PORT[,HOST:PORT]`` as Kafka's ClientUtils.parseAndValidateAddresses reads it."""
    addresses = []
    for item in parse_list(text):
        m = _HOST_PORT.match(item)
        if not m or not m.group(1) or not 0 <= int(m.group(2)) <= 65535:
            raise ConfigError(f"Invalid url in {config_name}: {item}")
        addresses.append((m.group(1), int(m.group(2))))
    if not addresses:
        raise ConfigError(f"No resolvable bootstrap urls given in {config_name}")
    return addresses


def default_send(timeout_ms: int = DEFAULT_TIMEOUT_MS, security: Any = None) -> Send:
    """The network, resolved at the first request (so a --dry-run never imports the client);
    ``security``: engine.net's ClientSecurity (None: PLAINTEXT)."""
    def send(address: Address, request: Any) -> Any:
        if transport is not None:
            return transport(address, request)
        from engine.net.kafka_client import request_once
        extra = {} if security is None else {"security": security}
        # A peer without our version is asked in an older one it serves: Kafka 4.1 takes only
        # AddRaftVoter v0 (Kafka 4.3 also v1, which we send).
        return request_once(address, request, timeout_ms=timeout_ms, adapt=True, **extra)
    return send


def _try_send(send: Send, address: Address, request: Any) -> tuple[Any, str | None]:
    """(response, None), or (None, why) when the address could not be asked."""
    try:
        return send(address, request), None
    except (MetadataError, OSError) as exc:  # engine.net.errors are MetadataErrors
        if isinstance(exc, OSError):
            from engine.net.connect import failure_words
            return None, failure_words(exc)  # words, not an errno repr
        why = str(exc) or type(exc).__name__
        for said in (f"cannot connect to {format_address(address)}: ", f"cannot ask {format_address(address)}: "):
            why = why.removeprefix(said)  # the caller names the address once
        return None, why


def error_line(code: Any, message: str | None) -> str:
    """``NAME: message``, as Kafka names its Errors; the default message when the answer has none."""
    return f"{code.name.upper()}: {message or _default_messages().get(code.name, '')}".rstrip(": ")


@functools.cache
def _default_messages() -> dict[str, str]:
    """Kafka's default error messages, which kio keeps as the docstrings of ErrorCode's members."""
    try:
        body = ast.parse(inspect.getsource(_kio().ErrorCode)).body[0].body
    except (OSError, TypeError, SyntaxError):
        return {}
    return {s.targets[0].id: " ".join(str(d.value.value).split()) for s, d in zip(body, body[1:])
            if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
            and isinstance(d, ast.Expr) and isinstance(d.value, ast.Constant)}


def describe_quorum_request():
    """DescribeQuorumRequest v2 for __cluster_metadata-0."""
    req = _kio().protocol_module("describe_quorum", 2, "request")
    return req.DescribeQuorumRequest(topics=(req.TopicData(
        topic_name=METADATA_TOPIC, partitions=(req.PartitionData(partition_index=_kio().i32(0)),)),))


def _partition_of(response) -> Any:
    """The one partition of a DescribeQuorum answer, checked as Kafka's admin client checks it."""
    errors, topics = _kio().ErrorCode, response.topics
    if response.error_code != errors.none:
        raise QuorumToolError(error_line(response.error_code, response.error_message))
    if len(topics) != 1 or topics[0].topic_name != METADATA_TOPIC or len(topics[0].partitions) != 1 \
            or topics[0].partitions[0].partition_index != 0:
        raise QuorumToolError(error_line(errors.unknown_server_error, "DescribeMetadataQuorum received "
                                         f"an answer for other partitions than {METADATA_TOPIC}-0"))
    return topics[0].partitions[0]


def _nodes(response) -> dict[int, tuple[Endpoint, ...]]:  # id -> listeners
    return {n.node_id: tuple((lis.name, lis.host, int(lis.port)) for lis in n.listeners)
            for n in getattr(response, "nodes", ())}  # v0/v1 answers have no nodes


def _leader_address(came_in: Address, leader_id: int, nodes: Mapping[int, tuple]) -> Address | None:
    """The leader's endpoint on the listener ``came_in`` belongs to (else its first listener)."""
    endpoints = nodes.get(leader_id, ())
    names = {name for eps in nodes.values() for name, host, port in eps if (host, port) == came_in}
    chosen = next((e for e in endpoints if e[0] in names), endpoints[0] if endpoints else None)
    return None if chosen is None else (chosen[1], chosen[2])


def _quorum_info(p, response) -> QuorumInfo:
    return QuorumInfo(p.leader_id, p.leader_epoch, p.high_watermark, tuple(p.current_voters), tuple(p.observers),
                      _nodes(response))


def quorum_info(response) -> QuorumInfo | None:
    """The quorum a leader's DescribeQuorum answer describes; None when the answerer does not
    lead (NOT_LEADER_OR_FOLLOWER); QuorumToolError for any other error."""
    p = _partition_of(response)
    if p.error_code == _kio().ErrorCode.not_leader_or_follower:
        return None
    if p.error_code != _kio().ErrorCode.none:
        raise QuorumToolError(error_line(p.error_code, p.error_message))
    return _quorum_info(p, response)


def describe_cluster_request(endpoint_type: int = EndpointType.CONTROLLER):
    """DescribeClusterRequest v2 for one endpoint type (by default the controllers, as a controller answers)."""
    kio = _kio()
    req = kio.protocol_module("describe_cluster", 2, "request")
    return req.DescribeClusterRequest(include_cluster_authorized_operations=False,
                                      endpoint_type=kio.i8(endpoint_type), include_fenced_brokers=False)


def describe_cluster(address: Address, send: Send, endpoint_types: Sequence[int] = CONTROLLERS_FIRST):
    """The DescribeCluster (v2) answer of one node, or None: asked for each endpoint type in turn."""
    kio = _kio()
    for endpoint_type in endpoint_types:
        response, _ = _try_send(send, address, describe_cluster_request(endpoint_type))
        if response is not None and response.error_code == kio.ErrorCode.none:
            return response
    return None


def find_leader(bootstrap: Sequence[Address], send: Send,
                endpoint_types: Sequence[int] = CONTROLLERS_FIRST) -> tuple[Address, QuorumInfo]:
    """Ask the bootstrap addresses in turn for the quorum, following NOT_LEADER_OR_FOLLOWER."""
    errors = _kio().ErrorCode
    queue, tried, failures = list(bootstrap), set(), []
    while queue:
        address = queue.pop(0)
        if address in tried:
            continue
        tried.add(address)
        response, why = _try_send(send, address, describe_quorum_request())
        if response is None:
            failures.append(f"{format_address(address)}: {why}")
            continue
        p = partition = _partition_of(response)
        if partition.error_code == errors.none:
            return address, _quorum_info(p, response)
        if partition.error_code != errors.not_leader_or_follower:
            raise QuorumToolError(error_line(partition.error_code, partition.error_message))
        leader = _leader_address(address, partition.leader_id, _nodes(response))
        if leader is None:  # as Kafka's admin client does: the active controller from DescribeCluster
            cluster = describe_cluster(address, send, endpoint_types)
            if cluster is not None and cluster.controller_id >= 0:
                leader = next(((b.host, int(b.port)) for b in cluster.brokers
                               if b.broker_id == cluster.controller_id), None)
        if leader is not None and leader not in tried:
            queue.insert(0, leader)
        else:
            failures.append(f"{format_address(address)}: {error_line(p.error_code, p.error_message)}")
    raise QuorumToolError("no quorum leader reached through " + ", ".join(map(format_address, bootstrap))
                          + (f" ({'; '.join(failures)})" if failures else ""))


def describe(bootstrap: Sequence[Address], *, status: bool = True, human_readable: bool = False,
             send: Send | None = None, endpoint_types: Sequence[int] = CONTROLLERS_FIRST) -> list[str]:
    """The lines of ``describe --status`` (status=True) or ``describe --replication``."""
    send = send or default_send()
    address, info = find_leader(bootstrap, send, endpoint_types)
    if not status:
        return format_replication(info, human_readable=human_readable)
    cluster = describe_cluster(address, send, endpoint_types)  # the node that answered
    return format_status(info, cluster.cluster_id if cluster is not None else "")


# ------------------------------------------------------------------ adding and removing voters
@dataclass(frozen=True)
class ControllerSpec:
    """What add-controller learns from a controller's config and its meta.properties."""
    node_id: int
    directory_id: uuid.UUID
    endpoints: tuple[Endpoint, ...]
    cluster_id: str | None = None


def controller_spec(props: Mapping[str, str]) -> ControllerSpec:
    """Node id, metadata directory id and controller endpoints, checked in Kafka's order and words."""
    from engine.storage.meta_properties import META_PROPERTIES_FILE, read_meta_properties

    if "node.id" not in props:
        raise ConfigError(f"node.id not found in configuration file. {_VALID}")
    if not re.fullmatch(r"[+-]?[0-9]+", props["node.id"]):
        raise ConfigError(f'For input string: "{props["node.id"]}"')
    if (node_id := int(props["node.id"])) < 0:
        raise ConfigError(f"node.id was negative in configuration file. {_VALID}")
    if "controller" not in props.get("process.roles", ""):
        raise ConfigError(f"process.roles did not contain 'controller' in configuration file. {_VALID}")
    if "metadata.log.dir" not in props and "log.dirs" not in props:
        raise ConfigError(f"Neither metadata.log.dir nor log.dirs were found. {_VALID}")
    directory = (props["metadata.log.dir"] if "metadata.log.dir" in props
                 else next(iter(parse_list(props["log.dirs"])), ""))
    if not (Path(directory) / META_PROPERTIES_FILE).is_file():
        raise ConfigError(f"Unable to read meta.properties from {directory}")
    meta = read_meta_properties(directory)
    if meta.directory_id is None:
        raise ConfigError(f"No directory id found in {directory}")
    return ControllerSpec(node_id, meta.directory_id, controller_endpoints(props), meta.cluster_id)


def _listeners(props: Mapping[str, str], key: str) -> dict[str, Endpoint]:
    """As Kafka's tool reads them: no check across entries, the last entry for a name winning;
    an empty host is localhost."""
    return {name: (name, host or "localhost", port) for name, host, port in parse_endpoints(props.get(key), key, None)}


def controller_endpoints(props: Mapping[str, str]) -> tuple[Endpoint, ...]:
    """getControllerAdvertisedListeners: each of controller.listener.names, from advertised.listeners
    else listeners; an empty host is localhost."""
    listeners = _listeners(props, "listeners") | _listeners(props, "advertised.listeners")
    if "controller.listener.names" not in props:
        raise ConfigError(f"controller.listener.names was not found. {_VALID}")
    endpoints: list[Endpoint] = []
    for name in parse_list(props["controller.listener.names"]):
        if (name := name.upper()) not in listeners:
            raise ConfigError(f"Cannot find information about controller listener name: {name}")
        if listeners[name] not in endpoints:
            endpoints.append(listeners[name])
    return tuple(endpoints)


def add_voter_request(spec: ControllerSpec, timeout_ms: int = DEFAULT_TIMEOUT_MS):
    """AddRaftVoterRequest v1 for ``spec`` (with the cluster id of its meta.properties)."""
    kio = _kio()
    req = kio.protocol_module("add_raft_voter", 1, "request")
    return req.AddRaftVoterRequest(
        cluster_id=spec.cluster_id, timeout=timedelta(milliseconds=timeout_ms), voter_id=kio.i32(spec.node_id),
        voter_directory_id=spec.directory_id,
        listeners=tuple(req.Listener(name=n, host=h, port=kio.u16(p)) for n, h, p in spec.endpoints))


def remove_voter_request(voter_id: int, directory_id: uuid.UUID, cluster_id: str | None = None):
    """RemoveRaftVoterRequest v0 (Kafka's tool sends no cluster id)."""
    req = _kio().protocol_module("remove_raft_voter", 0, "request")
    return req.RemoveRaftVoterRequest(cluster_id=cluster_id, voter_id=_kio().i32(voter_id),
                                      voter_directory_id=directory_id)


def send_to_leader(bootstrap: Sequence[Address], request: Any, *, send: Send | None = None,
                   endpoint_types: Sequence[int] = CONTROLLERS_FIRST, attempts: int = 3) -> Any:
    """Send ``request`` to the quorum leader; raise on an error answer (retry on a leader change)."""
    errors, send = _kio().ErrorCode, send or default_send()
    for attempt in range(attempts):
        address, _ = find_leader(bootstrap, send, endpoint_types)
        response, why = _try_send(send, address, request)
        if response is None:
            raise QuorumToolError(f"{format_address(address)}: {why}")
        if response.error_code == errors.none:
            return response
        if response.error_code != errors.not_leader_or_follower or attempt == attempts - 1:
            raise QuorumToolError(error_line(response.error_code, response.error_message))
