"""completionMode: Indexed — one pod per completion index."""

from __future__ import annotations

import re
from typing import Any

from jobkit import Cluster, index_of, job_manifest, names


def indexed(name: str = "idx", **spec: Any) -> dict[str, Any]:
    return job_manifest(name, completionMode="Indexed", **spec)


def test_each_pod_carries_its_index_in_annotation_label_env_and_hostname() -> None:
    k = Cluster()
    k.create(indexed(completions=3, parallelism=3, subdomain="workers"))
    k.sync("idx")
    pods = k.pods("idx")
    assert [index_of(p) for p in pods] == [0, 1, 2]
    for ix, pod in enumerate(pods):
        meta = pod["metadata"]
        assert re.fullmatch(rf"idx-{ix}-[a-z0-9]{{5}}", meta["name"])
        assert meta["generateName"] == f"idx-{ix}-"
        assert meta["annotations"]["batch.kubernetes.io/job-completion-index"] == str(ix)
        assert meta["labels"]["batch.kubernetes.io/job-completion-index"] == str(ix)
        assert pod["spec"]["hostname"] == f"idx-{ix}"
        assert pod["spec"]["subdomain"] == "workers"
        (env,) = pod["spec"]["containers"][0]["env"]
        assert env["name"] == "JOB_COMPLETION_INDEX"
        field_path = env["valueFrom"]["fieldRef"]["fieldPath"]
        assert field_path == "metadata.annotations['batch.kubernetes.io/job-completion-index']"


def test_the_index_variable_is_injected_into_init_containers_too() -> None:
    k = Cluster()
    manifest = indexed(completions=1)
    manifest["spec"]["template"]["spec"]["initContainers"] = [{"name": "init", "image": "busybox"}]
    k.create(manifest)
    k.sync("idx")
    (pod,) = k.pods("idx")
    assert pod["spec"]["initContainers"][0]["env"][0]["name"] == "JOB_COMPLETION_INDEX"


def test_lowest_pending_indexes_are_started_first() -> None:
    k = Cluster()
    k.create(indexed(completions=5, parallelism=2))
    k.sync("idx")
    assert [index_of(p) for p in k.active("idx")] == [0, 1]
    k.succeed(k.active("idx")[1])
    k.sync("idx")
    assert [index_of(p) for p in k.active("idx")] == [0, 2]


def test_completed_indexes_are_reported_as_intervals() -> None:
    k = Cluster()
    k.create(indexed(completions=6, parallelism=6))
    k.sync("idx")
    pods = k.pods("idx")
    for ix in (1, 3, 4, 5):
        k.succeed(pods[ix])
    k.sync("idx")
    status = k.status("idx")
    assert status["completedIndexes"] == "1,3-5"
    assert status["succeeded"] == 4
    assert status["active"] == 2


def test_a_failed_index_is_retried_with_the_same_index() -> None:
    k = Cluster()
    k.create(indexed(completions=2, parallelism=2))
    k.sync("idx")
    failed = k.pods("idx")[1]
    k.fail(failed)
    k.sync("idx")
    k.clock.advance(10)
    k.sync("idx")
    retry = [p for p in k.active("idx") if index_of(p) == 1]
    assert len(retry) == 1 and names(retry) != names([failed])
    assert k.status("idx")["failed"] == 1


def test_indexed_job_completes_when_every_index_succeeded() -> None:
    k = Cluster()
    k.create(indexed(completions=3, parallelism=3))
    k.sync("idx")
    for pod in k.pods("idx"):
        k.succeed(pod)
    k.sync("idx")
    assert k.status("idx")["completedIndexes"] == "0-2"
    assert k.condition_types("idx") == ["SuccessCriteriaMet", "Complete"]


def test_a_second_pod_for_the_same_index_is_deleted() -> None:
    k = Cluster()
    k.create(indexed(completions=2, parallelism=2))
    k.sync("idx")
    # Someone creates a duplicate of index 0 (e.g. a controller restart racing a slow cache).
    dup = k.pods("idx")[0]
    copy = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "idx-0-",
            "namespace": "default",
            "labels": dup["metadata"]["labels"],
            "annotations": dup["metadata"]["annotations"],
            "ownerReferences": dup["metadata"]["ownerReferences"],
            "finalizers": ["batch.kubernetes.io/job-tracking"],
        },
        "spec": {"containers": dup["spec"]["containers"], "restartPolicy": "Never"},
    }
    k.store.create(copy)
    k.sync("idx")
    assert sorted(index_of(p) for p in k.active("idx")) == [0, 1]
    assert k.status("idx").get("failed", 0) == 0
