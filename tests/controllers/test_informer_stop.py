"""Informers stop together: a loop's informers are all told to stop before any is waited for,
so several stuck in slow requests cost one timeout, not one each."""

from __future__ import annotations

import queue
import threading
import time
from typing import Any, cast

from kubehpc.controllers.scheduling.informer import Event, Informer, stop_all
from kubehpc.store.client import Client


class SlowClient:
    """A client whose watch hangs (a slow API server) until released."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def watch(self, *args: Any, **kwargs: Any) -> Any:
        self.release.wait(30)
        raise ConnectionError("gone")


def test_informers_stuck_in_requests_stop_within_one_timeout() -> None:
    client = SlowClient()
    events: queue.Queue[Event] = queue.Queue()
    kinds = ("Node", "Pod", "PriorityClass", "Job")
    informers = [Informer(cast(Client, client), "v1", kind, events) for kind in kinds]
    for informer in informers:
        informer.start("1")
    started = time.monotonic()
    stop_all(informers, timeout=0.5)
    took = time.monotonic() - started
    client.release.set()
    assert took < 1.5, f"stopping four stuck informers took {took:.1f}s"


def test_stopped_informers_end_their_threads() -> None:
    client = SlowClient()
    events: queue.Queue[Event] = queue.Queue()
    informers = [Informer(cast(Client, client), "v1", kind, events) for kind in ("Node", "Pod")]
    for informer in informers:
        informer.start("1")
    client.release.set()
    stop_all(informers, timeout=5.0)
    assert not any(i._worker is not None and i._worker.is_alive() for i in informers)
