"""Updates may change only what the API server lets them change."""

from __future__ import annotations

import copy
from typing import Any

from kubehpc.api import immutable


def _pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "spec": {
            "containers": [{"name": "c", "image": "app:v1"}],
            "tolerations": [{"key": "a", "operator": "Exists"}],
            "schedulingGates": [{"name": "g1"}, {"name": "g2"}],
            "nodeSelector": {"zone": "a"},
        },
    }


def _changed(old: dict[str, Any], change: Any) -> dict[str, Any]:
    new = copy.deepcopy(old)
    change(new)
    return new


def test_renaming_is_forbidden() -> None:
    old = _pod()
    new = _changed(old, lambda o: o["metadata"].update(name="q"))
    assert [c.field for c in immutable.metadata_update_causes(old, new)] == ["metadata.name"]


def test_a_different_uid_is_forbidden_but_an_omitted_one_is_fine() -> None:
    old = _pod()
    assert immutable.metadata_update_causes(old, _changed(old, lambda o: o["metadata"].pop("uid"))) == []
    changed = _changed(old, lambda o: o["metadata"].update(uid="u2"))
    assert [c.field for c in immutable.metadata_update_causes(old, changed)] == ["metadata.uid"]


def test_pod_container_image_may_change() -> None:
    old = _pod()
    new = _changed(old, lambda o: o["spec"]["containers"][0].update(image="app:v2"))
    assert immutable.pod_update_causes(old, new) == []


def test_pod_tolerations_may_be_added_not_removed() -> None:
    old = _pod()
    added = _changed(old, lambda o: o["spec"]["tolerations"].append({"key": "b", "operator": "Exists"}))
    removed = _changed(old, lambda o: o["spec"].update(tolerations=[]))
    assert immutable.pod_update_causes(old, added) == []
    assert [c.field for c in immutable.pod_update_causes(old, removed)] == ["spec"]


def test_pod_scheduling_gates_may_be_removed_not_added() -> None:
    old = _pod()
    removed = _changed(old, lambda o: o["spec"].update(schedulingGates=[{"name": "g2"}]))
    added = _changed(old, lambda o: o["spec"]["schedulingGates"].append({"name": "g3"}))
    assert immutable.pod_update_causes(old, removed) == []
    assert immutable.pod_update_causes(old, added)


def test_other_pod_spec_changes_get_the_api_server_message() -> None:
    old = _pod()
    new = _changed(old, lambda o: o["spec"].update(nodeName="n1"))
    (cause,) = immutable.pod_update_causes(old, new)
    assert cause.field == "spec"
    assert "pod updates may not change fields other than `spec.containers[*].image`" in cause.message
    assert "spec.nodeName" in cause.message


def test_pod_active_deadline_may_be_set_or_shortened_only() -> None:
    old = _pod()
    set_ = _changed(old, lambda o: o["spec"].update(activeDeadlineSeconds=60))
    assert immutable.pod_update_causes(old, set_) == []
    longer = _changed(set_, lambda o: o["spec"].update(activeDeadlineSeconds=120))
    assert [c.field for c in immutable.pod_update_causes(set_, longer)] == ["spec.activeDeadlineSeconds"]


def _job(suspend: bool, started: bool) -> dict[str, Any]:
    job: dict[str, Any] = {
        "metadata": {"name": "j"},
        "spec": {
            "suspend": suspend,
            "completions": 2,
            "parallelism": 2,
            "completionMode": "NonIndexed",
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }
    if started:
        job["status"] = {"startTime": "2024-01-01T00:00:00Z"}
    return job


def _inject_scheduling(job: dict[str, Any]) -> None:
    job["spec"]["suspend"] = False
    template = job["spec"]["template"]
    template["spec"]["nodeSelector"] = {"cloud.provider.com/accelerator": "a100"}
    template["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    template["metadata"]["labels"]["kueue.x-k8s.io/podset"] = "main"
    template["metadata"]["annotations"] = {"kueue.x-k8s.io/workload": "w"}


def test_kueue_may_inject_scheduling_directives_into_a_suspended_never_started_job() -> None:
    old = _job(suspend=True, started=False)
    assert immutable.job_update_causes(old, _changed(old, _inject_scheduling)) == []


def test_job_template_is_immutable_once_started() -> None:
    old = _job(suspend=True, started=True)
    (cause,) = immutable.job_update_causes(old, _changed(old, _inject_scheduling))
    assert cause.field == "spec.template"
    assert "field is immutable" in cause.message


def test_job_template_image_is_immutable_even_while_suspended() -> None:
    old = _job(suspend=True, started=False)
    new = _changed(old, lambda j: j["spec"]["template"]["spec"]["containers"][0].update(image="y"))
    assert [c.field for c in immutable.job_update_causes(old, new)] == ["spec.template"]


def test_job_selector_and_completion_mode_are_immutable() -> None:
    old = _job(suspend=False, started=False)
    new = _changed(old, lambda j: j["spec"].update(selector={"matchLabels": {}}, completionMode="Indexed"))
    assert [c.field for c in immutable.job_update_causes(old, new)] == [
        "spec.selector",
        "spec.completionMode",
    ]


def test_immutable_configmap_data_cannot_change() -> None:
    old = {"metadata": {"name": "c"}, "immutable": True, "data": {"a": "1"}}
    new = _changed(old, lambda c: c["data"].update(a="2"))
    assert [c.field for c in immutable.configmap_update_causes(old, new)] == ["data"]
    mutable = {"metadata": {"name": "c"}, "data": {"a": "1"}}
    assert (
        immutable.configmap_update_causes(mutable, _changed(mutable, lambda c: c["data"].update(a="2"))) == []
    )


def test_immutable_secret_cannot_become_mutable() -> None:
    old = {"metadata": {"name": "s"}, "immutable": True, "type": "Opaque"}
    new = _changed(old, lambda s: s.update(immutable=False))
    assert [c.field for c in immutable.secret_update_causes(old, new)] == ["immutable"]


def test_pvc_storage_may_grow_but_not_shrink_and_other_spec_is_immutable() -> None:
    old = {
        "metadata": {"name": "p"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    grow = _changed(old, lambda p: p["spec"]["resources"]["requests"].update(storage="2Gi"))
    shrink = _changed(old, lambda p: p["spec"]["resources"]["requests"].update(storage="512Mi"))
    modes = _changed(old, lambda p: p["spec"].update(accessModes=["ReadWriteMany"]))
    assert immutable.pvc_update_causes(old, grow) == []
    assert [c.field for c in immutable.pvc_update_causes(old, shrink)] == ["spec.resources.requests.storage"]
    assert [c.field for c in immutable.pvc_update_causes(old, modes)] == ["spec"]


def test_service_cluster_ip_cannot_change_once_set() -> None:
    old = {"metadata": {"name": "s"}, "spec": {"clusterIP": "10.0.0.1"}}
    assert immutable.service_update_causes(old, {"metadata": {"name": "s"}, "spec": {}}) == []
    moved = {"metadata": {"name": "s"}, "spec": {"clusterIP": "10.0.0.2"}}
    assert [c.field for c in immutable.service_update_causes(old, moved)] == ["spec.clusterIP"]
