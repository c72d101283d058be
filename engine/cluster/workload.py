"""``kraftd cluster workload``: topics created, configs changed, leaders moved and partitions
reassigned on a running local cluster, through its own admin path, until stopped.

It is an admin client of the cluster's brokers (``bootstrap.servers``), as Kafka's
``kafka-topics``, ``kafka-configs``, ``kafka-reassign-partitions`` and ``kafka-leader-election``
are: each step asks a broker for Metadata, then sends the step's requests (CreateTopics,
IncrementalAlterConfigs, AlterPartitionReassignments, ElectLeaders, CreatePartitions,
DeleteTopics), which the broker forwards to the active controller. What to do is
engine.cluster.workload_plan's; here are the sending, the lines and the stopping.

Each step prints one line: seconds since the start, what, on which topic or partition, and
either what changed or why not (``refused: NOT_CONTROLLER ...``, ``failed: no broker answered
...``). A refusal or an unreachable broker (during ``chaos``) is such a line and the workload
goes on, at the next broker in turn. It ends after ``--seconds``, on Ctrl-C or on SIGTERM,
with one summary line, and exit code 0: stopping is how it is meant to end.

``up --workload`` starts it in the background (engine.cluster.workload_process), its lines in
``DIR/logs/workload.log``; ``down`` stops it first.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from engine.cluster.layout import load_layout
from engine.cluster.processes import ClusterError
from engine.cluster.workload_plan import Action, ClusterShape, Planner, metadata_request, refusals
from engine.net.errors import NetError

Out = Callable[[str], None]
Address = tuple[str, int]
# each kind of step, as the summary counts it (singular, plural)
KINDS = {"create": ("topic created", "topics created"), "config": ("config change", "config changes"),
         "leader": ("leader move", "leader moves"), "reassign": ("reassignment", "reassignments"),
         "partitions": ("partition addition", "partition additions"), "delete": ("topic deleted", "topics deleted")}
CLIENT_ID = "kraftd-workload"
SUSPECT_S = 30.0  # how long a broker that failed to answer is asked last


@dataclass
class Tally:
    """What the run did, for the summary line."""
    done: Counter = field(default_factory=Counter)
    refused: int = 0
    failed: int = 0

    def summary(self, seconds: float, why: str) -> str:
        steps = sum(self.done.values()) + self.refused + self.failed
        done = ", ".join(f"{self.done[k]} {words[self.done[k] != 1]}" for k, words in KINDS.items()
                         if self.done[k]) or "nothing done"
        problems = f"; {self.refused} refused, {self.failed} failed" if self.refused or self.failed else ""
        return f"workload: stopped ({why}) after {seconds:.1f} s: {steps} steps ({done}){problems}"


class Brokers:
    """The brokers' addresses, asked in turn: a request goes to the next one that answers. One
    that failed (killed, paused, partitioned during ``chaos``) is asked last for ``SUSPECT_S``,
    so a hung broker does not cost every step a request timeout."""

    def __init__(self, client: Any, addresses: list[Address], request_timeout_ms: int,
                 clock: Callable[[], float] = time.monotonic):
        self.client = client
        self.addresses = addresses
        self.next = 0
        self.request_timeout_ms = request_timeout_ms
        self.clock = clock
        self.failed_at: dict[Address, float] = {}

    def order(self) -> list[Address]:
        """The addresses to try, from the next in turn, those failed lately last (oldest failure first)."""
        now = self.clock()
        turn = [self.addresses[(self.next + i) % len(self.addresses)] for i in range(len(self.addresses))]
        suspect = {a: t for a, t in self.failed_at.items() if now - t < SUSPECT_S}
        return [a for a in turn if a not in suspect] + sorted(suspect, key=suspect.__getitem__)

    async def send(self, request: Any) -> Any:
        reasons = []
        for address in self.order():
            try:
                response = await self.client.send(address, request, timeout_ms=self.request_timeout_ms, adapt=True)
            except NetError as exc:
                self.failed_at[address] = self.clock()
                reasons.append(str(exc))
                continue
            self.failed_at.pop(address, None)
            # spread the load as Kafka's admin client picks the least loaded node: the next one next time
            self.next = (self.addresses.index(address) + 1) % len(self.addresses)
            return response
        raise NetError("no broker answered: " + "; ".join(reasons))


class Workload:
    def __init__(self, brokers: Brokers, planner: Planner, out: Out, clock: Callable[[], float] = time.monotonic):
        self.brokers = brokers
        self.planner = planner
        self.out = out
        self.clock = clock
        self.began = clock()
        self.tally = Tally()

    def say(self, kind: str, target: str, words: str) -> None:
        self.out(f"{self.clock() - self.began:7.1f}s  {kind:<10} {target:<16} {words}")

    async def shape(self) -> ClusterShape:
        return ClusterShape.of(await self.brokers.send(metadata_request()))

    async def step(self) -> None:
        """One action, one line, whatever the cluster answers."""
        try:
            shape = await self.shape()
        except NetError as exc:
            self.tally.failed += 1
            self.say("metadata", "-", f"failed: {exc}")
            return
        action = self.planner.next_action(shape)
        if action is None:
            self.say("wait", "-", "no broker is registered and unfenced")
            return
        await self.run(action)

    async def run(self, action: Action) -> None:
        for request in action.requests:
            try:
                problems = refusals(await self.brokers.send(request))
            except NetError as exc:
                self.tally.failed += 1
                self.say(action.kind, action.target, f"{action.detail}: failed: {exc}")
                return
            if problems:
                self.tally.refused += 1
                self.say(action.kind, action.target, f"{action.detail}: refused: {'; '.join(problems)}")
                return
        self.tally.done[action.kind] += 1
        self.say(action.kind, action.target, action.detail)


def parse_addresses(bootstrap: str) -> list[Address]:
    out = []
    for item in bootstrap.split(","):
        host, _, port = item.strip().rpartition(":")
        out.append((host.strip("[]"), int(port)))
    return out


class Stop:
    """Set once, by a signal (or a test), with the reason the summary line gives."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.why = "stopped"

    def set(self, why: str) -> None:
        if not self.event.is_set():
            self.why = why
            self.event.set()


async def drive(workload: Workload, *, interval_s: float, seconds: float | None, stop: Stop,
                steps: int | None = None) -> str:
    """Steps every ``interval_s`` until ``seconds`` pass, ``steps`` were made or ``stop`` is set;
    why it ended. A step under way when ``stop`` comes is abandoned (its request may still take
    effect)."""
    end = None if seconds is None else workload.began + seconds
    made = 0

    def left() -> float | None:
        return None if end is None else max(0.0, end - workload.clock())

    while True:
        step = asyncio.ensure_future(workload.step())
        stopper = asyncio.ensure_future(stop.event.wait())
        await asyncio.wait({step, stopper}, timeout=left(), return_when=asyncio.FIRST_COMPLETED)
        stopper.cancel()
        if step.done():
            step.result()  # anything but the cluster's refusals (those are lines) is a bug: let it show
            made += 1
        else:
            step.cancel()
            await asyncio.gather(step, return_exceptions=True)
        if stop.event.is_set():
            return stop.why
        if steps is not None and made >= steps:
            return f"{steps} steps made"
        if left() == 0.0:
            return "time up"
        try:
            await asyncio.wait_for(stop.event.wait(), interval_s if end is None else min(interval_s, left()))
            return stop.why
        except TimeoutError:
            if left() == 0.0:
                return "time up"


async def _main(args: argparse.Namespace, out: Out) -> int:
    from engine.cluster.security import client_security_of
    from engine.net.kafka_client import KafkaClient

    layout = load_layout(Path(args.dir))
    bootstrap = layout.bootstrap("broker")
    if not bootstrap:
        raise ClusterError(f"the cluster in {layout.root} has no broker: nothing to administer")
    stop = Stop()
    loop = asyncio.get_running_loop()
    for signum, why in ((signal.SIGINT, "Ctrl-C"), (signal.SIGTERM, "SIGTERM")):
        loop.add_signal_handler(signum, stop.set, why)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    planner = Planner(random.Random(seed), max_topics=args.max_topics)
    async with KafkaClient(client_id=CLIENT_ID, request_timeout_ms=args.request_timeout_ms,
                           security=client_security_of(layout)) as client:
        workload = Workload(Brokers(client, parse_addresses(bootstrap), args.request_timeout_ms), planner, out)
        try:
            await workload.shape()  # a cluster that answers nothing at all is an error, not a run
        except NetError as exc:
            raise ClusterError(f"cannot reach the cluster in {layout.root} at bootstrap.servers={bootstrap} "
                               f"({exc}); is it up? (`kraftd cluster up --dir {layout.root}`)") from None
        limits = [f"for {args.seconds:g} s"] if args.seconds is not None else []
        limits += [f"for {args.steps} steps"] if args.steps is not None else []
        length = " or ".join(limits) or "until stopped"
        out(f"workload on bootstrap.servers={bootstrap}: seed {seed}, one step every {args.interval_ms} ms "
            f"{length}, topics {planner.prefix}* (at most {args.max_topics}); Ctrl-C or SIGTERM stops it")
        workload.began = workload.clock()
        why = await drive(workload, interval_s=args.interval_ms / 1000, seconds=args.seconds, stop=stop,
                          steps=args.steps)
        out(workload.tally.summary(workload.clock() - workload.began, why))
    return 0


def cmd_workload(args: argparse.Namespace, out: Out) -> int:
    def line(text: str) -> None:
        out(text)
        sys.stdout.flush()  # each step as it happens, also into a pipe or up --workload's log file
    return asyncio.run(_main(args, line))


__all__ = ["Brokers", "KINDS", "Stop", "Tally", "Workload", "cmd_workload", "drive", "parse_addresses"]
