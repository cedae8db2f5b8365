"""``?watch=1``: a chunked stream of JSON watch events, one per line, as the API server sends.

Events carry the object's stored JSON bytes when the store offers them (``araw_items``), so a
watch stream costs no re-encoding. A watch from a resourceVersion older than the kept history
answers 200 with a single ERROR event holding a 410 Status, as the API server does (clients
then re-list). The stream ends after ``timeoutSeconds`` (or the API server's default window).
In the Table form (``kubectl get -w``) each event's object is a Table with one row.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import orjson

from kubehpc.api.errors import ApiError, Gone
from kubehpc.server.http import JSON
from kubehpc.server.streaming import LiveStream
from kubehpc.server.tables import TableMaker
from kubehpc.store.client import Watch

# The API server picks a random timeout in [min-request-timeout, 2x] (1800 s by default) so
# that watchers reconnect spread out over time.
DEFAULT_MIN_TIMEOUT = 1800


def default_timeout() -> float:
    return DEFAULT_MIN_TIMEOUT * (1 + random.random())


def error_line(err: ApiError) -> bytes:
    return orjson.dumps({"type": "ERROR", "object": err.to_status()}) + b"\n"


async def _events(watch: Watch) -> AsyncIterator[tuple[str, bytes | None, Any]]:
    """(type, object bytes or None, object or None) of each event."""
    raw = getattr(watch, "araw_items", None)
    if raw is not None:
        async for type_, data in raw():
            yield type_, data, None
    else:
        async for event in watch:
            yield event.type, None, event.object


async def _stream(
    watch: Watch,
    timeout: float,
    table: TableMaker | None,
    include: str,
    table_version: str,
) -> AsyncIterator[bytes]:
    # Stopping the watch at the deadline ends the iteration below; cheaper than a timeout
    # around every event.
    timer = asyncio.get_running_loop().call_later(timeout, watch.stop)
    first_table = True
    iterator = _events(watch).__aiter__()
    try:
        while True:
            try:
                type_, data, obj = await iterator.__anext__()
            except StopAsyncIteration:
                return
            except ApiError as err:
                yield error_line(err)
                return
            if table is not None and type_ not in ("BOOKMARK", "ERROR"):
                if obj is None:
                    obj = orjson.loads(data) if data is not None else {}
                meta = {"resourceVersion": obj.get("metadata", {}).get("resourceVersion", "")}
                rendered = table.table([obj], include, meta, table_version, with_definitions=first_table)
                first_table = False
                yield orjson.dumps({"type": type_, "object": rendered}) + b"\n"
            elif data is not None:
                yield b'{"type":"' + type_.encode() + b'","object":' + data + b"}\n"
            else:
                yield orjson.dumps({"type": type_, "object": obj}) + b"\n"
    finally:
        timer.cancel()
        watch.stop()


async def _single(line: bytes) -> AsyncIterator[bytes]:
    yield line


def watch_response(
    start: Any,
    timeout: float | None,
    table: TableMaker | None = None,
    include: str = "Metadata",
    table_version: str = "v1",
) -> LiveStream:
    """Start the store watch (``start()``) and stream it; 410 and other errors become one
    ERROR event, the way the API server reports a watch it cannot serve."""
    try:
        watch: Watch = start()
    except Gone as err:
        return LiveStream(_single(error_line(err)), JSON)
    chunks = _stream(watch, default_timeout() if timeout is None else timeout, table, include, table_version)
    return LiveStream(chunks, JSON, on_close=watch.stop)
