"""Binding many pods at once against a remote API server.

The live scheduling loop binds each pod with one synchronous write. In process that costs
microseconds; over HTTP each Binding is a round trip of milliseconds, and one at a time they cap
the loop at a few hundred pods per second whatever the decisions cost — kube-scheduler binds in
goroutines for the same reason. Here the loop's cycle hands each binding (and each Event) to a
pool of writers and goes on; the pod stays *assumed* in the cache meanwhile. A refused binding
comes back to the loop's own thread as a queued event, and the loop forgets the assumption and
lets the pod wait again, exactly as for a synchronous failure.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubehpc.api.errors import ApiError
from kubehpc.controllers.scheduling.apply import Binder, BindMode, Devices
from kubehpc.controllers.scheduling.informer import Event
from kubehpc.store.client import Client, Obj, WriteOptions

log = logging.getLogger(__name__)
BIND_FAILED = "BindFailed"
"""The queued event's kind: ``object`` holds the pod as it was decided and the error."""


class ScheduledEvents:
    """Pairs each ``Scheduled`` Event with the outcome of its pod's binding: the loop records the
    Event right after handing the binding over, but it must be written only once the binding
    succeeded (a replica killed between the two would otherwise announce a binding that never
    happened, and the next leader announce it again). Whichever of the two arrives first waits
    for the other."""

    def __init__(self, write: Callable[[Obj], None]) -> None:
        self._write = write
        self._lock = threading.Lock()
        self._events: dict[str, Obj] = {}  # pod uid -> its Event, binding still in flight
        self._outcomes: dict[str, bool] = {}  # pod uid -> bound?, Event not yet seen

    def event(self, uid: str, event: Obj) -> None:
        with self._lock:
            outcome = self._outcomes.pop(uid, None)
            if outcome is None:
                self._events[uid] = event
                return
        if outcome:
            self._write(event)

    def outcome(self, uid: str, bound: bool) -> None:
        with self._lock:
            event = self._events.pop(uid, None)
            if event is None:
                self._outcomes[uid] = bound
                return
        if bound:
            self._write(event)


class PipelinedBinder(Binder):
    def __init__(
        self,
        client: Client,
        events: queue.Queue[Event],
        pool: ThreadPoolExecutor,
        scheduled: ScheduledEvents | None = None,
    ) -> None:
        super().__init__(client, BindMode.BINDING)
        self._events = events
        self._pool = pool
        self._scheduled = scheduled

    def bind(self, pod: Obj, node: str, devices: Devices) -> None:
        self._pool.submit(self._write, pod, node, devices)

    def _write(self, pod: Obj, node: str, devices: Devices) -> None:
        uid = str((pod.get("metadata") or {}).get("uid", ""))
        error: ApiError | None = None
        try:
            super().bind(pod, node, devices)
        except ApiError as err:
            error = err
        except Exception as err:  # a dropped connection: the loop must still hear of it
            error = ApiError(f"binding failed: {err}")
        if self._scheduled is not None:
            self._scheduled.outcome(uid, error is None)
        if error is not None:
            self._events.put(Event(BIND_FAILED, "ERROR", {"pod": pod, "error": error}))


class BackgroundEvents:
    """A Client whose ``create`` of a core/v1 Event returns at once and is written by the pool
    (an Event is a courtesy: losing one must never slow scheduling); a ``Scheduled`` Event
    waits for its binding's outcome (:class:`ScheduledEvents`). All else goes straight through."""

    def __init__(self, client: Client, pool: ThreadPoolExecutor, component: str = "") -> None:
        self._client = client
        self._pool = pool
        self._component = component
        self.scheduled = ScheduledEvents(self._submit)

    def create(self, obj: Obj, options: WriteOptions | None = None) -> Obj:
        if obj.get("kind") == "Event" and obj.get("apiVersion") == "v1":
            if self._component:
                # Beside kube-scheduler, say which scheduler spoke (kubectl describe's "From").
                obj["source"] = {**(obj.get("source") or {}), "component": self._component}
                obj["reportingComponent"] = self._component
            if obj.get("reason") == "Scheduled":
                self.scheduled.event(str((obj.get("involvedObject") or {}).get("uid", "")), obj)
            else:
                self._submit(obj)
            return obj
        return self._client.create(obj, options)

    def _submit(self, obj: Obj) -> None:
        self._pool.submit(self._write_event, obj)

    def _write_event(self, obj: Obj) -> None:
        try:
            self._client.create(obj)
        except Exception as err:
            log.debug("recording an event failed: %s", err)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)
