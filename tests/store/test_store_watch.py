"""Watch: order, resume from a resourceVersion (also across a restart), 410, selectors, bookmarks."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from storekit import configmap, pod

from kubehpc.api.errors import Gone
from kubehpc.api.registry import Registry
from kubehpc.store.client import ListOptions, PatchType, Watch, WatchEvent
from kubehpc.store.store import Store


def take(w: Watch, n: int, *, skip_bookmarks: bool = True) -> list[WatchEvent]:
    out: list[WatchEvent] = []
    for ev in w:
        if skip_bookmarks and ev.type == "BOOKMARK":
            continue
        out.append(ev)
        if len(out) == n:
            break
    return out


def summary(events: list[WatchEvent]) -> list[tuple[str, str]]:
    return [(e.type, e.object["metadata"]["name"]) for e in events]


def test_watch_delivers_every_change_in_resource_version_order(store: Store) -> None:
    w = store.watch("v1", "ConfigMap", ListOptions(resource_version=str(store.resource_version)))
    store.create(configmap("a"))
    store.create(configmap("b"))
    store.patch("v1", "ConfigMap", "a", {"data": {"x": "1"}}, PatchType.MERGE, "default")
    store.delete("v1", "ConfigMap", "b", "default")
    events = take(w, 4)
    w.stop()
    assert summary(events) == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    rvs = [int(e.object["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and rvs[-1] == store.resource_version


def test_watch_from_zero_lists_current_objects_as_added_then_follows(store: Store) -> None:
    store.create(configmap("a"))
    w = store.watch("v1", "ConfigMap", ListOptions(resource_version="0"))
    store.create(configmap("b"))
    assert summary(take(w, 2)) == [("ADDED", "a"), ("ADDED", "b")]
    w.stop()


def test_watch_from_a_resource_version_replays_what_came_after_it(store: Store) -> None:
    store.create(configmap("a"))
    rv = store.resource_version
    store.create(configmap("b"))
    store.delete("v1", "ConfigMap", "a", "default")
    w = store.watch("v1", "ConfigMap", ListOptions(resource_version=str(rv)))
    assert summary(take(w, 2)) == [("ADDED", "b"), ("DELETED", "a")]
    w.stop()


def test_watch_filters_by_namespace(store: Store) -> None:
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    w = store.watch(
        "v1", "ConfigMap", ListOptions(namespace="team", resource_version=str(store.resource_version))
    )
    store.create(configmap("elsewhere"))
    store.create(configmap("here", "team"))
    assert summary(take(w, 1)) == [("ADDED", "here")]
    w.stop()


def test_objects_leaving_a_selector_arrive_as_deleted_and_entering_as_added(store: Store) -> None:
    store.create(pod("p", labels={"app": "web"}))
    w = store.watch(
        "v1", "Pod", ListOptions(label_selector="app=web", resource_version=str(store.resource_version))
    )
    store.patch("v1", "Pod", "p", {"metadata": {"labels": {"app": "db"}}}, PatchType.MERGE, "default")
    store.patch(
        "v1", "Pod", "p", {"metadata": {"labels": {"app": "web", "v": "2"}}}, PatchType.MERGE, "default"
    )
    store.patch("v1", "Pod", "p", {"metadata": {"labels": {"v": "3"}}}, PatchType.MERGE, "default")
    events = take(w, 3)
    w.stop()
    assert [e.type for e in events] == ["DELETED", "ADDED", "MODIFIED"]
    assert events[0].object["metadata"]["labels"] == {"app": "db"}


def test_field_selector_watch_sees_a_pod_leave_when_its_phase_changes(store: Store) -> None:
    store.create(pod("p"))
    w = store.watch("v1", "Pod", ListOptions(field_selector="status.phase=Pending", resource_version="0"))
    store.patch(
        "v1", "Pod", "p", {"status": {"phase": "Running"}}, PatchType.MERGE, "default", subresource="status"
    )
    assert [e.type for e in take(w, 2)] == ["ADDED", "DELETED"]
    w.stop()


def test_watch_from_a_version_older_than_the_history_is_410_gone(registry: Registry) -> None:
    store = Store(registry, None, memory_history=5)
    for i in range(20):
        store.create(configmap(f"c{i}"))
    with pytest.raises(Gone, match="too old resource version: 3"):
        store.watch("v1", "ConfigMap", ListOptions(resource_version="3"))
    store.close()


def test_idle_watches_receive_bookmarks_carrying_only_a_resource_version(store: Store) -> None:
    store.create(configmap("a"))
    w = store.watch(
        "v1", "ConfigMap", ListOptions(resource_version=str(store.resource_version)), allow_bookmarks=True
    )
    event = next(iter(w))
    w.stop()
    assert event.type == "BOOKMARK"
    assert event.object["metadata"] == {"resourceVersion": str(store.resource_version)}
    assert event.object["kind"] == "ConfigMap"


def test_stop_ends_a_blocked_iteration(store: Store) -> None:
    w = store.watch("v1", "ConfigMap", ListOptions(resource_version=str(store.resource_version)))
    seen: list[WatchEvent] = []
    t = threading.Thread(target=lambda: seen.extend(w))
    t.start()
    w.stop()
    t.join(timeout=10)
    assert not t.is_alive() and seen == []


def test_async_iteration_delivers_changes_made_from_other_threads(store: Store) -> None:
    async def main() -> list[tuple[str, str]]:
        w = store.watch("v1", "ConfigMap", ListOptions(resource_version=str(store.resource_version)))
        writer = threading.Thread(target=lambda: [store.create(configmap(f"c{i}")) for i in range(3)])
        writer.start()
        got = []
        async for ev in w:
            got.append((ev.type, ev.object["metadata"]["name"]))
            if len(got) == 3:
                break
        w.stop()
        writer.join()
        return got

    assert asyncio.run(main()) == [("ADDED", "c0"), ("ADDED", "c1"), ("ADDED", "c2")]


def test_batched_writes_reach_watchers_after_the_commit_in_order(store: Store) -> None:
    w = store.watch("v1", "ConfigMap", ListOptions(resource_version=str(store.resource_version)))
    with store.batch():
        for i in range(5):
            store.create(configmap(f"c{i}"))
    assert summary(take(w, 5)) == [("ADDED", f"c{i}") for i in range(5)]
    w.stop()


def test_watch_resumes_after_a_restart_of_the_store_with_exactly_the_missed_events(
    registry: Registry, db_path: Path
) -> None:
    first = Store(registry, db_path)
    first.create(configmap("a"))
    seen_rv = first.resource_version
    first.create(configmap("b"))
    first.patch("v1", "ConfigMap", "a", {"data": {"k": "v"}}, PatchType.MERGE, "default")
    first.delete("v1", "ConfigMap", "b", "default")
    last_rv = first.resource_version
    first.close()

    second = Store(registry, db_path)
    w = second.watch("v1", "ConfigMap", ListOptions(resource_version=str(seen_rv)))
    second.create(configmap("c"))
    events = take(w, 4)
    w.stop()
    assert summary(events) == [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b"), ("ADDED", "c")]
    assert int(events[2].object["metadata"]["resourceVersion"]) == last_rv
    assert int(events[3].object["metadata"]["resourceVersion"]) == last_rv + 1
    second.close()


def test_watch_older_than_memory_but_within_the_durable_log_is_served_from_sqlite(
    registry: Registry, db_path: Path
) -> None:
    store = Store(registry, db_path, memory_history=3)
    start = store.resource_version
    for i in range(10):
        store.create(configmap(f"c{i}"))
    w = store.watch("v1", "ConfigMap", ListOptions(resource_version=str(start)))
    assert summary(take(w, 10)) == [("ADDED", f"c{i}") for i in range(10)]
    w.stop()
    store.close()


def test_a_selector_watch_served_from_the_compacted_log_still_sees_objects_leave_and_enter(
    registry: Registry, db_path: Path
) -> None:
    # The label changes land after the compaction point, the versions they replaced before
    # it: the watch learns "left" and "entered" from those earlier versions, read back from
    # the log after a restart.
    with Store(registry, db_path, memory_history=3, durable_history=20) as first:
        first.create(pod("p", labels={"app": "web"}))
        first.create(pod("q", labels={"app": "db"}))
        for i in range(40):
            first.create(configmap(f"c{i}"))
        start = first.resource_version
        first.patch("v1", "Pod", "p", {"metadata": {"labels": {"app": "db"}}}, PatchType.MERGE, "default")
        first.patch("v1", "Pod", "q", {"metadata": {"labels": {"app": "web"}}}, PatchType.MERGE, "default")
        for i in range(40, 50):
            first.create(configmap(f"c{i}"))
        first.create(pod("r", labels={"app": "web"}))  # the last event: the watch waits for no more
    with Store(registry, db_path, memory_history=3, durable_history=20) as second:
        w = second.watch("v1", "Pod", ListOptions(label_selector="app=web", resource_version=str(start)))
        seen: list[WatchEvent] = []
        for event in w:
            if event.type == "BOOKMARK":
                continue
            seen.append(event)
            if event.object["metadata"]["name"] == "r":
                break
        w.stop()
        assert summary(seen) == [("DELETED", "p"), ("ADDED", "q"), ("ADDED", "r")]


def test_objects_and_the_resource_version_survive_a_restart(registry: Registry, db_path: Path) -> None:
    with Store(registry, db_path) as first:
        created = first.create(configmap("a", k="v"))
        rv = first.resource_version
    with Store(registry, db_path) as second:
        assert second.get("v1", "ConfigMap", "a", "default") == created
        assert second.resource_version == rv
        assert int(second.create(configmap("b"))["metadata"]["resourceVersion"]) == rv + 1
        assert len(second.list("v1", "Namespace").items) == 4


def test_the_durable_log_is_compacted_and_older_versions_are_gone_after_a_restart(
    registry: Registry, db_path: Path
) -> None:
    with Store(registry, db_path, memory_history=5, durable_history=20) as first:
        start = first.resource_version
        for i in range(50):
            first.create(configmap(f"c{i}"))
        last = first.resource_version
    with Store(registry, db_path, memory_history=5, durable_history=20) as second:
        assert second.resource_version == last
        with pytest.raises(Gone):
            second.watch("v1", "ConfigMap", ListOptions(resource_version=str(start)))
        w = second.watch("v1", "ConfigMap", ListOptions(resource_version=str(last - 10)))
        assert summary(take(w, 10)) == [("ADDED", f"c{i}") for i in range(40, 50)]
        w.stop()


def test_concurrent_writers_get_distinct_versions_and_watchers_see_them_in_order(store: Store) -> None:
    w = store.watch("v1", "ConfigMap", ListOptions(resource_version=str(store.resource_version)))

    def write(t: int) -> None:
        for i in range(50):
            store.create(configmap(f"t{t}-{i}"))

    writers = [threading.Thread(target=write, args=(t,)) for t in range(4)]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    events = take(w, 200)
    w.stop()
    rvs = [int(e.object["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(set(rvs))
    assert {e.object["metadata"]["name"] for e in events} == {
        f"t{t}-{i}" for t in range(4) for i in range(50)
    }


def test_raw_watch_items_are_the_stored_json_bytes(store: Store) -> None:
    import orjson

    async def main() -> tuple[str, dict[str, object]]:
        w = store.watch_store("v1", "ConfigMap", ListOptions(resource_version=str(store.resource_version)))
        store.create(configmap("a"))
        async for type_, raw in w.araw_items():
            w.stop()
            return type_, orjson.loads(raw)
        raise AssertionError("no event")

    type_, obj = asyncio.run(main())
    assert type_ == "ADDED" and obj == store.get("v1", "ConfigMap", "a", "default")


def test_a_watch_whose_consumer_falls_too_far_behind_is_closed(registry: Registry) -> None:
    store = Store(registry, None, max_watch_queue=3)
    w = store.watch("v1", "ConfigMap", ListOptions(resource_version=str(store.resource_version)))
    for i in range(5):
        store.create(configmap(f"c{i}"))
    assert list(w) == []  # the stream ended; the client re-watches from its last version
    again = store.watch("v1", "ConfigMap", ListOptions(resource_version=str(store.resource_version)))
    store.create(configmap("after"))
    assert summary(take(again, 1)) == [("ADDED", "after")]
    again.stop()
    store.close()


def test_a_batch_larger_than_the_watch_queue_closes_the_watch(registry: Registry) -> None:
    store = Store(registry, None, max_watch_queue=3)
    w = store.watch("v1", "ConfigMap", ListOptions(resource_version=str(store.resource_version)))
    with store.batch():
        for i in range(4):
            store.create(configmap(f"c{i}"))
    assert list(w) == []
    store.close()


def test_a_batch_reaches_each_watch_whole_and_in_order(registry: Registry) -> None:
    store = Store(registry, None, max_watch_queue=3)
    w = store.watch("v1", "ConfigMap", ListOptions(resource_version=str(store.resource_version)))
    with store.batch():
        for i in range(3):
            store.create(configmap(f"c{i}"))
    assert summary(take(w, 3)) == [("ADDED", "c0"), ("ADDED", "c1"), ("ADDED", "c2")]
    w.stop()
    store.close()


def test_a_new_iterator_over_a_watch_goes_on_where_the_last_one_stopped(store: Store) -> None:
    watch = store.watch("v1", "ConfigMap", ListOptions(resource_version=str(store.resource_version)))
    with store.batch():  # one commit: the watch takes all three at once
        for name in ("a", "b", "c"):
            store.create(configmap(name))
    seen = [next(iter(watch)).object["metadata"]["name"] for _ in range(3)]
    watch.stop()
    assert seen == ["a", "b", "c"]


def test_a_stopped_watch_yields_nothing_more_of_what_it_had_taken(store: Store) -> None:
    watch = store.watch("v1", "ConfigMap", ListOptions(resource_version=str(store.resource_version)))
    with store.batch():
        for name in ("a", "b", "c"):
            store.create(configmap(name))
    events = iter(watch)
    assert next(events).object["metadata"]["name"] == "a"
    watch.stop()
    assert list(events) == []


def test_every_change_arrives_in_order_while_waits_time_out_for_bookmarks(registry: Registry) -> None:
    # Waits of a millisecond time out as changes arrive, so a producer may ring just as the
    # consumer gives up waiting (rarely: the test after this one forces that case); whatever
    # the timing, every change arrives once and in order.
    store = Store(registry, None, bookmark_interval=0.001)
    watch = store.watch(
        "v1", "ConfigMap", ListOptions(resource_version=str(store.resource_version)), allow_bookmarks=True
    )
    names = [f"c{i}" for i in range(2000)]

    def produce() -> None:
        for i, name in enumerate(names):
            store.create(configmap(name))
            if i % 50 == 0:
                time.sleep(0.001)

    producer = threading.Thread(target=produce)
    producer.start()
    seen = [e.object["metadata"]["name"] for e in take(watch, len(names))]
    producer.join(10)
    watch.stop()
    store.close()
    assert seen == names


class _LateBell:
    """A watch's doorbell whose first timed wait gives up just as a producer rings, and whose
    second wait is rung again before it begins: the consumer must take the first ring back,
    or the second finds the bell already let go."""

    def __init__(self, bell: Any, ring: Callable[[], object]) -> None:
        self.bell = bell
        self.ring = ring
        self.waits = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if timeout == -1:
            return bool(self.bell.acquire(blocking, timeout))
        self.waits += 1
        if self.waits == 1:
            self.ring()
            return False  # the wait had already timed out
        if self.waits == 2:
            self.ring()
        return bool(self.bell.acquire(blocking, timeout))

    def release(self) -> None:
        self.bell.release()


def test_a_ring_that_comes_as_a_wait_times_out_is_taken_back(registry: Registry) -> None:
    store = Store(registry, None, bookmark_interval=0.05)
    watch = store.watch(
        "v1", "ConfigMap", ListOptions(resource_version=str(store.resource_version)), allow_bookmarks=True
    )
    names = iter(["a", "b"])
    watch._bell = _LateBell(watch._bell, lambda: store.create(configmap(next(names))))  # type: ignore[assignment]
    seen = [e.object["metadata"]["name"] for e in take(watch, 2)]
    watch.stop()
    store.close()
    assert seen == ["a", "b"]
