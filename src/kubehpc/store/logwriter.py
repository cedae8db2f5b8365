"""The store's log writer: a process of its own that commits the change log to the SQLite file.

The store's process runs on one core (the interpreter lock); SQLite's part of a commit (pages,
the WAL's write() calls, checkpoints) is a tenth of its CPU end to end. A thread gains nothing
(docs/performance.md, "Thirteenth pass": a thread coming back from SQLite waits for the lock
behind the threads it let run); a process runs it on the machine's other core. The store still
waits for every commit, so what it acknowledges is on disk as before: the writer changes
where a commit runs, not when it is done. PostgreSQL's WAL writer is the same idea.

:class:`LogWriter` starts it for ``kubehpc.store.sqlite.SqliteLog`` as ``python -I -S
logwriter.py DB CACHE_KIB CHECKPOINT_PAGES``: run by path, isolated and without site-packages,
this module imports the standard library only (and starts in a fraction of the time kubehpc's
imports take). It runs interpreted (scripts/build_native.py): a process handle the store drops
without closing must still end its writer, which takes a weak reference compiled classes lack.

Requests come on stdin and replies go to stdout, one request at a time, each request an 8-byte
little-endian length and a ``marshal`` body:

* ``("write", rows)``: insert ``rows`` (tuples of the ``events`` table's columns) in one
  transaction;
* ``("compact", up_to_rv, doomed)``: delete the rows at the resourceVersions in ``doomed``
  and record ``up_to_rv`` as the compaction point, in one transaction;
* ``("query_only", on)``: refuse (or again allow) writes, as a read-only or full disk does
  (``PRAGMA query_only``): how tests make a commit fail.

A reply is ``b"k"`` once the transaction is committed, or ``b"e"``, a 4-byte length and a
UTF-8 message after it was rolled back. The writer exits when stdin closes, which is also what
the death of the store's process does: a request it had not wholly read is not applied.
"""

from __future__ import annotations

import functools
import marshal
import os
import sqlite3
import struct
import subprocess
import sys
import weakref
from pathlib import Path
from typing import Any

# Rows per multi-row statement: one step inserts (or deletes) them all, where executemany steps
# once per row. Chunks are powers of two, so a handful of statements are ever prepared.
_MAX_ROWS_PER_STATEMENT = 64
_HEADER = struct.Struct("<Q")


def _read_exactly(fd: int, size: int) -> bytes | None:
    """``size`` bytes from ``fd``, or None at end of file (the store is gone)."""
    parts: list[bytes] = []
    left = size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def in_chunks(
    db: sqlite3.Connection, head: str, item: str, sep: str, rows: list[tuple[Any, ...]], tail: str = ""
) -> None:
    """Run ``head + sep.join(item for each row) + tail`` over every row, in order, a chunk of
    rows per statement."""
    at = 0
    while at < len(rows):
        n = min(_MAX_ROWS_PER_STATEMENT, 1 << ((len(rows) - at).bit_length() - 1))
        values = [value for row in rows[at : at + n] for value in row]
        db.execute(_statement(head, item, sep, tail, n), values)
        at += n


@functools.lru_cache(maxsize=64)
def _statement(head: str, item: str, sep: str, tail: str, rows: int) -> str:
    return head + sep.join([item] * rows) + tail


def _write(db: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    in_chunks(db, "INSERT INTO events VALUES ", "(?, ?, ?, ?, ?, ?, ?)", ", ", rows)


def _compact(db: sqlite3.Connection, up_to_rv: int, doomed: list[int]) -> None:
    in_chunks(db, "DELETE FROM events WHERE rv IN (", "?", ", ", [(rv,) for rv in doomed], ")")
    db.execute("INSERT OR REPLACE INTO meta VALUES ('compacted', ?)", (up_to_rv,))
    # The counter survives even if compaction emptied the log.
    db.execute(
        "INSERT OR REPLACE INTO meta VALUES ('rv', MAX(?, COALESCE((SELECT MAX(rv) FROM events), 0)))",
        (up_to_rv,),
    )


def _transaction(db: sqlite3.Connection, request: tuple[Any, ...]) -> None:
    op = request[0]
    if op == "query_only":
        db.execute(f"PRAGMA query_only={'ON' if request[1] else 'OFF'}")
        return
    db.execute("BEGIN")
    try:
        if op == "write":
            _write(db, request[1])
        elif op == "compact":
            _compact(db, request[1], request[2])
        else:
            raise ValueError(f"unknown log writer request {op!r}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def serve(path: str, cache_kib: int, checkpoint_pages: int, requests: int = 0, replies: int = 1) -> None:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(f"PRAGMA cache_size=-{cache_kib}")
    db.execute(f"PRAGMA wal_autocheckpoint={checkpoint_pages}")
    try:
        while True:
            header = _read_exactly(requests, _HEADER.size)
            if header is None:
                return
            body = _read_exactly(requests, _HEADER.unpack(header)[0])
            if body is None:
                return  # the store died while sending: apply nothing of it
            try:
                _transaction(db, marshal.loads(body))
            except Exception as exc:  # reported to the store, which undoes the write
                message = f"{type(exc).__name__}: {exc}".encode()
                reply = b"e" + struct.pack("<I", len(message)) + message
            else:
                reply = b"k"
            try:
                os.write(replies, reply)
            except BrokenPipeError:
                return  # the store died waiting for this reply
    finally:
        db.close()


class LogWriter:
    """The writer process of one log, from the store's side: one request at a time (the store
    calls its log under its write lock). Owns ``lock_fd``, the log's lock, which the writer
    holds open (inherited) for as long as it lives: closed once the writer has exited (if the
    writer cannot be started, the caller still owns it)."""

    def __init__(self, path: Path, cache_kib: int, checkpoint_pages: int, lock_fd: int) -> None:
        command = [sys.executable, "-I", "-S", __file__, str(path), str(cache_kib), str(checkpoint_pages)]
        self._proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, pass_fds=(lock_fd,)
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._requests = self._proc.stdin.fileno()
        self._replies = self._proc.stdout.fileno()
        self._broken = ""
        # A store dropped without close() still ends its writer, reaps it and lets go of the lock.
        self._finalizer = weakref.finalize(self, _end, self._proc, lock_fd)

    @property
    def pid(self) -> int:
        return self._proc.pid

    def call(self, request: tuple[Any, ...]) -> None:
        """Send ``request``; return once the writer committed it, raise
        ``sqlite3.OperationalError`` when it rolled it back or is gone."""
        if self._broken:
            raise sqlite3.OperationalError(self._broken)
        body = marshal.dumps(request)
        try:
            _write_all(self._requests, _HEADER.pack(len(body)) + body)
            reply = os.read(self._replies, 1)
            if reply == b"e":
                size = struct.unpack("<I", _read_reply(self._replies, 4))[0]
                raise sqlite3.OperationalError(_read_reply(self._replies, size).decode())
        except OSError as exc:
            reply, detail = b"", str(exc)
        else:
            detail = "no reply"
        if reply != b"k":
            # Whether the request was committed is unknown from here on: refuse every write.
            self._broken = (
                f"the store's log writer is gone ({detail}; exit status {self._proc.poll()}): restart kubehpc"
            )
            raise sqlite3.OperationalError(self._broken)

    def close(self) -> None:
        self._finalizer()


def _end(proc: subprocess.Popen[bytes], lock_fd: int) -> None:
    """Close the writer's requests (it finishes the one in hand and exits), reap it, and let go
    of the lock."""
    try:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    finally:
        os.close(lock_fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_reply(fd: int, size: int) -> bytes:
    data = _read_exactly(fd, size)
    if data is None:
        raise OSError("the log writer closed its replies")
    return data


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
