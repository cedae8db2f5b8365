"""``kubehpc logs``: a container's output as the node agent wrote it, followed with -f."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from cli_harness import Kubehpc

from kubehpc.kube.rest import RestClient
from kubehpc.store.home import Home


def pod(
    api: RestClient, namespace: str, name: str, containers: tuple[str, ...] = ("main",)
) -> dict[str, Any]:
    # Bound to a node no agent serves, so nothing but the test writes its log.
    return api.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "nodeName": "nowhere",
                "restartPolicy": "Never",
                "containers": [{"name": c, "image": "busybox"} for c in containers],
            },
        }
    )


def write_log(home: Home, namespace: str, name: str, container: str, text: str) -> Path:
    path = home.pod_log_path(namespace, name, container)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.write(text)
    return path


def finish(api: RestClient, namespace: str, name: str) -> None:
    obj = api.get("v1", "Pod", name, namespace)
    obj["status"] = {"phase": "Succeeded"}
    api.update_status(obj)


def test_logs_prints_the_containers_output(
    kubehpc: Kubehpc, api: RestClient, control_plane: Home, namespace: str
) -> None:
    pod(api, namespace, "talker")
    write_log(control_plane, namespace, "talker", "main", "hello\nworld\n")
    assert kubehpc("logs", "talker").out == "hello\nworld\n"


def test_tail_keeps_only_the_last_lines(
    kubehpc: Kubehpc, api: RestClient, control_plane: Home, namespace: str
) -> None:
    pod(api, namespace, "long")
    write_log(control_plane, namespace, "long", "main", "".join(f"line {i}\n" for i in range(10)))
    assert kubehpc("logs", "pod/long", "--tail", "2").out == "line 8\nline 9\n"


def test_container_is_chosen_with_c(
    kubehpc: Kubehpc, api: RestClient, control_plane: Home, namespace: str
) -> None:
    pod(api, namespace, "pair", ("app", "sidecar"))
    write_log(control_plane, namespace, "pair", "sidecar", "from the sidecar\n")
    assert kubehpc("logs", "pair", "-c", "sidecar").out == "from the sidecar\n"


def test_a_pod_with_several_containers_needs_c(kubehpc: Kubehpc, api: RestClient, namespace: str) -> None:
    pod(api, namespace, "pair", ("app", "sidecar"))
    result = kubehpc("logs", "pair")
    assert result.code == 1
    assert result.err.startswith("Error from server (BadRequest): a container name must be specified")


def test_follow_streams_new_output_until_the_pod_finishes(
    kubehpc: Kubehpc, api: RestClient, control_plane: Home, namespace: str
) -> None:
    pod(api, namespace, "streamer")
    write_log(control_plane, namespace, "streamer", "main", "first\n")
    results = []
    follower = threading.Thread(target=lambda: results.append(kubehpc("logs", "streamer", "-f")))
    follower.start()
    write_log(control_plane, namespace, "streamer", "main", "second\n")
    finish(api, namespace, "streamer")
    follower.join(60)
    assert not follower.is_alive(), "logs -f did not end when the pod finished"
    assert results[0].out == "first\nsecond\n"


def test_logs_of_a_job_show_its_pod(
    kubehpc: Kubehpc, api: RestClient, control_plane: Home, namespace: str
) -> None:
    job = api.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "batch", "namespace": namespace},
            "spec": {
                "suspend": True,
                "template": {
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}
                },
            },
        }
    )
    labels = job["spec"]["selector"]["matchLabels"]
    made = pod(api, namespace, "batch-abcde")
    made["metadata"]["labels"] = labels
    api.update(made)
    write_log(control_plane, namespace, "batch-abcde", "main", "from the job's pod\n")
    assert kubehpc("logs", "job/batch").out == "from the job's pod\n"
