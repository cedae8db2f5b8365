"""A PodSpec found valid under Strict is remembered by its JSON: the pods of one Job, and the
Jobs of one template, are not walked against the schema again. The verdict must stay the one a
fresh check gives: a bad spec is rejected on every write at its own path, and Warn and Ignore
(which prune) always check."""

from __future__ import annotations

from typing import Any

import pytest

from kubehpc.api.errors import Cause, Invalid
from kubehpc.api.kinds import build_registry
from kubehpc.api.registry import FieldValidation
from kubehpc.api.schema import Check, Collector, _remembering

Obj = dict[str, Any]


def pod(name: str, container: Obj) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"restartPolicy": "Never", "containers": [container]},
    }


GOOD = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
TYPO = {"name": "main", "image": "busybox", "imagePullPolicyy": "Always"}


def counting() -> tuple[Check, list[str]]:
    calls: list[str] = []

    def check(value: Any, path: str, out: Collector) -> None:
        calls.append(path)
        if value.get("bad"):
            out.causes.append(Cause(path, "bad", "FieldValueInvalid"))

    return check, calls


def test_a_value_that_passed_under_strict_is_not_checked_again() -> None:
    check, calls = counting()
    remembered = _remembering(check)
    for path in ("spec", "spec.template.spec"):
        remembered({"containers": []}, path, Collector(FieldValidation.STRICT))
    assert calls == ["spec"]


def test_a_failing_value_is_checked_and_reported_every_time() -> None:
    check, calls = counting()
    remembered = _remembering(check)
    outs = [Collector(FieldValidation.STRICT) for _ in range(2)]
    remembered({"bad": True}, "spec", outs[0])
    remembered({"bad": True}, "spec.template.spec", outs[1])
    assert calls == ["spec", "spec.template.spec"]
    assert [c.field for out in outs for c in out.causes] == ["spec", "spec.template.spec"]


@pytest.mark.parametrize("mode", [FieldValidation.WARN, FieldValidation.IGNORE])
def test_warn_and_ignore_always_check(mode: FieldValidation) -> None:
    check, calls = counting()
    remembered = _remembering(check)
    remembered({"containers": []}, "spec", Collector(FieldValidation.STRICT))
    remembered({"containers": []}, "spec", Collector(mode))
    assert calls == ["spec", "spec"]


def test_pods_with_a_spec_already_seen_are_still_rejected_when_it_is_bad() -> None:
    _, vs = build_registry().for_kind("v1", "Pod")
    vs.validate(pod("a", GOOD), FieldValidation.STRICT)
    for name in ("b", "c"):
        with pytest.raises(Invalid) as err:
            vs.validate(pod(name, TYPO), FieldValidation.STRICT)
        assert "spec.containers[0].imagePullPolicyy" in str(err.value)


def test_warn_prunes_an_unknown_field_inside_a_spec_strict_has_seen() -> None:
    _, vs = build_registry().for_kind("v1", "Pod")
    vs.validate(pod("a", GOOD), FieldValidation.STRICT)
    obj = pod("b", {**GOOD, "imagePullPolicyy": "Always"})
    warnings = vs.validate(obj, FieldValidation.WARN)
    assert any("imagePullPolicyy" in w for w in warnings)
    assert "imagePullPolicyy" not in obj["spec"]["containers"][0]
