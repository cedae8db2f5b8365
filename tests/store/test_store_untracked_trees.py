"""The JSON trees the store keeps are out of the cyclic garbage collector's sight
(``store/_untrack.c``, ``store/heap.py``): they cannot hold a cycle, and scanning them was two
fifths of every young collection under a burst of Jobs. What a caller gets as its own copy is
an ordinary object."""

from __future__ import annotations

import gc
import importlib
from pathlib import Path
from types import ModuleType

import pytest
from storekit import pod

import kubehpc
from kubehpc.api.registry import Registry
from kubehpc.store import heap
from kubehpc.store.client import ListOptions
from kubehpc.store.store import Store


def c_helper() -> ModuleType:
    """The C helper itself, loaded even where the compiled modules are stale."""
    try:
        return importlib.import_module("kubehpc.store._untrack")
    except ImportError as exc:
        pytest.fail(f"the C helper is not built ({exc}): run `make native` (scripts/build_native.py)")


def nested(depth: int, shared: bool = False) -> dict[str, object]:
    """``depth`` dicts, each the child of the next; ``shared``: each also in a list beside it
    (a walk that did not stop at what it untracked already would take 2**depth steps)."""
    tree: dict[str, object] = {"leaf": [{"x": 1}]}
    for _ in range(depth):
        tree = {"child": tree, "again": [tree]} if shared else {"child": tree}
    return tree


def containers(tree: object) -> list[object]:
    out: list[object] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            out.append(node)
            stack.extend(node.values())
        elif type(node) is list:
            out.append(node)
            stack.extend(node)
    return out


def test_every_dict_and_list_of_a_tree_is_untracked() -> None:
    tree = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"env": [{"name": "X"}]}]}}
    tree["status"] = {"conditions": [{"type": "Ready", "extra": {"deep": [[], {}]}}]}
    assert any(gc.is_tracked(c) for c in containers(tree))
    c_helper().untrack_json(tree)
    assert not any(gc.is_tracked(c) for c in containers(tree))


def test_other_objects_in_a_tree_are_left_as_they_are() -> None:
    class Holder:
        pass

    inner = {"z": [1]}
    tree = {"t": ({"in": "tuple"}, inner), "s": {frozenset({1})}, "o": Holder()}
    c_helper().untrack_json(tree)
    assert not gc.is_tracked(tree)
    assert gc.is_tracked(tree["s"]) and gc.is_tracked(tree["o"])
    assert gc.is_tracked(inner)  # reached only through a tuple: not walked


def test_a_dict_given_a_container_later_is_tracked_again() -> None:
    tree: dict[str, object] = {"a": {"b": 1}}
    c_helper().untrack_json(tree)
    assert not gc.is_tracked(tree)
    tree["later"] = [object()]
    assert gc.is_tracked(tree)


def test_a_tree_deeper_than_the_bound_stays_tracked_below_it() -> None:
    tree = nested(2_000)
    c_helper().untrack_json(tree)
    assert not gc.is_tracked(tree)
    deepest = chain(tree)[-3]  # the last dict along ``child``, 2,000 levels down
    assert gc.is_tracked(deepest) and gc.is_tracked(deepest["leaf"])


def test_a_subtree_shared_many_times_is_walked_once() -> None:
    tree = nested(200, shared=True)
    c_helper().untrack_json(tree)  # 2**200 steps if it walked every path
    assert not any(gc.is_tracked(c) for c in chain(tree))


def chain(tree: dict[str, object]) -> list[object]:
    """The dicts along ``child`` from ``tree`` down, with the leaf's list and its dict."""
    out: list[object] = []
    node: object = tree
    while isinstance(node, dict):
        out.append(node)
        if "leaf" in node:
            out += [node["leaf"], node["leaf"][0]]
        node = node.get("child")
    return out


def test_an_untracked_tree_is_still_freed_when_its_last_reference_goes() -> None:
    freed: list[str] = []

    class Marker:
        def __del__(self) -> None:
            freed.append("marker")

    tree = {"spec": {"items": [{"marker": Marker()}]}}
    c_helper().untrack_json(tree)
    del tree
    assert freed == ["marker"]


def test_the_store_keeps_its_shared_objects_untracked_when_compiled(store: Store) -> None:
    store.create(pod("a"))
    shared = store.get("v1", "Pod", "a", read_only=True)
    listed = store.list("v1", "Pod", ListOptions(read_only=True)).items[0]
    assert shared is listed
    assert_kept_as_compiled_code_keeps_it(shared)


def test_a_version_decoded_on_its_first_read_is_untracked_too(db_path: Path, registry: Registry) -> None:
    with Store(registry, db_path) as first:
        first.create(pod("a"))
    with Store(registry, db_path) as reopened:  # read back from the log: bytes, decoded on demand
        assert_kept_as_compiled_code_keeps_it(reopened.get("v1", "Pod", "a", read_only=True))


def assert_kept_as_compiled_code_keeps_it(shared: dict[str, object]) -> None:
    tracked = [c for c in containers(shared) if gc.is_tracked(c)]
    if kubehpc.NATIVE_OFF_REASON is None:  # as `make test` runs the suite
        assert tracked == []
    else:  # from source: the store leaves the tree to the collector
        assert tracked


def test_a_callers_copy_is_an_ordinary_tracked_object(store: Store) -> None:
    store.create(pod("a"))
    mine = store.get("v1", "Pod", "a")
    assert gc.is_tracked(mine)


def test_the_helper_is_chosen_with_the_compiled_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubehpc, "NATIVE_OFF_REASON", "KUBEHPC_NATIVE=off")
    assert heap._choose() is heap._leave_tracked
    monkeypatch.setattr(kubehpc, "NATIVE_OFF_REASON", None)
    assert heap._choose() is c_helper().untrack_json
