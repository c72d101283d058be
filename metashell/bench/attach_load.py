"""The load of ``metashell bench attach``: committed config records at a fixed rate, in a process of its own.

It runs apart from the attachment it measures (``python -m metashell.bench.attach_load``):
in one process the attachment's thread, the tool's replay and this client would share one
interpreter lock, and the client's own work would show up as the attachment's latency.

What it writes: ``records_per_request`` topics (``bench-attach-0`` ...) are created once (one
simulated broker registered and kept alive, as Kafka's controller places a topic only on a live
broker); then request number ``i`` is an IncrementalAlterConfigs setting ``retention.ms`` of
every one of those topics to ``VALUE_BASE + i`` — one ConfigRecord per topic, all committed
in one batch (the controller writes a request's records atomically). A value is new each time,
so every request writes records (the controller writes nothing for a value that does not
change). Requests go out on a fixed schedule, ``records_per_request / records_per_s`` apart,
without waiting for earlier answers (an open loop: a slow answer does not slow the rate).

The controller answers an IncrementalAlterConfigs once its records are committed (Kafka's
QuorumController completes a write when the high watermark passes it; ours does the same), so
the answer's arrival is the commit as a client sees it. Each request's send and answer times
are ``time.monotonic()`` (CLOCK_MONOTONIC: one clock for every process on the machine) and
go to standard output, one JSON line per request after a ``ready`` line, then a ``done`` line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any, TextIO

from engine.common.config_resource import ConfigResourceType
from engine.records.kio_codec import ErrorCode, i8, protocol_module
from engine.bench.controller_load import ControllerLoad, LoadError

_IAC = protocol_module("incremental_alter_configs", 1, "request")
TOPIC_PREFIX = "bench-attach-"
CONFIG_NAME = "retention.ms"
VALUE_BASE = 1_000_000_000  # retention.ms of request 0: a valid value far from any default
BROKER_ID = 1000
HEARTBEAT_INTERVAL_MS = 2000
REQUEST_DEADLINE_S = 30.0  # a request retried after NOT_CONTROLLER is given up after this long


def parse_controllers(text: str) -> dict[int, tuple[str, int]]:
    """``ID@HOST:PORT,...`` (how the bench passes a quorum's voters to its processes)."""
    addresses = {}
    for item in text.split(","):
        node, _, address = item.partition("@")
        host, _, port = address.rpartition(":")
        addresses[int(node)] = (host, int(port))
    return addresses


def topic_names(count: int) -> list[str]:
    return [f"{TOPIC_PREFIX}{n}" for n in range(count)]


def request_of_value(value: str) -> int | None:
    """The request number a retention.ms value was set by (None: not one of ours)."""
    return int(value) - VALUE_BASE if value.isdigit() and int(value) >= VALUE_BASE else None


def alter_request(number: int, topics: list[str]) -> Any:
    value = str(VALUE_BASE + number)
    return _IAC.IncrementalAlterConfigsRequest(resources=tuple(_IAC.AlterConfigsResource(
        resource_type=i8(ConfigResourceType.TOPIC.value), resource_name=name, configs=(_IAC.AlterableConfig(
            name=CONFIG_NAME, config_operation=i8(0), value=value),)) for name in topics), validate_only=False)


async def drive(addresses: dict[int, tuple[str, int]], cluster_id: str, *, records_per_s: float,
                records_per_request: int, seconds: float, out: TextIO) -> None:
    topics = topic_names(records_per_request)
    load = ControllerLoad(addresses, cluster_id, connections=4, request_timeout_ms=30_000)
    stop = asyncio.Event()
    keeper = None
    try:
        await load.find_active()
        await load.start_brokers([BROKER_ID])
        keeper = asyncio.create_task(load.keep_alive(HEARTBEAT_INTERVAL_MS, stop=stop))
        await load.create_topics([(name, 1, 1) for name in topics])
        print(json.dumps({"ready": time.monotonic(), "topics": topics}), file=out, flush=True)
        interval_s = records_per_request / records_per_s
        count = max(1, int(seconds / interval_s))
        started = time.monotonic()
        answers: list[dict] = []

        async def one(number: int) -> None:
            sent = time.monotonic()
            deadline = sent + REQUEST_DEADLINE_S
            while True:
                try:
                    answer = await load.call(alter_request(number, topics))
                    errors = {ErrorCode(r.error_code) for r in answer.responses if r.error_code != ErrorCode.none}
                except LoadError as err:
                    error = str(err)
                    break
                # a NOT_CONTROLLER per resource (the leadership moved): ask the new active
                # controller, as Kafka's admin client retries it
                if errors == {ErrorCode.not_controller} and time.monotonic() < deadline:
                    load.active = None
                    await asyncio.sleep(0.05)
                    continue
                error = ",".join(sorted(e.name for e in errors)) or None
                break
            answers.append({"n": number, "sent": sent, "answered": time.monotonic(), "error": error})

        tasks = []
        for number in range(count):
            wait = started + number * interval_s - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            tasks.append(asyncio.create_task(one(number)))
        await asyncio.gather(*tasks)
        for line in sorted(answers, key=lambda a: a["n"]):
            print(json.dumps(line), file=out)
        print(json.dumps({"done": time.monotonic(), "started": started, "requests": count}), file=out, flush=True)
    finally:
        stop.set()
        if keeper is not None:
            await asyncio.gather(keeper, return_exceptions=True)
        await load.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m metashell.bench.attach_load")
    parser.add_argument("--controllers", required=True, help="ID@HOST:PORT,... (every voter)")
    parser.add_argument("--cluster-id", required=True)
    parser.add_argument("--records-per-s", type=float, required=True)
    parser.add_argument("--records-per-request", type=int, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    args = parser.parse_args(argv)
    try:
        asyncio.run(drive(parse_controllers(args.controllers), args.cluster_id, records_per_s=args.records_per_s,
                          records_per_request=args.records_per_request, seconds=args.seconds, out=sys.stdout))
    except LoadError as err:
        print(json.dumps({"failed": str(err)}), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
