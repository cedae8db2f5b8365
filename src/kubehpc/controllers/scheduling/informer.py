"""List-then-watch of one kind into a queue, relisting when the watch history is gone.

Each informer runs on its own thread (a Client's watch is a blocking iterator) and only puts
events on the shared queue; all state lives with the single thread that drains it.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from kubehpc.api import fields as F
from kubehpc.api.errors import ApiError
from kubehpc.store.client import Client, ListOptions, Watch

log = logging.getLogger(__name__)
Obj = dict[str, Any]

RELIST = "RELIST"  # a full list replaced what was known of the kind
READ = ListOptions(without_managed_fields=True)
"""How the informers list: their readers (the scheduling and admission loops) never look at
managedFields, a third of a Pod's bytes from a real API server."""


@dataclass
class Event:
    """What an informer hands its handler. Treat it as immutable."""

    kind: str
    type: str  # ADDED, MODIFIED, DELETED, or RELIST (objects = the full list)
    object: Obj | None = None
    objects: tuple[Obj, ...] = ()

    # Written out: one per watch event, and mypyc makes a written __init__ native where a
    # generated frozen one runs interpreted, eight times slower.
    def __init__(
        self,
        kind: str,
        type: str,
        object: Obj | None = None,
        objects: tuple[Obj, ...] = (),
    ) -> None:
        self.kind = kind
        self.type = type
        self.object = object
        self.objects = objects


class Informer:
    def __init__(
        self,
        client: Client,
        api_version: str,
        kind: str,
        events: queue.Queue[Event] | queue.SimpleQueue[Event],
        read_only: bool = False,
    ) -> None:
        """``read_only``: whoever takes the events only reads their objects (and copies one
        before changing it), so the embedded store may hand out its shared objects."""
        self.client = client
        self.read_only = read_only
        self.api_version = api_version
        self.kind = kind
        self.events = events
        self._stopped = threading.Event()
        self._watch: Watch | None = None
        self._worker: threading.Thread | None = None

    def list_now(self) -> tuple[tuple[Obj, ...], str]:
        listed = self.client.list(self.api_version, self.kind, replace(READ, read_only=self.read_only))
        return tuple(listed.items), listed.resource_version

    def start(self, resource_version: str) -> None:
        self._worker = threading.Thread(
            target=self._run, args=(resource_version,), name=f"scheduler-informer-{self.kind}", daemon=True
        )
        self._worker.start()

    def _run(self, resource_version: str) -> None:
        rv = resource_version
        while not self._stopped.is_set():
            try:
                self._watch = self.client.watch(
                    self.api_version,
                    self.kind,
                    ListOptions(resource_version=rv, without_managed_fields=True, read_only=self.read_only),
                )
                if self._stopped.is_set():
                    self._watch.stop()
                    return
                for ev in self._watch:
                    if ev.type in ("ADDED", "MODIFIED", "DELETED"):
                        self.events.put(Event(self.kind, ev.type, ev.object))
                        rv = str(F.metadata(ev.object).get("resourceVersion") or rv)
                    elif ev.type == "BOOKMARK":
                        rv = str(F.metadata(ev.object).get("resourceVersion") or rv)
                    elif ev.type == "ERROR":
                        break
            except ApiError as err:
                log.info("watch of %s ended (%s); relisting", self.kind, err)
            except Exception:  # the store closed under us, a network error in cluster mode
                if self._stopped.is_set():
                    return
                log.exception("watch of %s failed; relisting", self.kind)
                self._stopped.wait(1.0)
            if self._stopped.is_set():
                return
            try:
                items, rv = self.list_now()
            except Exception:
                log.exception("relist of %s failed", self.kind)
                self._stopped.wait(1.0)
                continue
            self.events.put(Event(self.kind, RELIST, objects=items))

    def stop(self) -> None:
        stop_all([self])

    def _signal_stop(self) -> None:
        self._stopped.set()
        if self._watch is not None:
            self._watch.stop()

    def _join(self, timeout: float) -> None:
        if self._worker is not None and self._worker is not threading.current_thread():
            self._worker.join(timeout=max(0.0, timeout))


def stop_all(informers: Iterable[Informer], timeout: float = 5.0) -> None:
    """Stop ``informers`` together: all are told first, then all are waited for, within one
    ``timeout`` for the lot (one after another, a loop with four informers each stuck in a
    slow request could take four times as long to stop)."""
    informers = list(informers)
    for informer in informers:
        informer._signal_stop()
    deadline = time.monotonic() + timeout
    for informer in informers:
        informer._join(deadline - time.monotonic())
