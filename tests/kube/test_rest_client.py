"""The REST client against a real kubehpc API server: the Client protocol over HTTP."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from kubehpc.api.errors import AlreadyExists, Conflict, Gone, Invalid, NotFound, Unauthorized
from kubehpc.kube.kubeconfig import ClientConfig
from kubehpc.kube.rest import ConnectionFailed, RestClient
from kubehpc.store.client import DeleteOptions, ListOptions, PatchType, Propagation

_names = itertools.count()


def config_map(name: str = "", data: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name or f"cm-{next(_names)}", "namespace": "default", "labels": {"app": "t"}},
        "data": data or {"k": "v"},
    }


def test_create_then_get_returns_the_stored_object(client: RestClient) -> None:
    created = client.create(config_map("alpha"))
    got = client.get("v1", "ConfigMap", "alpha", "default")
    assert got["data"] == {"k": "v"}
    assert got["metadata"]["uid"] == created["metadata"]["uid"]


def test_list_filters_by_label_selector(client: RestClient) -> None:
    obj = config_map()
    obj["metadata"]["labels"] = {"select": "me"}
    client.create(obj)
    client.create(config_map())
    listed = client.list("v1", "ConfigMap", ListOptions(namespace="default", label_selector="select=me"))
    assert [o["metadata"]["name"] for o in listed.items] == [obj["metadata"]["name"]]
    assert listed.resource_version


def test_update_with_a_stale_resource_version_is_a_409_conflict(client: RestClient) -> None:
    created = client.create(config_map())
    fresh = dict(created, data={"k": "new"})
    client.update(fresh)
    stale = dict(created, data={"k": "stale"})
    with pytest.raises(Conflict):
        client.update(stale)


def test_creating_an_existing_name_is_already_exists(client: RestClient) -> None:
    obj = config_map()
    client.create(obj)
    with pytest.raises(AlreadyExists):
        client.create(obj)


def test_get_of_a_missing_object_raises_typed_not_found(client: RestClient) -> None:
    with pytest.raises(NotFound) as info:
        client.get("v1", "ConfigMap", "does-not-exist", "default")
    assert "does-not-exist" in info.value.message


def test_invalid_object_raises_invalid_with_the_field(client: RestClient) -> None:
    obj = config_map()
    obj["metadata"]["name"] = "Not_A_DNS_Name"
    with pytest.raises(Invalid) as info:
        client.create(obj)
    assert any(c.field == "metadata.name" for c in info.value.causes)


def test_merge_patch_changes_only_the_patched_field(client: RestClient) -> None:
    obj = client.create(config_map(data={"a": "1", "b": "2"}))
    name = obj["metadata"]["name"]
    patched = client.patch("v1", "ConfigMap", name, {"data": {"b": "3"}}, PatchType.MERGE, "default")
    assert patched["data"] == {"a": "1", "b": "3"}


def test_delete_removes_the_object(client: RestClient) -> None:
    name = client.create(config_map())["metadata"]["name"]
    client.delete(
        "v1", "ConfigMap", name, "default", DeleteOptions(propagation_policy=Propagation.BACKGROUND)
    )
    with pytest.raises(NotFound):
        client.get("v1", "ConfigMap", name, "default")


def test_watch_from_a_resource_version_delivers_later_changes_in_order(client: RestClient) -> None:
    start = client.list("v1", "ConfigMap", ListOptions(namespace="default")).resource_version
    obj = client.create(config_map())
    name = obj["metadata"]["name"]
    client.patch("v1", "ConfigMap", name, {"data": {"k": "2"}}, namespace="default")
    client.delete("v1", "ConfigMap", name, "default")
    watch = client.watch("v1", "ConfigMap", ListOptions(namespace="default", resource_version=start))
    seen = []
    for event in watch:
        if event.object["metadata"]["name"] == name:
            seen.append(event.type)
        if len(seen) == 3:
            watch.stop()
    assert seen == ["ADDED", "MODIFIED", "DELETED"]


def test_watch_from_a_compacted_resource_version_raises_gone(client: RestClient) -> None:
    first = client.create(config_map())["metadata"]["resourceVersion"]
    for _ in range(30):  # more writes than the server's watch history keeps
        client.create(config_map())
    with pytest.raises(Gone):
        watch = client.watch("v1", "ConfigMap", ListOptions(namespace="default", resource_version=first))
        next(iter(watch))


def test_async_iteration_yields_the_same_events(client: RestClient) -> None:
    import asyncio

    start = client.list("v1", "ConfigMap", ListOptions(namespace="default")).resource_version
    name = client.create(config_map())["metadata"]["name"]

    async def first_event() -> tuple[str, str]:
        watch = client.watch("v1", "ConfigMap", ListOptions(namespace="default", resource_version=start))
        async for event in watch:
            watch.stop()
            return event.type, event.object["metadata"]["name"]
        raise AssertionError("the watch ended without events")

    assert asyncio.run(first_event()) == ("ADDED", name)


def test_discovery_resolves_short_names_and_group_qualified_names(client: RestClient) -> None:
    assert client.resolve("cm").kind == "ConfigMap"
    job = client.resolve("jobs.batch")
    assert (job.group, job.version, job.namespaced) == ("batch", "v1", True)
    assert job.path("ns", "pi", "status") == "/apis/batch/v1/namespaces/ns/jobs/pi/status"


def test_unknown_kind_is_not_found_naming_it(client: RestClient) -> None:
    with pytest.raises(NotFound) as info:
        client.resource_for("v1", "Gadget")
    assert '"Gadget"' in info.value.message


def test_table_form_carries_the_servers_columns(client: RestClient) -> None:
    client.create(config_map())
    table = client.get_table(client.resolve("configmaps"), namespace="default")
    assert table["kind"] == "Table"
    assert next(c["name"] for c in table["columnDefinitions"]) == "Name"


def test_a_request_without_the_token_is_unauthorized(server_url: str) -> None:
    with RestClient(ClientConfig(server=server_url)) as anonymous, pytest.raises(Unauthorized):
        anonymous.get("v1", "ConfigMap", "x", "default")


def test_an_unreachable_server_is_a_connection_error_after_retries() -> None:
    config = ClientConfig(server="http://127.0.0.1:9")  # discard port: nothing listens
    with RestClient(config, retries=1, backoff=0.01) as dead, pytest.raises(ConnectionFailed):
        dead.get("v1", "ConfigMap", "x", "default")
