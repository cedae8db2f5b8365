"""A RayJob queued in a Kueue LocalQueue is admitted by quota, gets its own RayCluster, runs a
real Ray program through the submitter Job (`ray job submit`, whose log is the program's
output), and with shutdownAfterJobFinishes its cluster is deleted once it ends. A second
RayJob that does not fit the quota meanwhile stays suspended, with no cluster. An HTTPMode
RayJob posts its entrypoint straight to the job API of the existing cluster its clusterSelector
names, and leaves that cluster running."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from raykit import NS, RAY, cluster_spec, wait_until

from kubehpc.runtime.controlplane import ControlPlane
from kubehpc.store.client import ListOptions

pytestmark = pytest.mark.slow
KUEUE = "kueue.x-k8s.io/v1beta2"
Obj = dict[str, Any]

PROGRAM = """
import os, ray
ray.init()

@ray.remote
def square(x):
    return x * x

print("sum of squares:", sum(ray.get([square.remote(i) for i in range(10)])))
print("counter_name:", os.environ.get("counter_name"))
"""


def rayjob(name: str, entrypoint: str) -> Obj:
    spec = cluster_spec(dashboard=True)
    return {
        "apiVersion": RAY,
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": NS, "labels": {"kueue.x-k8s.io/queue-name": "ray-queue"}},
        "spec": {
            "entrypoint": entrypoint,
            "runtimeEnvYAML": "env_vars:\n  counter_name: test_counter\n",
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": 0,
            "rayClusterSpec": spec,
        },
    }


def quota(plane: ControlPlane, cpu: str) -> None:
    plane.store.create({"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "ray-flavor"}})
    plane.store.create(
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": "ray-cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": "ray-flavor",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": cpu},
                                    {"name": "memory", "nominalQuota": "8Gi"},
                                ],
                            }
                        ],
                    }
                ],
            },
        }
    )
    plane.store.create(
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "ray-queue", "namespace": NS},
            "spec": {"clusterQueue": "ray-cq"},
        }
    )


def status(plane: ControlPlane, name: str) -> Obj:
    return plane.store.get(RAY, "RayJob", name, NS).get("status") or {}


def workload_of(plane: ControlPlane, name: str) -> Obj | None:
    for wl in plane.store.list(KUEUE, "Workload", ListOptions(namespace=NS)).items:
        if any(r.get("name") == name for r in wl["metadata"].get("ownerReferences") or ()):
            return wl
    return None


def condition(obj: Obj | None, type_: str) -> str | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or ():
        if c.get("type") == type_:
            return str(c.get("status"))
    return None


def test_queued_rayjobs_are_admitted_by_quota_run_to_completion_and_their_cluster_is_torn_down(
    plane: ControlPlane, tmp_path: Path
) -> None:
    program = tmp_path / "squares.py"
    program.write_text(PROGRAM)
    # Head and submitter request 100m each: one RayJob (200m) fits in 300m, two do not.
    quota(plane, "300m")
    plane.store.create(rayjob("squares", f"python {program}"))
    first = wait_until(
        "the first RayJob to be admitted", lambda: status(plane, "squares").get("rayClusterName"), 30
    )
    assert condition(workload_of(plane, "squares"), "Admitted") == "True"
    plane.store.create(rayjob("waits", f"python {program}"))
    # The second waits: suspended by Kueue's webhook, its Workload pending for quota, and so
    # no cluster of its own.
    wait_until(
        "the second RayJob's Workload to be pending",
        lambda: condition(workload_of(plane, "waits"), "QuotaReserved") == "False",
        timeout=30,
    )
    waiting = plane.store.get(RAY, "RayJob", "waits", NS)
    assert waiting["spec"]["suspend"] is True
    assert waiting["status"]["jobDeploymentStatus"] == "Suspended"
    assert "rayClusterName" not in waiting["status"]
    assert status(plane, "squares")["jobDeploymentStatus"] in ("Initializing", "Running")

    done = wait_until(
        "the RayJob to finish",
        lambda: (s := status(plane, "squares")).get("jobDeploymentStatus") in ("Complete", "Failed") and s,
        timeout=200,
    )
    assert (done["jobDeploymentStatus"], done["jobStatus"]) == ("Complete", "SUCCEEDED"), done
    assert done["rayClusterName"] == first
    # The program's output is the submitter Job's log.
    logs = (plane.home.root / "logs" / NS).glob("squares-*/ray-job-submitter.log")
    text = "".join(p.read_text() for p in logs)
    assert "sum of squares: 285" in text
    assert "counter_name: test_counter" in text  # runtimeEnvYAML reached the job
    # shutdownAfterJobFinishes (ttl 0): the cluster is deleted and its pods go.
    wait_until(
        "the RayCluster to be deleted",
        lambda: not [c for c in plane.store.list(RAY, "RayCluster").items if c["metadata"]["name"] == first],
        timeout=30,
    )
    wait_until(
        "the cluster's pods to go",
        lambda: (
            not plane.store.list("v1", "Pod", ListOptions(label_selector=f"ray.io/cluster={first}")).items
        ),
        timeout=60,
    )
    # The quota is free again: the second RayJob is admitted and starts its cluster.
    wait_until("the second RayJob to be admitted", lambda: status(plane, "waits").get("rayClusterName"), 30)
    plane.store.delete(RAY, "RayJob", "waits", NS)


def test_an_http_mode_rayjob_runs_on_the_cluster_its_selector_names_and_leaves_it(
    plane: ControlPlane, tmp_path: Path
) -> None:
    from kubehpc.controllers.ray.dashboard import DashboardClient

    program = tmp_path / "squares.py"
    program.write_text(PROGRAM)
    plane.store.create(
        {
            "apiVersion": RAY,
            "kind": "RayCluster",
            "metadata": {"name": "standing", "namespace": NS},
            "spec": cluster_spec(dashboard=True),
        }
    )
    plane.store.create(
        {
            "apiVersion": RAY,
            "kind": "RayJob",
            "metadata": {"name": "posted", "namespace": NS},
            "spec": {
                "entrypoint": f"python {program}",
                "submissionMode": "HTTPMode",
                "runtimeEnvYAML": "env_vars:\n  counter_name: posted_counter\n",
                "clusterSelector": {"ray.io/cluster": "standing"},
            },
        }
    )
    done = wait_until(
        "the HTTPMode RayJob to finish",
        lambda: (s := status(plane, "posted")).get("jobDeploymentStatus") in ("Complete", "Failed") and s,
        timeout=200,
    )
    assert (done["jobDeploymentStatus"], done["jobStatus"], done["rayClusterName"]) == (
        "Complete",
        "SUCCEEDED",
        "standing",
    ), done
    # No submitter Job in HTTPMode: the program's output is in Ray's own job logs.
    assert not [j for j in plane.store.list("batch/v1", "Job").items if j["metadata"]["name"] == "posted"]
    logs = DashboardClient(done["dashboardURL"]).job_logs(done["jobId"])
    assert "sum of squares: 285" in logs and "counter_name: posted_counter" in logs, logs
    # The selected cluster is not the job's: it is left running.
    cluster = plane.store.get(RAY, "RayCluster", "standing", NS)
    assert not cluster["metadata"].get("deletionTimestamp") and cluster["status"]["state"] == "ready"
    plane.store.delete(RAY, "RayJob", "posted", NS)
    plane.store.delete(RAY, "RayCluster", "standing", NS)
