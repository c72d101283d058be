"""When a live attachment gives up before it has caught up: the rule, with no clock or socket.

What Kafka does (4.1-4.4, measured with ``kafka-metadata-quorum --bootstrap-controller``): a
bootstrap list none of whose hosts resolves is refused at once ("No resolvable bootstrap urls");
otherwise the admin client retries refused and silent controllers (each connection setup bounded
by socket.connection.setup.timeout.ms, growing to .max.ms) until the call's deadline,
default.api.timeout.ms (60 s), and then says only "Timed out waiting for a node assignment".

What we do, for a tool a person waits on: the attachment gives up as soon as every bootstrap
controller has failed its connection setup (refused, unknown host, timed out after the setup
timeout, closed or silent before answering ApiVersions) while none was ever reached, and says
in one line which failed and why. Once one is reached (it answered ApiVersions), connection
failures are retried as before; then the attach gives up only when nothing moves — no leader
learnt, no records, no snapshot bytes — for ``stall_timeout_ms`` (30 s by default) before it has
caught up. After catching up it never gives up (it retries, and says it is disconnected).

An address that answers ApiVersions without the controller's Raft APIs is not a controller (a
broker's listener, most often: ``bootstrap.servers`` given where ``bootstrap.controllers`` was
meant) and counts as a failed setup, not as reached: Kafka lists Vote, BeginQuorumEpoch,
EndQuorumEpoch and FetchSnapshot on controller listeners only (ApiMessageType's listeners, 4.1-4.4),
while a broker answers our Fetch of ``__cluster_metadata`` with no leader to follow, so the attach
would wait for a stall. Kafka's admin client tells the same mistake from DescribeCluster's
MISMATCHED_ENDPOINT_TYPE ("The request was sent to an endpoint of the wrong type.", KIP-919).
"""

from __future__ import annotations

from typing import Hashable, Mapping, Sequence

from engine.common.api_keys import ApiKeys

Address = tuple[str, int]
STALL_TIMEOUT_MS = 30_000


def name(address: Address) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# Served on a controller listener only (Kafka's ApiMessageType listeners; ours the same)
CONTROLLER_ONLY = (ApiKeys.VOTE, ApiKeys.BEGIN_QUORUM_EPOCH, ApiKeys.END_QUORUM_EPOCH, ApiKeys.FETCH_SNAPSHOT)
NOT_A_CONTROLLER = "not a controller"


def not_a_controller(served: Mapping[int, tuple[int, int]]) -> str | None:
    """Why an endpoint with these ApiVersions ranges is no controller to attach to, in words; None
    for a controller (it serves one of the Raft APIs only controllers serve)."""
    if any(key in served for key in CONTROLLER_ONLY):
        return None
    if ApiKeys.METADATA in served:
        return "a broker, not a controller: use the bootstrap.controllers addresses"
    return f"{NOT_A_CONTROLLER}: its ApiVersions lists none of the Raft APIs"


class StartupWatch:
    """Fed what the attachment sees; ``verdict(now_ms)`` is the one line to give up with, or None."""

    def __init__(self, bootstrap: Sequence[Address], now_ms: int, stall_timeout_ms: int = STALL_TIMEOUT_MS):
        self.bootstrap = [(h, int(p)) for h, p in bootstrap]
        self.stall_timeout_ms = stall_timeout_ms
        self.failures: dict[Address, str] = {}  # the last setup failure of each address, in words
        self.reached = False  # some controller answered ApiVersions
        self.caught_up = False
        self._progress: Hashable = None
        self._progress_ms = now_ms

    def setup_failed(self, address: Address, why: str) -> None:
        self.failures[(address[0], int(address[1]))] = why

    def connected(self, now_ms: int) -> None:
        """A connection was set up: from now on only a stall gives up."""
        if not self.reached:
            self.reached = True
            self._progress_ms = now_ms

    def progress(self, now_ms: int, state: Hashable) -> None:
        """Where the attachment stands (leader, offsets, snapshot bytes): a change restarts the stall clock."""
        if state != self._progress:
            self._progress, self._progress_ms = state, now_ms

    def done(self) -> None:
        self.caught_up = True

    def deadline_ms(self) -> int | None:
        """When ``verdict`` may change with time alone (None: only an event can change it)."""
        if self.caught_up or not self.reached:
            return None
        return self._progress_ms + self.stall_timeout_ms

    def verdict(self, now_ms: int, where: str) -> str | None:
        """The line to give up with (``where``: what the attachment is doing, for a stall), or None."""
        if self.caught_up:
            return None
        if not self.reached:
            if self.bootstrap and all(a in self.failures for a in self.bootstrap):
                wrong = any(NOT_A_CONTROLLER in self.failures[a] for a in self.bootstrap)
                head = ("no controller among the bootstrap addresses" if wrong
                        else "cannot reach any bootstrap controller")
                return f"{head}: " + ", ".join(
                    f"{name(a)} ({self.failures[a]})" for a in self.bootstrap)
            return None
        if now_ms - self._progress_ms >= self.stall_timeout_ms:
            return f"not caught up: nothing new for {self.stall_timeout_ms / 1000:g} s ({where})"
        return None


__all__ = ["CONTROLLER_ONLY", "STALL_TIMEOUT_MS", "StartupWatch", "not_a_controller"]
