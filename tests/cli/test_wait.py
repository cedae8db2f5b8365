"""``kubehpc wait``: kubectl's conditions, messages and exit codes."""

from __future__ import annotations

import threading
from typing import Any

from cli_harness import Kubehpc

from kubehpc.kube.rest import RestClient


def pod(api: RestClient, namespace: str, name: str) -> dict[str, Any]:
    return api.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"nodeName": "nowhere", "containers": [{"name": "main", "image": "busybox"}]},
        }
    )


def set_status(api: RestClient, namespace: str, name: str, status: dict[str, Any]) -> None:
    obj = api.get("v1", "Pod", name, namespace)
    obj["status"] = status
    api.update_status(obj)


READY = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}


def test_a_condition_already_met_returns_at_once(kubehpc: Kubehpc, api: RestClient, namespace: str) -> None:
    pod(api, namespace, "ready")
    set_status(api, namespace, "ready", READY)
    result = kubehpc("wait", "pod/ready", "--for=condition=Ready")
    assert (result.code, result.out) == (0, "pod/ready condition met\n")


def test_wait_returns_once_the_condition_becomes_true(
    kubehpc: Kubehpc, api: RestClient, namespace: str
) -> None:
    pod(api, namespace, "later")
    timer = threading.Timer(0.5, set_status, (api, namespace, "later", READY))
    timer.start()
    result = kubehpc("wait", "pod", "later", "--for=condition=ready", "--timeout=30s")
    timer.join()
    assert (result.code, result.out) == (0, "pod/later condition met\n")


def test_a_condition_value_other_than_true_can_be_awaited(
    kubehpc: Kubehpc, api: RestClient, namespace: str
) -> None:
    pod(api, namespace, "unready")
    set_status(api, namespace, "unready", {"conditions": [{"type": "Ready", "status": "False"}]})
    assert kubehpc("wait", "pod/unready", "--for=condition=Ready=False").code == 0


def test_timeout_prints_kubectls_message_and_exits_1(
    kubehpc: Kubehpc, api: RestClient, namespace: str
) -> None:
    pod(api, namespace, "never")
    result = kubehpc("wait", "pod/never", "--for=condition=Ready", "--timeout=1s")
    assert result.code == 1
    assert result.err == "error: timed out waiting for the condition on pods/never\n"


def test_wait_for_delete_returns_when_the_object_is_gone(
    kubehpc: Kubehpc, api: RestClient, namespace: str
) -> None:
    api.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "doomed", "namespace": namespace}}
    )
    timer = threading.Timer(0.5, api.delete, ("v1", "ConfigMap", "doomed", namespace))
    timer.start()
    result = kubehpc("wait", "configmap/doomed", "--for=delete", "--timeout=30s")
    timer.join()
    assert (result.code, result.out) == (0, "configmap/doomed condition met\n")


def test_wait_for_a_jsonpath_value(kubehpc: Kubehpc, api: RestClient, namespace: str) -> None:
    pod(api, namespace, "phased")
    set_status(api, namespace, "phased", {"phase": "Running"})
    result = kubehpc("wait", "pod/phased", "--for=jsonpath={.status.phase}=Running", "--timeout=5s")
    assert (result.code, result.out) == (0, "pod/phased condition met\n")


def test_waiting_on_a_missing_object_is_not_found(kubehpc: Kubehpc) -> None:
    result = kubehpc("wait", "pod/ghost", "--for=condition=Ready", "--timeout=1s")
    assert result.code == 1
    assert result.err == 'Error from server (NotFound): pods "ghost" not found\n'


def test_an_unknown_condition_form_is_a_usage_error(kubehpc: Kubehpc) -> None:
    result = kubehpc("wait", "pod/x", "--for=happiness")
    assert result.code == 1
    assert "unrecognized condition" in result.err
