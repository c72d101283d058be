"""TCP ports on the loopback interface for local clusters (benchmarks, tests).

A process that must find its port in a config file cannot be handed a bound socket, so its
port is chosen ahead and may be taken before it binds. Two things make that rare and harmless:

* candidates come from below the kernel's ephemeral range (``ip_local_port_range``), where
  no outgoing connection and no bind to port 0 ever lands: only another process picking
  the same port on purpose can collide;
* a caller whose process then fails with "address already in use" (``is_address_in_use``)
  starts again on new ports (``engine.cluster.processes`` does).

Servers inside one process listen on port 0 and report the port they got instead.
"""

from __future__ import annotations

import errno
import os
import random
import socket
from pathlib import Path

EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_PORT = 10_000  # below: well-known and registered services
FALLBACK_RANGE = (LOWEST_PORT, 32_767)  # under Linux's default ephemeral range (32768-60999)
ADDRESS_IN_USE = os.strerror(errno.EADDRINUSE)  # "Address already in use"


def _candidate_range() -> tuple[int, int]:
    """Ports below the ephemeral range, or above it when it starts too low to leave room."""
    try:
        low, high = (int(part) for part in EPHEMERAL_RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        return FALLBACK_RANGE
    if low - LOWEST_PORT >= 1000:
        return LOWEST_PORT, low - 1
    if 65_535 - high >= 1000:
        return high + 1, 65_535
    return FALLBACK_RANGE


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def pick_ports(count: int, rng: random.Random | None = None) -> list[int]:
    """``count`` distinct ports, outside the ephemeral range, that were free a moment ago.

    Still a choice made ahead: the caller retries on new ports when a bind fails with
    ``ADDRESS_IN_USE``."""
    rng = rng or random.Random()
    low, high = _candidate_range()
    ports: list[int] = []
    if count <= 0:
        return ports
    for _ in range(100 * count):
        port = rng.randint(low, high)
        if port not in ports and _bindable(port):
            ports.append(port)
            if len(ports) == count:
                return ports
    raise OSError(errno.EADDRINUSE, f"no {count} free ports found in {low}-{high}")


def is_address_in_use(text: str) -> bool:
    """Whether an error text (a node's log, an exception) says a listener's port was taken."""
    return ADDRESS_IN_USE.lower() in text.lower()  # asyncio lowers the case of the system's text


__all__ = ["ADDRESS_IN_USE", "is_address_in_use", "pick_ports"]
