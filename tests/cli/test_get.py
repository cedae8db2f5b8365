"""``kubehpc get``: the server's tables, and objects as YAML, JSON, names or JSONPath."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from typing import Any

import yaml
from cli_harness import Kubehpc

from kubehpc.kube.rest import RestClient
from kubehpc.store.home import Home


def config_map(
    api: RestClient, namespace: str, name: str, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return api.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "data": {"k": "v"},
        }
    )


def test_get_prints_the_servers_columns_upper_cased(
    kubehpc: Kubehpc, api: RestClient, namespace: str
) -> None:
    config_map(api, namespace, "one")
    lines = kubehpc("get", "configmaps").out.splitlines()
    assert lines[0].split() == ["NAME", "DATA", "AGE"]
    assert lines[1].split()[:2] == ["one", "1"]


def test_get_of_an_empty_namespace_says_no_resources_found(kubehpc: Kubehpc, namespace: str) -> None:
    result = kubehpc("get", "pods")
    assert (result.code, result.out) == (0, "")
    assert result.err == f"No resources found in {namespace} namespace.\n"


def test_get_of_a_missing_name_is_a_not_found_error_line(kubehpc: Kubehpc) -> None:
    result = kubehpc("get", "configmap", "ghost")
    assert result.code == 1
    assert result.err == 'Error from server (NotFound): configmaps "ghost" not found\n'


def test_all_namespaces_adds_a_namespace_column(kubehpc: Kubehpc, api: RestClient, namespace: str) -> None:
    config_map(api, namespace, "spread")
    lines = kubehpc("get", "cm", "-A").out.splitlines()
    assert lines[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert [namespace, "spread"] in [line.split()[:2] for line in lines[1:]]


def test_label_selector_filters_rows(kubehpc: Kubehpc, api: RestClient, namespace: str) -> None:
    config_map(api, namespace, "blue", {"color": "blue"})
    config_map(api, namespace, "red", {"color": "red"})
    rows = kubehpc("get", "cm", "-l", "color=blue").out.splitlines()[1:]
    assert [r.split()[0] for r in rows] == ["blue"]


def test_show_labels_adds_a_labels_column(kubehpc: Kubehpc, api: RestClient, namespace: str) -> None:
    config_map(api, namespace, "tagged", {"tier": "web", "app": "x"})
    lines = kubehpc("get", "cm", "tagged", "--show-labels").out.splitlines()
    assert lines[0].split()[-1] == "LABELS"
    assert lines[1].split()[-1] == "app=x,tier=web"


def test_output_yaml_of_one_object_is_the_object(kubehpc: Kubehpc, api: RestClient, namespace: str) -> None:
    config_map(api, namespace, "doc")
    obj = yaml.safe_load(kubehpc("get", "cm", "doc", "-o", "yaml").out)
    assert (obj["kind"], obj["metadata"]["name"], obj["data"]) == ("ConfigMap", "doc", {"k": "v"})


def test_output_json_of_a_collection_is_a_list(kubehpc: Kubehpc, api: RestClient, namespace: str) -> None:
    config_map(api, namespace, "a")
    config_map(api, namespace, "b")
    doc = json.loads(kubehpc("get", "cm", "-o", "json").out)
    assert doc["kind"] == "List"
    assert sorted(i["metadata"]["name"] for i in doc["items"]) == ["a", "b"]


def test_output_name_prints_type_slash_name(kubehpc: Kubehpc, api: RestClient, namespace: str) -> None:
    config_map(api, namespace, "named")
    assert kubehpc("get", "cm", "-o", "name").out == "configmap/named\n"


def test_output_jsonpath_renders_the_template(kubehpc: Kubehpc, api: RestClient, namespace: str) -> None:
    config_map(api, namespace, "p1")
    config_map(api, namespace, "p2")
    result = kubehpc("get", "cm", "-o", 'jsonpath={range .items[*]}{.metadata.name}{"\\n"}{end}')
    assert result.out == "p1\np2\n"


def test_an_unknown_resource_type_is_an_error(kubehpc: Kubehpc) -> None:
    result = kubehpc("get", "gizmos")
    assert result.code == 1
    assert 'the server doesn\'t have a resource type "gizmos"' in result.err


def test_an_unknown_output_format_is_an_error(kubehpc: Kubehpc) -> None:
    result = kubehpc("get", "pods", "-o", "xml")
    assert result.code == 1
    assert 'output format "xml"' in result.err


def test_watch_prints_a_row_for_each_later_change(
    control_plane: Home, api: RestClient, namespace: str
) -> None:
    config_map(api, namespace, "before")
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    cmd = [sys.executable, "-m", "kubehpc.cli", "--home", str(control_plane.root), "-n", namespace]
    watcher = subprocess.Popen([*cmd, "get", "cm", "-w"], stdout=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in watcher.stdout or ()], daemon=True).start()
    try:
        assert lines.get(timeout=30).split()[0] == "NAME"
        assert lines.get(timeout=30).split()[0] == "before"  # the listing is printed: the watch runs
        config_map(api, namespace, "after")
        assert lines.get(timeout=30).split()[0] == "after"
    finally:
        watcher.kill()
        watcher.wait()
