"""``kubehpc delete``: by name or file, with kubectl's cascade choices."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli_harness import Kubehpc

from kubehpc.api.errors import NotFound
from kubehpc.kube.rest import RestClient


def config_map(
    api: RestClient, namespace: str, name: str, owner: dict[str, Any] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    return api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})


def gone(api: RestClient, namespace: str, name: str) -> bool:
    try:
        api.get("v1", "ConfigMap", name, namespace)
    except NotFound:
        return True
    return False


def test_delete_by_name_prints_deleted_and_removes_it(
    kubehpc: Kubehpc, api: RestClient, namespace: str
) -> None:
    config_map(api, namespace, "doomed")
    result = kubehpc("delete", "configmap", "doomed")
    assert (result.code, result.out) == (0, 'configmap "doomed" deleted\n')
    assert gone(api, namespace, "doomed")


def test_delete_of_a_missing_object_is_a_not_found_error(kubehpc: Kubehpc) -> None:
    result = kubehpc("delete", "cm", "ghost")
    assert result.code == 1
    assert result.err == 'Error from server (NotFound): configmaps "ghost" not found\n'


def test_ignore_not_found_makes_a_missing_object_fine(kubehpc: Kubehpc) -> None:
    assert kubehpc("delete", "cm", "ghost", "--ignore-not-found").code == 0


def test_background_cascade_deletes_dependents(kubehpc: Kubehpc, api: RestClient, namespace: str) -> None:
    owner = config_map(api, namespace, "parent")
    config_map(api, namespace, "child", owner)
    assert kubehpc("delete", "cm", "parent", "--cascade=background").code == 0
    assert kubehpc("wait", "cm/child", "--for=delete", "--timeout=20s").code == 0


def test_foreground_cascade_deletes_dependents_before_the_owner(
    kubehpc: Kubehpc, api: RestClient, namespace: str
) -> None:
    owner = config_map(api, namespace, "parent")
    config_map(api, namespace, "child", owner)
    assert kubehpc("delete", "cm", "parent", "--cascade=foreground", "--timeout=20s").code == 0
    assert gone(api, namespace, "parent") and gone(api, namespace, "child")


def test_orphan_cascade_keeps_dependents_without_the_owner_reference(
    kubehpc: Kubehpc, api: RestClient, namespace: str
) -> None:
    owner = config_map(api, namespace, "parent")
    config_map(api, namespace, "child", owner)
    assert kubehpc("delete", "cm", "parent", "--cascade=orphan", "--timeout=20s").code == 0
    child = api.get("v1", "ConfigMap", "child", namespace)
    assert not child["metadata"].get("ownerReferences")


def test_delete_with_a_file_deletes_the_objects_it_names(
    kubehpc: Kubehpc, api: RestClient, namespace: str, tmp_path: Path
) -> None:
    config_map(api, namespace, "from-file")
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-file}\n")
    assert kubehpc("delete", "-f", str(path)).out == 'configmap "from-file" deleted\n'
    assert gone(api, namespace, "from-file")


@pytest.mark.parametrize("flag", ["--cascade=sideways"])
def test_an_unknown_cascade_is_rejected(kubehpc: Kubehpc, flag: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        kubehpc("delete", "cm", "x", flag)
    assert exit_info.value.code == 2
