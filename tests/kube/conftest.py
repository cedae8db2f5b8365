"""A real kubehpc API server on a loopback port, served from a thread of the test process.

In-process so the store can keep a short watch history (a 410 Gone is reachable in a few
writes); everything the client does still goes over HTTP.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubehpc.api.kinds import default_registry
from kubehpc.kube.kubeconfig import ClientConfig
from kubehpc.kube.rest import RestClient
from kubehpc.server.serve import bind, make_server
from kubehpc.store.home import Home
from kubehpc.store.store import Store

TOKEN = "test-token"
HISTORY = 20


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = Home(Path(tmp_path_factory.mktemp("home"))).ensure()
    registry = default_registry()
    store = Store(registry, None, memory_history=HISTORY)
    sock = bind("127.0.0.1", 0)
    ready = threading.Event()
    server = make_server(store, registry, home, token=TOKEN, on_ready=lambda _port: ready.set())
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    assert ready.wait(30), "the API server did not start"
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.should_exit = True
    thread.join(10)
    sock.close()
    store.close()


@pytest.fixture
def client(server_url: str) -> Iterator[RestClient]:
    with RestClient(ClientConfig(server=server_url, token=TOKEN)) as c:
        yield c
