"""Events live for a while after their last write, as kube-apiserver's ``--event-ttl`` keeps
them (an etcd lease per write): then they are deleted, finalizers or not, and watches see
DELETED. Other kinds never expire. The store measures time on the clock it is given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from storekit import configmap

from kubehpc.api.errors import ApiError, NotFound
from kubehpc.api.kinds import build_registry
from kubehpc.api.registry import Registry
from kubehpc.store.client import ListOptions, PatchType
from kubehpc.store.store import Store

Obj = dict[str, Any]
TTL = 60.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def registry() -> Registry:
    return build_registry(("kubehpc.api.kinds.core",))


def event(name: str, **extra: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default", **extra},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Scheduled",
        "message": "placed",
        "type": "Normal",
        "count": 1,
    }


def store_with_ttl(clock: Clock, path: Path | None = None) -> Store:
    return Store(registry(), path, ttl={("v1", "Event"): TTL}, clock=clock)


def exists(store: Store, name: str) -> bool:
    try:
        store.get("v1", "Event", name, "default")
    except NotFound:
        return False
    return True


def test_an_event_is_deleted_once_its_time_to_live_has_passed() -> None:
    clock = Clock()
    with store_with_ttl(clock) as store:
        store.create(event("e"))
        clock.now += TTL - 1
        assert store.expire() == 0
        assert exists(store, "e")
        clock.now += 1
        assert store.expire() == 1
        assert not exists(store, "e")


def test_a_write_to_an_event_gives_it_its_whole_time_to_live_again() -> None:
    clock = Clock()
    with store_with_ttl(clock) as store:
        store.create(event("e"))
        clock.now += TTL - 10
        store.patch("v1", "Event", "e", {"count": 2}, PatchType.MERGE, "default")
        clock.now += 10
        assert store.expire() == 0
        clock.now += TTL - 10
        assert store.expire() == 1


def test_only_the_events_that_are_due_go_oldest_first() -> None:
    clock = Clock()
    with store_with_ttl(clock) as store:
        store.create(event("old"))
        clock.now += 30
        store.create(event("young"))
        clock.now += 30
        assert store.expire() == 1
        assert not exists(store, "old")
        assert exists(store, "young")


def test_watchers_see_an_expired_event_deleted_at_a_new_resource_version() -> None:
    clock = Clock()
    with store_with_ttl(clock) as store:
        created = store.create(event("e"))
        watch = store.watch("v1", "Event", ListOptions(namespace="default", resource_version="0"))
        clock.now += TTL
        store.expire()
        seen = [next(iter(watch)) for _ in range(2)]
        watch.stop()
        assert [e.type for e in seen] == ["ADDED", "DELETED"]
        deleted_rv = int(seen[1].object["metadata"]["resourceVersion"])
        assert deleted_rv > int(created["metadata"]["resourceVersion"])


def test_an_expired_event_goes_even_with_finalizers() -> None:
    clock = Clock()
    with store_with_ttl(clock) as store:
        store.create(event("e", finalizers=["example.com/keep"]))
        clock.now += TTL
        assert store.expire() == 1
        assert not exists(store, "e")


def test_other_kinds_never_expire() -> None:
    clock = Clock()
    with store_with_ttl(clock) as store:
        store.create(configmap("c"))
        clock.now += 100 * TTL
        assert store.expire() == 0
        assert store.get("v1", "ConfigMap", "c", "default")


def test_an_event_deleted_by_hand_is_not_expired_again() -> None:
    clock = Clock()
    with store_with_ttl(clock) as store:
        store.create(event("e"))
        store.delete("v1", "Event", "e", "default")
        clock.now += TTL
        assert store.expire() == 0


def test_without_a_time_to_live_events_are_kept() -> None:
    clock = Clock()
    with Store(registry(), None, clock=clock) as store:
        store.create(event("e"))
        clock.now += 10 * TTL
        assert store.expire() == 0
        assert exists(store, "e")


def test_expiry_is_durable_and_events_found_at_start_get_a_whole_time_to_live(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    clock = Clock()
    with store_with_ttl(clock, db) as store:
        store.create(event("gone"))
        store.create(event("kept"))
        clock.now += TTL
        store.delete("v1", "Event", "kept", "default")  # so that only "gone" is left to expire
        store.create(event("kept"))
        assert store.expire() == 1
    clock.now += 10 * TTL  # down for a while: as etcd's leases, the clock starts again at start
    with store_with_ttl(clock, db) as store:
        assert not exists(store, "gone")
        assert exists(store, "kept")
        clock.now += TTL - 1
        assert store.expire() == 0
        clock.now += 1
        assert store.expire() == 1


def test_a_rolled_back_delete_leaves_the_event_to_expire_later() -> None:
    clock = Clock()
    with store_with_ttl(clock) as store:
        store.create(event("e"))
        with pytest.raises(RuntimeError), store.batch():
            store.delete("v1", "Event", "e", "default")
            raise RuntimeError("the commit failed")
        assert exists(store, "e")
        clock.now += TTL
        assert store.expire() == 1


def test_a_rolled_back_create_leaves_nothing_to_expire() -> None:
    clock = Clock()
    with store_with_ttl(clock) as store:
        with pytest.raises(RuntimeError), store.batch():
            store.create(event("e"))
            raise RuntimeError("the commit failed")
        clock.now += TTL
        assert store.expire() == 0


@pytest.mark.parametrize("seconds", [0.0, -1.0])
def test_a_time_to_live_must_be_positive(seconds: float) -> None:
    with pytest.raises(ValueError, match="time to live of events must be positive"):
        Store(registry(), None, ttl={("v1", "Event"): seconds})


def test_a_time_to_live_for_a_kind_the_store_does_not_serve_is_refused() -> None:
    with pytest.raises(ApiError, match="Gadget"):
        Store(registry(), None, ttl={("example.com/v1", "Gadget"): TTL})
