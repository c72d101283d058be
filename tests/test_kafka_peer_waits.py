"""kafka_peer.nodes.wait_until: a wait that runs out says what the check did last.

Every Kafka test waits through ``wait_until``; its check raising is "not yet" (a node not
answering yet), so a check that can never hold used to time out saying only "not within 120 s".
The clock here is a fake one that the wait's own sleeps move on: no real time passes.
"""

from __future__ import annotations

import pytest

from kafka_peer import nodes
from kafka_peer.nodes import NodeFailed, wait_until


class FakeClock:
    """Stands in for the ``time`` module inside kafka_peer.nodes: sleeping moves it on."""

    def __init__(self) -> None:
        self.now_s = 1000.0

    def monotonic(self) -> float:
        return self.now_s

    def sleep(self, seconds: float) -> None:
        self.now_s += seconds


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(nodes, "time", fake)
    return fake


def refuse() -> None:
    raise LookupError("topic 'missing' is not in the image")


def test_a_check_that_keeps_raising_fails_with_its_last_exception_and_where(clock) -> None:
    with pytest.raises(NodeFailed) as failed:
        wait_until(refuse, "the topic created", [], timeout_s=2.0)
    message = str(failed.value)
    assert message.startswith("the topic created: not within 2.0 s")
    assert "LookupError: topic 'missing' is not in the image" in message
    assert f"raised at {__file__}:{refuse.__code__.co_firstlineno + 1} in refuse" in message


def test_the_exception_shown_is_the_last_one(clock) -> None:
    attempts: list[int] = []

    def check() -> None:
        attempts.append(len(attempts))
        raise ValueError(f"attempt {attempts[-1]}")

    with pytest.raises(NodeFailed) as failed:
        wait_until(check, "never", [], timeout_s=2.0)
    assert len(attempts) > 2
    assert f"ValueError: attempt {attempts[-1]} " in str(failed.value) and "attempt 0 " not in str(failed.value)


def test_a_false_value_after_an_exception_shows_both(clock) -> None:
    answers = iter([KeyError("broker 5"), KeyError("broker 6")])

    def check():
        error = next(answers, None)
        if error is not None:
            raise error
        return ()

    with pytest.raises(NodeFailed) as failed:
        wait_until(check, "the ISR shrunk", [], timeout_s=2.0)
    assert "the check gave () last, and before that raised KeyError: 'broker 6'" in str(failed.value)


def test_a_check_that_only_gives_false_values_shows_the_last(clock) -> None:
    with pytest.raises(NodeFailed) as failed:
        wait_until(lambda: {"leader": -1}.get("isr", []), "an ISR", [], timeout_s=2.0)
    assert "the check gave []" in str(failed.value) and "raised" not in str(failed.value)


def test_a_check_that_holds_after_failing_gives_its_value(clock) -> None:
    answers = iter([ConnectionRefusedError("not listening yet"), None, 7])

    def check():
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert wait_until(check, "an answer", [], timeout_s=60.0) == 7
