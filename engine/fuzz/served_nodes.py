"""A controller and a simulated broker served in this process, for the served fuzz targets.

``ServedNodes`` formats a one-controller quorum and one broker under a temporary directory and
starts them on 127.0.0.1 in an event loop that belongs to it and runs only while a case runs
(``run``): the fuzzer's own thread drives it, so coverage tracing and the per-input alarm see
the listeners' code. Between cases the nodes are paused, never racing the fuzzer.

What a case may not do to a node (``NodeBroken``, a finding):

- crash it: the Raft core stopped (``driver.failure``), the broker shut itself down, the quorum
  following a leader that is no voter (a one-voter quorum has one possible leader), or a line
  logged that only a bug logs (``CRASH_SIGNS``: a connection that failed outside our checks, a
  handler that raised, a response we could not encode, a caught bug answered as
  UNKNOWN_SERVER_ERROR, an exception asyncio saw no one retrieve);
- hang it or keep what it took: the fuzz connection not released within ``RELEASE_WAIT_S`` of
  our closing it (KafkaServer.connection_count back to its baseline);
- stop serving: a normal request afterwards, on a new connection (ApiVersions, then DescribeQuorum
  on the controller or Metadata on the broker), not answered within ``HEALTH_WAIT_S``.

Every wait is a deadline on a socket read or on polling a count: a safety net, not a claim of
speed. A node found broken is stopped and the next case starts fresh ones.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import tempfile
import tracemalloc
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable

from engine.common.errors import ConfigError

CLUSTER_ID = "ZnV6ei1zZXJ2ZWQtbm9kZQ"  # fixed, so that seeds can carry a Raft request this quorum reads
CONTROLLER_ID, BROKER_ID = 1, 2
START_WAIT_S = 60.0
HEALTH_WAIT_S = 10.0
RELEASE_WAIT_S = 10.0
PORT_ATTEMPTS = 5
_FAST = {"controller.quorum.election.timeout.ms": 300, "controller.quorum.fetch.timeout.ms": 600,
         "metadata.max.idle.interval.ms": 200, "broker.heartbeat.interval.ms": 200,
         "broker.session.timeout.ms": 9000}

# Lines only a bug logs (engine.net.kafka_server, engine.broker.broker_apis). A handler that
# raised NoResponse is Produce acks=0 refused the Kafka way (the connection closed): no bug.
CRASH_SIGNS = (
    re.compile(r"^connection on \S+ failed: "),
    re.compile(r"handler of .* failed: (?!NoResponse:)"),
    re.compile(r"cannot encode the response to "),
    re.compile(r"returned \w+ v\S+, not a "),
    re.compile(r"^broker \d+: .* v\d+ from .* failed: "),
    re.compile(r"^asyncio: "),
)


class NodeBroken(Exception):
    """A case broke an invariant of the served node (see the module docstring). Its ``signature``
    tells findings apart (the fuzzer keeps one input per signature): the message without its
    numbers, addresses and names, so the same defect met twice is one finding."""

    def __init__(self, message: str, input: bytes | None = None):
        super().__init__(message)
        self.signature = "NodeBroken|" + _shape(message)
        self.input = input  # the input to keep, when not the one that was running (see ``check_between``)


def _shape(message: str) -> str:
    text = re.sub(r"from \S+ on \S+", "from ? on ?", message)
    text = re.sub(r"\(correlation id -?\d+\)|'[^']*'|\d+", "#", text)
    return text[:160]


class _LogWatch(logging.Handler):
    """The lines logged while a case runs, kept when they look like a crash."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.crashes: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = " ".join(record.getMessage().split())
        if record.levelno >= logging.ERROR and record.name.startswith(("engine", "kraftd")):
            self.crashes.append(text)
        elif any(sign.search(text) for sign in CRASH_SIGNS):
            self.crashes.append(text)


@dataclass
class NodeStats:
    """What a run of cases did to the nodes, for the fuzzer's report."""

    cases: int = 0
    restarts: int = 0
    rss_start_kb: int = 0
    rss_now_kb: int = 0
    baseline_tasks: int = 0
    tasks_now: int = 0
    traced_start_kb: int | None = None  # tracemalloc's count once started (PYTHONTRACEMALLOC=1)
    traced_now_kb: int | None = None


def rss_kb() -> int:
    """This process's resident set now (Linux), else its peak."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


class ServedNodes:
    """One controller and one broker, started on first use; ``close()`` stops them."""

    def __init__(self, root: Path | None = None) -> None:
        self._own_root = root is None  # a temporary directory of ours: removed by close()
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="kraftd-fuzz-served-"))
        self.loop = asyncio.new_event_loop()
        self.loop.set_exception_handler(self._loop_exception)
        self.watch = _LogWatch()
        self.controller: Any = None
        self.broker: Any = None
        self.stats = NodeStats(rss_start_kb=rss_kb())
        self.last_input: bytes | None = None  # the case that ran last (a later failure is kept as its)
        self._generation = 0

    # -- the loop --------------------------------------------------------------------------

    def run(self, work: Callable[[], Awaitable[Any]], budget_s: float) -> Any:
        """``work()`` on the nodes' loop, within ``budget_s`` (TimeoutError past it)."""
        async def bounded() -> Any:
            async with asyncio.timeout(budget_s):
                return await work()

        return self.loop.run_until_complete(bounded())

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        err = context.get("exception")
        what = f"{type(err).__name__}: {err}" if err is not None else context.get("message", "?")
        self.watch.crashes.append("asyncio: " + " ".join(f"{context.get('message', '')}: {what}".split()))

    # -- start and stop --------------------------------------------------------------------

    def ensure_started(self) -> None:
        if self.controller is None:
            logging.getLogger().addHandler(self.watch)
            try:
                self.run(self._start, START_WAIT_S)
            except BaseException:
                self.run(self._stop_nodes, START_WAIT_S)  # half started: the next case starts again
                raise
            self.stats.baseline_tasks = len(asyncio.all_tasks(self.loop))
            if self.stats.traced_start_kb is None and tracemalloc.is_tracing():
                self.stats.traced_start_kb = tracemalloc.get_traced_memory()[0] // 1024

    async def _start(self) -> None:
        from engine.net.ports import is_address_in_use

        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                return await self._start_once()
            except ConfigError as err:
                await self._stop_nodes()
                if attempt == PORT_ATTEMPTS or not is_address_in_use(str(err)):
                    raise

    async def _start_once(self) -> None:
        from engine.admin.storage_format import format_storage
        from engine.broker.broker_lifecycle import BrokerState
        from engine.net.ports import pick_ports
        from engine.server.broker_node import BrokerNode
        from engine.server.broker_settings import load_broker_settings
        from engine.server.controller_node import ControllerNode, load_controller_settings

        self._generation += 1
        home = self.root / f"nodes{self._generation}"
        home.mkdir(parents=True)
        (port,) = pick_ports(1)
        bootstrap = f"127.0.0.1:{port}"
        common = {"controller.listener.names": "CONTROLLER", "controller.quorum.bootstrap.servers": bootstrap,
                  **_FAST}
        controller_config = _write(home / "controller.properties", {
            "process.roles": "controller", "node.id": CONTROLLER_ID, "listeners": f"CONTROLLER://{bootstrap}",
            "metadata.log.dir": home / "controller", **common})
        broker_config = _write(home / "broker.properties", {
            "process.roles": "broker", "node.id": BROKER_ID, "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": home / "broker", **common})
        format_storage(controller_config, CLUSTER_ID, standalone=True, out=_quiet)
        format_storage(broker_config, CLUSTER_ID, out=_quiet)
        self.controller = ControllerNode(load_controller_settings(controller_config))
        await self.controller.start()
        self.broker = BrokerNode(load_broker_settings(broker_config))
        await self.broker.start()
        await _until(lambda: self.broker.state == BrokerState.RUNNING, START_WAIT_S, "the fuzzed broker running")

    def restart(self) -> None:
        """After a broken case: fresh nodes for the next one."""
        self.stats.restarts += 1
        self.run(self._stop_nodes, START_WAIT_S)

    async def _stop_nodes(self) -> None:
        if self.broker is not None:
            await self.broker.stop()
        if self.controller is not None:
            await self.controller.stop()
        self.broker = self.controller = None
        self.watch.crashes.clear()  # what stopping logs (requests cut short) is no case's doing

    def close(self) -> None:
        try:
            if not self.loop.is_closed():
                self.run(self._stop_nodes, START_WAIT_S)
                self.loop.close()
        finally:
            logging.getLogger().removeHandler(self.watch)
            if self._own_root:
                shutil.rmtree(self.root, ignore_errors=True)

    # -- the invariants --------------------------------------------------------------------

    def address(self, listener: str) -> tuple[str, int]:
        server = self._server(listener)
        assert server.address is not None
        return server.address

    def _server(self, listener: str) -> Any:
        return self.controller.controller_apis.server if listener == "controller" else self.broker.servers[0]

    def check(self, listener: str, before: int) -> None:
        """After a case: nothing crashed, the fuzz connection released, the node still serving."""
        self.stats.cases += 1
        self.run(lambda: self._released(listener, before), RELEASE_WAIT_S + 1)
        self._crashed()
        try:
            self.run(lambda: self._serves(listener), HEALTH_WAIT_S)
        except (OSError, asyncio.IncompleteReadError, TimeoutError) as err:
            raise NodeBroken(f"the {listener} no longer serves a normal request: {type(err).__name__}: {err}") from None
        self._crashed()
        self.stats.rss_now_kb = rss_kb()
        self.stats.tasks_now = len(asyncio.all_tasks(self.loop))
        if tracemalloc.is_tracing():
            self.stats.traced_now_kb = tracemalloc.get_traced_memory()[0] // 1024

    def check_between(self, last_input: bytes | None) -> None:
        """Before a case: whether the node broke since the last check (a timer that fired after
        the last case, e.g. an election in an epoch a forged request set); the last input is kept."""
        if self.controller is None:
            return
        try:
            self._crashed()
        except NodeBroken as broken:
            raise NodeBroken(f"{broken} (after the case, before the next)", last_input) from None

    def _crashed(self) -> None:
        crashes, self.watch.crashes = self.watch.crashes, []
        if self.controller.driver.failure is not None:
            crashes.append(f"the controller's Raft core failed: {self.controller.driver.failure!r}")
        for name, node in (("controller", self.controller), ("broker", self.broker)):
            leader = node.driver.leader_id
            if leader not in (-1, CONTROLLER_ID):
                crashes.append(f"the {name} follows node {leader} as the quorum's leader, which is no voter")
        if self.broker.failure is not None or self.broker.stopped.is_set():
            crashes.append(f"the broker shut itself down: {self.broker.failure}")
        if crashes:
            raise NodeBroken(crashes[0][:400])

    async def _released(self, listener: str, before: int) -> None:
        server = self._server(listener)
        deadline = time.monotonic() + RELEASE_WAIT_S
        while server.connection_count > before:
            if time.monotonic() >= deadline:
                raise NodeBroken(f"the {listener} kept the fuzz connection {RELEASE_WAIT_S} s after it closed "
                                 f"({server.connection_count} connections, {before} before)")
            await asyncio.sleep(0.005)

    def connections(self, listener: str) -> int:
        return self._server(listener).connection_count

    async def _serves(self, listener: str) -> None:
        from engine.fuzz.served_frames import health_requests
        from engine.net.kafka_protocol import decode_response_frame, encode_request

        reader, writer = await asyncio.open_connection(*self.address(listener))
        try:
            for correlation_id, request in enumerate(health_requests(listener), start=1):
                writer.write(encode_request(request, correlation_id, "kraftd-fuzz-health"))
                size = int.from_bytes(await reader.readexactly(4), "big")
                got, _ = decode_response_frame(await reader.readexactly(size), type(request).__api_key__,
                                               type(request).__version__)
                if got != correlation_id:
                    raise NodeBroken(f"the {listener} answered correlation id {got}, not {correlation_id}")
        finally:
            writer.close()


def _write(path: Path, props: dict[str, Any]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def _quiet(line: str) -> None:
    pass


async def _until(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() >= deadline:
            raise NodeBroken(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(0.02)


__all__ = ["CLUSTER_ID", "NodeBroken", "NodeStats", "ServedNodes", "rss_kb"]
