"""Binding many pods at once against a remote API server.

The live scheduling loop binds each pod with one synchronous write. In process that costs
microseconds; over HTTP each Binding is a round trip of milliseconds, and one at a time they cap
the loop at a few hundred pods per second whatever the decisions cost — kube-scheduler binds in
goroutines for the same reason. Here the loop's cycle hands each binding (and each Event) to a
writer and goes on; the pod stays *assumed* in the cache meanwhile. A refused binding comes back
to the loop's own thread as a queued event, and the loop forgets the assumption and lets the pod
wait again, exactly as for a synchronous failure.

Two writers: :class:`PipelinedWrites` (a real API server: :mod:`kubehpc.kube.pipeline`) and
:class:`PoolWrites` (any Client, through a thread pool).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from kubehpc.api.errors import ApiError
from kubehpc.controllers.scheduling.apply import Binder, BindMode, Devices, binding_object
from kubehpc.controllers.scheduling.informer import Event
from kubehpc.kube.pipeline import Done, Pipeline
from kubehpc.kube.rest import RestClient
from kubehpc.store.client import Client, Obj, WriteOptions

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

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


class Writes(Protocol):
    """Creates objects in the background; ``done`` hears None or the typed error."""

    def create(self, obj: Obj, done: Done) -> None: ...


class PoolWrites:
    """Any Client's ``create``, run by a thread pool."""

    def __init__(self, client: Client, pool: ThreadPoolExecutor) -> None:
        self._client = client
        self._pool = pool

    def create(self, obj: Obj, done: Done) -> None:
        self._pool.submit(self._create, obj, done)

    def _create(self, obj: Obj, done: Done) -> None:
        try:
            self._client.create(obj)
        except ApiError as err:
            done(err)
            return
        except Exception as err:  # a dropped connection: the caller must still hear of it
            done(ApiError(f"writing {obj.get('kind')} failed: {err}"))
            return
        done(None)


class PipelinedWrites:
    """``create`` as a pipelined POST to a real API server (paths found through discovery once
    per kind and namespace)."""

    def __init__(self, rest: RestClient, pipeline: Pipeline) -> None:
        self._rest = rest
        self._pipeline = pipeline
        self._paths: dict[tuple[str, str, str], str] = {}

    def create(self, obj: Obj, done: Done) -> None:
        namespace = str((obj.get("metadata") or {}).get("namespace") or "")
        key = (str(obj.get("apiVersion", "")), str(obj.get("kind", "")), namespace)
        path = self._paths.get(key)
        if path is None:
            try:
                info = self._rest.resource_for(key[0], key[1])
            except ApiError as err:
                done(err)
                return
            path = info.path((namespace or self._rest.config.namespace) if info.namespaced else None)
            self._paths[key] = path
        self._pipeline.post(path, orjson.dumps(obj), done)


class PipelinedBinder(Binder):
    """Bindings handed to ``writes``; a refused one comes back on ``events`` (BIND_FAILED)."""

    def __init__(
        self,
        client: Client,
        writes: Writes,
        events: queue.SimpleQueue[Event],
        scheduled: ScheduledEvents | None = None,
    ) -> None:
        super().__init__(client, BindMode.BINDING)
        self._writes = writes
        self._events = events
        self._scheduled = scheduled

    def bind(self, pod: Obj, node: str, devices: Devices) -> None:
        def done(error: ApiError | None) -> None:
            if self._scheduled is not None:
                self._scheduled.outcome(uid, error is None)
            if error is not None:
                self._events.put(Event(BIND_FAILED, "ERROR", {"pod": pod, "error": error}))

        uid = str((pod.get("metadata") or {}).get("uid", ""))
        self._writes.create(binding_object(pod, node, devices), done)


class BackgroundEvents:
    """A Client whose ``create`` of a core/v1 Event returns at once and is written by ``writes``
    (an Event is a courtesy: losing one must never slow scheduling, and a lost one is logged);
    a ``Scheduled`` Event waits for its binding's outcome (:class:`ScheduledEvents`). All else
    goes straight through."""

    def __init__(self, client: Client, writes: Writes, component: str = "") -> None:
        self._client = client
        self._writes = writes
        self._component = component
        self.scheduled = ScheduledEvents(self._submit)
        self.lost = 0
        """Events the API server refused or never answered (each one logged)."""

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
        def done(error: ApiError | None) -> None:
            if error is not None:
                self.lost += 1
                involved = obj.get("involvedObject") or {}
                log.info(
                    "event %s about %s/%s not recorded: %s",
                    obj.get("reason"),
                    involved.get("namespace"),
                    involved.get("name"),
                    error,
                )

        self._writes.create(obj, done)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)
