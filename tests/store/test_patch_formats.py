"""JSON patch, JSON merge patch, strategic merge patch and the three-way merge of apply."""

from __future__ import annotations

from typing import Any

import pytest
from storekit import POD_PATCH_META, TreePatchMeta

from kubehpc.api.errors import BadRequest, Invalid
from kubehpc.store.patch import (
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    three_way_merge_patch,
)

POD: dict[str, Any] = {
    "metadata": {"name": "p", "labels": {"app": "web", "tier": "front"}, "finalizers": ["a"]},
    "spec": {
        "containers": [
            {
                "name": "main",
                "image": "app:1",
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
            },
            {"name": "sidecar", "image": "proxy:1"},
        ],
        "tolerations": [{"key": "gpu"}],
    },
}


def test_json_patch_applies_add_remove_replace_move_copy_in_order() -> None:
    ops = [
        {"op": "add", "path": "/metadata/labels/new", "value": "x"},
        {"op": "remove", "path": "/metadata/labels/tier"},
        {"op": "replace", "path": "/spec/containers/0/image", "value": "app:2"},
        {"op": "copy", "from": "/spec/containers/0/image", "path": "/metadata/labels/image"},
        {"op": "move", "from": "/metadata/labels/new", "path": "/metadata/labels/moved"},
        {"op": "add", "path": "/spec/tolerations/-", "value": {"key": "spot"}},
    ]
    out = apply_json_patch(POD, ops)
    assert out["metadata"]["labels"] == {"app": "web", "image": "app:2", "moved": "x"}
    assert out["spec"]["containers"][0]["image"] == "app:2"
    assert out["spec"]["tolerations"] == [{"key": "gpu"}, {"key": "spot"}]
    assert POD["spec"]["containers"][0]["image"] == "app:1"  # input untouched


def test_json_patch_pointer_escapes_address_keys_with_slashes_and_tildes() -> None:
    out = apply_json_patch({"a": {}}, [{"op": "add", "path": "/a/example.com~1x~0y", "value": 1}])
    assert out == {"a": {"example.com/x~y": 1}}


def test_json_patch_failed_test_op_is_unprocessable() -> None:
    with pytest.raises(Invalid, match="test failed"):
        apply_json_patch(POD, [{"op": "test", "path": "/metadata/name", "value": "other"}])


def test_json_patch_on_a_missing_path_is_unprocessable() -> None:
    with pytest.raises(Invalid, match="path does not exist"):
        apply_json_patch(POD, [{"op": "replace", "path": "/spec/nothing/here", "value": 1}])


def test_json_patch_that_is_not_a_list_is_a_bad_request() -> None:
    with pytest.raises(BadRequest):
        apply_json_patch(POD, {"op": "add"})


def test_merge_patch_null_deletes_and_lists_are_replaced() -> None:
    out = apply_merge_patch(
        POD, {"metadata": {"labels": {"tier": None, "new": "y"}}, "spec": {"tolerations": []}}
    )
    assert out["metadata"]["labels"] == {"app": "web", "new": "y"}
    assert out["spec"]["tolerations"] == []
    assert out["spec"]["containers"] == POD["spec"]["containers"]


def test_strategic_merge_merges_containers_by_name() -> None:
    patch = {"spec": {"containers": [{"name": "main", "image": "app:2"}, {"name": "new", "image": "x"}]}}
    out = apply_strategic_merge_patch(POD, patch, POD_PATCH_META)
    names = [c["name"] for c in out["spec"]["containers"]]
    assert names == ["main", "sidecar", "new"]
    assert out["spec"]["containers"][0]["image"] == "app:2"
    assert out["spec"]["containers"][0]["env"] == POD["spec"]["containers"][0]["env"]


def test_strategic_merge_merges_nested_lists_by_their_own_key() -> None:
    patch = {
        "spec": {
            "containers": [
                {"name": "main", "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}
            ]
        }
    }
    out = apply_strategic_merge_patch(POD, patch, POD_PATCH_META)
    assert out["spec"]["containers"][0]["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "3"},
        {"name": "C", "value": "4"},
    ]


def test_strategic_merge_patch_delete_directive_removes_a_list_item() -> None:
    patch = {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}
    out = apply_strategic_merge_patch(POD, patch, POD_PATCH_META)
    assert [c["name"] for c in out["spec"]["containers"]] == ["main"]


def test_strategic_merge_patch_replace_directive_replaces_the_list() -> None:
    patch = {"spec": {"containers": [{"name": "only", "image": "x"}, {"$patch": "replace"}]}}
    out = apply_strategic_merge_patch(POD, patch, POD_PATCH_META)
    assert out["spec"]["containers"] == [{"name": "only", "image": "x"}]


def test_strategic_merge_patch_replace_directive_on_a_map_replaces_it() -> None:
    out = apply_strategic_merge_patch(
        POD, {"metadata": {"labels": {"only": "x", "$patch": "replace"}}}, POD_PATCH_META
    )
    assert out["metadata"]["labels"] == {"only": "x"}


def test_strategic_merge_patch_delete_directive_on_a_map_removes_it() -> None:
    out = apply_strategic_merge_patch(POD, {"metadata": {"labels": {"$patch": "delete"}}}, POD_PATCH_META)
    assert "labels" not in out["metadata"]


def test_strategic_merge_replaces_lists_without_a_merge_strategy() -> None:
    out = apply_strategic_merge_patch(POD, {"spec": {"tolerations": [{"key": "spot"}]}}, POD_PATCH_META)
    assert out["spec"]["tolerations"] == [{"key": "spot"}]


def test_strategic_merge_of_a_merged_primitive_list_is_a_union() -> None:
    out = apply_strategic_merge_patch(POD, {"metadata": {"finalizers": ["b", "a"]}}, POD_PATCH_META)
    assert out["metadata"]["finalizers"] == ["a", "b"]


def test_strategic_merge_delete_from_primitive_list() -> None:
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}
    out = apply_strategic_merge_patch(POD, patch, POD_PATCH_META)
    assert out["metadata"]["finalizers"] == []


def test_strategic_merge_set_element_order_orders_the_merged_list() -> None:
    patch = {"spec": {"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "main"}]}}
    out = apply_strategic_merge_patch(POD, patch, POD_PATCH_META)
    assert [c["name"] for c in out["spec"]["containers"]] == ["sidecar", "main"]


def test_strategic_merge_retain_keys_drops_unlisted_fields() -> None:
    meta = TreePatchMeta(children={"volume": TreePatchMeta("retainKeys")})
    doc = {"volume": {"name": "v", "emptyDir": {}}}
    out = apply_strategic_merge_patch(
        doc, {"volume": {"$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}}, meta
    )
    assert out == {"volume": {"name": "v", "hostPath": {"path": "/x"}}}


def test_three_way_merge_deletes_only_what_the_user_removed() -> None:
    original = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"replicas": 1}}
    modified = {"metadata": {"labels": {"a": "1"}}, "spec": {"replicas": 2}}
    current = {
        "metadata": {"labels": {"a": "1", "b": "2", "c": "set-by-controller"}},
        "spec": {"replicas": 1},
        "status": {},
    }
    patch = three_way_merge_patch(original, modified, current)
    assert patch == {"metadata": {"labels": {"b": None}}, "spec": {"replicas": 2}}
    assert apply_merge_patch(current, patch)["metadata"]["labels"] == {"a": "1", "c": "set-by-controller"}


# RFC 7386, Appendix A: (original, patch, result)
RFC7386_EXAMPLES: list[tuple[Any, Any, Any]] = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("original", "patch", "result"), RFC7386_EXAMPLES)
def test_merge_patch_follows_the_rfc_7386_examples(original: Any, patch: Any, result: Any) -> None:
    assert apply_merge_patch(original, patch) == result
