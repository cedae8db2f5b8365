"""The durable half of the store: one SQLite file in WAL mode, written append-only.

Two tables: ``events``, the change log, and ``meta`` (the compaction point of the log and the
resourceVersion counter). The log is the only copy of the objects, as in a log-structured
store: a restart reads the current version of every object from it (the newest row of each
object, unless that row is its deletion). Every write appends rows at the end of the log's
b-tree; an earlier format also kept an ``objects`` table keyed by name, whose writes landed on
random pages and cost twice the log's (docs/performance.md, "Seventh pass").

A change carries the version before it (selector watches need it to tell an object leaving
their selection from one entering it). A row names that version by its resourceVersion
(``prev_rv``): it is the object's previous row, so reading it back is a lookup by primary key,
where storing it again in full (``prev``, as the previous format did) wrote about a third more
bytes per workload (docs/performance.md, "Fifteenth pass"). Compaction forgets the rows at or
below a resourceVersion that were replaced at or below it too, so the watch history before that
point is gone (watches from there get 410) while every stored object stays, and so does the
version each object had at that point, as etcd keeps it, when a later change names it.

Databases in the earlier formats are converted when they are opened (one way: an older kubehpc
would not see the objects, or the previous versions, of a converted database).

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

import array
import functools
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

from kubehpc.store.records import DELETED, Change, Record


def _as_null(value: None) -> None:
    return None


# sqlite3 binds int, float, str and bytearray parameters as they are, but hands bytes and None
# to its adaptation protocol first: no adapter registered, it looks for ``__adapt__`` on its
# protocol and ``__conform__`` on the value, and each miss raises and clears an AttributeError
# with a formatted message. Every row of the log binds a bytes object and one or two None:
# a third of the instructions of a commit went there. Registered adapters are found by one dict
# lookup; both return the value unchanged (``bytes(b)`` is ``b`` for bytes), so what is bound
# is the same, for every connection of the process.
sqlite3.register_adapter(bytes, bytes)
sqlite3.register_adapter(type(None), _as_null)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    rv INTEGER PRIMARY KEY, type TEXT NOT NULL, resource TEXT NOT NULL,
    namespace TEXT NOT NULL, name TEXT NOT NULL, data BLOB NOT NULL, prev BLOB, prev_rv INTEGER
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""
# ``PRAGMA user_version`` of a database in this format (0: the format with an objects table;
# 1: previous versions stored in full in ``prev``, no ``prev_rv``).
FORMAT = 2

# A new database gets 16 KiB pages rather than SQLite's 4 KiB: fewer WAL frames and write()
# calls per commit. An existing database keeps the page size it was made with (WAL mode
# cannot change it).
PAGE_SIZE = 16384
# The page cache, in KiB (SQLite's default is 2 MiB).
CACHE_KIB = 32768
# Checkpoints (which fsync) every ~40 MB of WAL rather than SQLite's default ~4 MB: fewer
# stalls in write bursts, at the price of a larger WAL file between checkpoints.
CHECKPOINT_BYTES = 40 << 20
# Rows per multi-row statement: one step inserts (or deletes) them all, where executemany
# steps (and hands the GIL back and forth) once per row. Chunks are powers of two, so the
# connection's statement cache holds a handful of statements.
_MAX_ROWS_PER_STATEMENT = 64


class SqliteLog:
    """The change log (and with it every object) and counters in one SQLite database. Not
    thread-safe by itself: the store calls it under its write lock."""

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
        page_size = int(self._db.execute("PRAGMA page_size").fetchone()[0])
        self._db.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_BYTES // page_size}")
        self._db.executescript(_SCHEMA)
        if int(self._db.execute("PRAGMA user_version").fetchone()[0]) < FORMAT:
            self._convert()
        # Rows that are no longer an object's current version, by resourceVersion, and the
        # resourceVersion of the row that replaced each (a later version of the object or its
        # deletion; a deletion row replaces itself): compaction up to ``rv`` forgets the rows
        # replaced at or below ``rv``. Kept in memory only; ``objects()``, which the store reads
        # when it opens the file, finds them all again, so a crash loses none.
        self._superseded = array.array("q")
        self._superseded_by = array.array("q")

    def _convert(self) -> None:
        """From the earlier formats. With an ``objects`` table: each current object becomes a
        log row at its resourceVersion, unless the log still holds the change that wrote it.
        Without ``prev_rv``: the column is added; the rows written before keep their ``prev``."""
        db = self._db
        db.execute("BEGIN")
        try:
            if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'objects'").fetchone():
                db.execute(
                    "INSERT OR IGNORE INTO events (rv, type, resource, namespace, name, data) "
                    "SELECT rv, 'ADDED', resource, namespace, name, data FROM objects"
                )
                db.execute("DROP TABLE objects")
            columns = {row[1] for row in db.execute("PRAGMA table_info(events)")}
            if "prev_rv" not in columns:
                db.execute("ALTER TABLE events ADD COLUMN prev_rv INTEGER")
            db.execute(f"PRAGMA user_version = {FORMAT}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self._db.close()

    def counter(self, key: str) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return int(row[0]) if row else 0

    def objects(self) -> Iterator[tuple[str, str, str, int, bytes]]:
        """(resource, namespace, name, resourceVersion, data) of every stored object: the newest
        log row of each, unless that row is its deletion. Also notes which rows are superseded."""
        current: dict[tuple[str, str, str], tuple[int, str, bytes]] = {}
        superseded, by = self._superseded, self._superseded_by
        del superseded[:]
        del by[:]
        for rv, type_, resource, namespace, name, data in self._db.execute(
            "SELECT rv, type, resource, namespace, name, data FROM events ORDER BY rv"
        ):
            key = (resource, namespace, name)
            before = current.get(key)
            if before is not None:
                superseded.append(before[0])
                by.append(rv)
            current[key] = (rv, type_, data)
        for (resource, namespace, name), (rv, type_, data) in current.items():
            if type_ == DELETED:
                superseded.append(rv)
                by.append(rv)
            else:
                yield resource, namespace, name, rv, data

    def changes_after(self, rv: int, limit: int | None = None) -> list[Change]:
        """Logged changes with a resourceVersion above ``rv``, oldest first (``limit``: the
        newest ``limit`` of them), each with the version before it."""
        columns = "rv, type, resource, namespace, name, data, prev, prev_rv"
        if limit is not None:
            rows = self._db.execute(
                f"SELECT * FROM (SELECT {columns} FROM events "
                "WHERE rv > ? ORDER BY rv DESC LIMIT ?) ORDER BY rv",
                (rv, limit),
            ).fetchall()
        else:
            rows = self._db.execute(
                f"SELECT {columns} FROM events WHERE rv > ? ORDER BY rv", (rv,)
            ).fetchall()
        data = {r[0]: r[5] for r in rows}
        data.update(self._rows_data([r[7] for r in rows if r[7] is not None and r[7] not in data]))
        changes = []
        for r in rows:
            prev: Record | None = None
            if r[6] is not None:  # written by the previous format
                prev = Record(r[6])
            elif r[7] is not None and r[7] in data:
                prev = Record(data[r[7]], rv=r[7])
            changes.append(Change(r[0], r[1], r[2], r[3], r[4], Record(r[5], rv=r[0]), prev))
        return changes

    def _rows_data(self, rvs: list[int]) -> dict[int, bytes]:
        """The data of the rows at these resourceVersions (those the log still holds)."""
        out: dict[int, bytes] = {}
        for at in range(0, len(rvs), _MAX_ROWS_PER_STATEMENT):
            chunk = rvs[at : at + _MAX_ROWS_PER_STATEMENT]
            marks = ", ".join("?" * len(chunk))
            out.update(self._db.execute(f"SELECT rv, data FROM events WHERE rv IN ({marks})", chunk))
        return out

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
            _in_chunks(
                db,
                "INSERT INTO events VALUES ",
                "(?, ?, ?, ?, ?, ?, ?, ?)",
                ", ",
                [
                    (c.rv, c.type, c.resource, c.namespace, c.name, c.record.raw, *_previous(c))
                    for c in changes
                ],
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        superseded, by = self._superseded, self._superseded_by
        for c in changes:
            if c.prev is not None and c.prev.rv:
                superseded.append(c.prev.rv)
                by.append(c.rv)
            if c.type == DELETED:
                superseded.append(c.rv)
                by.append(c.rv)

    def compact(self, up_to_rv: int) -> None:
        """Forget the logged changes at or below ``up_to_rv`` (watches from there get 410),
        keeping the rows that were still an object's current version at ``up_to_rv``: those
        current now, and those a later change names as its previous version."""
        doomed = sorted(
            rv for rv, by in zip(self._superseded, self._superseded_by, strict=True) if by <= up_to_rv
        )
        db = self._db
        db.execute("BEGIN")
        try:
            _in_chunks(db, "DELETE FROM events WHERE rv IN (", "?", ", ", [(rv,) for rv in doomed], ")")
            db.execute("INSERT OR REPLACE INTO meta VALUES ('compacted', ?)", (up_to_rv,))
            # The counter survives even if compaction emptied the log.
            db.execute(
                "INSERT OR REPLACE INTO meta VALUES "
                "('rv', MAX(?, COALESCE((SELECT MAX(rv) FROM events), 0)))",
                (up_to_rv,),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        kept = [
            (rv, by) for rv, by in zip(self._superseded, self._superseded_by, strict=True) if by > up_to_rv
        ]
        self._superseded = array.array("q", (rv for rv, _ in kept))
        self._superseded_by = array.array("q", (by for _, by in kept))


def _previous(c: Change) -> tuple[bytes | None, int | None]:
    """The (prev, prev_rv) columns of a change's row: the previous version by resourceVersion,
    or in full when its resourceVersion is not known."""
    if c.prev is None:
        return None, None
    if c.prev.rv:
        return None, c.prev.rv
    return c.prev.raw, None


def _in_chunks(
    db: sqlite3.Connection, head: str, item: str, sep: str, rows: Sequence[tuple[object, ...]], tail: str = ""
) -> None:
    """Run ``head + sep.join(item for each row) + tail`` over every row, in order, a chunk of
    rows per statement."""
    at = 0
    while at < len(rows):
        n = min(_MAX_ROWS_PER_STATEMENT, 1 << ((len(rows) - at).bit_length() - 1))
        db.execute(
            _statement(head, item, sep, tail, n), [value for row in rows[at : at + n] for value in row]
        )
        at += n


@functools.lru_cache(maxsize=64)
def _statement(head: str, item: str, sep: str, tail: str, rows: int) -> str:
    return head + sep.join([item] * rows) + tail
