"""Watches read straight off the socket: events are lines, whatever the chunks they arrive in,
and an ERROR event is the typed error."""

from __future__ import annotations

import socket
import threading

import pytest

from kubehpc.api.errors import Gone
from kubehpc.kube.kubeconfig import ClientConfig
from kubehpc.kube.rest import RestClient

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
