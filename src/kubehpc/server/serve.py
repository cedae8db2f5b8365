"""Running the API server: uvicorn (uvloop, httptools) in the calling thread.

``serve`` blocks until SIGINT/SIGTERM (when called from the main thread) and then shuts down
cleanly: stop accepting, end open watch streams after a short grace period, return. The caller
owns the store and closes it afterwards.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import uvicorn
from prometheus_client import CollectorRegistry

from kubehpc.api.registry import Registry
from kubehpc.server.app import build_app
from kubehpc.server.tls import TLSFiles
from kubehpc.store.client import Client
from kubehpc.store.home import Home

# Watches and `logs -f` streams never end by themselves; give them this long on shutdown.
GRACEFUL_SHUTDOWN_S = 1


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, port: int, on_ready: Callable[[int], None] | None) -> None:
        super().__init__(config)
        self._port = port
        self._on_ready = on_ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self._on_ready is not None:
            self._on_ready(self._port)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: any free port), so the port is known before serving."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def make_server(
    store: Client,
    registry: Registry,
    home: Home,
    *,
    token: str | None,
    on_ready: Callable[[int], None] | None = None,
    port: int = 0,
    tls: TLSFiles | None = None,
    metrics: CollectorRegistry | None = None,
    **config: Any,
) -> uvicorn.Server:
    app = build_app(store, registry, token=token, home=home, metrics=metrics)
    if tls is not None:
        config.update(ssl_certfile=str(tls.cert), ssl_keyfile=str(tls.key))
    cfg = uvicorn.Config(
        app,
        loop="uvloop",
        http="httptools",
        ws="none",
        lifespan="off",
        access_log=False,
        log_level="warning",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        timeout_keep_alive=60,
        **config,
    )
    return _Server(cfg, port, on_ready)


async def serve_async(
    store: Client,
    registry: Registry,
    home: Home,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    token: str | None,
    tls: TLSFiles | None = None,
    on_ready: Callable[[int], None] | None = None,
    metrics: CollectorRegistry | None = None,
) -> None:
    """Serve on the running event loop until a signal (or ``should_exit``) stops it."""
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    server = make_server(
        store, registry, home, token=token, on_ready=on_ready, port=bound, tls=tls, metrics=metrics
    )
    try:
        await server.serve(sockets=[sock])
    finally:
        sock.close()


def serve(
    store: Client,
    registry: Registry,
    home: Home,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    token: str | None,
    tls: TLSFiles | None = None,
    on_ready: Callable[[int], None] | None = None,
    metrics: CollectorRegistry | None = None,
) -> None:
    """Serve in this thread on a uvloop event loop; returns after SIGINT/SIGTERM.

    ``tls``: serve https with these files (kubectl needs it to send the token); None: http.
    ``metrics``: the Prometheus registry served at /metrics (404 without one)."""
    import uvloop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(
            serve_async(
                store, registry, home, host, port, token=token, tls=tls, on_ready=on_ready, metrics=metrics
            )
        )
