"""In-process controller nodes on 127.0.0.1 for the tests: configs, formatting, a start that is
retried on new ports when one is taken between the choice and the bind, and polling with a
deadline (a safety net against hangs, never a performance claim)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, Callable

from engine.common.errors import ConfigError
from engine.common.kafka_uuid import random_kafka_uuid, uuid_to_kafka
from engine.net.ports import is_address_in_use, pick_ports
from engine.server.controller_node import ControllerNode, load_controller_settings
from engine.admin.storage_format import format_storage

CLUSTER_ID = uuid_to_kafka(random_kafka_uuid())
TIMEOUTS = {"controller.quorum.election.timeout.ms": 300, "controller.quorum.fetch.timeout.ms": 600,
            "metadata.max.idle.interval.ms": 100}


def write_config(path: Path, node_id: int, port: int, log_dir: Path, bootstrap: str, **extra: Any) -> Path:
    lines = ["process.roles=controller", f"node.id={node_id}", f"listeners=CONTROLLER://127.0.0.1:{port}",
             "controller.listener.names=CONTROLLER", f"controller.quorum.bootstrap.servers={bootstrap}",
             f"metadata.log.dir={log_dir}", *(f"{k}={v}" for k, v in extra.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


PORT_ATTEMPTS = 5


def make_quorum(root: Path, ports: list[int], **extra: Any) -> list[Path]:
    """Configs of ``len(ports)`` controllers under ``root``, formatted as one dynamic quorum."""
    root.mkdir(parents=True)
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
    dirs = [random_kafka_uuid() for _ in ports]
    initial = ",".join(f"{i + 1}@127.0.0.1:{p}:{uuid_to_kafka(d)}" for i, (p, d) in enumerate(zip(ports, dirs)))
    configs = []
    for i, port in enumerate(ports):
        config = write_config(root / f"c{i + 1}.properties", i + 1, port, root / f"meta{i + 1}", bootstrap,
                              **{**TIMEOUTS, **extra})
        if len(ports) == 1:
            format_storage(config, CLUSTER_ID, standalone=True, out=lambda line: None)
        else:
            format_storage(config, CLUSTER_ID, initial_controllers=initial, out=lambda line: None)
        configs.append(config)
    return configs


async def start_quorum(tmp_path: Path, count: int = 3, prepare: Callable[[ControllerNode], None] = lambda n: None,
                       **extra: Any) -> tuple[list[Path], list[ControllerNode]]:
    """Format and start ``count`` nodes; on a port taken between the choice and the bind, all of
    it again on new ports in a fresh directory. ``prepare`` runs on each node before its start."""
    for attempt in range(1, PORT_ATTEMPTS + 1):
        configs = make_quorum(tmp_path / f"attempt{attempt}", pick_ports(count), **extra)
        nodes = [ControllerNode(load_controller_settings(c)) for c in configs]
        try:
            for node in nodes:
                prepare(node)
                await node.start()
            return configs, nodes
        except ConfigError as err:
            for node in nodes:
                await node.stop()
            if attempt == PORT_ATTEMPTS or not is_address_in_use(str(err)):
                raise
    raise AssertionError("unreachable")


async def wait_until(predicate: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await asyncio.sleep(0.02)
