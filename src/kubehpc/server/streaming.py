"""A chunked streaming response that stops as soon as the client goes away.

Starlette's StreamingResponse only notices a disconnect when a write fails, so an idle watch
(or ``logs -f`` of a quiet pod) would keep its store watch open until its timeout. Here a
listener task waits for ``http.disconnect`` and cancels the producer at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from starlette.responses import Response
from starlette.types import Receive, Scope, Send


class LiveStream(Response):
    def __init__(
        self,
        chunks: AsyncIterator[bytes],
        media_type: str,
        headers: list[tuple[str, str]] | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.chunks = chunks
        self.status_code = 200
        self.media_type = media_type
        self.background = None
        self.on_close = on_close
        self.init_headers({})
        for key, value in headers or []:
            self.headers.append(key, value)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        producer = asyncio.ensure_future(self._produce(send))

        async def listen() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    producer.cancel()
                    return

        listener = asyncio.ensure_future(listen())
        try:
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await producer
        finally:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener
            if self.on_close is not None:
                self.on_close()

    async def _produce(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        try:
            async for chunk in self.chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        finally:
            aclose = getattr(self.chunks, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
        await send({"type": "http.response.body", "body": b"", "more_body": False})
