"""A broker's requests to the active controller (Kafka's NodeToControllerChannelManager).

In KRaft the active controller is the Raft leader, and its address is the leader's endpoint on
the controller listener, from the voter set the observer keeps (``leader()`` reads both off the
broker's Raft client). A request waits for a leader to be known, goes to it, and on a lost
connection or timeout is sent again to whoever leads then, until the caller's deadline. What the
controller answers (NOT_CONTROLLER included) is the caller's to read: the lifecycle backs off,
forwarding re-sends the Envelope. Only the edge lives here: which request to send is decided by
the pure cores.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

from engine.net.errors import NetError, NetworkError, RequestTimeoutError
from engine.net.kafka_client import KafkaClient

Address = tuple[str, int]
LeaderLookup = Callable[[], "tuple[int, Address | None]"]  # (leader id or -1, its controller endpoint)

RETRY_BACKOFF_MS = 100  # Kafka's retry.backoff.ms default, between attempts at a vanished controller


class NoControllerError(NetworkError):
    """No active controller answered before the deadline."""


class ControllerChannel:
    """``await send(request, timeout_ms)``: the active controller's response."""

    def __init__(self, leader: LeaderLookup, client: KafkaClient, *, retry_backoff_ms: int = RETRY_BACKOFF_MS):
        self._leader = leader
        self.client = client
        self.retry_backoff_ms = retry_backoff_ms
        self._leader_changed = asyncio.Event()
        self.sent = 0
        self.failures = 0

    def leader_changed(self) -> None:
        """Wake the requests waiting for a leader (from the Raft listener)."""
        self._leader_changed.set()

    async def send(self, request: Any, timeout_ms: int) -> Any:
        """The active controller's answer to ``request``; NoControllerError when none answered
        within ``timeout_ms`` (the request may have reached one: the caller's retry is idempotent
        as Kafka's are, a registration with the same incarnation, a heartbeat)."""
        deadline = time.monotonic() + timeout_ms / 1000
        last_problem = "no controller leader is known"
        while True:
            remaining_ms = int((deadline - time.monotonic()) * 1000)
            if remaining_ms <= 0:
                self.failures += 1
                raise NoControllerError(f"no active controller answered within {timeout_ms} ms ({last_problem})")
            leader_id, address = self._leader()
            if address is None:
                last_problem = "no controller leader is known"
                self._leader_changed.clear()
                try:
                    async with asyncio.timeout(min(remaining_ms, self.retry_backoff_ms * 5) / 1000):
                        await self._leader_changed.wait()
                except TimeoutError:
                    pass
                continue
            try:
                self.sent += 1
                return await self.client.send(address, request, timeout_ms=remaining_ms, adapt=True)
            except RequestTimeoutError as err:
                last_problem = f"controller {leader_id}: {err}"
            except NetError as err:
                last_problem = f"controller {leader_id}: {err}"
                await asyncio.sleep(min(self.retry_backoff_ms, max(remaining_ms, 0)) / 1000)

    async def close(self) -> None:
        await self.client.close()


__all__ = ["ControllerChannel", "NoControllerError", "RETRY_BACKOFF_MS"]
