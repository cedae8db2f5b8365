"""``ChunkedWrites``: a long run of writes committed in batches that close after so many units of
work or so much time, so that no other writer waits for the store through the whole run."""

from __future__ import annotations

from typing import Any

import pytest
from storekit import PlainClient, configmap

from kubehpc.store.client import ChunkedWrites
from kubehpc.store.store import Store


def names_published(watch: Any) -> list[str]:
    return [item[1].obj["metadata"]["name"] for item in watch._items]


def test_a_chunk_is_committed_once_it_holds_its_units(store: Store) -> None:
    watch = store.watch_store("v1", "ConfigMap", allow_bookmarks=False)
    published: list[list[str]] = []
    with ChunkedWrites(store, max_units=2, max_s=3600.0) as chunks:
        for name in "abcde":
            store.create(configmap(name))
            chunks.done_one()
            published.append(names_published(watch))
    # Published (committed) after the second and fourth units, the last one at the end.
    assert published == [[], ["a", "b"], ["a", "b"], ["a", "b", "c", "d"], ["a", "b", "c", "d"]]
    assert names_published(watch) == ["a", "b", "c", "d", "e"]
    assert chunks.chunks == 3
    watch.stop()


def test_a_chunk_is_committed_once_its_time_is_up(store: Store) -> None:
    now = [0.0]
    with ChunkedWrites(store, max_units=1000, max_s=1.0, clock=lambda: now[0]) as chunks:
        for name in "abcd":
            store.create(configmap(name))
            now[0] += 0.6  # the second unit ends past the chunk's second
            chunks.done_one()
    assert chunks.chunks == 3  # [a, b], [c, d], and the empty one closed at the end


def test_the_writer_yields_between_chunks(store: Store) -> None:
    events: list[str] = []
    with ChunkedWrites(
        store, max_units=1, max_s=3600.0, pause=lambda s: events.append(f"pause {s}")
    ) as chunks:
        for name in "ab":
            store.create(configmap(name))
            events.append(f"wrote {name}")
            chunks.done_one()
    assert events == ["wrote a", "pause 0.0", "wrote b", "pause 0.0"]


def test_a_failure_rolls_back_the_open_chunk_and_keeps_the_committed_ones(store: Store) -> None:
    with pytest.raises(RuntimeError), ChunkedWrites(store, max_units=2, max_s=3600.0) as chunks:
        for name in "abc":
            store.create(configmap(name))
            chunks.done_one()
        raise RuntimeError("the third unit's writes went wrong")
    assert sorted(c["metadata"]["name"] for c in store.list("v1", "ConfigMap").items) == ["a", "b"]


def test_a_client_without_batches_writes_each_at_once(store: Store) -> None:
    watch = store.watch_store("v1", "ConfigMap", allow_bookmarks=False)
    client = PlainClient(store)
    with ChunkedWrites(client, max_units=10, max_s=3600.0) as chunks:  # type: ignore[arg-type]
        store.create(configmap("a"))
        assert names_published(watch) == ["a"]
        chunks.done_one()
    watch.stop()
