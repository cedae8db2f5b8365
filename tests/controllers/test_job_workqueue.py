"""The controllers' work queue: each key once, at the earliest due time asked for, in due order."""

from __future__ import annotations

import threading
import time

from kubehpc.controllers.job.workqueue import WorkQueue


def drain(q: WorkQueue) -> list[tuple[str, str]]:
    out = []
    while (key := q.get(0.0)) is not None:
        out.append(key)
    return out


def test_keys_come_out_in_the_order_they_became_due() -> None:
    q = WorkQueue()
    for name in ("c", "a", "b"):
        q.add(("ns", name))
    assert drain(q) == [("ns", "c"), ("ns", "a"), ("ns", "b")]


def test_a_key_added_twice_comes_out_once() -> None:
    q = WorkQueue()
    q.add(("ns", "a"))
    q.add(("ns", "a"))
    assert drain(q) == [("ns", "a")]
    assert len(q) == 0


def test_an_earlier_due_time_wins_and_the_later_one_is_dropped() -> None:
    q = WorkQueue()
    q.add(("ns", "a"), 60.0)
    q.add(("ns", "a"), 0.0)
    assert drain(q) == [("ns", "a")]
    q.add(("ns", "a"), 0.0)  # queued again after being taken: once more
    assert drain(q) == [("ns", "a")]


def test_a_later_due_time_does_not_delay_a_queued_key() -> None:
    q = WorkQueue()
    q.add(("ns", "a"))
    q.add(("ns", "a"), 60.0)
    assert drain(q) == [("ns", "a")]


def test_a_key_not_yet_due_waits() -> None:
    q = WorkQueue()
    q.add(("ns", "later"), 0.05)
    assert q.get(0.0) is None
    started = time.monotonic()
    assert q.get(5.0) == ("ns", "later")
    assert time.monotonic() - started < 4.0


def test_many_keys_each_come_out_exactly_once() -> None:
    q = WorkQueue()
    keys = [("ns", f"k{i}") for i in range(2000)]
    for key in keys:
        q.add(key)
    for key in keys[::3]:
        q.add(key)  # re-added while queued: no duplicate
    assert sorted(drain(q)) == sorted(keys)


def test_a_closed_queue_returns_nothing() -> None:
    q = WorkQueue()
    q.add(("ns", "a"))
    q.close()
    assert q.get(1.0) is None


def test_a_waiting_worker_wakes_as_soon_as_a_key_is_added() -> None:
    q = WorkQueue()
    got: list[tuple[str, str] | None] = []
    worker = threading.Thread(target=lambda: got.append(q.get(30.0)))
    worker.start()
    time.sleep(0.1)  # the worker is waiting by now
    added = time.monotonic()
    q.add(("ns", "a"))
    worker.join(10.0)
    assert got == [("ns", "a")]
    assert time.monotonic() - added < 5.0  # woken, not timed out
