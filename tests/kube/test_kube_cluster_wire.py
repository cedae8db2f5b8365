"""Watches read straight off the socket: events are lines, whatever the chunks they arrive in,
and an ERROR event is the typed error."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from pathlib import Path

import pytest

from kubehpc.api.errors import Gone
from kubehpc.kube.kubeconfig import ClientConfig
from kubehpc.kube.rest import ConnectionFailed, RestClient
from kubehpc.kube.wire import take_answer
from kubehpc.server.tls import ensure_tls
from kubehpc.store.home import Home

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
CHUNKS = [
    b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n{"type":"MOD',
    b'IFIED","object":{"metadata":{"name":"b"}}}\n',
    b'{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}}\n',
]


def serve_once(chunks: list[bytes]) -> tuple[str, threading.Thread]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            for chunk in chunks:
                conn.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            conn.sendall(b"0\r\n\r\n")
        listener.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}", thread


def test_events_split_across_chunks_arrive_whole_and_an_error_event_is_raised() -> None:
    url, thread = serve_once(CHUNKS)
    watch = RestClient(ClientConfig(server=url)).watch_path("/api/v1/configmaps", {"watch": "true"})
    seen = []
    with pytest.raises(Gone):
        for event in watch:
            seen.append((event.type, event.object["metadata"]["name"]))
    thread.join(5)
    assert seen == [("ADDED", "a"), ("MODIFIED", "b")]


def test_a_stream_the_server_ends_ends_the_watch() -> None:
    url, thread = serve_once(CHUNKS[:2])
    watch = RestClient(ClientConfig(server=url)).watch_path("/api/v1/configmaps", {"watch": "true"})
    assert [event.type for event in watch] == ["ADDED", "MODIFIED"]
    thread.join(5)


def serve_tls_events(tmp_path: Path, count: int) -> tuple[str, threading.Thread]:
    """A TLS server answering one watch with ``count`` events, each written on its own (one
    TLS record each, as the API server flushes every watch event)."""
    files = ensure_tls(Home(tmp_path).ensure(), ("127.0.0.1",))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(files.cert, files.key)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        raw, _ = listener.accept()
        with context.wrap_socket(raw, server_side=True) as conn:
            conn.recv(65536)
            conn.sendall(HEAD)
            for i in range(count):
                line = b'{"type":"ADDED","object":{"metadata":{"name":"p-%d"}}}\n' % i
                conn.sendall(b"%x\r\n%s\r\n" % (len(line), line))
            conn.sendall(b"0\r\n\r\n")
        listener.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return f"https://127.0.0.1:{listener.getsockname()[1]}", thread


def test_a_busy_tls_watch_delivers_every_event_without_lagging(tmp_path: Path) -> None:
    # The watch reads a busy stream in batches (it waits a little between reads); each read
    # must take every TLS record that arrived, or the watch falls behind one record per wait.
    url, thread = serve_tls_events(tmp_path, 3000)
    config = ClientConfig(server=url, ca_file=str(tmp_path / "pki" / "ca.crt"))
    started = time.monotonic()
    names = [
        event.object["metadata"]["name"]
        for event in RestClient(config).watch_path("/api/v1/pods", {"watch": "true"})
    ]
    elapsed = time.monotonic() - started
    thread.join(5)
    assert names == [f"p-{i}" for i in range(3000)]
    assert elapsed < 10, f"3000 events took {elapsed:.1f}s: one TLS record per wait"


def serve_answers(answers: list[bytes]) -> tuple[str, threading.Thread]:
    """Answer one request per connection, in turn, with each of ``answers``."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        for answer in answers:
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(answer)
        listener.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}", thread


def test_a_get_answered_503_is_sent_again_and_its_json_returned() -> None:
    body = b'{"kind":"PodList","items":[{"metadata":{"name":"a"}}]}'
    url, thread = serve_answers(
        [
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
            b'Warning: 299 - "deprecated"\r\nConnection: close\r\n\r\n%s' % (len(body), body),
        ]
    )
    client = RestClient(ClientConfig(server=url), backoff=0.01)
    assert client.raw("/api/v1/pods")["items"] == [{"metadata": {"name": "a"}}]
    assert list(client.warnings) == ["deprecated"]
    thread.join(5)


def test_a_proxy_named_in_the_environment_carries_every_request(monkeypatch: pytest.MonkeyPatch) -> None:
    # The raw connections cannot go through a proxy: with one configured, all goes through
    # httpx, which honours it (here a proxy nobody listens on, so the GET cannot succeed).
    url, thread = serve_answers([b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"])
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{dead.getsockname()[1]}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with pytest.raises(ConnectionFailed):
        RestClient(ClientConfig(server=url), retries=0).raw("/api/v1/pods")
    dead.close()
    monkeypatch.delenv("HTTP_PROXY")
    assert RestClient(ClientConfig(server=url), retries=0).raw("/api/v1/pods") == {}
    thread.join(5)


def test_take_answer_takes_only_whole_responses_and_leaves_the_rest() -> None:
    """The pipeline's reader never waits: a response comes out of the buffer only once all of
    it is there (interim 1xx answers skipped, chunked bodies joined, trailers dropped)."""
    first = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"
    )
    second = b"HTTP/1.1 409 Conflict\r\nContent-Length: 7\r\nConnection: close\r\n\r\nexists!"
    buf = bytearray(first + second[:-3])
    taken = take_answer(buf)
    assert taken is not None
    head, body = taken
    assert (head.status, body) == (201, b"hello world")
    assert bytes(buf) == second[:-3]
    assert take_answer(buf) is None and bytes(buf) == second[:-3]  # untouched until whole
    buf += second[-3:]
    taken = take_answer(buf)
    assert taken is not None
    assert (taken[0].status, taken[0].close, taken[1]) == (409, True, b"exists!")
    assert not buf
