"""HTTP/1.1 on a plain (or TLS) socket, where a general client's overhead dominates the
scheduler's CPU: its writes (:mod:`kubehpc.kube.pipeline`), its watches, and the plain GETs of
JSON (discovery, its first lists of every node and pod).

Only what those need: one connection to the API server of a :class:`ClientConfig`, requests
written as bytes, and responses read back in order with a minimal parser (status line,
``Content-Length`` or chunked body, ``Connection: close``, ``Warning``). Everything else —
other writes, the CLI's tables and logs — stays with :class:`kubehpc.kube.rest.RestClient`
and httpx.
"""

from __future__ import annotations

import base64
import select
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import cast
from urllib.parse import urlsplit

import orjson

from kubehpc.api.errors import ApiError
from kubehpc.kube.kubeconfig import ClientConfig

READ_SIZE = 256 * 1024
"""Bytes asked for per read, into a buffer each connection keeps: ``recv(READ_SIZE)`` would
allocate (and give back) that much per call, about 15 µs of system time each — most of the
system time of 20,000 small answers (docs/performance.md)."""


BUSY_S = 0.03
"""A stream that had data less than this ago is busy: wait this long before the next read,
so what arrives meanwhile comes in one read (see :class:`Reader`). A busy watch's events wait
at most this long more; a quiet one is read at once."""
WRITES_BUSY_S = 0.05
"""The same for the answers to pipelined writes: a connection gets one every few milliseconds
while the API server works through its queue. Waiting longer only delays each answer's callback
(a ``Scheduled`` Event is written once its Binding's answer is read) and, at the end of a
batch, the connection's next batch by at most this long; the other connections keep the API
server busy meanwhile. Against 10 and 20 ms for
watches and writes, 30 and 50 ms took the scheduler's CPU per pod in the drain of a 10,000-pod
backlog down by about a third (docs/performance.md, issue 7 fifth pass)."""


class ProtocolError(OSError):
    """The server's bytes are not the HTTP/1.1 this module reads (or the stream ended early)."""


class TlsStream:
    """TLS on a plain socket through memory buffers (``ssl.MemoryBIO``), with the few socket
    calls the readers and writers here use.

    An ``ssl.SSLSocket`` has OpenSSL read each TLS record off the socket in two system calls
    (its header, then its body), and one ``recv`` returns one record; the API server sends each
    answer and each watch event in a record of its own. Here one ``recv`` takes whatever has
    arrived, and one :meth:`recv_into` hands back every whole record it holds: about half the
    CPU per small record when several have arrived, as they have for the watches and writers
    that read in batches (:class:`Reader`), and the same when they come one at a time (a
    stand-alone test of 20,000 records of 400 bytes on loopback, docs/performance.md)."""

    def __init__(self, sock: socket.socket, context: ssl.SSLContext, server_hostname: str) -> None:
        self._sock = sock
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_hostname=server_hostname)
        self._raw = bytearray(READ_SIZE)
        self._raw_view = memoryview(self._raw)
        self._plain_view = memoryview(bytearray(READ_SIZE))
        while True:
            try:
                self._tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self._flush()
                if not self._feed():
                    raise ssl.SSLEOFError(
                        "the server closed the connection during the TLS handshake"
                    ) from None
        self._flush()

    def fileno(self) -> int:
        return self._sock.fileno()

    def settimeout(self, timeout: float | None) -> None:
        self._sock.settimeout(timeout)

    def shutdown(self, how: int) -> None:
        self._sock.shutdown(how)

    def close(self) -> None:
        self._sock.close()

    def _flush(self) -> None:
        if self._outgoing.pending:
            self._sock.sendall(self._outgoing.read())

    def _feed(self) -> bool:
        """What the socket has (blocking until something comes); False at its end."""
        n = self._sock.recv_into(self._raw)
        if not n:
            self._incoming.write_eof()
            return False
        self._incoming.write(self._raw_view[:n])
        return True

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                written = self._tls.write(view)
            except ssl.SSLWantReadError:  # the server renegotiates: read its part first
                self._flush()
                if not self._feed():
                    raise ssl.SSLEOFError("the server closed the connection") from None
                continue
            view = view[written:]
        self._flush()

    def take(self, into: bytearray) -> bool:
        """For a socket that is readable now: one read of what it has, and every whole record
        decrypted onto ``into`` (nothing, when only part of one came), without waiting. False
        at the end of the stream."""
        n = self._sock.recv_into(self._raw)
        if n:
            self._incoming.write(self._raw_view[:n])
        else:
            self._incoming.write_eof()
        read = cast("Callable[[int, memoryview], int]", self._tls.read)
        plain = self._plain_view
        while True:
            try:
                got = read(READ_SIZE, plain)
            except ssl.SSLWantReadError:
                break
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                return False
            if not got:
                return False
            into += plain[:got]
        self._flush()  # what reading asked to send (a TLS 1.3 key update)
        return n > 0

    def pending(self) -> int:
        """Bytes here that a :meth:`recv_into` may return without waiting for the socket."""
        return self._tls.pending() or self._incoming.pending

    def recv_into(self, buffer: bytearray) -> int:
        """Decrypted bytes into ``buffer`` (blocking until there are some); 0 at the end."""
        tls = self._tls
        # With a buffer, SSLObject.read returns the count (typeshed knows only the bytes form).
        read = cast("Callable[[int, memoryview], int]", tls.read)
        view = memoryview(buffer)
        size = len(view)
        ended = False
        if not self._incoming.pending and not tls.pending():
            # Nothing here yet (the usual case): read the socket first rather than have
            # OpenSSL say so with an exception.
            self._flush()
            ended = not self._feed()
        while True:
            try:
                n = read(size, view)
                break
            except ssl.SSLWantReadError:
                if ended:
                    return 0
                self._flush()
                ended = not self._feed()
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                return 0
        # Every other whole record already here, without touching the socket.
        while n and n < size and (self._incoming.pending or tls.pending()):
            try:
                more = read(size - n, view[n:])
            except (ssl.SSLWantReadError, ssl.SSLZeroReturnError, ssl.SSLEOFError):
                break
            if not more:
                break
            n += more
        return n


Stream = socket.socket | TlsStream
"""A connection to the API server: a plain socket, or TLS on one."""


def take(sock: Stream, into: bytearray, space: memoryview) -> bool:
    """For a connection that is readable now: what it has, onto ``into``, without waiting
    (``space``: a buffer kept for the read). False at the end of the stream."""
    if isinstance(sock, TlsStream):
        return sock.take(into)
    n = sock.recv_into(space)
    into += space[:n]
    return n > 0


@dataclass(frozen=True)
class Target:
    """Where and how to connect: host, port, TLS settings and the fixed request headers."""

    host: str
    port: int
    tls: ssl.SSLContext | None
    server_name: str
    prefix: str
    headers: bytes
    """``Host``, ``User-Agent``, ``Accept`` and credentials, each ending in CRLF."""

    @classmethod
    def of(cls, config: ClientConfig, user_agent: str = "kubehpc") -> Target:
        url = urlsplit(config.server)
        https = url.scheme == "https"
        host = url.hostname or "127.0.0.1"
        port = url.port or (443 if https else 80)
        tls: ssl.SSLContext | None = None
        if https:
            verify = config.ssl_context()
            if isinstance(verify, ssl.SSLContext):
                tls = verify
            elif verify is False:
                tls = ssl._create_unverified_context()
            else:
                tls = ssl.create_default_context()
        lines = [f"Host: {url.netloc}", f"User-Agent: {user_agent}", "Accept: application/json"]
        if config.token:
            lines.append(f"Authorization: Bearer {config.token}")
        elif config.username:
            basic = base64.b64encode(f"{config.username}:{config.password}".encode()).decode()
            lines.append(f"Authorization: Basic {basic}")
        return cls(
            host=host,
            port=port,
            tls=tls,
            server_name=config.tls_server_name or host,
            prefix=url.path.rstrip("/"),
            headers="".join(line + "\r\n" for line in lines).encode("latin-1"),
        )

    def connect(self, timeout: float | None) -> Stream:
        sock = socket.create_connection((self.host, self.port), timeout=10.0 if timeout is None else timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls is None:
            sock.settimeout(timeout)
            return sock
        try:
            stream = TlsStream(sock, self.tls, self.server_name)
        except BaseException:
            sock.close()
            raise
        stream.settimeout(timeout)
        return stream

    def request(
        self, method: str, path: str, body: bytes = b"", content_type: str = "application/json"
    ) -> bytes:
        head = f"{method} {self.prefix}{path} HTTP/1.1\r\n".encode("latin-1") + self.headers
        if body or method in ("POST", "PUT", "PATCH"):
            head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n".encode("latin-1")
        return head + b"\r\n" + body

    def post_head(self, path: str) -> bytes:
        """A POST of JSON to ``path`` as :meth:`request` writes it, up to (not including) the
        value of its ``Content-Length``."""
        line = f"POST {self.prefix}{path} HTTP/1.1\r\n".encode("latin-1")
        return line + self.headers + b"Content-Type: application/json\r\nContent-Length: "


@dataclass(slots=True)
class Head:
    status: int
    chunked: bool
    length: int
    """``Content-Length``; -1 when absent (chunked, or read until the connection closes)."""
    close: bool
    """The server closes the connection after this response."""
    retry_after: str = ""
    warnings: tuple[str, ...] = ()
    """The values of its ``Warning`` headers."""


def _header(head: bytes, name: bytes) -> bytes | None:
    """The value of header ``name`` (lower case, with its leading CRLF) in a lower-cased head."""
    start = head.find(name)
    if start < 0:
        return None
    start += len(name)
    end = head.find(b"\r\n", start)
    return head[start : end if end >= 0 else len(head)].strip()


def _warnings(head: bytes) -> tuple[str, ...]:
    values = []
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"warning":
            values.append(value.strip().decode("utf-8", errors="replace"))
    return tuple(values)


def parse_head(original: bytes) -> Head | None:
    """A response's status line and headers (without the blank line after them); None for an
    interim (1xx) response, which the real one follows."""
    raw = original.lower()
    if not raw.startswith(b"http/1.") or len(raw) < 12:
        raise ProtocolError(f"not an HTTP/1.1 response: {raw[:40]!r}")
    status = int(raw[9:12])
    if 100 <= status < 200:
        return None
    encoding = _header(raw, b"\r\ntransfer-encoding:")
    length = _header(raw, b"\r\ncontent-length:")
    connection = _header(raw, b"\r\nconnection:")
    retry_after = _header(raw, b"\r\nretry-after:")
    return Head(
        status=status,
        chunked=encoding is not None and b"chunked" in encoding,
        length=int(length) if length else -1,
        close=connection == b"close" or raw.startswith(b"http/1.0"),
        retry_after=(retry_after or b"").decode("latin-1"),
        warnings=_warnings(original) if b"\r\nwarning:" in raw else (),
    )


def take_answer(buf: bytearray) -> tuple[Head, bytes] | None:
    """The first whole response in ``buf``, taken out of it; None (``buf`` untouched) while
    part of it has still to arrive. For a reader that must not block: one thread serving many
    connections. A response whose body runs to the end of the connection is never whole here
    (pipelined answers always say their length)."""
    start = 0
    while True:
        end = buf.find(b"\r\n\r\n", start)
        if end < 0:
            return None
        head = parse_head(bytes(buf[start:end]))
        start = end + 4
        if head is not None:
            break
    if head.chunked:
        parts = []
        at = start
        while True:
            line_end = buf.find(b"\r\n", at)
            if line_end < 0:
                return None
            size = int(bytes(buf[at:line_end]).split(b";", 1)[0], 16)
            at = line_end + 2
            if size == 0:
                while True:  # trailers, up to the empty line
                    line_end = buf.find(b"\r\n", at)
                    if line_end < 0:
                        return None
                    at, blank = line_end + 2, line_end == at
                    if blank:
                        break
                break
            if len(buf) < at + size + 2:
                return None
            parts.append(bytes(buf[at : at + size]))
            at += size + 2
        body = b"".join(parts)
    elif head.length >= 0:
        at = start + head.length
        if len(buf) < at:
            return None
        body = bytes(buf[start:at])
    elif head.status in (204, 304):
        at, body = start, b""
    else:
        return None
    del buf[:at]
    return head, body


class Reader:
    """Responses off one connection, in order, from a buffer kept between them (pipelining
    puts several in one read).

    ``coalesce_s`` > 0 (the scheduler's watches and writes): when the last read returned data
    less than that long ago, wait that long before reading again, then take everything that
    has arrived. Draining a backlog, the API server answers a connection's pipelined writes
    every few milliseconds and sends a watch event per binding, each in a TLS record of its
    own; woken for each, the threads spend more CPU being woken (system calls, handing the
    interpreter lock over) than reading. A stream that has been quiet is read at once, so a
    lone request or event waits no longer than before."""

    def __init__(self, sock: Stream, coalesce_s: float = 0.0) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.coalesce_s = coalesce_s
        self._last = 0.0
        self._space = bytearray(READ_SIZE)
        self._view = memoryview(self._space)
        self._poll: select.poll | None = None
        if coalesce_s > 0:
            self._poll = select.poll()
            self._poll.register(sock, select.POLLIN)

    def _recv(self, into: bytearray) -> int:
        """Read into ``into``; 0 at the end of the stream."""
        if self._poll is None:
            n = self.sock.recv_into(self._space)
            into += self._view[:n]
            return n
        if time.monotonic() - self._last < self.coalesce_s:
            time.sleep(self.coalesce_s)
        n = self.sock.recv_into(self._space)
        into += self._view[:n]
        if n:
            # One read may give one TLS record only (an ssl.SSLSocket's): take the others that
            # came meanwhile without blocking (decrypted bytes left over, or more on the socket).
            pending = getattr(self.sock, "pending", None)
            while (pending is not None and pending()) or self._poll.poll(0):
                more = self.sock.recv_into(self._space)
                if not more:
                    break  # the end of the stream: the next read says so
                into += self._view[:more]
                n += more
        self._last = time.monotonic()
        return n

    def read(self) -> bytes:
        """The next bytes off the socket as they come (b"" at the end of the stream)."""
        out = bytearray()
        self._recv(out)
        return bytes(out)

    def _fill(self) -> None:
        if not self._recv(self.buf):
            raise ProtocolError("the API server closed the connection")

    def head(self) -> Head:
        buf = self.buf
        while True:
            end = buf.find(b"\r\n\r\n")
            while end < 0:
                self._fill()
                end = buf.find(b"\r\n\r\n")
            original = bytes(buf[:end])
            del buf[: end + 4]
            head = parse_head(original)
            if head is not None:
                return head

    def exactly(self, n: int) -> bytes:
        buf = self.buf
        while len(buf) < n:
            self._fill()
        out = bytes(buf[:n])
        del buf[:n]
        return out

    def chunk(self) -> bytes:
        """The next chunk of a chunked body; b"" for the last (its trailers are skipped)."""
        buf = self.buf
        end = buf.find(b"\r\n")
        while end < 0:
            self._fill()
            end = buf.find(b"\r\n")
        size = int(bytes(buf[:end]).split(b";", 1)[0], 16)
        del buf[: end + 2]
        if size == 0:
            while True:  # trailers, up to the empty line
                end = buf.find(b"\r\n")
                while end < 0:
                    self._fill()
                    end = buf.find(b"\r\n")
                del buf[: end + 2]
                if end == 0:
                    return b""
        data = self.exactly(size + 2)
        return data[:-2]

    def body(self, head: Head) -> bytes:
        if head.chunked:
            parts = []
            while part := self.chunk():
                parts.append(part)
            return b"".join(parts)
        if head.length >= 0:
            return self.exactly(head.length)
        if head.status in (204, 304):
            return b""
        # Neither: the body runs to the end of the connection.
        parts = [bytes(self.buf)]
        self.buf.clear()
        while data := self.read():
            parts.append(data)
        return b"".join(parts)


def send_get(reader: Reader, request: bytes) -> tuple[Head, bytes]:
    """Send one request on ``reader``'s connection and read its whole answer."""
    reader.sock.sendall(request)
    head = reader.head()
    body = reader.body(head)
    if not head.chunked and head.length < 0 and head.status not in (204, 304):
        head = replace(head, close=True)  # the body ran to the end of the connection
    return head, body


def error_of(status: int, body: bytes) -> ApiError:
    """The typed error of a failed response: its ``Status`` body, else its code."""
    try:
        doc = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict) or doc.get("kind") != "Status":
        text = body.decode(errors="replace").strip()
        doc = {"message": text or f"the server responded with HTTP {status}"}
    doc.setdefault("code", status)
    return ApiError.from_status(doc)
