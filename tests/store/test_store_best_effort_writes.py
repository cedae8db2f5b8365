"""Best-effort writes (``WriteOptions.best_effort``, what the event recorders use): applied and
read at once, committed by the next commit or on their own shortly after, never lost to a
failed batch, never delivered twice to a watch."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from storekit import configmap

from kubehpc.api.registry import Registry
from kubehpc.store import store as store_module
from kubehpc.store.client import WriteOptions
from kubehpc.store.store import Store

BEST_EFFORT = WriteOptions(best_effort=True)


def logged_names(db_path: Path) -> list[str]:
    """Names of the ConfigMaps committed to the log, in resourceVersion order, as another
    process reading the database would see them."""
    with sqlite3.connect(db_path) as db:
        rows = db.execute("SELECT name FROM events WHERE resource LIKE '%configmaps' ORDER BY rv").fetchall()
    return [name for (name,) in rows]


@pytest.fixture
def durable(registry: Registry, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    # Long enough that only the write under test decides when the commit happens.
    monkeypatch.setattr(store_module, "BEST_EFFORT_COMMIT_S", 30.0)
    s = Store(registry, db_path)
    yield s
    s.close()


def test_a_best_effort_write_is_read_at_once_before_it_is_committed(durable: Store, db_path: Path) -> None:
    durable.create(configmap("event"), BEST_EFFORT)
    assert durable.get("v1", "ConfigMap", "event", "default")["metadata"]["name"] == "event"
    assert logged_names(db_path) == []


def test_the_next_write_commits_a_waiting_best_effort_write_before_its_own(
    durable: Store, db_path: Path
) -> None:
    durable.create(configmap("event"), BEST_EFFORT)
    durable.create(configmap("job"))
    assert logged_names(db_path) == ["event", "job"]


def test_a_best_effort_write_alone_is_committed_by_the_store_shortly_after(
    registry: Registry, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "BEST_EFFORT_COMMIT_S", 0.01)
    with Store(registry, db_path) as s:
        s.create(configmap("event"), BEST_EFFORT)
        deadline = time.monotonic() + 10
        while not logged_names(db_path) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert logged_names(db_path) == ["event"]


def test_a_watch_sees_a_best_effort_write_once_when_it_is_committed(durable: Store) -> None:
    watch = durable.watch_store("v1", "ConfigMap", allow_bookmarks=False)
    durable.create(configmap("event"), BEST_EFFORT)
    assert len(watch._items) == 0  # not published before its commit
    durable.create(configmap("job"))
    assert [(t, r.obj["metadata"]["name"]) for t, r, _ in watch._items] == [
        ("ADDED", "event"),
        ("ADDED", "job"),
    ]
    watch.stop()


def test_a_watch_opened_while_a_best_effort_write_waits_gets_it_exactly_once(durable: Store) -> None:
    durable.create(configmap("event"), BEST_EFFORT)
    watch = durable.watch_store("v1", "ConfigMap", allow_bookmarks=False)
    durable.create(configmap("job"))
    assert [(t, r.obj["metadata"]["name"]) for t, r, _ in watch._items] == [
        ("ADDED", "event"),
        ("ADDED", "job"),
    ]
    watch.stop()


def test_a_failed_batch_keeps_the_best_effort_writes_made_before_it(durable: Store, db_path: Path) -> None:
    durable.create(configmap("event"), BEST_EFFORT)
    with pytest.raises(RuntimeError), durable.batch():
        durable.create(configmap("doomed"))
        raise RuntimeError("the batch failed")
    event = durable.get("v1", "ConfigMap", "event", "default")
    job = durable.create(configmap("job"))
    assert logged_names(db_path) == ["event", "job"]
    # The rolled-back write gave its resourceVersion back; the waiting one kept its own.
    assert int(job["metadata"]["resourceVersion"]) == int(event["metadata"]["resourceVersion"]) + 1


def test_a_best_effort_write_inside_a_batch_is_committed_with_the_batch(
    durable: Store, db_path: Path
) -> None:
    with durable.batch():
        durable.create(configmap("event"), BEST_EFFORT)
        durable.create(configmap("job"))
    assert logged_names(db_path) == ["event", "job"]


def test_closing_the_store_commits_waiting_best_effort_writes(registry: Registry, db_path: Path) -> None:
    with Store(registry, db_path) as s:
        s.create(configmap("event"), BEST_EFFORT)
    with Store(registry, db_path) as reopened:
        assert reopened.get("v1", "ConfigMap", "event", "default")


def test_a_best_effort_patch_waits_for_a_commit_too(durable: Store, db_path: Path) -> None:
    durable.create(configmap("event"))
    durable.patch("v1", "ConfigMap", "event", {"data": {"count": "2"}}, options=BEST_EFFORT)
    assert durable.get("v1", "ConfigMap", "event", "default")["data"]["count"] == "2"
    assert logged_names(db_path) == ["event"]
    durable.create(configmap("job"))
    assert logged_names(db_path) == ["event", "event", "job"]
