"""Waiting in the main thread for a stop that a signal handler sets.

Python runs a signal handler in the main thread, when that thread next runs. The kernel
hands a process's signal to any thread that does not block it; when it picks another one,
CPython only flags the main thread, and a main thread blocked in an untimed
``threading.Event.wait()`` never looks: the handler that would set the event never runs, and
SIGTERM is lost (seen in CI: a controller that did not stop in 20 s). Timed waits wake it.
"""

from __future__ import annotations

import threading

POLL_S = 0.5


def wait_until_set(stop: threading.Event, poll_s: float = POLL_S) -> None:
    """Block until ``stop`` is set, waking every ``poll_s`` so pending signal handlers run."""
    while not stop.wait(poll_s):
        pass


__all__ = ["wait_until_set"]
