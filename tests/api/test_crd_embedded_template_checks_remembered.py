"""Under Strict, a custom kind's embedded built-in definitions (a Workload's pod templates) are
checked once per distinct content of each top-level field and the answer is remembered: a status
write with an unchanged spec does not walk the templates again. The answer must be the one a
fresh check gives: a bad template is rejected on every write, naming the field, and Warn still
prunes unknown fields inside a template whose content Strict has already seen."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import workloadkit as kit

from kubehpc.api.errors import Invalid
from kubehpc.api.kinds import default_registry
from kubehpc.api.registry import FieldValidation, VersionSpec

Obj = dict[str, Any]


def workload(container: Obj, conditions: list[Obj] | None = None) -> Obj:
    return kit.workload(kit.pod_set(container), status={"conditions": conditions or []})


GOOD = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
BAD_QUANTITY = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "lots"}}}
TYPO = {"name": "main", "image": "busybox", "imagePullPolicyy": "Always"}
PENDING = [
    {
        "type": "QuotaReserved",
        "status": "False",
        "reason": "Pending",
        "message": "waiting",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
]


@pytest.fixture(scope="module")
def version() -> VersionSpec:
    return default_registry().for_kind("kueue.x-k8s.io/v1beta2", "Workload")[1]


def test_a_bad_template_is_rejected_on_every_write_with_its_field(version: VersionSpec) -> None:
    for conditions in (None, None, PENDING):
        with pytest.raises(Invalid) as err:
            version.validate(workload(BAD_QUANTITY, conditions), FieldValidation.STRICT)
        assert "spec.podSets[0].template.spec.containers[0].resources.requests.cpu: invalid quantity" in str(
            err.value
        )


def test_a_status_change_with_the_same_spec_is_accepted_again(version: VersionSpec) -> None:
    assert version.validate(workload(GOOD), FieldValidation.STRICT) == []
    assert version.validate(workload(GOOD, PENDING), FieldValidation.STRICT) == []


def test_an_unknown_template_field_is_rejected_under_strict_each_time(version: VersionSpec) -> None:
    for _ in range(2):
        with pytest.raises(Invalid, match="imagePullPolicyy"):
            version.validate(workload(TYPO), FieldValidation.STRICT)


def test_warn_still_prunes_a_template_strict_has_seen(version: VersionSpec) -> None:
    with pytest.raises(Invalid):
        version.validate(workload(TYPO), FieldValidation.STRICT)
    obj = workload(copy.deepcopy(TYPO))
    warnings = version.validate(obj, FieldValidation.WARN)
    assert any("imagePullPolicyy" in w for w in warnings)
    assert "imagePullPolicyy" not in obj["spec"]["podSets"][0]["template"]["spec"]["containers"][0]


def test_fields_that_cannot_hold_a_template_are_not_walked() -> None:
    from kubehpc.api.crd import _can_embed
    from kubehpc.api.kinds.kueue.workload import Workload

    fields = Workload.model_fields
    assert _can_embed(fields["spec"].annotation)
    assert not _can_embed(fields["status"].annotation)


def test_a_recursive_model_is_walked_rather_than_skipped() -> None:
    from pydantic import BaseModel

    from kubehpc.api.crd import _can_embed

    class Node(BaseModel):
        children: list[Node] = []

    Node.model_rebuild()
    assert _can_embed(Node)
