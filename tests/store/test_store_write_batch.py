"""``write_batch``: one transaction for a controller's burst of writes on the embedded store,
plain one-by-one writes on any other client."""

from __future__ import annotations

import pytest
from storekit import PlainClient, configmap

from kubehpc.store.client import write_batch
from kubehpc.store.store import Store


def test_writes_in_a_batch_reach_watchers_together_at_its_end(store: Store) -> None:
    watch = store.watch_store("v1", "ConfigMap", allow_bookmarks=False)
    rv = store.resource_version
    with write_batch(store):
        store.create(configmap("a"))
        store.create(configmap("b"))
        assert store.get("v1", "ConfigMap", "a", "default")  # visible to reads at once
        assert len(watch._items) == 0  # but not yet published
    assert store.resource_version == rv + 2
    assert [item[0] for item in watch._items] == ["ADDED", "ADDED"]
    watch.stop()


def test_a_failing_batch_rolls_back_every_write(store: Store) -> None:
    with pytest.raises(RuntimeError), write_batch(store):
        store.create(configmap("a"))
        raise RuntimeError("the commit failed")
    assert [c["metadata"]["name"] for c in store.list("v1", "ConfigMap").items] == []


def test_a_client_without_batches_writes_each_at_once(store: Store) -> None:
    client = PlainClient(store)
    watch = store.watch_store("v1", "ConfigMap", allow_bookmarks=False)
    with write_batch(client):  # type: ignore[arg-type]
        client.create(configmap("a"))
        assert len(watch._items) == 1
    watch.stop()
