"""Create, update, status and patch: the object semantics of the API server."""

from __future__ import annotations

import random

import orjson
import pytest
from storekit import configmap, job, pod

from kubehpc.api.errors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    UnsupportedMediaType,
)
from kubehpc.store.client import DeleteOptions, ListOptions, PatchType, WriteOptions
from kubehpc.store.store import Store
from kubehpc.store.strategy import NAME_ALPHABET, generated_name


def test_the_four_initial_namespaces_exist_from_the_first_start(store: Store) -> None:
    names = [n["metadata"]["name"] for n in store.list("v1", "Namespace").items]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]


def test_create_sets_uid_creation_timestamp_generation_and_resource_version(store: Store) -> None:
    out = store.create(configmap("c"))
    meta = out["metadata"]
    assert len(meta["uid"]) == 36
    assert meta["creationTimestamp"].endswith("Z") and len(meta["creationTimestamp"]) == 20
    assert meta["generation"] == 1
    assert int(meta["resourceVersion"]) == store.resource_version


def test_resource_version_is_one_monotonic_counter_across_kinds(store: Store) -> None:
    rvs = [int(store.create(configmap(f"c{i}"))["metadata"]["resourceVersion"]) for i in range(3)]
    rvs.append(int(store.create(pod("p"))["metadata"]["resourceVersion"]))
    rvs.append(int(store.delete("v1", "ConfigMap", "c0")["metadata"]["resourceVersion"]))
    assert rvs == sorted(set(rvs))


def test_namespaced_kinds_default_to_the_default_namespace(store: Store) -> None:
    obj = configmap("c")
    del obj["metadata"]["namespace"]
    assert store.create(obj)["metadata"]["namespace"] == "default"


def test_cluster_scoped_kinds_drop_metadata_namespace(store: Store) -> None:
    out = store.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "namespace": "x"}}
    )
    assert "namespace" not in out["metadata"]


def test_create_in_a_missing_namespace_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound, match='namespaces "nowhere" not found'):
        store.create(configmap("c", "nowhere"))


def test_create_of_an_unknown_kind_lists_the_supported_ones(store: Store) -> None:
    with pytest.raises(BadRequest, match=r'no kind "Gizmo".*supported: .*v1 Pod'):
        store.create({"apiVersion": "v1", "kind": "Gizmo", "metadata": {"name": "g"}})


def test_create_of_an_existing_name_is_already_exists(store: Store) -> None:
    store.create(configmap("c"))
    with pytest.raises(AlreadyExists, match='configmaps "c" already exists'):
        store.create(configmap("c"))


def test_invalid_objects_are_rejected_and_not_stored(store: Store) -> None:
    bad = pod("p")
    del bad["spec"]["containers"][0]["image"]
    with pytest.raises(Invalid, match=r"spec\.containers\[0\]\.image"):
        store.create(bad)
    with pytest.raises(NotFound):
        store.get("v1", "Pod", "p", "default")


def test_generate_name_appends_five_characters_of_the_name_alphabet(store: Store) -> None:
    obj = configmap("")
    obj["metadata"]["generateName"] = "run-"
    del obj["metadata"]["name"]
    name = store.create(obj)["metadata"]["name"]
    assert name.startswith("run-") and len(name) == 9
    assert set(name[4:]) <= set(NAME_ALPHABET)


def test_generated_names_use_every_character_of_the_alphabet_at_every_position() -> None:
    rng = random.Random(7)
    names = [generated_name("p-", rng) for _ in range(3000)]
    for position in range(2, 7):
        assert {name[position] for name in names} == set(NAME_ALPHABET)
    assert len(set(names)) > 2990  # 27**5 suffixes: a clash now and then, no more


def test_generated_names_follow_the_stores_seed() -> None:
    first = [generated_name("p-", random.Random(3)) for _ in range(2)]
    assert first[0] == first[1]
    assert generated_name("p-", random.Random(3)) != generated_name("p-", random.Random(4))


def test_dry_run_create_stores_nothing_and_sends_no_event(store: Store) -> None:
    rv = store.resource_version
    out = store.create(configmap("c"), WriteOptions(dry_run=True))
    assert out["metadata"]["name"] == "c"
    assert store.resource_version == rv
    assert store.list("v1", "ConfigMap").items == []


def test_status_is_cleared_on_create_for_kinds_with_a_status_subresource(store: Store) -> None:
    obj = pod("p")
    obj["status"] = {"phase": "Running"}
    assert store.create(obj)["status"]["phase"] == "Pending"  # set by the Pod defaulter


def test_a_node_keeps_the_status_it_registers_with(store: Store) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "status": {"capacity": {"cpu": "4"}},
    }
    assert store.create(node)["status"]["capacity"] == {"cpu": "4"}


def test_defaulting_runs_after_the_uid_is_set(store: Store) -> None:
    out = store.create(job("j", completions=1))
    labels = out["spec"]["selector"]["matchLabels"]
    assert out["metadata"]["uid"] in labels.values()


def test_returned_objects_are_independent_copies(store: Store) -> None:
    out = store.create(configmap("c", a="1"))
    out["data"]["a"] = "changed"
    got = store.get("v1", "ConfigMap", "c", "default")
    got["data"]["a"] = "changed too"
    assert store.get("v1", "ConfigMap", "c", "default")["data"] == {"a": "1"}


def test_stale_update_is_a_409_conflict(store: Store) -> None:
    first = store.create(configmap("c", a="1"))
    second = dict(first, data={"a": "2"})
    store.update(second)
    stale = dict(first, data={"a": "3"})
    with pytest.raises(
        Conflict, match='Operation cannot be fulfilled on configmaps "c": the object has been modified'
    ):
        store.update(stale)


def test_update_without_resource_version_is_unconditional(store: Store) -> None:
    obj = store.create(configmap("c", a="1"))
    del obj["metadata"]["resourceVersion"]
    obj["data"] = {"a": "2"}
    assert store.update(obj)["data"] == {"a": "2"}


def test_update_of_a_missing_object_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound, match='configmaps "c" not found'):
        store.update(configmap("c"))


def test_generation_bumps_on_spec_change_only(store: Store) -> None:
    obj = store.create(pod("p"))
    obj["metadata"]["labels"] = {"a": "b"}
    obj = store.update(obj)
    assert obj["metadata"]["generation"] == 1
    obj["spec"]["activeDeadlineSeconds"] = 60
    obj = store.update(obj)
    assert obj["metadata"]["generation"] == 2
    obj["status"]["phase"] = "Running"
    assert store.update_status(obj)["metadata"]["generation"] == 2


def test_a_no_op_update_keeps_the_resource_version(store: Store) -> None:
    obj = store.create(configmap("c", a="1"))
    assert store.update(obj)["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]


def test_update_ignores_status_changes_of_kinds_with_a_status_subresource(store: Store) -> None:
    obj = store.create(pod("p"))
    obj["status"] = {"phase": "Running"}
    assert store.update(obj)["status"]["phase"] == "Pending"


def test_update_status_changes_only_status(store: Store) -> None:
    obj = store.create(pod("p"))
    obj["status"] = {"phase": "Running"}
    obj["spec"]["activeDeadlineSeconds"] = 5
    obj["metadata"]["labels"] = {"x": "y"}
    out = store.update_status(obj)
    assert out["status"]["phase"] == "Running"
    assert "activeDeadlineSeconds" not in out["spec"]
    assert "labels" not in out["metadata"]


def test_update_status_leaves_the_version_before_it_as_it_was(store: Store) -> None:
    store.create(pod("p"))
    before = store.list("v1", "Pod", ListOptions(namespace="default", read_only=True)).items[0]
    seen = orjson.dumps(before)
    store.update_status(dict(before, status={"phase": "Running"}))
    assert orjson.dumps(before) == seen  # the stored version a reader holds is not changed under it


def test_update_keeps_uid_and_creation_timestamp(store: Store) -> None:
    obj = store.create(configmap("c"))
    changed = dict(
        obj, metadata=dict(obj["metadata"], uid="forged", creationTimestamp="2000-01-01T00:00:00Z")
    )
    out = store.update(changed)
    assert out["metadata"]["uid"] == obj["metadata"]["uid"]
    assert out["metadata"]["creationTimestamp"] == obj["metadata"]["creationTimestamp"]


def test_update_rules_of_the_kind_are_enforced(store: Store) -> None:
    obj = store.create(job("j", completions=1))
    obj["spec"]["completions"] = 2
    with pytest.raises(Invalid, match=r"spec\.completions"):
        store.update(obj)


def test_merge_patch_updates_and_bumps_the_resource_version(store: Store) -> None:
    obj = store.create(configmap("c", a="1"))
    out = store.patch("v1", "ConfigMap", "c", {"data": {"b": "2"}}, PatchType.MERGE, "default")
    assert out["data"] == {"a": "1", "b": "2"}
    assert int(out["metadata"]["resourceVersion"]) > int(obj["metadata"]["resourceVersion"])


def test_json_patch_applies_to_the_stored_object(store: Store) -> None:
    store.create(configmap("c", a="1"))
    ops = [
        {"op": "test", "path": "/data/a", "value": "1"},
        {"op": "replace", "path": "/data/a", "value": "2"},
    ]
    assert store.patch("v1", "ConfigMap", "c", ops, PatchType.JSON, "default")["data"] == {"a": "2"}


def test_strategic_merge_patch_merges_pod_containers_by_name(store: Store) -> None:
    obj = pod("p")
    obj["spec"]["containers"].append({"name": "side", "image": "proxy"})
    store.create(obj)
    patch = {"spec": {"containers": [{"name": "side", "image": "proxy:2"}]}}
    out = store.patch("v1", "Pod", "p", patch, PatchType.STRATEGIC, "default")
    assert [(c["name"], c["image"]) for c in out["spec"]["containers"]] == [
        ("main", "busybox"),
        ("side", "proxy:2"),
    ]


def test_strategic_merge_patch_delete_directive_removes_a_list_item_by_merge_key(store: Store) -> None:
    obj = pod("p")
    refs = [{"apiVersion": "batch/v1", "kind": "Job", "name": n, "uid": f"uid-{n}"} for n in ("a", "b")]
    obj["metadata"]["ownerReferences"] = refs
    store.create(obj)
    patch = {"metadata": {"ownerReferences": [{"uid": "uid-a", "$patch": "delete"}]}}
    out = store.patch("v1", "Pod", "p", patch, PatchType.STRATEGIC, "default")
    assert [r["name"] for r in out["metadata"]["ownerReferences"]] == ["b"]


def test_strategic_merge_on_a_custom_kind_is_unsupported_media_type(store: Store) -> None:
    store.create({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}})
    with pytest.raises(UnsupportedMediaType):
        store.patch(
            "example.com/v1", "Widget", "w", {"spec": {"replicas": 2}}, PatchType.STRATEGIC, "default"
        )


def test_patch_carrying_a_stale_resource_version_is_a_conflict(store: Store) -> None:
    obj = store.create(configmap("c", a="1"))
    store.patch("v1", "ConfigMap", "c", {"data": {"a": "2"}}, PatchType.MERGE, "default")
    stale = {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]}, "data": {"a": "3"}}
    with pytest.raises(Conflict):
        store.patch("v1", "ConfigMap", "c", stale, PatchType.MERGE, "default")


def test_status_patch_goes_through_the_status_subresource(store: Store) -> None:
    store.create(pod("p"))
    out = store.patch(
        "v1",
        "Pod",
        "p",
        {"status": {"phase": "Running"}, "spec": {"activeDeadlineSeconds": 3}},
        PatchType.MERGE,
        "default",
        subresource="status",
    )
    assert out["status"]["phase"] == "Running"
    assert "activeDeadlineSeconds" not in out["spec"]


def test_objects_are_stored_in_the_storage_version_and_served_in_the_requested_one(store: Store) -> None:
    store.create(
        {
            "apiVersion": "example.com/v1alpha1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"size": 3},
        }
    )
    assert store.get("example.com/v1", "Widget", "w", "default")["spec"] == {"replicas": 3}
    old = store.get("example.com/v1alpha1", "Widget", "w", "default")
    assert old["apiVersion"] == "example.com/v1alpha1" and old["spec"] == {"size": 3}


def test_list_filters_by_namespace_and_label_selector_sorted_by_namespace_and_name(store: Store) -> None:
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    for ns, name, app in [
        ("team", "b", "web"),
        ("default", "z", "web"),
        ("team", "a", "web"),
        ("team", "c", "db"),
    ]:
        store.create(pod(name, ns, labels={"app": app}))
    everywhere = store.list("v1", "Pod", ListOptions(label_selector="app=web"))
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in everywhere.items] == [
        ("default", "z"),
        ("team", "a"),
        ("team", "b"),
    ]
    team = store.list("v1", "Pod", ListOptions(namespace="team", field_selector="metadata.name!=a"))
    assert [p["metadata"]["name"] for p in team.items] == ["b", "c"]
    assert everywhere.kind == "PodList" and everywhere.resource_version == str(store.resource_version)


def test_list_pages_with_limit_and_continue(store: Store) -> None:
    for i in range(5):
        store.create(configmap(f"c{i}"))
    seen = []
    token = ""
    while True:
        page = store.list("v1", "ConfigMap", ListOptions(limit=2, continue_token=token))
        seen += [c["metadata"]["name"] for c in page.items]
        token = page.continue_token
        if not token:
            break
        assert page.remaining_item_count == 5 - len(seen)
    assert seen == ["c0", "c1", "c2", "c3", "c4"]


def test_list_raw_is_the_json_of_the_list(store: Store) -> None:
    import orjson

    store.create(configmap("c", a="1"))
    raw = orjson.loads(store.list_raw("v1", "ConfigMap"))
    assert raw == store.list("v1", "ConfigMap").to_dict()
    assert orjson.loads(store.get_raw("v1", "ConfigMap", "c", "default")) == store.get(
        "v1", "ConfigMap", "c", "default"
    )


def test_a_bad_continue_token_is_a_bad_request(store: Store) -> None:
    with pytest.raises(BadRequest, match="continue"):
        store.list("v1", "ConfigMap", ListOptions(continue_token="garbage!"))


def test_create_in_a_terminating_namespace_is_forbidden(store: Store) -> None:
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"}})
    store.create(configmap("keep", "gone"))
    store.delete("v1", "Namespace", "gone", None, DeleteOptions())
    with pytest.raises(Forbidden, match="because it is being terminated"):
        store.create(configmap("c", "gone"))


def test_batch_commits_all_writes_or_none(store: Store) -> None:
    with pytest.raises(RuntimeError), store.batch():
        store.create(configmap("a"))
        raise RuntimeError("abort")
    assert store.list("v1", "ConfigMap").items == []
    with store.batch():
        store.create(configmap("a"))
        store.create(configmap("b"))
    assert len(store.list("v1", "ConfigMap").items) == 2


def binding(pod_name: str, node: str, **annotations: str) -> dict[str, object]:
    meta: dict[str, object] = {"name": pod_name, "namespace": "default"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Binding", "metadata": meta, "target": {"kind": "Node", "name": node}}


def test_a_binding_assigns_a_pending_pod_to_a_node(store: Store) -> None:
    store.create(pod("p"))
    assert store.create(binding("p", "node-1", **{"example.com/devices": "GPU-0"}))["status"] == "Success"
    bound = store.get("v1", "Pod", "p", "default")
    assert bound["spec"]["nodeName"] == "node-1"
    assert bound["metadata"]["annotations"] == {"example.com/devices": "GPU-0"}
    assert {"type": "PodScheduled", "status": "True"}.items() <= bound["status"]["conditions"][-1].items()


def test_a_binding_leaves_the_version_before_as_it_was_and_shares_what_it_did_not_change(
    store: Store,
) -> None:
    store.create(pod("p"))
    before = store.get("v1", "Pod", "p", "default", read_only=True)
    before_json = orjson.dumps(before)
    store.create(binding("p", "node-1", **{"example.com/devices": "GPU-0"}))
    after = store.get("v1", "Pod", "p", "default", read_only=True)
    assert orjson.dumps(before) == before_json
    assert after["spec"]["containers"] is before["spec"]["containers"]
    assert after["spec"] is not before["spec"] and after["metadata"] is not before["metadata"]
    assert after["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]


def test_binding_an_already_bound_pod_is_a_conflict(store: Store) -> None:
    store.create(pod("p", nodeName="node-1"))
    with pytest.raises(Conflict, match='already assigned to node "node-1"'):
        store.create(binding("p", "node-2"))


def test_binding_a_missing_pod_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        store.create(binding("ghost", "node-1"))
