"""The scheduler's writes — Bindings and Events — pipelined on a few keep-alive connections,
all served by one thread.

Draining a backlog, the scheduler writes two small objects per pod. One thread per request
(each with its own request/response cycle and header parsing) spends more CPU in switching
threads and parsing headers than in the bytes themselves, and so did one thread per connection:
eight threads, each woken for its own answers, handed the interpreter lock to each other
thousands of times a second. Here one thread keeps every connection: it sends what is queued
(HTTP/1.1 pipelining: Go's server answers a connection's requests in order), waits for any
connection to have answers, and reads all of them in one pass, with a minimal parser. The API
server still works on ``connections`` requests at once, so the pace is its own.

Failures follow client-go's caution: writes that could not be sent (no connection, or one that
failed on sending) are sent once more on a fresh one; a write that was sent but got no answer
may have been acted on and is never resent — its callback gets :class:`ConnectionFailed` (a
Binding sent twice is refused with a Conflict anyway, and the loop then reads the pod as it
is). Answers are not decoded unless they are errors. The client's rate limit
(``RestClient.limiter``) is taken per request.
"""

from __future__ import annotations

import logging
import queue
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable

from kubehpc.api.errors import ApiError
from kubehpc.kube.rest import ConnectionFailed, RestClient
from kubehpc.kube.wire import READ_SIZE, WRITES_BUSY_S, Stream, Target, error_of, take, take_answer

log = logging.getLogger(__name__)
Done = Callable[[ApiError | None], None]
"""Called on the pipeline's thread with None (written) or the typed error."""


class _Post:
    __slots__ = ("data", "done", "tried")

    def __init__(self, data: bytes, done: Done) -> None:
        self.data = data
        self.done = done
        self.tried = 0
        """Connections it could not be sent on."""


class Pipeline:
    def __init__(
        self,
        rest: RestClient,
        connections: int = 8,
        depth: int = 64,
        timeout: float = 30.0,
        idle_s: float = 20.0,
        busy_s: float = WRITES_BUSY_S,
    ) -> None:
        self.rest = rest
        self.target = Target.of(rest.config)
        self.depth = depth
        """Writes in flight on one connection at most."""
        self.timeout = timeout
        """Seconds a connection with writes in flight may go without an answer."""
        self.idle_s = idle_s
        """A connection idle this long is replaced before use, so a server's idle close never
        races with a batch."""
        self.busy_s = busy_s
        self._heads: dict[str, bytes] = {}
        """Per path, a POST's head up to the value of its Content-Length."""
        self._queue: queue.SimpleQueue[_Post] = queue.SimpleQueue()
        self._backlog: deque[_Post] = deque()
        """Taken from the queue (or to be sent again), not yet sent; the thread's own."""
        self._slots: list[_Connection | None] = [None] * connections
        self._closed = False
        self._asleep = False
        """The thread waits for nothing but a post: the next post wakes it."""
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._thread = threading.Thread(target=self._run, name="pipeline", daemon=True)
        self._thread.start()

    def post(self, path: str, body: bytes, done: Done) -> None:
        """Queue a POST of ``body`` (JSON) to ``path``; ``done`` hears how it went."""
        if self._closed:
            done(ConnectionFailed("the scheduler's writer is closed"))
            return
        head = self._heads.get(path)
        if head is None:
            # Every write goes to one of a few paths: its request line and headers are made
            # once, only the length is written per request.
            head = self._heads[path] = self.target.post_head(path)
        self._queue.put(_Post(b"%s%d\r\n\r\n%s" % (head, len(body), body), done))
        if self._asleep:
            self._asleep = False
            self._wake()

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued, then stop the thread."""
        self._closed = True
        self._wake()
        self._thread.join(timeout)

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:  # full (the thread is awake anyway) or closed
            pass

    # ----------------------------------------------------------------- the thread

    def _run(self) -> None:
        last_data = 0.0
        try:
            while True:
                self._take_queued()
                if self._backlog:
                    self._send()
                busy = [c for c in self._slots if c is not None and c.in_flight]
                if not busy:
                    if self._backlog:
                        continue  # every connection failed: the next pass resends or fails
                    if self._closed and self._queue.empty():
                        return
                    self._wait(None)
                    continue
                if time.monotonic() - last_data < self.busy_s:
                    # Answers came less than busy_s ago: let more arrive, read them in one go.
                    time.sleep(self.busy_s)
                ready = self._wait(busy)
                now = time.monotonic()
                if ready:
                    last_data = now
                    for conn in ready:
                        self._read(conn, now)
                for conn in busy:
                    if conn.in_flight and now - conn.used > self.timeout and conn in self._slots:
                        self._drop(conn, f"no answer from the API server within {self.timeout:.0f}s")
        finally:
            for left in self._slots:
                if left is not None:
                    self._drop(left, "the scheduler's writer is closed")
            self._take_queued()  # a post that raced with close() still hears of it
            self._fail(list(self._backlog), "the scheduler's writer is closed")
            self._wake_r.close()
            self._wake_w.close()

    def _take_queued(self) -> None:
        while True:
            try:
                self._backlog.append(self._queue.get_nowait())
            except queue.Empty:
                return

    def _wait(self, busy: list[_Connection] | None) -> list[_Connection]:
        """Until a post comes (or, with ``busy``, one of those connections has answers or the
        oldest of them reaches the timeout): the busy connections that can be read."""
        poller = select.poll()
        poller.register(self._wake_r, select.POLLIN)
        by_fd = {}
        for conn in busy or ():
            by_fd[conn.fileno()] = conn
            poller.register(conn.fileno(), select.POLLIN)
        timeout = self.idle_s
        if busy:
            timeout = max(0.0, min(c.used for c in busy) + self.timeout - time.monotonic())
        self._asleep = True
        # A post (or close) after this line wakes the poll; one before it is seen here.
        ready = poller.poll(1000 * timeout if self._queue.empty() else 0)
        self._asleep = False
        woken = [by_fd[fd] for fd, _ in ready if fd in by_fd]
        if len(woken) < len(ready):
            try:
                while self._wake_r.recv(4096):
                    pass
            except OSError:  # nothing left to read
                pass
        return woken

    def _send(self) -> None:
        """Spread the backlog over the connections with room, least loaded first: the API
        server works on one request per connection at a time."""
        backlog = self._backlog
        order = sorted(range(len(self._slots)), key=lambda i: _load(self._slots[i]))
        share = -(-len(backlog) // len(order))
        for i in order:
            if not backlog:
                return
            conn: _Connection | None = self._slots[i]
            if conn is not None and not conn.in_flight and time.monotonic() - conn.used > self.idle_s:
                conn.close()
                conn = self._slots[i] = None
            count = min(self.depth - _load(conn), share, len(backlog))
            if count <= 0:
                continue
            batch = [backlog.popleft() for _ in range(count)]
            self.rest.limiter.acquire(len(batch))
            try:
                if conn is None:
                    conn = self._slots[i] = _Connection(self.target.connect(self.timeout))
                conn.send(b"".join(p.data for p in batch))
            except OSError as err:
                if conn is not None:
                    # What it had in flight may have been acted on; this batch was not sent.
                    self._drop(conn, f"no answer from the API server at {self.rest.config.server}: {err}")
                self._send_again_or_fail(batch, err)
                continue
            conn.in_flight.extend(batch)

    def _send_again_or_fail(self, batch: list[_Post], err: OSError) -> None:
        again = []
        for post in batch:
            post.tried += 1
            if post.tried >= 2:
                message = f"cannot reach the API server at {self.rest.config.server}: {err}"
                _call(post.done, ConnectionFailed(message))
            else:
                again.append(post)
        self._backlog.extendleft(reversed(again))

    def _read(self, conn: _Connection, now: float) -> None:
        """Every answer that has come on ``conn``, each to its write's callback."""
        try:
            alive = take(conn.sock, conn.buf, conn.space)
            while conn.in_flight:
                answer = take_answer(conn.buf)
                if answer is None:
                    break
                head, body = answer
                post = conn.in_flight.popleft()
                conn.used = now
                _call(post.done, error_of(head.status, body) if head.status >= 400 else None)
                if head.close:
                    # The server closes the connection after this answer: what it has not
                    # answered it never read, so it goes out again on another connection.
                    self._backlog.extendleft(reversed(conn.in_flight))
                    conn.in_flight.clear()
                    self._drop(conn, "")
                    return
        except (OSError, ValueError) as err:
            self._drop(conn, f"no answer from the API server at {self.rest.config.server}: {err}")
            return
        if not alive:
            self._drop(conn, "the API server closed the connection")

    def _drop(self, conn: _Connection, message: str) -> None:
        """Close ``conn``; what it has in flight fails with ``message``."""
        if conn in self._slots:
            self._slots[self._slots.index(conn)] = None
        conn.close()
        self._fail(list(conn.in_flight), message)
        conn.in_flight.clear()

    @staticmethod
    def _fail(posts: list[_Post], message: str) -> None:
        for post in posts:
            _call(post.done, ConnectionFailed(message))


def _load(conn: _Connection | None) -> int:
    return len(conn.in_flight) if conn is not None else 0


def _call(done: Done, error: ApiError | None) -> None:
    try:
        done(error)
    except Exception:  # a callback's bug must not take the writer down
        log.exception("a write's callback failed")


class _Connection:
    def __init__(self, sock: Stream) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.space = memoryview(bytearray(READ_SIZE))
        self.in_flight: deque[_Post] = deque()
        self.used = time.monotonic()

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)
        self.used = time.monotonic()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
