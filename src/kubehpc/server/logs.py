"""pods/log: a container's output, read from the file the node agent writes under the home.

``follow=true`` streams new lines as the file grows until the pod is terminal or deleted (or
the client disconnects). The file is polled: pods' output arrives in bursts, a tenth of a
second of latency is what ``kubectl logs -f`` users see from a real kubelet too, and polling
needs no watch plumbing for a file another process writes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from kubehpc.api.errors import ApiError, BadRequest, NotFound
from kubehpc.server.streaming import LiveStream
from kubehpc.store.home import Home

TEXT = "text/plain"
POLL_SECONDS = 0.1
# How often a follower re-reads the pod to notice it finished or went away.
POD_CHECK_SECONDS = 1.0
_CHUNK = 64 * 1024
TERMINAL_PHASES = ("Succeeded", "Failed")

Obj = dict[str, Any]


def container_names(pod: Obj) -> list[str]:
    spec = pod.get("spec") or {}
    return [c.get("name", "") for c in (spec.get("initContainers") or []) + (spec.get("containers") or [])]


def choose_container(pod: Obj, requested: str | None) -> str:
    """The container a log request means; the API server's errors when it is ambiguous."""
    name = pod.get("metadata", {}).get("name", "")
    spec_containers = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]
    if requested:
        if requested not in container_names(pod):
            raise BadRequest(
                f"container {requested} is not valid for pod {name}",
                name=name,
                kind="pods",
            )
        return requested
    if len(spec_containers) == 1:
        return str(spec_containers[0])
    raise BadRequest(
        f"a container name must be specified for pod {name}, choose one of: [{' '.join(spec_containers)}]",
        name=name,
        kind="pods",
    )


def tail(data: bytes, lines: int) -> bytes:
    """The last ``lines`` lines of ``data`` (a trailing partial line counts as one)."""
    if lines <= 0:
        return b""
    end = len(data)
    body = data[:-1] if data.endswith(b"\n") else data
    pos = len(body)
    for _ in range(lines):
        pos = body.rfind(b"\n", 0, pos)
        if pos < 0:
            return data
    return data[pos + 1 : end]


def _read_all(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return b""
    return data


def _pod_finished(pod: Obj | None) -> bool:
    return pod is None or (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


async def _follow(
    path: Path,
    start: bytes,
    offset: int,
    get_pod: Callable[[], Obj | None],
) -> AsyncIterator[bytes]:
    if start:
        yield start
    loop = asyncio.get_running_loop()
    next_check = loop.time() + POD_CHECK_SECONDS
    handle = None
    try:
        while True:
            if handle is None:
                with contextlib.suppress(FileNotFoundError):
                    handle = path.open("rb")
                    handle.seek(offset)
            chunk = handle.read(_CHUNK) if handle is not None else b""
            if chunk:
                offset += len(chunk)
                yield chunk
                continue
            if loop.time() >= next_check:
                next_check = loop.time() + POD_CHECK_SECONDS
                if _pod_finished(get_pod()):
                    # One last read: the agent may have written the final lines just before.
                    rest = handle.read() if handle is not None else b""
                    if rest:
                        yield rest
                    return
            await asyncio.sleep(POLL_SECONDS)
    finally:
        if handle is not None:
            handle.close()


def log_response(home: Home, pod: Obj, params: Any, get_pod: Callable[[], Obj | None]) -> Any:
    """The response for GET pods/<name>/log with the API server's query parameters."""
    meta = pod.get("metadata", {})
    container = choose_container(pod, params.get("container"))
    try:
        path = home.pod_log_path(meta.get("namespace", ""), meta.get("name", ""), container)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    follow = params.get("follow", "").lower() in ("1", "true")
    tail_lines = _int(params, "tailLines")
    limit_bytes = _int(params, "limitBytes")
    if params.get("previous", "").lower() in ("1", "true"):
        raise BadRequest(f'previous terminated container "{container}" in pod "{meta.get("name")}" not found')
    exists = path.exists()
    if not exists and (pod.get("status") or {}).get("phase", "Pending") == "Pending" and not follow:
        raise BadRequest(
            f'container "{container}" in pod "{meta.get("name")}" is waiting to start: ContainerCreating',
            name=meta.get("name", ""),
            kind="pods",
        )
    data = _read_all(path)
    offset = len(data)
    if tail_lines is not None:
        data = tail(data, tail_lines)
    if limit_bytes is not None:
        data = data[:limit_bytes]
    if not follow or (_pod_finished(pod) and exists):
        return data
    return LiveStream(_follow(path, data, offset, get_pod), TEXT)


def _int(params: Any, name: str) -> int | None:
    value = params.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise BadRequest(f"invalid value for {name}: {value!r} is not an integer") from None


def pod_getter(get: Callable[[], Obj]) -> Callable[[], Obj | None]:
    def fetch() -> Obj | None:
        try:
            return get()
        except NotFound:
            return None
        except ApiError:
            return None

    return fetch
