"""The SQLite file under the durable store: what a batch commits is what a restart reads back,
whatever the size of the batch, on a new database and on one made by an older kubehpc."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from storekit import configmap

from kubehpc.api.registry import Registry
from kubehpc.store import sqlite as log_module
from kubehpc.store.sqlite import SqliteLog
from kubehpc.store.store import Store


def _page_size(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("PRAGMA page_size").fetchone()[0])


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
