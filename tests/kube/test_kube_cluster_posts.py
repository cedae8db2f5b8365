"""The scheduler's lean POST path speaks the same API as RestClient: objects created, typed
errors for refusals, connections kept per thread."""

from __future__ import annotations

import threading

import pytest

from kubehpc.api.errors import AlreadyExists, NotFound
from kubehpc.kube.posts import LeanCreates
from kubehpc.kube.rest import RestClient


def config_map(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


def test_create_writes_the_object(client: RestClient) -> None:
    lean = LeanCreates(client)
    created = lean.create(config_map("lean-one"))
    assert created["metadata"]["name"] == "lean-one"
    assert (
        client.get("v1", "ConfigMap", "lean-one", "default")["metadata"]["uid"] == created["metadata"]["uid"]
    )


def test_a_refusal_is_the_typed_error(client: RestClient) -> None:
    lean = LeanCreates(client)
    lean.create(config_map("lean-twice"))
    with pytest.raises(AlreadyExists):
        lean.create(config_map("lean-twice"))
    with pytest.raises(NotFound):
        lean.create({**config_map("lean-nowhere"), "metadata": {"name": "x", "namespace": "no-such-ns"}})


def test_each_writer_thread_keeps_its_connection(client: RestClient) -> None:
    lean = LeanCreates(client)
    seen: list[object] = []

    def write(i: int) -> None:
        lean.create(config_map(f"lean-thread-{i}-a"))
        first = lean._connection()
        lean.create(config_map(f"lean-thread-{i}-b"))
        seen.append(first is lean._connection())

    threads = [threading.Thread(target=write, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert seen == [True, True, True]


def test_other_calls_go_through_the_rest_client(client: RestClient) -> None:
    lean = LeanCreates(client)
    lean.create(config_map("lean-read"))
    assert lean.get("v1", "ConfigMap", "lean-read", "default")["metadata"]["name"] == "lean-read"
