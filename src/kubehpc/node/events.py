"""The node agent's v1 Events, recorded as the kubelet records them, off the pod start path.

Reasons and messages follow the kubelet's (``Created``, ``Started``, ``Killing``, ``BackOff``,
``Failed``, ``UnexpectedAdmissionError``), with ``source.component`` "kubelet" and
``source.host`` the node's name. Images are not pulled, so there is no ``Pulled``.

Writing an Event is an API call; done inline it would add one or two writes to every container
start. The agent only queues them here; one thread writes them in order through
:class:`kubehpc.store.events.EventRecorder` (which aggregates repeats into ``count``). As the
kubelet's event client, writes are rate-limited (``event_qps`` 50, ``event_burst`` 100: the
kubelet's eventRecordQPS / eventBurst defaults) so a burst of pod starts cannot turn into a
burst of API writes competing with the starts; and as client-go's broadcaster, at most
``max_queued`` (1,000) events wait, newer ones being dropped (and counted) beyond that.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from typing import Any

from kubehpc.store.client import Client
from kubehpc.store.events import NORMAL, WARNING, EventRecorder

log = logging.getLogger(__name__)

COMPONENT = "kubelet"

_Item = tuple[str, dict[str, Any], str, str, str]  # node, pod, type, reason, message


class EventSink:
    """Queues Events about pods and writes them on a background thread."""

    def __init__(
        self,
        client: Client,
        nodes: list[str],
        event_qps: float = 50.0,
        event_burst: int = 100,
        max_queued: int = 1000,
    ) -> None:
        self.recorders = {n: EventRecorder(client, COMPONENT, host=n) for n in nodes}
        self.event_qps = event_qps
        self.event_burst = event_burst
        self.dropped = 0  # events not recorded because the queue was full
        self._queue: queue.Queue[_Item] = queue.Queue(max_queued)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="agent-events", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Write what is queued (up to ``timeout``, without the rate limit), then stop."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        tokens, last = float(self.event_burst), time.monotonic()
        while True:
            try:
                node, pod, type_, reason, message = self._queue.get(timeout=0.1)
            except queue.Empty:
                if self._stopping.is_set():
                    return
                continue
            if not self._stopping.is_set():
                now = time.monotonic()
                tokens = min(float(self.event_burst), tokens + (now - last) * self.event_qps)
                last = now
                if tokens < 1.0:
                    # Sleep until the next token, but wake for stop (then flush unthrottled).
                    self._stopping.wait((1.0 - tokens) / self.event_qps)
                    tokens, last = 1.0, time.monotonic()
                tokens -= 1.0
            with contextlib.suppress(Exception):  # never let a diagnostic stop the agent
                self.recorders[node].record(pod, type_, reason, message)

    def _put(self, node: str, pod: dict[str, Any], type_: str, reason: str, message: str) -> None:
        # The pod's identity only: the object changes after this call, and the recorder needs
        # no more than apiVersion, kind, name, namespace and uid.
        meta = pod.get("metadata") or {}
        ref = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {k: meta[k] for k in ("name", "namespace", "uid") if k in meta},
        }
        try:
            self._queue.put_nowait((node, ref, type_, reason, message))
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("event queue full: %d events dropped so far", self.dropped)

    # -- the kubelet's events -----------------------------------------------------------------

    def started(self, node: str, pod: dict[str, Any], container: str) -> None:
        self._put(node, pod, NORMAL, "Created", f"Created container {container}")
        self._put(node, pod, NORMAL, "Started", f"Started container {container}")

    def killing(self, node: str, pod: dict[str, Any], container: str) -> None:
        self._put(node, pod, NORMAL, "Killing", f"Stopping container {container}")

    def back_off(self, node: str, pod: dict[str, Any], container: str) -> None:
        name = (pod.get("metadata") or {}).get("name", "")
        namespace = (pod.get("metadata") or {}).get("namespace", "default")
        uid = (pod.get("metadata") or {}).get("uid", "")
        self._put(
            node,
            pod,
            WARNING,
            "BackOff",
            f"Back-off restarting failed container {container} in pod {name}_{namespace}({uid})",
        )

    def failed(self, node: str, pod: dict[str, Any], message: str) -> None:
        self._put(node, pod, WARNING, "Failed", f"Error: {message}")

    def rejected(self, node: str, pod: dict[str, Any], reason: str, message: str) -> None:
        self._put(node, pod, WARNING, reason, message)
