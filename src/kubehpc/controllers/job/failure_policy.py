"""spec.podFailurePolicy: which rule a failed pod matches, and what that means for the Job.

Rules are tried in order; the first match decides. ``onExitCodes`` looks at terminated
containers (app containers first, then init containers) with a non-zero exit code;
``onPodConditions`` at the pod's conditions (e.g. DisruptionTarget=True).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubehpc.api import fields as F
from kubehpc.controllers.job import pods as P

Obj = dict[str, Any]

FAIL_JOB = "FailJob"
FAIL_INDEX = "FailIndex"
IGNORE = "Ignore"
COUNT = "Count"


@dataclass(frozen=True)
class PolicyMatch:
    """``fail_job_message`` is set for FailJob; ``counts`` is False for Ignore."""

    action: str | None
    counts: bool = True
    fail_job_message: str | None = None


NO_MATCH = PolicyMatch(action=None)


def _exit_code_matches(code: int, requirement: Obj) -> bool:
    values = [int(v) for v in requirement.get("values") or ()]
    operator = requirement.get("operator")
    if operator == "In":
        return code in values
    if operator == "NotIn":
        return code not in values
    return False


def _matching_container(pod: Obj, requirement: Obj) -> tuple[str, int] | None:
    st = P.status(pod)
    wanted = requirement.get("containerName")
    for statuses in (st.get("containerStatuses") or [], st.get("initContainerStatuses") or []):
        for cs in statuses:
            terminated = F.obj_field(cs, "state").get("terminated")
            if not terminated:
                continue  # still running or terminating: no exit code to match yet
            if wanted and wanted != cs.get("name"):
                continue
            code = int(terminated.get("exitCode") or 0)
            if code != 0 and _exit_code_matches(code, requirement):
                return str(cs.get("name", "")), code
    return None


def _matching_condition(pod: Obj, patterns: list[Obj]) -> str | None:
    for cond in F.object_list(P.status(pod), "conditions"):
        for pattern in patterns:
            if cond.get("type") == pattern.get("type") and cond.get("status") == pattern.get(
                "status", "True"
            ):
                return str(cond.get("type"))
    return None


def match(rules: tuple[Obj, ...] | None, pod: Obj) -> PolicyMatch:
    """Match a failed pod against the rules (NO_MATCH when there is no policy or no rule)."""
    if rules is None:
        return NO_MATCH
    namespace = P.meta(pod).get("namespace", "")
    pod_name = P.name(pod)
    for position, rule in enumerate(rules):
        action = str(rule.get("action", ""))
        message: str | None = None
        if rule.get("onExitCodes") is not None:
            found = _matching_container(pod, rule["onExitCodes"])
            if found is None:
                continue
            container, code = found
            message = (
                f"Container {container} for pod {namespace}/{pod_name} failed with exit code {code} "
                f"matching {action} rule at index {position}"
            )
        elif rule.get("onPodConditions") is not None:
            ctype = _matching_condition(pod, list(rule["onPodConditions"]))
            if ctype is None:
                continue
            message = (
                f"Pod {namespace}/{pod_name} has condition {ctype} matching {action} rule at index {position}"
            )
        else:
            continue
        if action == IGNORE:
            return PolicyMatch(IGNORE, counts=False)
        if action == FAIL_JOB:
            return PolicyMatch(FAIL_JOB, counts=True, fail_job_message=message)
        if action in (FAIL_INDEX, COUNT):
            return PolicyMatch(action, counts=True)
    return NO_MATCH
