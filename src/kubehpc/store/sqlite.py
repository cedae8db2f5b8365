"""The durable half of the store: one SQLite file in WAL mode.

Three tables: ``objects`` (the current version of every object), ``events`` (the change log
the watch history is served from after a restart, pruned to a window; its newest entry is
also the resourceVersion counter) and ``meta`` (the compaction point of the change log).

Durability: every write transaction is committed before the store call that made it returns.
With ``journal_mode=WAL`` and ``synchronous=NORMAL`` a commit appends the transaction to the
WAL file with ``write()`` — the bytes are in the kernel's page cache when ``COMMIT`` returns —
and fsyncs only at checkpoints. So a committed write survives ``kill -9`` of the process (the
kernel still holds and later writes those pages), which is the guarantee we give: an
acknowledged write is never lost to a crash of kubehpc. A power loss or kernel crash can lose
the last transactions before a checkpoint (never corrupt the database); ``synchronous=FULL``
would close that gap at the price of an fsync per commit.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

from kubehpc.store.records import DELETED, Change, Record

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    rv INTEGER NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (resource, namespace, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
    rv INTEGER PRIMARY KEY, type TEXT NOT NULL, resource TEXT NOT NULL,
    namespace TEXT NOT NULL, name TEXT NOT NULL, data BLOB NOT NULL, prev BLOB
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""
_UPSERT_OBJECT = "INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?)"
_DELETE_OBJECT = "DELETE FROM objects WHERE resource = ? AND namespace = ? AND name = ?"

# A new database gets 16 KiB pages rather than SQLite's 4 KiB: a commit rewrites every page it
# touches, and a Pod or Job spans one or two small pages (plus overflow pages), so small pages
# meant ~4 times the WAL frames and write() calls per object (docs/performance.md, "Seventh
# pass"). An existing database keeps the page size it was made with (WAL mode cannot change it).
PAGE_SIZE = 16384
# The page cache, in KiB (SQLite's default is 2 MiB): the objects table is written at random
# keys, and with a small cache most commits read b-tree pages back from the file first.
CACHE_KIB = 32768
# Checkpoints (which fsync) every ~40 MB of WAL rather than SQLite's default ~4 MB: fewer
# stalls in write bursts, at the price of a larger WAL file between checkpoints.
CHECKPOINT_BYTES = 40 << 20
# Rows per multi-row INSERT: one statement step inserts them all, where executemany steps
# (and hands the GIL back and forth) once per row. Chunks are powers of two, so the
# connection's statement cache holds a handful of statements.
_MAX_ROWS_PER_INSERT = 64


class SqliteLog:
    """Objects, change log and counters in one SQLite database. Not thread-safe by itself:
    the store calls it under its write lock."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # isolation_level=None: we issue BEGIN/COMMIT ourselves, one transaction per flush.
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        # Takes effect only on a database with no pages yet, so it must come before WAL mode.
        self._db.execute(f"PRAGMA page_size={PAGE_SIZE}")
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        self.page_size = int(self._db.execute("PRAGMA page_size").fetchone()[0])
        self._db.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_BYTES // self.page_size}")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def counter(self, key: str) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return int(row[0]) if row else 0

    def objects(self) -> Iterator[tuple[str, str, str, bytes]]:
        """(resource, namespace, name, data) of every stored object."""
        yield from self._db.execute("SELECT resource, namespace, name, data FROM objects")

    def changes_after(self, rv: int, limit: int | None = None) -> list[Change]:
        """Logged changes with a resourceVersion above ``rv``, oldest first (``limit``: the
        newest ``limit`` of them)."""
        if limit is not None:
            rows = self._db.execute(
                "SELECT * FROM (SELECT rv, type, resource, namespace, name, data, prev FROM events "
                "WHERE rv > ? ORDER BY rv DESC LIMIT ?) ORDER BY rv",
                (rv, limit),
            ).fetchall()
        else:
            rows = self._db.execute(
                "SELECT rv, type, resource, namespace, name, data, prev FROM events WHERE rv > ? ORDER BY rv",
                (rv,),
            ).fetchall()
        return [
            Change(r[0], r[1], r[2], r[3], r[4], Record(r[5]), Record(r[6]) if r[6] is not None else None)
            for r in rows
        ]

    def last_rv(self) -> int:
        """The last resourceVersion handed out: the newest logged change (the log always keeps
        its newest entries) or, for a database whose log is empty, the saved counter."""
        row = self._db.execute("SELECT MAX(rv) FROM events").fetchone()
        return max(int(row[0] or 0), self.counter("rv"))

    def write(self, changes: Sequence[Change]) -> None:
        """Commit ``changes`` in one transaction, in order (returns once committed)."""
        db = self._db
        db.execute("BEGIN")
        try:
            if len(changes) == 1 or any(c.type == DELETED for c in changes):
                # In order, so that an object created and deleted in one batch ends up absent.
                for c in changes:
                    if c.type == DELETED:
                        db.execute(_DELETE_OBJECT, (c.resource, c.namespace, c.name))
                    else:
                        db.execute(_UPSERT_OBJECT, (c.resource, c.namespace, c.name, c.rv, c.record.raw))
            else:
                _insert_rows(
                    db,
                    "INSERT OR REPLACE INTO objects",
                    5,
                    [(c.resource, c.namespace, c.name, c.rv, c.record.raw) for c in changes],
                )
            _insert_rows(
                db,
                "INSERT INTO events",
                7,
                [
                    (
                        c.rv,
                        c.type,
                        c.resource,
                        c.namespace,
                        c.name,
                        c.record.raw,
                        c.prev.raw if c.prev else None,
                    )
                    for c in changes
                ],
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def compact(self, up_to_rv: int) -> None:
        """Forget logged changes at or below ``up_to_rv`` (watches from there get 410)."""
        self._db.execute("BEGIN")
        try:
            self._db.execute("DELETE FROM events WHERE rv <= ?", (up_to_rv,))
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('compacted', ?)", (up_to_rv,))
            # The counter survives even if compaction emptied the log.
            self._db.execute(
                "INSERT OR REPLACE INTO meta VALUES "
                "('rv', MAX(?, COALESCE((SELECT MAX(rv) FROM events), 0)))",
                (up_to_rv,),
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise


def _insert_rows(db: sqlite3.Connection, insert: str, width: int, rows: Sequence[tuple[object, ...]]) -> None:
    """``insert`` (``INSERT INTO table``) every row, in order, a multi-row statement at a time."""
    at = 0
    while at < len(rows):
        n = min(_MAX_ROWS_PER_INSERT, 1 << ((len(rows) - at).bit_length() - 1))
        chunk = rows[at : at + n]
        db.execute(_values_sql(insert, width, n), [value for row in chunk for value in row])
        at += n


@functools.lru_cache(maxsize=64)
def _values_sql(insert: str, width: int, rows: int) -> str:
    row = "(" + ", ".join("?" * width) + ")"
    return f"{insert} VALUES " + ", ".join([row] * rows)
