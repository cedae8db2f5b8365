"""Lists by label equality read the store's label index: the answer must be exactly what a
scan of every object would give, through creates, relabels, deletes, rollbacks and reloads."""

from __future__ import annotations

from pathlib import Path

import pytest
from storekit import pod

from kubehpc.api.registry import Registry
from kubehpc.store.client import ListOptions, PatchType
from kubehpc.store.store import Store


def names(store: Store, selector: str, namespace: str | None = None) -> list[str]:
    listed = store.list("v1", "Pod", ListOptions(namespace=namespace, label_selector=selector))
    return [p["metadata"]["name"] for p in listed.items]


def test_a_label_equality_list_returns_only_the_pods_carrying_that_label(store: Store) -> None:
    store.create(pod("a", labels={"job": "x"}))
    store.create(pod("b", labels={"job": "y"}))
    store.create(pod("c", labels={"job": "x", "tier": "1"}))
    assert names(store, "job=x") == ["a", "c"]
    assert names(store, "job in (y)") == ["b"]
    assert names(store, "job=x,tier=1") == ["c"]
    assert names(store, "job=x,tier!=1") == ["a"]
    assert names(store, "job=z") == []


def test_a_relabelled_pod_moves_to_its_new_label(store: Store) -> None:
    store.create(pod("a", labels={"job": "x"}))
    store.patch("v1", "Pod", "a", {"metadata": {"labels": {"job": "y"}}}, PatchType.MERGE)
    assert names(store, "job=x") == []
    assert names(store, "job=y") == ["a"]


def test_a_deleted_pod_leaves_the_index(store: Store) -> None:
    store.create(pod("a", labels={"job": "x"}))
    store.delete("v1", "Pod", "a")
    assert names(store, "job=x") == []
    store.create(pod("a", labels={"job": "x"}))
    assert names(store, "job=x") == ["a"]


def test_the_index_keeps_namespaces_apart(store: Store) -> None:
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    store.create(pod("a", labels={"job": "x"}))
    store.create(pod("b", "other", labels={"job": "x"}))
    assert names(store, "job=x", "default") == ["a"]
    assert names(store, "job=x", "other") == ["b"]
    assert sorted(names(store, "job=x")) == ["a", "b"]


def test_a_rolled_back_batch_leaves_the_index_as_before(store: Store) -> None:
    store.create(pod("a", labels={"job": "x"}))
    with pytest.raises(RuntimeError), store.batch():
        store.create(pod("b", labels={"job": "x"}))
        store.patch("v1", "Pod", "a", {"metadata": {"labels": {"job": "y"}}}, PatchType.MERGE)
        raise RuntimeError("abort")
    assert names(store, "job=x") == ["a"]
    assert names(store, "job=y") == []


def test_a_reloaded_store_lists_by_label_as_before(registry: Registry, tmp_path: Path) -> None:
    with Store(registry, tmp_path / "db") as first:
        first.create(pod("a", labels={"job": "x"}))
        first.create(pod("b", labels={"job": "y"}))
    with Store(registry, tmp_path / "db") as second:
        assert names(second, "job=x") == ["a"]


def test_indexed_lists_agree_with_a_scan_under_many_writes(store: Store) -> None:
    for i in range(60):
        store.create(pod(f"p{i:02}", labels={"job": f"j{i % 4}", "n": str(i % 3)}))
    for i in range(0, 60, 5):
        store.patch("v1", "Pod", f"p{i:02}", {"metadata": {"labels": {"job": "moved"}}}, PatchType.MERGE)
    for i in range(1, 60, 7):
        store.delete("v1", "Pod", f"p{i:02}")
    every = store.list("v1", "Pod").items
    for selector, wanted in [("job=j1", ("job", "j1")), ("job=moved", ("job", "moved")), ("n=2", ("n", "2"))]:
        scanned = [
            p["metadata"]["name"] for p in every if p["metadata"]["labels"].get(wanted[0]) == wanted[1]
        ]
        assert names(store, selector) == scanned


def test_a_label_existence_list_returns_the_pods_with_that_key_whatever_its_value(store: Store) -> None:
    store.create(pod("a", labels={"job": "x"}))
    store.create(pod("b", labels={"tier": "1"}))
    store.create(pod("c", labels={"job": "y", "tier": "2"}))
    assert names(store, "job") == ["a", "c"]
    assert names(store, "job,tier") == ["c"]
    assert names(store, "job,!tier") == ["a"]
    assert names(store, "missing") == []


def test_existence_lists_agree_with_a_scan_under_many_writes(store: Store) -> None:
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    for i in range(60):
        labels = {"job": f"j{i % 4}"} if i % 3 else {"n": str(i)}
        store.create(pod(f"p{i:02}", "other" if i % 5 == 0 else "default", labels=labels))
    for i in range(0, 60, 4):
        ns = "other" if i % 5 == 0 else "default"
        relabel = {"metadata": {"labels": {"job": None, "n": "x"}}}
        store.patch("v1", "Pod", f"p{i:02}", relabel, PatchType.MERGE, ns)
    for i in range(2, 60, 7):
        store.delete("v1", "Pod", f"p{i:02}", "other" if i % 5 == 0 else "default")
    every = store.list("v1", "Pod").items
    for key in ("job", "n"):
        scanned = [p["metadata"]["name"] for p in every if key in p["metadata"]["labels"]]
        assert names(store, key) == scanned
        in_other = [p for p in every if p["metadata"]["namespace"] == "other"]
        assert names(store, key, "other") == [
            p["metadata"]["name"] for p in in_other if key in p["metadata"]["labels"]
        ]
