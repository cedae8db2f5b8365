"""The bytes the store keeps per object version are as large as the JSON, no larger.

orjson hands back its output in the buffer it wrote into (4-8 KiB for a small object), so a
kept ``orjson.dumps`` result held 4-8 KiB of heap for ~0.5-2 KiB of JSON: the bulk of the embedded
plane's memory per queued Job. The store keeps exact copies instead (``records.encode``).
Memory is measured with tracemalloc, which counts what was allocated, not what the OS paged in.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterator

import orjson
import pytest
from storekit import event, pod

from kubehpc.api.kinds import build_registry
from kubehpc.store.records import Record, encode
from kubehpc.store.store import Store

N = 200


@pytest.fixture
def store() -> Iterator[Store]:
    # A short memory history, so the growth measured is what the store keeps per object.
    s = Store(build_registry(("kubehpc.api.kinds.core",)), None, memory_history=10)
    yield s
    s.close()


def allocated_per_call(n: int, call: Callable[[int], object]) -> float:
    """Bytes still allocated after ``n`` calls (their results kept), per call."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [call(i) for i in range(n)]
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(kept) == n
    return grown / n


def test_encode_is_the_json_orjson_writes() -> None:
    obj = pod("p")
    assert encode(obj) == orjson.dumps(obj)
    assert type(encode(obj)) is bytes


def test_encoded_bytes_take_the_size_of_their_json() -> None:
    obj = event("e")
    size = len(orjson.dumps(obj))
    assert allocated_per_call(N, lambda i: encode({**obj, "count": i})) < size + 128


def test_a_record_keeps_bytes_the_size_of_its_json() -> None:
    obj = pod("p")
    size = len(orjson.dumps(obj))
    assert allocated_per_call(N, lambda i: Record.of(obj, i)) < size + 256


def test_a_stored_event_costs_about_its_json_in_memory(store: Store) -> None:
    for i in range(50):  # the store's dicts and indexes past their first resizes
        store.create(event(f"warm-{i}"))

    def create(i: int) -> None:  # keeps nothing of its own: only what the store keeps counts
        store.create(event(f"e-{i}"))

    per_event = allocated_per_call(N, create)
    size = len(store._objects["events"]["default"]["e-0"].raw)
    # The JSON, plus the store's own entries for it (name maps, expiry, a Change): no 4 KiB buffer.
    assert per_event < size + 1024
