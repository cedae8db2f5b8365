"""The scheduler's pipelined writes speak the same API as RestClient: objects created, answers
matched to their requests in order, typed errors for refusals, and a connection the server
drops never resends a write it may have acted on."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from kubehpc.api.errors import AlreadyExists, ApiError, NotFound
from kubehpc.kube.kubeconfig import ClientConfig
from kubehpc.kube.pipeline import Pipeline
from kubehpc.kube.rest import ConnectionFailed, RestClient

PATH = "/api/v1/namespaces/default/configmaps"


def config_map(name: str, namespace: str = "default") -> bytes:
    return b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","namespace":"%s"}}' % (
        name.encode(),
        namespace.encode(),
    )


class Outcomes:
    def __init__(self, expected: int) -> None:
        self.results: dict[str, ApiError | None] = {}
        self._expected = expected
        self._lock = threading.Lock()
        self.all_in = threading.Event()

    def done(self, name: str) -> Any:
        def record(error: ApiError | None) -> None:
            with self._lock:
                self.results[name] = error
                if len(self.results) == self._expected:
                    self.all_in.set()

        return record


def test_many_posts_on_one_connection_are_all_written(client: RestClient) -> None:
    pipeline = Pipeline(client, connections=1, depth=16)
    outcomes = Outcomes(40)
    for i in range(40):
        pipeline.post(PATH, config_map(f"piped-{i}"), outcomes.done(f"piped-{i}"))
    assert outcomes.all_in.wait(30)
    pipeline.close()
    assert all(error is None for error in outcomes.results.values())
    names = {cm["metadata"]["name"] for cm in client.list("v1", "ConfigMap").items}
    assert {f"piped-{i}" for i in range(40)} <= names


def test_each_answer_reaches_its_own_request(client: RestClient) -> None:
    client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "piped-taken"}})
    pipeline = Pipeline(client, connections=1, depth=8)
    outcomes = Outcomes(3)
    pipeline.post(PATH, config_map("piped-fresh-a"), outcomes.done("a"))
    pipeline.post(PATH, config_map("piped-taken"), outcomes.done("taken"))
    pipeline.post(
        "/api/v1/namespaces/no-such-ns/configmaps", config_map("x", "no-such-ns"), outcomes.done("nowhere")
    )
    assert outcomes.all_in.wait(30)
    pipeline.close()
    assert outcomes.results["a"] is None
    assert isinstance(outcomes.results["taken"], AlreadyExists)
    assert isinstance(outcomes.results["nowhere"], NotFound)


def test_the_client_rate_limit_applies(client: RestClient) -> None:
    limited = RestClient(client.config, qps=1000, burst=1)
    pipeline = Pipeline(limited, connections=1)
    outcomes = Outcomes(5)
    for i in range(5):
        pipeline.post(PATH, config_map(f"piped-limited-{i}"), outcomes.done(str(i)))
    assert outcomes.all_in.wait(30)
    pipeline.close()
    assert limited.limiter.waited_s > 0


def test_a_write_without_an_answer_fails_and_is_not_sent_again() -> None:
    """A server that reads the request and hangs up: the write may have happened, so the
    caller hears ConnectionFailed and the server sees the request exactly once."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    received: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            data = conn.recv(65536)
            if data:
                received.append(data)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    rest = RestClient(ClientConfig(server=f"http://127.0.0.1:{listener.getsockname()[1]}"))
    pipeline = Pipeline(rest, connections=1)
    outcomes = Outcomes(1)
    pipeline.post(PATH, config_map("lost"), outcomes.done("lost"))
    assert outcomes.all_in.wait(30)
    pipeline.close()
    listener.close()
    assert isinstance(outcomes.results["lost"], ConnectionFailed)
    assert len(received) == 1


def test_a_server_that_cannot_be_reached_is_a_connection_failure() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pipeline = Pipeline(RestClient(ClientConfig(server=f"http://127.0.0.1:{port}")), connections=1)
    outcomes = Outcomes(1)
    pipeline.post(PATH, config_map("nowhere"), outcomes.done("nowhere"))
    assert outcomes.all_in.wait(30)
    pipeline.close()
    assert isinstance(outcomes.results["nowhere"], ConnectionFailed)


class ScriptedServer:
    """An HTTP/1.1 server that reads pipelined POSTs and answers each one with 201, slowly if
    asked; ``close_first`` connections answer their first request with ``Connection: close``
    and hang up, leaving the rest of what was sent unanswered."""

    def __init__(self, delay_s: float = 0.0, close_first: int = 0) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.delay_s = delay_s
        self.close_first = close_first
        self.requests: list[tuple[int, bytes]] = []  # (connection number, body)
        self._lock = threading.Lock()
        self._connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                self._connections += 1
                number = self._connections
            threading.Thread(target=self._serve, args=(conn, number), daemon=True).start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        buf = b""
        with conn:
            while True:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                    continue
                head = buf[:end].lower()
                length = int(head.split(b"content-length:")[1].split(b"\r\n")[0])
                while len(buf) < end + 4 + length:
                    buf += conn.recv(65536)
                body, buf = buf[end + 4 : end + 4 + length], buf[end + 4 + length :]
                with self._lock:
                    self.requests.append((number, body))
                time.sleep(self.delay_s)
                closing = number <= self.close_first
                answer = b'{"kind":"Status","status":"Success"}'
                close = b"Connection: close\r\n" if closing else b""
                head = (
                    b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n"
                )
                conn.sendall(head % (close, len(answer)) + answer)
                if closing:
                    # As Go's net/http hangs up (closeWriteAndWait): stop sending, then read
                    # and drop what the client still sends. Closing with unread data in the
                    # socket sends a reset, which can destroy the answer before it is read.
                    conn.shutdown(socket.SHUT_WR)
                    conn.settimeout(0.5)
                    try:
                        while conn.recv(65536):
                            pass
                    except OSError:
                        pass
                    return

    def close(self) -> None:
        self.listener.close()


def test_writes_are_spread_over_the_connections() -> None:
    """The API server works on one request of a connection at a time: a burst of writes goes
    out on every connection, not queued behind one."""
    server = ScriptedServer(delay_s=0.02)
    pipeline = Pipeline(RestClient(ClientConfig(server=server.url)), connections=4)
    outcomes = Outcomes(16)
    for i in range(16):
        pipeline.post(PATH, config_map(f"spread-{i}"), outcomes.done(str(i)))
    assert outcomes.all_in.wait(30)
    pipeline.close()
    server.close()
    assert all(error is None for error in outcomes.results.values())
    assert {number for number, _ in server.requests} == {1, 2, 3, 4}


def test_writes_a_closing_server_left_unanswered_are_sent_again_on_a_new_connection() -> None:
    """An answer saying ``Connection: close`` means the server read nothing after it: the
    writes pipelined behind it are sent again (never failed), each answered once."""
    server = ScriptedServer(close_first=2)
    pipeline = Pipeline(RestClient(ClientConfig(server=server.url)), connections=1)
    outcomes = Outcomes(6)
    for i in range(6):
        pipeline.post(PATH, config_map(f"closing-{i}"), outcomes.done(str(i)))
    assert outcomes.all_in.wait(30)
    pipeline.close()
    server.close()
    assert outcomes.results == {str(i): None for i in range(6)}
    answered = [body for _, body in server.requests]
    assert all(answered.count(config_map(f"closing-{i}")) == 1 for i in range(6))
