"""Mutating admission hooks run on every create and update, after defaulting."""

from __future__ import annotations

from typing import Any

import pytest

from kubehpc.api.errors import Forbidden, NotFound
from kubehpc.api.kinds import build_registry
from kubehpc.api.registry import ResourceType
from kubehpc.store.store import Store

Obj = dict[str, Any]


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": dict(data)}


def stamp(operation: str, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
    if rt.kind == "ConfigMap":
        obj["metadata"].setdefault("labels", {})["admitted-on"] = operation.lower()


def refuse_forbidden(operation: str, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
    if (obj.get("data") or {}).get("forbidden"):
        raise Forbidden(f'configmaps "{obj["metadata"]["name"]}" is forbidden: no forbidden data')


@pytest.fixture
def store() -> Store:
    return Store(build_registry(("kubehpc.api.kinds.core",)), None, admission=[stamp, refuse_forbidden])


def test_a_hook_mutates_the_object_on_create(store: Store) -> None:
    created = store.create(configmap("a", k="v"))
    assert created["metadata"]["labels"] == {"admitted-on": "create"}


def test_a_hook_sees_updates_and_the_stored_object(store: Store) -> None:
    created = store.create(configmap("a", k="v"))
    created["data"]["k"] = "w"
    assert store.update(created)["metadata"]["labels"] == {"admitted-on": "update"}


def test_a_hook_that_refuses_leaves_nothing_stored(store: Store) -> None:
    with pytest.raises(Forbidden):
        store.create(configmap("a", forbidden="yes"))
    with pytest.raises(NotFound):
        store.get("v1", "ConfigMap", "a", "default")
