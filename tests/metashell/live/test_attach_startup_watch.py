"""When an attachment gives up before catching up (metashell.live.startup), on a clock the test
moves: every bootstrap controller failed its setup and none was reached (at once, each named with
why), or nothing moved for the stall timeout once one was reached; never after catching up."""

from __future__ import annotations

from metashell.live.startup import StartupWatch

A, B, C = ("127.0.0.1", 23999), ("nosuchhost.invalid", 9093), ("::1", 9093)


def test_it_gives_up_once_every_bootstrap_controller_failed_naming_each_in_order() -> None:
    watch = StartupWatch([A, B, C], now_ms=0)
    watch.setup_failed(B, "unknown host")
    watch.setup_failed(A, "connection refused")
    assert watch.verdict(1, "connecting") is None  # C not tried yet
    assert watch.deadline_ms() is None  # only an event can change that
    watch.setup_failed(C, "timed out after 9512 ms")
    watch.setup_failed(A, "connection refused")  # a retry: still one entry, the last reason
    assert watch.verdict(2, "connecting") == (
        "cannot reach any bootstrap controller: 127.0.0.1:23999 (connection refused), "
        "nosuchhost.invalid:9093 (unknown host), [::1]:9093 (timed out after 9512 ms)")


def test_once_one_was_reached_failures_are_retried_and_only_a_stall_gives_up() -> None:
    watch = StartupWatch([A, B], now_ms=1_000, stall_timeout_ms=30_000)
    watch.setup_failed(A, "connection refused")
    watch.connected(now_ms=2_000)
    watch.setup_failed(B, "unknown host")
    assert watch.verdict(2_001, "x") is None and watch.deadline_ms() == 32_000
    watch.progress(20_000, (1, 5, -1, 10))  # a leader learnt
    assert watch.deadline_ms() == 50_000
    watch.progress(49_000, (1, 5, -1, 10))  # the same state again is not progress
    assert watch.verdict(49_999, "x") is None
    assert watch.verdict(50_000, "catching up with leader 1 (epoch 5)") == (
        "not caught up: nothing new for 30 s (catching up with leader 1 (epoch 5))")


def test_after_catching_up_it_never_gives_up() -> None:
    watch = StartupWatch([A], now_ms=0, stall_timeout_ms=10)
    watch.connected(0)
    watch.done()
    watch.setup_failed(A, "connection refused")
    assert watch.verdict(10_000_000, "x") is None and watch.deadline_ms() is None
