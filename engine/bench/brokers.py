"""Simulated brokers whose heartbeats are timed: ``python -m engine.bench.brokers -c A -c B ... --latency-file F``.

The very nodes of ``kraftd start --config A --config B ...`` (engine.server.node_process
``build_nodes`` and ``serve``: same configs, storage, logs, signals, exit codes), with one
addition: every BrokerHeartbeat a broker's lifecycle sends through its ControllerChannel is
timed there, from the send to the answer (the channel's own retries to a new leader included,
as the broker lives them), and appended to F every second as a line
``WALL_TIME_S BROKER_ID LATENCY_MS OUTCOME`` (OUTCOME: the answer's error code name, or
``failed`` when no controller answered). ``kraftd bench controller --sim-brokers N`` starts its
broker groups with this; ``kraftd start`` carries no benchmark code, as bench_node keeps the
load generator out of production controllers.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import time
from pathlib import Path
from typing import Any, Sequence

from engine.common.command_line import OneLineParser, run_guarded
from engine.server.broker_node import BrokerNode
from engine.server.controller_node import setup_logging
from engine.server.node_process import build_nodes, serve

FLUSH_INTERVAL_S = 1.0
HEARTBEAT_REQUEST = "BrokerHeartbeatRequest"


class HeartbeatTimes:
    """Heartbeat latencies of the brokers of one process, appended to a file once a second."""

    def __init__(self, path: Path):
        self.path = path
        self.lines: list[str] = []

    def record(self, broker_id: int, latency_ms: float, outcome: str) -> None:
        self.lines.append(f"{time.time():.3f} {broker_id} {latency_ms:.3f} {outcome}\n")

    def flush(self) -> None:
        lines, self.lines = self.lines, []
        if not lines:
            return
        try:
            with open(self.path, "a") as file:
                file.writelines(lines)
        except OSError as err:
            logging.getLogger("kraftd.bench").warning("cannot write heartbeat times to %s: %s", self.path,
                                                      err.strerror or err)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_INTERVAL_S)
            self.flush()

    def time_heartbeats(self, broker: BrokerNode) -> None:
        """Time ``broker``'s heartbeats at its controller channel (made in ``start``: wrapped
        right after it, before the lifecycle task sends its first request)."""
        start = broker.start

        async def start_then_wrap() -> None:
            await start()
            channel = broker.channel
            send = channel.send

            async def timed_send(request: Any, timeout_ms: int) -> Any:
                if type(request).__name__ != HEARTBEAT_REQUEST:
                    return await send(request, timeout_ms)
                began = time.perf_counter()
                try:
                    response = await send(request, timeout_ms)
                except Exception:
                    self.record(broker.settings.node_id, (time.perf_counter() - began) * 1000, "failed")
                    raise
                code = getattr(response, "error_code", None)
                self.record(broker.settings.node_id, (time.perf_counter() - began) * 1000,
                            getattr(code, "name", str(code)))
                return response

            channel.send = timed_send

        broker.start = start_then_wrap


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="bench_brokers", description="Simulated brokers with timed heartbeats.")
    parser.add_argument("--config", "-c", action="append", required=True, help="a broker's .properties file")
    parser.add_argument("--latency-file", required=True, help="append the heartbeat latencies here")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    def work() -> int:
        args = build_parser().parse_args(argv)
        controller, brokers = build_nodes([Path(c) for c in args.config])
        times = HeartbeatTimes(Path(args.latency_file))
        for broker in brokers:
            times.time_heartbeats(broker)
        setup_logging()

        async def run() -> int:
            flusher = asyncio.create_task(times.run())
            try:
                return await serve(controller, brokers)
            finally:
                flusher.cancel()
                times.flush()

        return asyncio.run(run())

    return run_guarded("bench_brokers", work)


if __name__ == "__main__":
    raise SystemExit(main())
