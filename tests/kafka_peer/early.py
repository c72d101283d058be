"""Expensive Kafka work begun before the tests that need it, on threads of its own.

A ``Lane`` is one daemon thread running its jobs in the order given. The fixture that needs a
job's value ``take``s it: it waits for a job the lane has begun, and runs a job the lane has not
begun yet itself, at once (so a test never waits behind work it does not need).

Why a thread of our own and not a ThreadPoolExecutor: a lane's thread lives for the session,
because the nodes a job starts are killed by the kernel when the thread that started them ends
(PR_SET_PDEATHSIG, tests/kafka_peer/nodes.py); and it is a daemon, so an interrupted session
does not wait for a history half written (the session's end kills its nodes).
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Any, Callable, Hashable


class Lane:
    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._futures: dict[Hashable, Future] = {}
        self._given: set[Hashable] = set()  # every key ever submitted, taken or not
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, key: Hashable, job: Callable[[], Any]) -> None:
        """Queue ``job`` under ``key`` (once: a key given again, even after it was taken, is ignored)."""
        with self._lock:
            if key in self._given:
                return
            self._given.add(key)
            future: Future = Future()
            self._futures[key] = future
            self._jobs.put((future, job))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()

    def submitted(self, key: Hashable) -> bool:
        """Whether ``key`` was ever submitted (taken since or not)."""
        with self._lock:
            return key in self._given

    def take(self, key: Hashable, job: Callable[[], Any], timeout_s: float) -> Any:
        """``key``'s value: the lane's (waited for) if it has begun the job, else ``job()`` run here."""
        with self._lock:
            future = self._futures.pop(key, None)
            self._given.add(key)  # taken: not to be begun again by a later submit
        if future is None or future.cancel():  # never queued, or queued and not begun
            return job()
        return future.result(timeout=timeout_s)

    def _run(self) -> None:
        while True:
            future, job = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(job())
            except BaseException as exc:  # noqa: BLE001 - the taker raises it, in its test
                future.set_exception(exc)
