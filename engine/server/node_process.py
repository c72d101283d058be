"""``kraftd start``: the nodes of one process, as their configs' ``process.roles`` say.

- one config with ``process.roles=controller``: a controller (engine.server.controller_node);
- one with ``broker,controller``: a combined node, the broker on the controller's own metadata
  log and image (Kafka's combined mode: one Raft replica, two roles);
- one or more with ``broker``: simulated brokers. Several in one process share the first one's
  metadata observer and image, so a thousand brokers load the controller with their
  registrations, heartbeats and AlterPartitions without a thousand Raft observers in Python;
  each still has its own log dirs, listener, lifecycle and replicas.

SIGTERM or SIGINT: every broker shuts down under control (a second signal: at once), then the
controller resigns and stops. A broker that shut itself down (never registered, metadata dir
failed) stops the process with exit code 1.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Sequence

from engine.common.errors import ConfigError
from engine.common.server_config import read_server_config
from engine.common.server_gc import tune_gc_for_server
from engine.server.broker_node import BrokerNode
from engine.server.broker_settings import load_broker_settings
from engine.server.controller_node import ControllerNode, load_controller_settings, raft_failed, setup_logging


def build_nodes(configs: Sequence[Path]) -> tuple[ControllerNode | None, list[BrokerNode]]:
    """The controller (if any) and the brokers of ``configs``; ConfigError / StorageError on a bad one."""
    roles = [read_server_config(c).roles for c in configs]
    with_controller = [c for c, r in zip(configs, roles) if "controller" in r]
    if with_controller and len(configs) > 1:
        raise ConfigError("a controller (or combined) node runs alone: give one --config", path=str(with_controller[0]))
    # every config read before any storage is: a config problem is named first
    controller_settings = load_controller_settings(Path(configs[0])) if with_controller else None
    broker_settings = [load_broker_settings(Path(c)) for c, r in zip(configs, roles) if "broker" in r]
    controller = ControllerNode(controller_settings) if controller_settings is not None else None
    brokers: list[BrokerNode] = []
    for settings in broker_settings:
        shared = controller if controller is not None else (brokers[0] if brokers else None)
        brokers.append(BrokerNode(settings, shared=shared))
    ids = [b.settings.node_id for b in brokers]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"two configs have the same node.id ({', '.join(map(str, ids))})", path=str(configs[0]))
    return controller, brokers


async def serve(controller: ControllerNode | None, brokers: list[BrokerNode]) -> int:
    first, second = asyncio.Event(), asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        (second if first.is_set() else first).set()  # a second signal stops at once

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal)
    driver = None
    try:
        if controller is not None:
            await controller.start()
        for broker in brokers:
            await broker.start()
        driver = controller.driver if controller is not None else brokers[0].driver
        waiters = [asyncio.create_task(first.wait()), asyncio.create_task(driver.done.wait()),
                   *(asyncio.create_task(b.stopped.wait()) for b in brokers)]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waiters:
                task.cancel()
        if first.is_set():
            await asyncio.gather(*(b.controlled_shutdown(second) for b in brokers))
    finally:
        # the brokers sharing another's log first, the owner of the log last
        for broker in reversed(brokers):
            await broker.stop()
        if controller is not None:
            await controller.stop()
    if driver is not None and driver.failure is not None:
        raise RuntimeError(raft_failed(driver.failure))
    failed = [b for b in brokers if b.failure is not None]
    for broker in failed:
        broker.log.error("%s shut down: %s", broker.prefix, broker.failure)
    return 1 if failed else 0


def run_start(configs: Sequence[Path]) -> int:
    controller, brokers = build_nodes(configs)
    setup_logging()
    if controller is not None:
        tune_gc_for_server()  # a controller's image grows with every batch: no full collection per batch
    return asyncio.run(serve(controller, brokers))


__all__ = ["build_nodes", "run_start", "serve"]
