"""The asyncio side of the store's watches (``StoreWatch.__aiter__`` and ``araw_items``): the
HTTP server's watch streams. Kept apart from watch.py, which mypyc compiles: it compiles no
async generators.

The writer wakes an async consumer with ``loop.call_soon_threadsafe`` on the event set here,
so an HTTP server holds no thread per watcher.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import orjson

from kubehpc.store.client import WatchEvent
from kubehpc.store.watch import StoreWatch, _Item


async def events(watch: StoreWatch) -> AsyncIterator[WatchEvent]:
    async for item in _items(watch):
        yield watch._to_event(item)


async def raw_items(watch: StoreWatch) -> AsyncIterator[tuple[str, bytes]]:
    """(type, JSON bytes of the object), as ``StoreWatch.raw_items``."""
    async for item in _items(watch):
        type_, record, _ = item
        if record is not None and watch._raw_ok:
            yield type_, record.raw
        else:
            yield type_, orjson.dumps(watch._to_event(item).object)


async def _items(watch: StoreWatch) -> AsyncIterator[_Item]:
    loop = asyncio.get_running_loop()
    ready = asyncio.Event()
    with watch._mutex:
        watch._async_ready = ready
        watch._loop = loop
    try:
        while True:
            ready.clear()
            with watch._mutex:
                if watch._stopped:
                    return
                item = watch._take()
            if item is None:
                try:
                    timeout = watch._interval if watch._bookmark is not None else None
                    await asyncio.wait_for(ready.wait(), timeout)
                    continue
                except TimeoutError:
                    with watch._mutex:
                        if watch._stopped:
                            return
                        item = watch._take() or watch._bookmark_item()
                    if item is None:
                        continue
            yield item
    finally:
        with watch._mutex:
            watch._loop = None
            watch._async_ready = None
