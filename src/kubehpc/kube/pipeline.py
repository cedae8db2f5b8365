"""The scheduler's writes — Bindings and Events — pipelined on a few keep-alive connections.

Draining a backlog, the scheduler writes two small objects per pod. One thread per request
(each with its own request/response cycle and header parsing) spends more CPU in switching
threads and parsing headers than in the bytes themselves. Here each connection has one thread
that takes whatever writes are queued (up to ``depth``), sends them in one go (HTTP/1.1
pipelining: Go's server answers them in order), and reads the answers with a minimal parser.
The API server still works on ``connections`` requests at once, so the pace is its own.

Failures follow client-go's caution: a batch that could not be sent (no connection, or a
connection that failed on sending) is sent once more on a fresh one; a write that was sent but
got no answer may have been acted on and is never resent — its callback gets
:class:`ConnectionFailed` (a Binding sent twice is refused with a Conflict anyway, and the loop
then reads the pod as it is). Answers are not decoded unless they are errors.
The client's rate limit (``RestClient.limiter``) is taken per request.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from kubehpc.api.errors import ApiError
from kubehpc.kube.rest import ConnectionFailed, RestClient
from kubehpc.kube.wire import WRITES_BUSY_S, Reader, Stream, Target, error_of

log = logging.getLogger(__name__)
Done = Callable[[ApiError | None], None]
"""Called on a connection thread with None (written) or the typed error."""


class _Post:
    __slots__ = ("data", "done")

    def __init__(self, data: bytes, done: Done) -> None:
        self.data = data
        self.done = done


class Pipeline:
    def __init__(
        self,
        rest: RestClient,
        connections: int = 8,
        depth: int = 64,
        timeout: float = 30.0,
        idle_s: float = 20.0,
    ) -> None:
        self.rest = rest
        self.target = Target.of(rest.config)
        self.depth = depth
        self.timeout = timeout
        self.idle_s = idle_s
        """A connection idle this long is replaced before use, so a server's idle close never
        races with a batch."""
        self._heads: dict[str, bytes] = {}
        """Per path, a POST's head up to the value of its Content-Length."""
        self._queue: queue.SimpleQueue[_Post | None] = queue.SimpleQueue()
        self._closed = False
        self._threads = [
            threading.Thread(target=self._run, name=f"pipeline-{i}", daemon=True) for i in range(connections)
        ]
        for thread in self._threads:
            thread.start()

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

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued, then stop the connection threads."""
        self._closed = True
        for _ in self._threads:
            self._queue.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    # ----------------------------------------------------------------- one connection

    def _run(self) -> None:
        conn: _Connection | None = None
        try:
            while True:
                item = self._queue.get()
                if item is None:
                    return
                batch = [item]
                last = False
                while len(batch) < self.depth:
                    try:
                        more = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if more is None:
                        last = True
                        break
                    batch.append(more)
                conn = self._write(conn, batch)
                if last:
                    return
        finally:
            if conn is not None:
                conn.close()

    def _write(self, conn: _Connection | None, batch: list[_Post]) -> _Connection | None:
        self.rest.limiter.acquire(len(batch))
        while batch:
            sent = False
            for attempt in (0, 1):
                if conn is not None and time.monotonic() - conn.used > self.idle_s:
                    conn.close()
                    conn = None
                try:
                    if conn is None:
                        conn = _Connection(self.target.connect(self.timeout))
                    conn.send(b"".join(p.data for p in batch))
                    sent = True
                    break
                except OSError as err:
                    if conn is not None:
                        conn.close()
                        conn = None
                    if attempt == 1:
                        self._fail(batch, f"cannot reach the API server at {self.rest.config.server}: {err}")
                        return None
            if not sent:
                return conn
            assert conn is not None
            batch, conn = self._answers(conn, batch)
        return conn

    def _answers(self, conn: _Connection, batch: list[_Post]) -> tuple[list[_Post], _Connection | None]:
        """Read the batch's answers in order; what the server will not answer (it closed the
        connection after an earlier one, saying so) comes back to be sent again."""
        for i, post in enumerate(batch):
            try:
                head = conn.reader.head()
                body = conn.reader.body(head)
            except (OSError, ValueError) as err:
                conn.close()
                self._fail(batch[i:], f"no answer from the API server at {self.rest.config.server}: {err}")
                return [], None
            conn.used = time.monotonic()
            error = error_of(head.status, body) if head.status >= 400 else None
            _call(post.done, error)
            if head.close:
                conn.close()
                return batch[i + 1 :], None
        return [], conn

    @staticmethod
    def _fail(batch: list[_Post], message: str) -> None:
        for post in batch:
            _call(post.done, ConnectionFailed(message))


def _call(done: Done, error: ApiError | None) -> None:
    try:
        done(error)
    except Exception:  # a callback's bug must not take the connection thread down
        log.exception("a write's callback failed")


class _Connection:
    def __init__(self, sock: Stream) -> None:
        self.sock = sock
        self.reader = Reader(sock, coalesce_s=WRITES_BUSY_S)
        self.used = time.monotonic()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)
        self.used = time.monotonic()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
