"""Which broker the workload asks (engine.cluster.workload.Brokers): in turn, one that failed
lately asked last, and one line naming every broker's reason when none answers. The network is a
stand-in here (a broker answers or raises as Kafka's client would); the clock is the test's."""

from __future__ import annotations

import asyncio

import pytest

from engine.cluster.workload import SUSPECT_S, Brokers
from engine.net.errors import NetError, NetworkError, RequestTimeoutError

A, B, C = ("127.0.0.1", 1), ("127.0.0.1", 2), ("127.0.0.1", 3)


class Network:
    def __init__(self) -> None:
        self.down: dict[tuple[str, int], NetError] = {}
        self.asked: list[tuple[str, int]] = []

    async def send(self, address, request, timeout_ms=None, adapt=False):
        self.asked.append(address)
        if address in self.down:
            raise self.down[address]
        return ("answer from", address)


def test_in_turn_and_a_failed_broker_last_until_it_is_trusted_again():
    now = [0.0]
    net = Network()
    brokers = Brokers(net, [A, B, C], 1000, clock=lambda: now[0])

    def send() -> tuple:
        return asyncio.run(brokers.send("request"))[1]

    assert [send(), send(), send(), send()] == [A, B, C, A]
    net.down[B] = RequestTimeoutError("metadata v12 request to 127.0.0.1:2 timed out after 1000 ms")
    net.asked.clear()
    assert send() == C and net.asked == [B, C]
    net.asked.clear()
    assert [send(), send(), send()] == [A, C, A] and B not in net.asked  # B asked last: never reached
    del net.down[B]
    now[0] += SUSPECT_S
    assert [send(), send()] == [B, C]


def test_none_answering_is_one_error_naming_each():
    net = Network()
    net.down = {A: NetworkError("cannot connect to 127.0.0.1:1: refused"),
                B: RequestTimeoutError("metadata v12 request to 127.0.0.1:2 timed out after 1000 ms")}
    brokers = Brokers(net, [A, B], 1000, clock=lambda: 0.0)
    with pytest.raises(NetError) as caught:
        asyncio.run(brokers.send("request"))
    assert str(caught.value) == ("no broker answered: cannot connect to 127.0.0.1:1: refused; "
                                 "metadata v12 request to 127.0.0.1:2 timed out after 1000 ms")
    assert "\n" not in str(caught.value)
