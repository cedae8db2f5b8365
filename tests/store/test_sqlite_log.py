"""The SQLite file under the durable store: an append-only change log that is also the only copy
of the objects. What a batch commits is what a restart reads back, whatever the size of the
batch; a change names the version before it instead of storing it again; compaction forgets
history but never a current object, nor a version a later change names; databases in the older
formats (with an objects table; with previous versions stored in full) are converted when
opened."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest
from storekit import configmap

from kubehpc.api.registry import Registry
from kubehpc.store import sqlite as log_module
from kubehpc.store.sqlite import SqliteLog
from kubehpc.store.store import Store

Row = tuple[int, str, str, str, str]  # rv, type, resource, namespace, name


def _page_size(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("PRAGMA page_size").fetchone()[0])


def _log_rows(path: Path) -> list[Row]:
    with sqlite3.connect(path) as db:
        return list(db.execute("SELECT rv, type, resource, namespace, name FROM events ORDER BY rv"))


def _configmap_rows(path: Path) -> list[Row]:
    return [row for row in _log_rows(path) if row[2] == "configmaps"]


def _compacted(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT value FROM meta WHERE key = 'compacted'").fetchone()[0])


def _churn(store: Store, writes: int) -> None:
    """Enough writes to one object to move the compaction point past everything before them."""
    store.create(configmap("churn", n="0"))
    for n in range(1, writes):
        cm = store.get("v1", "ConfigMap", "churn", "default")
        cm["data"]["n"] = str(n)
        store.update(cm)


def _set(store: Store, name: str, value: str) -> None:
    cm = store.get("v1", "ConfigMap", name, "default")
    cm["data"]["value"] = value
    store.update(cm)


# 1 to cross no chunk, 64 to fill one exactly, 150 (= 128 + 16 + 4 + 2) to need several sizes
@pytest.mark.parametrize("count", [1, 2, 64, 150])
def test_a_batch_that_writes_objects_twice_reads_back_their_last_versions(
    registry: Registry, db_path: Path, count: int
) -> None:
    with Store(registry, db_path) as store:
        with store.batch():
            for i in range(count):
                store.create(configmap(f"cm-{i}", value="first"))
            for i in range(count):
                cm = store.get("v1", "ConfigMap", f"cm-{i}", "default")
                cm["data"]["value"] = "second"
                store.update(cm)
        last_rv = store.resource_version
    with Store(registry, db_path) as reopened:
        items = reopened.list("v1", "ConfigMap").items
        assert sorted(int(cm["metadata"]["name"][3:]) for cm in items) == list(range(count))
        assert {cm["data"]["value"] for cm in items} == {"second"}
        assert reopened.resource_version == last_rv


@pytest.mark.parametrize("count", [3, 100])
def test_the_change_log_reads_back_in_resource_version_order_with_previous_versions(
    db_path: Path, registry: Registry, count: int
) -> None:
    with Store(registry, db_path) as store:
        start = store.resource_version
        with store.batch():
            for i in range(count):
                store.create(configmap(f"cm-{i}", value="first"))
            cm = store.get("v1", "ConfigMap", "cm-0", "default")
            cm["data"]["value"] = "second"
            store.update(cm)
    log = SqliteLog(db_path)
    try:
        changes = log.changes_after(start)
    finally:
        log.close()
    assert [c.rv for c in changes] == list(range(start + 1, start + count + 2))
    assert [c.name for c in changes] == [f"cm-{i}" for i in range(count)] + ["cm-0"]
    assert [c.prev is None for c in changes] == [True] * count + [False]
    assert changes[-1].prev is not None and b'"first"' in changes[-1].prev.raw
    assert b'"second"' in changes[-1].record.raw


def _prev_columns(path: Path) -> list[tuple[int, bytes | None, int | None]]:
    with sqlite3.connect(path) as db:
        return list(
            db.execute("SELECT rv, prev, prev_rv FROM events WHERE resource = 'configmaps' ORDER BY rv")
        )


def test_a_change_names_the_version_before_it_instead_of_storing_it_again(
    registry: Registry, db_path: Path
) -> None:
    with Store(registry, db_path) as store:
        store.create(configmap("a", value="first"))
        _set(store, "a", "second")
        store.delete("v1", "ConfigMap", "a", "default")
    (added, _, _), (modified, prev, prev_rv), (deleted, prev_of_deletion, prev_rv_of_deletion) = (
        _prev_columns(db_path)
    )
    assert (prev, prev_rv) == (None, added)
    assert (prev_of_deletion, prev_rv_of_deletion) == (None, modified)
    log = SqliteLog(db_path)
    try:
        changes = {c.rv: c for c in log.changes_after(0) if c.resource == "configmaps"}
    finally:
        log.close()
    assert changes[modified].prev is not None and b'"first"' in changes[modified].prev.raw
    assert changes[deleted].prev is not None and b'"second"' in changes[deleted].prev.raw


def test_compaction_keeps_the_version_a_later_change_names_as_the_one_before_it(
    registry: Registry, db_path: Path
) -> None:
    with Store(registry, db_path, memory_history=5, durable_history=20) as store:
        store.create(configmap("a", value="0"))
        _churn(store, 30)
        _set(store, "a", "1")  # after the coming compaction point; its previous version before it
        for n in range(10):  # the compaction point moves to about 20 writes back
            _set(store, "churn", str(n))
        changed_at = max(row[0] for row in _configmap_rows(db_path) if row[4] == "a")
    floor = _compacted(db_path)
    log = SqliteLog(db_path)
    try:
        change = next(c for c in log.changes_after(floor) if c.rv == changed_at)
    finally:
        log.close()
    first_kept = min(row[0] for row in _configmap_rows(db_path) if row[4] == "a")
    assert first_kept <= floor < changed_at
    assert change.prev is not None and orjson.loads(change.prev.raw)["data"] == {"value": "0"}


def test_a_new_database_is_made_with_large_pages(registry: Registry, db_path: Path) -> None:
    with Store(registry, db_path) as store:
        store.create(configmap("a"))
    assert _page_size(db_path) == log_module.PAGE_SIZE == 16384


def test_a_database_made_with_small_pages_keeps_them_and_its_objects(
    registry: Registry, db_path: Path
) -> None:
    # as an older kubehpc made it: SQLite's default 4 KiB pages, already in WAL mode
    with sqlite3.connect(db_path) as db:
        db.execute("PRAGMA page_size=4096")
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(log_module._SCHEMA)
    with Store(registry, db_path) as store, store.batch():
        for i in range(100):
            store.create(configmap(f"cm-{i}"))
    assert _page_size(db_path) == 4096
    with Store(registry, db_path) as reopened:
        assert len(reopened.list("v1", "ConfigMap").items) == 100


def test_compaction_keeps_every_current_object_and_forgets_superseded_rows(
    registry: Registry, db_path: Path
) -> None:
    with Store(registry, db_path, memory_history=5, durable_history=20) as store:
        for i in range(10):
            store.create(configmap(f"old-{i}", value="first"))
        _set(store, "old-0", "second")
        _churn(store, 60)
        old = {i: store.get("v1", "ConfigMap", f"old-{i}", "default") for i in range(10)}
    floor = _compacted(db_path)
    below = [row for row in _configmap_rows(db_path) if row[0] <= floor]
    # one row per object below the compaction point: the version it had there, nothing older
    # (for "churn", changed since, the version its next change names as the one before it)
    assert sorted(name for *_, name in below) == sorted(["churn"] + [f"old-{i}" for i in range(10)])
    old_rvs = {int(old[i]["metadata"]["resourceVersion"]) for i in range(10)}
    assert old_rvs == {row[0] for row in below if row[4] != "churn"}
    with Store(registry, db_path, memory_history=5, durable_history=20) as reopened:
        for i in range(10):
            assert reopened.get("v1", "ConfigMap", f"old-{i}", "default") == old[i]
        assert reopened.get("v1", "ConfigMap", "churn", "default")["data"]["n"] == "59"


def test_a_deleted_object_stays_deleted_and_its_rows_go_with_compaction(
    registry: Registry, db_path: Path
) -> None:
    with Store(registry, db_path, memory_history=5, durable_history=20) as store:
        store.create(configmap("gone"))
        store.create(configmap("kept"))
        store.delete("v1", "ConfigMap", "gone", "default")
        _churn(store, 60)
    assert "gone" not in {row[4] for row in _configmap_rows(db_path)}
    with Store(registry, db_path) as reopened:
        names = {cm["metadata"]["name"] for cm in reopened.list("v1", "ConfigMap").items}
        assert "gone" not in names and "kept" in names


def test_a_deleted_object_is_absent_after_a_restart_while_its_rows_are_still_logged(
    registry: Registry, db_path: Path
) -> None:
    with Store(registry, db_path) as store:
        store.create(configmap("gone"))
        store.delete("v1", "ConfigMap", "gone", "default")
        store.create(configmap("back", value="1"))
        store.delete("v1", "ConfigMap", "back", "default")
        store.create(configmap("back", value="2"))
    assert [row[1] for row in _configmap_rows(db_path) if row[4] == "gone"] == ["ADDED", "DELETED"]
    with Store(registry, db_path) as reopened:
        assert {cm["metadata"]["name"]: cm["data"] for cm in reopened.list("v1", "ConfigMap").items} == {
            "back": {"value": "2"}
        }


def test_rows_superseded_before_a_restart_are_compacted_after_it(registry: Registry, db_path: Path) -> None:
    with Store(registry, db_path, memory_history=5, durable_history=1000) as store:
        store.create(configmap("a", value="0"))
        for n in range(1, 10):
            _set(store, "a", str(n))
    assert len([row for row in _configmap_rows(db_path) if row[4] == "a"]) == 10  # no compaction yet
    with Store(registry, db_path, memory_history=5, durable_history=20) as reopened:
        _churn(reopened, 60)
        current = int(reopened.get("v1", "ConfigMap", "a", "default")["metadata"]["resourceVersion"])
    assert [row[0] for row in _configmap_rows(db_path) if row[4] == "a"] == [current]


class _FailingCommit:
    """The log's connection, failing its next COMMIT (as on a full disk)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.armed = True

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql == "COMMIT" and self.armed:
            self.armed = False
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(sql, *args)


def test_a_failed_commit_marks_nothing_superseded(registry: Registry, db_path: Path) -> None:
    with Store(registry, db_path, memory_history=5, durable_history=20) as store:
        store.create(configmap("a", value="kept"))
        log = store._log
        assert log is not None
        real = log._db
        log._db = _FailingCommit(real)  # type: ignore[assignment]
        with pytest.raises(sqlite3.OperationalError):
            _set(store, "a", "lost")
        log._db = real
        _churn(store, 60)
    assert [row[4] for row in _configmap_rows(db_path) if row[4] == "a"] == ["a"]
    with Store(registry, db_path) as reopened:
        assert reopened.get("v1", "ConfigMap", "a", "default")["data"] == {"value": "kept"}


# The format before the log became the only copy of the objects, as kubehpc made it.
_FORMAT_0 = """
CREATE TABLE objects (
    resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    rv INTEGER NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (resource, namespace, name)
) WITHOUT ROWID;
CREATE TABLE events (
    rv INTEGER PRIMARY KEY, type TEXT NOT NULL, resource TEXT NOT NULL,
    namespace TEXT NOT NULL, name TEXT NOT NULL, data BLOB NOT NULL, prev BLOB
);
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""

# The format that stored each change's previous version in full, as kubehpc made it.
_FORMAT_1 = """
CREATE TABLE events (
    rv INTEGER PRIMARY KEY, type TEXT NOT NULL, resource TEXT NOT NULL,
    namespace TEXT NOT NULL, name TEXT NOT NULL, data BLOB NOT NULL, prev BLOB
);
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
PRAGMA user_version = 1;
"""


def _old_configmap(name: str, rv: int, value: str) -> bytes:
    meta = {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": str(rv)}
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"value": value}})


def _old_database(db_path: Path, schema: str, name: str, at_6: bytes, at_7: bytes) -> None:
    """A database as an older kubehpc left it: ``schema``, ConfigMap ``name`` created at rv 6
    and changed at 7 (the change carrying the version before it in full), compacted at 5."""
    with sqlite3.connect(db_path) as db:
        db.executescript(schema)
        db.executemany(
            "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (6, "ADDED", "configmaps", "default", name, at_6, None),
                (7, "MODIFIED", "configmaps", "default", name, at_7, at_6),
            ],
        )
        db.executemany("INSERT INTO meta VALUES (?, ?)", [("compacted", 5), ("rv", 7)])


def test_a_database_with_an_objects_table_is_converted_and_keeps_objects_and_history(
    registry: Registry, db_path: Path
) -> None:
    # "old" was written at rv 3, a change the log no longer holds (compacted at 5); "new" was
    # created at 6 and changed at 7, both still in the log
    old, new_6, new_7 = (
        _old_configmap("old", 3, "a"),
        _old_configmap("new", 6, "b"),
        _old_configmap("new", 7, "c"),
    )
    _old_database(db_path, _FORMAT_0, "new", new_6, new_7)
    with sqlite3.connect(db_path) as db:
        db.executemany(
            "INSERT INTO objects VALUES (?, ?, ?, ?, ?)",
            [("configmaps", "default", "old", 3, old), ("configmaps", "default", "new", 7, new_7)],
        )
    with Store(registry, db_path) as store:
        assert store.get("v1", "ConfigMap", "old", "default") == orjson.loads(old)
        assert store.get("v1", "ConfigMap", "new", "default") == orjson.loads(new_7)
        assert store.resource_version >= 7
        history = [(c.rv, c.type, c.name) for c in store._changes_after(5) if c.resource == "configmaps"]
        assert history == [(6, "ADDED", "new"), (7, "MODIFIED", "new")]
    with sqlite3.connect(db_path) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert int(db.execute("PRAGMA user_version").fetchone()[0]) == log_module.FORMAT
    assert "objects" not in tables
    with Store(registry, db_path) as reopened:  # and a converted database opens as any other
        assert reopened.get("v1", "ConfigMap", "old", "default") == orjson.loads(old)


def test_a_database_with_previous_versions_in_full_is_converted_and_still_reads_them(
    registry: Registry, db_path: Path
) -> None:
    at_6, at_7 = _old_configmap("a", 6, "b"), _old_configmap("a", 7, "c")
    _old_database(db_path, _FORMAT_1, "a", at_6, at_7)
    with Store(registry, db_path) as store:
        assert store.get("v1", "ConfigMap", "a", "default") == orjson.loads(at_7)
        history = [c for c in store._changes_after(5) if c.resource == "configmaps"]
        assert [(c.rv, c.prev.raw if c.prev else None) for c in history] == [(6, None), (7, at_6)]
        _set(store, "a", "d")
    with sqlite3.connect(db_path) as db:
        assert int(db.execute("PRAGMA user_version").fetchone()[0]) == log_module.FORMAT
    assert _prev_columns(db_path)[-1][1:] == (None, 7)  # written the new way
