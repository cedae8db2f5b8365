"""Bindings written in the background: a Scheduled Event is written only for a binding that
succeeded, whichever of the two comes first; a refused binding comes back to the loop."""

from __future__ import annotations

import queue
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubehpc.api.errors import Conflict
from kubehpc.controllers.scheduling.informer import Event
from kubehpc.kube.binding import BIND_FAILED, PipelinedBinder, PoolWrites, ScheduledEvents

Obj = dict[str, Any]


def test_an_event_after_a_successful_binding_is_written() -> None:
    written: list[Obj] = []
    paired = ScheduledEvents(written.append)
    paired.outcome("u1", True)
    paired.event("u1", {"reason": "Scheduled"})
    assert written == [{"reason": "Scheduled"}]


def test_an_event_before_its_binding_waits_for_it() -> None:
    written: list[Obj] = []
    paired = ScheduledEvents(written.append)
    paired.event("u1", {"reason": "Scheduled"})
    assert written == []
    paired.outcome("u1", True)
    assert written == [{"reason": "Scheduled"}]


def test_the_event_of_a_failed_binding_is_dropped() -> None:
    written: list[Obj] = []
    paired = ScheduledEvents(written.append)
    paired.event("u1", {"reason": "Scheduled"})
    paired.outcome("u1", False)
    paired.outcome("u2", False)
    paired.event("u2", {"reason": "Scheduled"})
    assert written == []


class RefusingClient:
    def create(self, obj: Obj, options: object = None) -> Obj:
        raise Conflict("pod p is already assigned to node n2")


def test_a_refused_binding_comes_back_to_the_loop_as_an_event() -> None:
    events: queue.SimpleQueue[Event] = queue.SimpleQueue()
    written: list[Obj] = []
    paired = ScheduledEvents(written.append)
    pod = {"metadata": {"name": "p", "namespace": "default", "uid": "u1"}}
    with ThreadPoolExecutor(2) as pool:
        client = RefusingClient()
        writes = PoolWrites(client, pool)  # type: ignore[arg-type]
        binder = PipelinedBinder(client, writes, events, paired)  # type: ignore[arg-type]
        binder.bind(pod, "n1", ())
    paired.event("u1", {"reason": "Scheduled"})
    failed = events.get(timeout=5)
    assert failed.kind == BIND_FAILED
    assert failed.object is not None and failed.object["pod"] is pod
    assert isinstance(failed.object["error"], Conflict)
    assert written == []
