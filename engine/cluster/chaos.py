"""``kraftd cluster chaos --seconds S --seed N``: random faults on a running local cluster, within a budget.

Every ``--interval-ms`` one action, drawn from a ``random.Random(seed)``: a fault (kill, stop or
pause a node; for a broker also a metadata fetch delay or a failed log dir) or the healing of
one fault made before. The budget is checked before every fault against what is impaired
now: never more than a minority of the controllers ((N-1)//2), never more than RF-1 brokers at
once, RF being the smallest replication factor of any partition in the committed metadata
(with no partitions: all brokers but one). A broker counts as impaired while killed, stopped,
paused or with a failed log dir (its replicas there are offline); a fetch delay only slows it.
A healed broker counts again once it is unfenced (``start`` waits for that).

Each action is printed with the moment's metadata offsets (the leader's high watermark from
DescribeQuorum). At the end, or on Ctrl-C, everything is healed: paused nodes resumed, faults
files cleared, brokers with a failed dir restarted (a failed dir stays offline until the
broker restarts, as in Kafka), every node started, and every broker unfenced.
"""

from __future__ import annotations

import argparse
import random
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from engine.cluster.commands import start_nodes, wait_ready
from engine.cluster import kafka_brokers as cluster_kafka
from engine.cluster.layout import (
    FAILED_DIRS_KEY, FETCH_DELAY_KEY, Layout, Node, is_alive, kill_node, load_layout, process_state, read_faults,
    send_signal, stop_nodes, write_faults,
)
from engine.cluster.tool import STOP_TIMEOUT_S
from engine.cluster.view import ClusterView, controller_images, high_watermark, observe

Out = Callable[[str], None]
FETCH_DELAYS_MS = (100, 500, 2000)


@dataclass
class Chaos:
    layout: Layout
    rng: random.Random
    out: Out
    timeout_s: float
    began: float = field(default_factory=time.monotonic)
    lagging: set[str] = field(default_factory=set)  # brokers with a fetch delay
    failed_disk: set[str] = field(default_factory=set)  # brokers with a failed log dir

    # -- what is impaired, what the budget allows -----------------------------------------------
    def impaired(self, node: Node) -> bool:
        return process_state(node) != "running" or node.name in self.failed_disk

    def allowed(self, role: str, view: ClusterView) -> int:
        """How many nodes of ``role`` may be impaired at once."""
        count = len(self.layout.of_role(role))
        if role == "controller":
            return (count - 1) // 2
        rf = view.min_replication_factor()
        return max(0, count - 1 if rf is None else min(rf - 1, count - 1))

    def budget_line(self, view: ClusterView) -> str:
        parts = []
        for role in ("controller", "broker"):
            nodes = self.layout.of_role(role)
            if nodes:
                down = sum(self.impaired(n) for n in nodes)
                parts.append(f"{down}/{len(nodes)} {role}s impaired (budget {self.allowed(role, view)})")
        return "; ".join(parts)

    def offsets(self, view: ClusterView) -> str:
        q = view.quorum
        if q is None:
            return "metadata: no leader answered"
        leader = next((n.name for n in self.layout.nodes if n.node_id == q.leader_id), str(q.leader_id))
        return f"metadata high watermark {high_watermark(q)}, leader {leader} epoch {q.leader_epoch}"

    def say(self, action: str, node: Node) -> None:
        view = observe(self.layout)
        self.out(f"{time.monotonic() - self.began:7.1f}s  {action:<10} {node.name:<13} "
                 f"{self.offsets(view)}; {self.budget_line(view)}")

    # -- faults and heals ------------------------------------------------------------------------
    def faults(self, view: ClusterView) -> list[tuple[str, Node]]:
        choices: list[tuple[str, Node]] = []
        for role in ("controller", "broker"):
            nodes = self.layout.of_role(role)
            room = self.allowed(role, view) - sum(self.impaired(n) for n in nodes)
            for node in nodes:
                if self.impaired(node):
                    continue
                simulated = role == "broker" and not cluster_kafka.is_kafka(self.layout, node)  # faults file
                # a process fault takes the node's whole process down: every broker of its group
                if room >= (len(self.layout.group(node)) if role == "broker" else 1):
                    choices += [("kill", node), ("stop", node), ("pause", node)]
                if room > 0 and simulated:
                    choices.append(("disk-fail", node))
                if simulated and node.name not in self.lagging:
                    choices.append(("lag", node))  # slows, takes nothing offline: outside the budget
        return choices

    def heals(self) -> list[tuple[str, Node]]:
        choices: list[tuple[str, Node]] = []
        for node in self.layout.nodes:
            state = process_state(node)
            if state == "paused":
                choices.append(("resume", node))
            elif state == "down":
                choices.append(("start", node))
            elif node.name in self.failed_disk:
                choices.append(("disk-heal", node))
            elif node.name in self.lagging:
                choices.append(("lag-heal", node))
        return choices

    def set_faults(self, node: Node, *, delay_ms: int | None = None, failed: str | None = None) -> None:
        faults = read_faults(self.layout, node)
        if delay_ms is not None:
            faults[FETCH_DELAY_KEY] = str(delay_ms) if delay_ms else ""
        if failed is not None:
            faults[FAILED_DIRS_KEY] = failed
        write_faults(self.layout, node, faults)

    def act(self, action: str, node: Node) -> None:
        layout = self.layout
        if action == "kill":
            kill_node(layout, node, time.sleep)
        elif action == "stop":
            stop_nodes(layout, [node], timeout_s=STOP_TIMEOUT_S, sleep=time.sleep, clock=time.monotonic)
        elif action == "pause":
            send_signal(node, signal.SIGSTOP)
        elif action == "resume":
            send_signal(node, signal.SIGCONT)
            if node.role == "broker":  # its session may have expired while paused
                wait_ready(layout, {}, self.timeout_s, quorum=False)
        elif action == "start":
            start_nodes(layout, [node], self.timeout_s, quorum=node.role == "controller")
        elif action == "lag":
            delay_ms = self.rng.choice(FETCH_DELAYS_MS)
            self.set_faults(node, delay_ms=delay_ms)
            self.lagging.add(node.name)
            action = f"lag {delay_ms} ms"
        elif action == "lag-heal":
            self.set_faults(node, delay_ms=0)
            self.lagging.discard(node.name)
        elif action == "disk-fail":
            self.set_faults(node, failed=str(layout.data_dirs(node)[1]))
            self.failed_disk.add(node.name)
        elif action == "disk-heal":  # a failed dir comes back only with a restart
            self.set_faults(node, failed="")
            stop_nodes(layout, [node], timeout_s=STOP_TIMEOUT_S, sleep=time.sleep, clock=time.monotonic)
            start_nodes(layout, [node], self.timeout_s)
            self.failed_disk.discard(node.name)
        self.say(action, node)

    def step(self) -> None:
        view = observe(self.layout)
        faults, heals = self.faults(view), self.heals()
        if heals and (not faults or self.rng.random() < 0.4):
            self.act(*self.rng.choice(heals))
        elif faults:
            self.act(*self.rng.choice(faults))

    def heal_all(self) -> None:
        layout = self.layout
        for node in layout.nodes:
            if process_state(node) == "paused":
                self.act("resume", node)
        for node in layout.of_role("broker"):
            if node.name in self.failed_disk:
                self.act("disk-heal", node)
            elif read_faults(layout, node):
                write_faults(layout, node, {})  # every injected fault, a fetch failure rate too
                self.lagging.discard(node.name)
        for node in [*layout.of_role("controller"), *layout.of_role("broker")]:
            if not is_alive(node):
                self.act("start", node)
        wait_ready(layout, {}, self.timeout_s, quorum=True)


def cmd_chaos(args: argparse.Namespace, out: Out) -> int:
    layout = load_layout(Path(args.dir))
    chaos = Chaos(layout, random.Random(args.seed), out, args.timeout_s)
    for node in layout.of_role("broker"):  # faults made before, by `lag` and `disk-fail`
        faults = read_faults(layout, node)
        if faults.get(FAILED_DIRS_KEY):
            chaos.failed_disk.add(node.name)
        if faults.get(FETCH_DELAY_KEY):
            chaos.lagging.add(node.name)
    out(f"chaos for {args.seconds:g} s, seed {args.seed}: first every node up")
    chaos.heal_all()
    chaos.began = time.monotonic()
    end = chaos.began + args.seconds
    try:
        while time.monotonic() < end:
            chaos.step()
            time.sleep(max(0.0, min(args.interval_ms / 1000, end - time.monotonic())))
    finally:
        out("healing every fault")
        chaos.heal_all()
    view = observe(layout)
    out(f"healed: every node running, every broker unfenced; {chaos.offsets(view)}")
    return 0 if images_agree(layout, out) else 1


def images_agree(layout: Layout, out: Out) -> bool:
    """Whether every controller replayed its log to the same image (compared as the records a
    snapshot of it would hold, provenance aside)."""
    from engine.image.image_writer import image_records

    offset, images = controller_images(layout)
    unread = [name for name, image in images.items() if image is None]
    records = {name: list(image_records(image)) for name, image in images.items() if image is not None}
    first = next(iter(records.values()), None)
    differ = [name for name, r in records.items() if r != first]
    if unread or differ:
        out(f"controllers' images at offset {offset}: " + "; ".join(
            [*(f"{n} unreadable" for n in unread), *(f"{n} differs" for n in differ)]))
        return False
    out(f"controllers' images identical at offset {offset} ({len(records)} controllers, {len(first)} records)")
    return True


__all__ = ["Chaos", "cmd_chaos"]
