"""The work of ``kraftd cluster`` (engine.cluster.tool builds its parser and dispatches here).

A local KRaft cluster of ``kraftd start`` processes: controllers (one dynamic quorum) and
simulated brokers, kept in a state directory (engine.cluster.layout) that every subcommand
takes as ``--dir``. ``up`` formats and starts (or, on a directory already holding a cluster,
starts again the nodes not running, formatting nothing) and returns once every broker is
unfenced, ending with ``bootstrap.servers=...`` and ``bootstrap.controllers=...``. A node is
named as ``status`` prints it: ``controller-K`` (node 3000+K) or ``broker-K`` (node K).
"""

from __future__ import annotations

import argparse
import signal
import time
from pathlib import Path
from typing import Callable

from engine.common.server_config import parse_list
from engine.net.ports import is_address_in_use, pick_ports
from engine.cluster.layout import (
    FAILED_DIRS_KEY, FETCH_DELAY_KEY, FETCH_FAILURE_RATE_KEY, REGISTRY_FILE, Layout, Node, Settings, default_brokers_per_process,
    forget_dead, format_nodes,
    is_alive, kill_node, load_layout, log_since, plan_layout, process_state, read_faults, remove_state, send_signal,
    GroupCommand, kraftd_start_group, spawn, stop_nodes, write_configs, write_faults,
)
from engine.cluster import kafka_brokers as cluster_kafka
from engine.cluster import security as cluster_security
from engine.cluster.view import UNFENCED, ClusterView, observe, status_lines
from engine.cluster.tool import READY_TIMEOUT_S
from engine.cluster.processes import LISTEN_TIMEOUT_S, PORT_ATTEMPTS, ClusterError, PortTaken

Out = Callable[[str], None]
POLL_S = 0.2


# ------------------------------------------------------------------ starting and waiting
def _why_exited(layout: Layout, node: Node, mark: int) -> ClusterError:
    text = log_since(layout, node, mark)
    name = layout.process_name(node)
    if is_address_in_use(text):
        where = f"port {node.port}" if node.process is None else "one of its brokers' ports"
        return PortTaken(f"{name} could not listen on {where}: the port is taken")
    last = text.strip().splitlines()[-1] if text.strip() else "no output"
    return ClusterError(f"{name} exited at start: {last} (log: {layout.log_path(node)})")


def _wait_listening(layout: Layout, node: Node, mark: int, timeout_s: float) -> None:
    marker = f"[kraftd node {node.node_id}] listening on "
    deadline = time.monotonic() + timeout_s
    while marker not in log_since(layout, node, mark):
        if not is_alive(node):
            if marker in log_since(layout, node, mark):
                break
            raise _why_exited(layout, node, mark)
        if time.monotonic() > deadline:
            raise ClusterError(f"{node.name} did not log that it listens within {timeout_s:.0f} s "
                               f"(log: {layout.log_path(node)})")
        time.sleep(0.02)


def wait_ready(layout: Layout, marks: dict[str, int], timeout_s: float, *, quorum: bool,
               epochs_before: dict[str, int] | None = None) -> None:
    """Until every running broker is unfenced (and, with ``quorum``, the quorum has a leader);
    a broker whose process ends is an error. A broker in ``epochs_before`` (name -> its broker
    epoch before it was started, -1 for none) counts only once registered anew: a killed broker's
    old registration stays unfenced until its session expires."""
    epochs_before = epochs_before or {}
    deadline = time.monotonic() + timeout_s
    while True:
        brokers = [n for n in layout.of_role("broker") if n.pid is not None]
        for node in {n.pid: n for n in brokers}.values():  # one look per process
            if not is_alive(node):
                raise _why_exited(layout, node, marks.get(node.name, 0))
        view = observe(layout)
        waiting = [n for n in brokers if view.processes[n.name] == "running" and
                   (view.state(n) != UNFENCED or _registered_before(view, n, epochs_before))]
        if not waiting and (view.quorum is not None or not quorum):
            return
        if time.monotonic() > deadline:
            states = ", ".join(f"{n.name} {view.state(n)}" for n in waiting) or "no quorum leader answered"
            raise ClusterError(f"not ready within {timeout_s:.0f} s: {states}")
        time.sleep(POLL_S)


def _registered_before(view: ClusterView, node: Node, epochs_before: dict[str, int]) -> bool:
    """Whether the broker's registration is still the one from before its start (or unknown)."""
    if node.name not in epochs_before:
        return False
    registration = view.image.cluster.brokers.get(node.node_id) if view.image is not None else None
    return registration is None or registration.epoch <= epochs_before[node.name]


def broker_epochs(layout: Layout, nodes: list[Node]) -> dict[str, int]:
    """Each broker's registered epoch now (-1: not registered or not known)."""
    image = observe(layout).image
    brokers = image.cluster.brokers if image is not None else {}
    return {n.name: brokers[n.node_id].epoch if n.node_id in brokers else -1 for n in nodes if n.role == "broker"}


def start_nodes(layout: Layout, nodes: list[Node], timeout_s: float = READY_TIMEOUT_S, *,
                quorum: bool = True, group_command: GroupCommand = kraftd_start_group) -> None:
    """Start the given (stopped) nodes: controllers first, each until it listens, then the
    brokers (a group's process by ``group_command``, each group unfenced before the next
    starts); until every running broker is unfenced and (with ``quorum``) the quorum has a leader."""
    marks: dict[str, int] = {}
    epochs = broker_epochs(layout, nodes)
    controllers = [n for n in nodes if n.role == "controller"]
    for node in controllers:
        marks[node.name] = spawn(layout, node)
    for node in controllers:
        _wait_listening(layout, node, marks[node.name], min(timeout_s, LISTEN_TIMEOUT_S))
    for node in nodes:
        if node.role == "broker" and node.name not in marks:  # a group's process starts once
            mark = spawn(layout, node, group_command=group_command)
            marks.update((member.name, mark) for member in layout.group(node))
            if node.process is not None:
                # one group's registrations at a time: 2,000 brokers registering in the same
                # seconds stalled the active controller past the fetch timeout on 2 cores
                wait_ready(layout, marks, timeout_s, quorum=quorum, epochs_before=epochs)
    if quorum or any(n.role == "broker" for n in nodes):
        wait_ready(layout, marks, timeout_s, quorum=quorum, epochs_before=epochs)


def _create(root: Path, args: argparse.Namespace, out: Out) -> Layout:
    """A new cluster in ``root``: planned, configured, formatted and started (on new ports when
    one turns out taken, unless the ports were given)."""
    settings = cluster_kafka.with_kafka(Settings(release_version=args.release_version,
                                                 heartbeat_interval_ms=args.heartbeat_interval_ms,
                                                 session_timeout_ms=args.session_timeout_ms,
                                                 security_protocol=getattr(args, "security", None) or "PLAINTEXT"),
                                        args)
    controllers, brokers = args.controllers or 3, 5 if args.brokers is None else args.brokers
    racks = 3 if args.racks is None else args.racks
    per_process = getattr(args, "brokers_per_process", None) or default_brokers_per_process(brokers)
    if settings.kafka_version:
        per_process = 1  # a Kafka broker is a JVM of its own
    count = controllers + brokers
    ours = [f"{r}-{i}" for r, n in (("controller", controllers), ("broker", brokers)) for i in range(1, n + 1)]
    if settings.security_protocol != "PLAINTEXT":
        ours += [cluster_security.TLS_DIR, cluster_security.CLIENT_CONFIG]
    taken = [name for name in ours if (root / name).exists()]
    if taken:  # never format (or, on failure, remove) what another tool left there
        raise ClusterError(f"{root} holds {taken[0]} but no {REGISTRY_FILE}: not a kraftd cluster directory; "
                           "choose another --dir")
    for attempt in range(1, PORT_ATTEMPTS + 1):
        ports = list(range(args.base_port, args.base_port + count)) if args.base_port else pick_ports(count)
        layout = plan_layout(root, controllers=controllers, brokers=brokers, racks=racks, ports=ports,
                             settings=settings, brokers_per_process=per_process)
        try:
            root.mkdir(parents=True, exist_ok=True)
            cluster_security.write_material(layout)
            write_configs(layout)
            format_nodes(layout)
        except BaseException:
            remove_state(layout)
            raise
        layout.save()
        try:
            start_nodes(layout, list(layout.nodes), args.timeout_s)
            return layout
        except PortTaken as exc:
            stop_nodes(layout, layout.nodes, timeout_s=0, sleep=time.sleep, clock=time.monotonic)
            remove_state(layout)
            if args.base_port or attempt == PORT_ATTEMPTS:
                raise
            out(f"note: {exc}; starting again on other ports")
        except BaseException:
            # the state stays (its logs tell why; a second `up` starts it again), the processes do not
            stop_nodes(layout, layout.nodes, timeout_s=5, sleep=time.sleep, clock=time.monotonic)
            raise
    raise AssertionError("unreachable")


def _print_status(layout: Layout, out: Out) -> None:
    from engine.cluster import workload_process

    for line in status_lines(layout, observe(layout)):
        out(line)
    if layout.settings.kafka_version:
        out(f"brokers: Apache Kafka {layout.settings.kafka_version} (jars in {layout.settings.kafka_libs})")
    if (process := workload_process.running(layout)) is not None:
        out(f"workload: running (pid {process.pid}), log {workload_process.log_path(layout)}")


def cmd_up(args: argparse.Namespace, out: Out) -> int:
    root = Path(args.dir)
    if (root / REGISTRY_FILE).exists():
        layout = load_layout(root)
        _note_ignored(layout, args, out)
        forget_dead(layout)
        start_nodes(layout, [n for n in layout.nodes if not is_alive(n)], args.timeout_s)
    else:
        layout = _create(root, args, out)
    _print_status(layout, out)
    if getattr(args, "workload", False):
        _start_workload(layout, args, out)
    out(f"bootstrap.servers={layout.bootstrap('broker')}")
    out(f"bootstrap.controllers={layout.bootstrap('controller')}")
    if layout.settings.security_protocol != "PLAINTEXT":
        # what metashell, kraftd quorum and Kafka's own tools take as --command-config
        out(f"command.config={cluster_security.client_config_path(layout)}")
    return 0


def port_range(nodes: list[Node]) -> str:
    """The nodes' ports in words: ``19091-19093`` when they run on, else listed in node order."""
    ports = [n.port for n in nodes]
    if len(ports) > 1 and ports == list(range(ports[0], ports[0] + len(ports))):
        return f"{ports[0]}-{ports[-1]}"
    return ",".join(map(str, ports)) or "none"


def _note_ignored(layout: Layout, args: argparse.Namespace, out: Out) -> None:
    """One line naming what ``up`` was asked for that the cluster in the directory is not (its
    size, brokers, security, ports): the cluster stays as it was made, exit code 0, as a second
    ``up`` means "make sure it runs"; the bootstrap lines that follow give its real addresses."""
    ports = [n.port for n in layout.nodes]  # controllers first, as --base-port numbers them
    asked = {"controllers": args.controllers, "brokers": args.brokers, "kafka-brokers": args.kafka_brokers,
             "security": getattr(args, "security", None), "base-port": getattr(args, "base_port", None)}
    have = {"controllers": len(layout.of_role("controller")), "brokers": len(layout.of_role("broker")),
            "kafka-brokers": layout.settings.kafka_version, "security": layout.settings.security_protocol,
            "base-port": ports[0] if ports else None}
    differ = [f"--{k} {v}" for k, v in asked.items() if v is not None and v != have[k]]
    if differ:
        out(f"note: {layout.root} holds a cluster already: {have['controllers']} controllers on ports "
            f"{port_range(layout.of_role('controller'))}, {have['brokers']} brokers on ports "
            f"{port_range(layout.of_role('broker'))}; {', '.join(differ)} ignored, it keeps them "
            "(`kraftd cluster down` and remove the directory to start anew, or choose another --dir)")


def _start_workload(layout: Layout, args: argparse.Namespace, out: Out) -> None:
    from engine.cluster import workload_process

    if not layout.of_role("broker"):
        out("workload: not started: the cluster has no broker to administer")
        return
    process = workload_process.running(layout)
    if process is not None:
        out(f"workload: already running (pid {process.pid}), log {workload_process.log_path(layout)}")
        return
    options = ["--interval-ms", str(args.workload_interval_ms)]
    if args.workload_seed is not None:
        options += ["--seed", str(args.workload_seed)]
    process = workload_process.start(layout, options)
    out(f"workload: started (pid {process.pid}): topics created, configs changed, leaders moved and partitions "
        f"reassigned until `kraftd cluster down`; log {workload_process.log_path(layout)}")


def cmd_status(args: argparse.Namespace, out: Out) -> int:
    _print_status(load_layout(Path(args.dir)), out)
    return 0


def cmd_down(args: argparse.Namespace, out: Out) -> int:
    from engine.cluster import workload_process

    layout = load_layout(Path(args.dir))
    if workload_process.stop(layout, timeout_s=args.timeout_s):  # first: its requests need the brokers
        out("workload: stopped")
    running = [n for n in layout.nodes if is_alive(n)]
    for role in ("broker", "controller"):  # brokers first: their controlled shutdown needs the quorum
        nodes = [n for n in running if n.role == role]
        killed = stop_nodes(layout, nodes, timeout_s=args.timeout_s, sleep=time.sleep, clock=time.monotonic)
        for node in nodes:
            if node.process is not None and node is not layout.group(node)[0]:
                continue  # a group's process: one line
            name = node.name if node.process is None else f"{node.process} ({group_names(layout.group(node))})"
            out(f"{name}: killed (SIGKILL) after {args.timeout_s:g} s" if node.name in killed else f"{name}: stopped")
    if not running:
        out("no node was running")
    return 0


# ------------------------------------------------------------------ one node
def group_names(nodes: list[Node]) -> str:
    """``broker-1 .. broker-6`` (a run of names), else the names listed."""
    if len(nodes) > 2 and [n.node_id for n in nodes] == list(range(nodes[0].node_id, nodes[-1].node_id + 1)):
        return f"{nodes[0].name} .. {nodes[-1].name}"
    return ", ".join(n.name for n in nodes)


def _whole_process(layout: Layout, node: Node) -> str:
    """What an action on a grouped broker also does, in words ('' for a node with its own process)."""
    if node.process is None:
        return ""
    return f", with its whole process {node.process} ({group_names(layout.group(node))})"


def _running_node(layout: Layout, name: str) -> Node:
    node = layout.node(name)
    if node.pid is None:
        raise ClusterError(f"{name} is not running")
    if not is_alive(node):
        pid = node.pid
        forget_dead(layout)
        raise ClusterError(f"{name} is not running (its process {pid} is gone)")
    return node


def cmd_node(args: argparse.Namespace, out: Out) -> int:
    layout = load_layout(Path(args.dir))
    action = args.cluster_command
    if action == "start":
        node = layout.node(args.node)
        if is_alive(node):
            raise ClusterError(f"{node.name} is already running (pid {node.pid})")
        # a controller alone waits only until it listens: the others may be down on purpose
        start_nodes(layout, [node], args.timeout_s, quorum=False)
        out(f"{node.name}: started{_whole_process(layout, node)} (pid {node.pid})")
        return 0
    node = _running_node(layout, args.node)
    pid, also = node.pid, _whole_process(layout, node)
    if action == "stop":
        killed = stop_nodes(layout, [node], timeout_s=args.timeout_s, sleep=time.sleep, clock=time.monotonic)
        out(f"{node.name}: {'killed (SIGKILL) after the timeout' if killed else 'stopped'}{also} (pid {pid})")
    elif action == "kill":
        kill_node(layout, node, time.sleep)
        out(f"{node.name}: killed{also} (pid {pid})")
    elif action == "pause":
        if process_state(node) == "paused":
            raise ClusterError(f"{node.name} is already paused")
        send_signal(node, signal.SIGSTOP)
        out(f"{node.name}: paused{also} (pid {pid})")
    else:
        if process_state(node) != "paused":
            raise ClusterError(f"{node.name} is not paused")
        send_signal(node, signal.SIGCONT)
        out(f"{node.name}: resumed{also} (pid {pid})")
    return 0


def _broker(layout: Layout, name: str) -> Node:
    node = layout.node(name)
    if node.role != "broker":
        raise ClusterError(f"{name} is a controller; faults are for brokers")
    cluster_kafka.refuse_simulated_only(layout, node)
    return node


def cmd_lag(args: argparse.Namespace, out: Out) -> int:
    layout = load_layout(Path(args.dir))
    node = _broker(layout, args.node)
    faults = read_faults(layout, node)
    faults[FETCH_DELAY_KEY] = str(args.ms) if args.ms else ""
    faults[FETCH_FAILURE_RATE_KEY] = f"{args.failure_rate:g}" if args.failure_rate else ""
    write_faults(layout, node, faults)
    out(f"{node.name}: {FETCH_DELAY_KEY}={args.ms} {FETCH_FAILURE_RATE_KEY}={args.failure_rate:g}")
    return 0


def cmd_disk_fail(args: argparse.Namespace, out: Out) -> int:
    layout = load_layout(Path(args.dir))
    node = _broker(layout, args.node)
    dirs = layout.data_dirs(node)
    chosen = dirs[1] if args.log_dir is None else next(
        (d for d in dirs if args.log_dir in (str(d), d.name)), None)
    if chosen is None:
        raise ClusterError(f"{args.log_dir!r} is none of {node.name}'s log dirs: {', '.join(map(str, dirs))}")
    faults = read_faults(layout, node)
    failed = parse_list(faults.get(FAILED_DIRS_KEY))
    faults[FAILED_DIRS_KEY] = ",".join(dict.fromkeys([*failed, str(chosen)]))
    write_faults(layout, node, faults)
    out(f"{node.name}: {FAILED_DIRS_KEY}={faults[FAILED_DIRS_KEY]}")
    return 0


__all__ = ["cmd_disk_fail", "cmd_down", "cmd_lag", "cmd_node", "cmd_status", "cmd_up", "start_nodes", "wait_ready"]
