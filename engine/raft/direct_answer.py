"""The token of a Fetch the controller listener hands straight to the Raft core (RaftDriver's
answer_directly): the core's answer goes to the connection's ``reply`` in the step the core
makes it, converted to the version the fetcher asked in, with no task in between."""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from engine.common.api_keys import ApiKeys
from engine.net.kafka_protocol import response_class
from engine.net.message_versions import convert_message


class DirectAnswer:
    """The token of a Fetch taken directly: the core's answer goes to ``reply`` at once, in the
    request's version; a safety net answers a Fetch the core never answered (it always does:
    parked at most max wait, all of them when the leadership goes)."""

    __slots__ = ("reply", "version", "timer", "done")

    def __init__(self, reply: Callable[[Any], None], version: int):
        self.reply, self.version = reply, version
        self.timer: asyncio.TimerHandle | None = None
        self.done = False

    def answer(self, response: Any) -> None:
        if self.done:
            return
        self.done = True
        if self.timer is not None:
            self.timer.cancel()
        if type(response).__version__ != self.version:
            response = convert_message(response, response_class(ApiKeys.FETCH, self.version))
        self.reply(response)

    def expire(self) -> None:
        if not self.done:
            self.done = True
            self.reply(TimeoutError("the Raft core never answered fetch"))


__all__ = ["DirectAnswer"]
