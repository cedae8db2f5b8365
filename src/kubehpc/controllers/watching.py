"""Following a kind's watch for the life of a controller: reconnect when the watch ends or
fails, hand every ADDED/MODIFIED/DELETED object to a handler, and stop every watch at once."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kubehpc.api.errors import ApiError
from kubehpc.store.client import Client, ListOptions, Watch

log = logging.getLogger(__name__)

Handler = Callable[[str, dict[str, Any]], None]


class Followers:
    """One thread per followed kind; :meth:`stop` ends them all."""

    def __init__(self, client: Client, namespace: str | None = None, read_only: bool = False) -> None:
        """``read_only``: the handlers only read the objects they are handed (to pick keys to
        queue), so the embedded store may hand out its shared objects instead of copies."""
        self.client = client
        self.namespace = namespace
        self.read_only = read_only
        self._watches: set[Watch] = set()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def start(
        self, stop: threading.Event, api_version: str, kind: str, handler: Handler, label_selector: str = ""
    ) -> None:
        """Follow ``kind`` on a thread of its own. ``label_selector`` scopes the watch as an
        operator scopes its informer cache (KubeRay's pods by ``ray.io/node-type``): the
        store sends nothing else, so other controllers' objects never wake this thread."""
        thread = threading.Thread(
            target=self.follow,
            args=(stop, api_version, kind, handler, label_selector),
            name=f"watch-{kind}",
            daemon=True,
        )
        thread.start()
        self._threads.append(thread)

    def follow(
        self, stop: threading.Event, api_version: str, kind: str, handler: Handler, label_selector: str = ""
    ) -> None:
        options = ListOptions(
            namespace=self.namespace, label_selector=label_selector, read_only=self.read_only
        )
        while not stop.is_set():
            try:
                watch = self.client.watch(api_version, kind, options)
            except ApiError:
                log.exception("watching %s failed; retrying", kind)
                stop.wait(1.0)
                continue
            with self._lock:
                self._watches.add(watch)
            if stop.is_set():
                watch.stop()
            try:
                for event in watch:
                    if stop.is_set():
                        break
                    if event.type in ("ADDED", "MODIFIED", "DELETED"):
                        handler(event.type, event.object)
            except ApiError:
                log.debug("%s watch ended; restarting", kind, exc_info=True)
            except Exception:
                # A bug in a handler must not silently end the watch: log, pause, watch again.
                log.exception("handling a %s event failed; restarting the watch", kind)
                stop.wait(1.0)
            finally:
                watch.stop()
                with self._lock:
                    self._watches.discard(watch)

    def stop(self, timeout: float = 2.0) -> None:
        with self._lock:
            for watch in self._watches:
                watch.stop()
        for thread in self._threads:
            thread.join(timeout=timeout)
        self._threads.clear()
