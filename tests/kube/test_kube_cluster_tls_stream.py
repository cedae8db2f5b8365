"""The scheduler's connections (``kube.wire``): TLS through memory buffers (``TlsStream``)
hands back whole records together, sends bodies of any size whole, and sees the end of the
stream and a shutdown as such; a pipelined POST is byte for byte a plain one."""

from __future__ import annotations

import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kubehpc.kube.wire import Target, TlsStream
from kubehpc.server.tls import ensure_tls
from kubehpc.store.home import Home

Serve = Callable[[ssl.SSLSocket], None]


@pytest.fixture
def pki(tmp_path: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context and a client context that trusts it (for 127.0.0.1)."""
    files = ensure_tls(Home(tmp_path).ensure(), ("127.0.0.1",))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(files.cert, files.key)
    client = ssl.create_default_context(cafile=str(tmp_path / "pki" / "ca.crt"))
    return server, client


@pytest.fixture
def serve(pki: tuple[ssl.SSLContext, ssl.SSLContext]) -> Iterator[Callable[[Serve], TlsStream]]:
    """Start a one-connection TLS server running ``handler``; return the client's stream."""
    server_context, client_context = pki
    threads: list[threading.Thread] = []

    def start(handler: Serve) -> TlsStream:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()

        def run() -> None:
            raw, _ = listener.accept()
            listener.close()
            with server_context.wrap_socket(raw, server_side=True) as conn:
                handler(conn)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        threads.append(thread)
        sock = socket.create_connection(listener.getsockname(), timeout=10)
        return TlsStream(sock, client_context, "127.0.0.1")

    yield start
    for thread in threads:
        thread.join(5)


def read_all(stream: TlsStream, size: int) -> bytes:
    buffer = bytearray(256 * 1024)
    out = bytearray()
    while len(out) < size:
        n = stream.recv_into(buffer)
        if not n:
            break
        out += buffer[:n]
    return bytes(out)


def test_every_whole_record_already_received_comes_back_from_one_read(
    serve: Callable[[Serve], TlsStream],
) -> None:
    sent = threading.Event()
    release = threading.Event()
    records = [b"%04d" % i + b"x" * 96 for i in range(200)]

    def handler(conn: ssl.SSLSocket) -> None:
        for record in records:
            conn.sendall(record)  # one TLS record each, as the API server writes answers
        sent.set()
        release.wait(10)

    stream = serve(handler)
    assert sent.wait(10)
    time.sleep(0.2)  # let loopback deliver them all
    buffer = bytearray(256 * 1024)
    n = stream.recv_into(buffer)
    release.set()
    assert bytes(buffer[:n]) == b"".join(records)
    stream.close()


def test_a_body_larger_than_a_record_is_sent_whole(serve: Callable[[Serve], TlsStream]) -> None:
    body = bytes(range(256)) * 4096  # 1 MiB: many TLS records
    received = bytearray()

    def handler(conn: ssl.SSLSocket) -> None:
        while len(received) < len(body):
            data = conn.recv(65536)
            if not data:
                break
            received.extend(data)
        conn.sendall(b"ok")

    stream = serve(handler)
    stream.sendall(body)
    assert read_all(stream, 2) == b"ok"
    assert bytes(received) == body
    stream.close()


def test_the_end_of_the_stream_reads_as_zero(serve: Callable[[Serve], TlsStream]) -> None:
    stream = serve(lambda conn: conn.sendall(b"last words"))
    assert read_all(stream, 10) == b"last words"
    assert stream.recv_into(bytearray(1024)) == 0
    stream.close()


def test_shutting_the_socket_down_wakes_a_read_that_waits(serve: Callable[[Serve], TlsStream]) -> None:
    done = threading.Event()

    def handler(conn: ssl.SSLSocket) -> None:
        done.wait(10)  # the server stays silent

    stream = serve(handler)
    stream.settimeout(None)
    result: list[int] = []
    reader = threading.Thread(target=lambda: result.append(stream.recv_into(bytearray(1024))))
    reader.start()
    time.sleep(0.2)
    stream.shutdown(socket.SHUT_RDWR)  # what a watch's stop() does from another thread
    reader.join(5)
    done.set()
    assert not reader.is_alive()
    assert result == [0]
    stream.close()


def test_a_server_whose_certificate_is_not_trusted_is_refused(tmp_path: Path) -> None:
    files = ensure_tls(Home(tmp_path / "other").ensure(), ("127.0.0.1",))
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(files.cert, files.key)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def run() -> None:
        raw, _ = listener.accept()
        try:
            server_context.wrap_socket(raw, server_side=True).close()
        except (ssl.SSLError, OSError):
            raw.close()
        listener.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    sock = socket.create_connection(listener.getsockname(), timeout=10)
    with pytest.raises(ssl.SSLCertVerificationError):
        TlsStream(sock, ssl.create_default_context(), "127.0.0.1")
    sock.close()
    thread.join(5)


def test_a_server_that_does_not_speak_tls_fails_the_handshake_with_an_os_error(
    pki: tuple[ssl.SSLContext, ssl.SSLContext],
) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def run() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
        listener.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    sock = socket.create_connection(listener.getsockname(), timeout=10)
    with pytest.raises(OSError):
        TlsStream(sock, pki[1], "127.0.0.1")
    sock.close()
    thread.join(5)


def test_a_pipelined_post_is_the_same_request_as_a_plain_one() -> None:
    # The pipeline writes each POST from a head made once per path (Target.post_head).
    target = Target("h", 443, None, "h", "/prefix", b"Host: h\r\nAuthorization: Bearer t\r\n")
    for body in (b'{"kind":"Event"}', b"", b"x" * 70000):
        path = "/api/v1/namespaces/ns/events"
        assert target.post_head(path) + b"%d\r\n\r\n%s" % (len(body), body) == target.request(
            "POST", path, body
        )


def test_take_returns_what_has_arrived_without_waiting_and_false_at_the_end(
    serve: Callable[[Serve], TlsStream],
) -> None:
    """The pipeline's one thread reads each connection only when poll says it is readable and
    must never block there: ``take`` decrypts what came, and says when the stream ended."""
    release = threading.Event()

    def handler(conn: ssl.SSLSocket) -> None:
        for i in range(50):
            conn.sendall(b"%04d" % i + b"y" * 200)
        release.wait(10)

    stream = serve(handler)
    got = bytearray()
    poller = select.poll()
    poller.register(stream, select.POLLIN)
    while len(got) < 50 * 204:
        assert poller.poll(10_000), "the server's records never became readable"
        assert stream.take(got)
    assert bytes(got) == b"".join(b"%04d" % i + b"y" * 200 for i in range(50))
    release.set()
    ended = False
    for _ in range(100):
        assert poller.poll(10_000)
        if not stream.take(got):
            ended = True
            break
    assert ended
    assert len(got) == 50 * 204
