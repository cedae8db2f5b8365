"""A typed, defaulted view of a Job's spec and of the times in its status.

Objects stay plain dicts (as the Client returns them); this view reads them once, applying the
API server's defaults for anything missing, so the rest of the controller never digs in dicts
or guesses a default twice.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubehpc.api import fields as F
from kubehpc.controllers.job import constants as c

Obj = dict[str, Any]


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as Kubernetes writes it (``2026-01-01T00:00:00Z``)."""
    if not value or not isinstance(value, str):
        return None
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_time(when: datetime) -> str:
    """Kubernetes' metav1.Time: whole seconds, UTC, ``Z`` suffix."""
    return _format_second(math.floor(when.timestamp()))


# Every plan stamps its conditions with "now", and a busy second plans thousands of Jobs.
@functools.lru_cache(maxsize=64)
def _format_second(epoch_s: int) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class JobSpec:
    name: str
    namespace: str
    uid: str
    parallelism: int
    completions: int | None
    indexed: bool
    backoff_limit: int
    backoff_limit_per_index: int | None
    max_failed_indexes: int | None
    pod_failure_policy: tuple[Obj, ...] | None
    success_policy: tuple[Obj, ...] | None
    active_deadline_seconds: int | None
    suspend: bool
    ttl_seconds_after_finished: int | None
    replace_only_failed: bool
    restart_policy: str
    template: Obj
    selector_labels: dict[str, str]
    deleting: bool
    managed_elsewhere: bool

    # Written out: mypyc compiles it to a native constructor, where the one @dataclass
    # generates runs interpreted (one per Job per reconcile).
    def __init__(
        self,
        name: str,
        namespace: str,
        uid: str,
        parallelism: int,
        completions: int | None,
        indexed: bool,
        backoff_limit: int,
        backoff_limit_per_index: int | None,
        max_failed_indexes: int | None,
        pod_failure_policy: tuple[Obj, ...] | None,
        success_policy: tuple[Obj, ...] | None,
        active_deadline_seconds: int | None,
        suspend: bool,
        ttl_seconds_after_finished: int | None,
        replace_only_failed: bool,
        restart_policy: str,
        template: Obj,
        selector_labels: dict[str, str],
        deleting: bool,
        managed_elsewhere: bool,
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "namespace", namespace)
        object.__setattr__(self, "uid", uid)
        object.__setattr__(self, "parallelism", parallelism)
        object.__setattr__(self, "completions", completions)
        object.__setattr__(self, "indexed", indexed)
        object.__setattr__(self, "backoff_limit", backoff_limit)
        object.__setattr__(self, "backoff_limit_per_index", backoff_limit_per_index)
        object.__setattr__(self, "max_failed_indexes", max_failed_indexes)
        object.__setattr__(self, "pod_failure_policy", pod_failure_policy)
        object.__setattr__(self, "success_policy", success_policy)
        object.__setattr__(self, "active_deadline_seconds", active_deadline_seconds)
        object.__setattr__(self, "suspend", suspend)
        object.__setattr__(self, "ttl_seconds_after_finished", ttl_seconds_after_finished)
        object.__setattr__(self, "replace_only_failed", replace_only_failed)
        object.__setattr__(self, "restart_policy", restart_policy)
        object.__setattr__(self, "template", template)
        object.__setattr__(self, "selector_labels", selector_labels)
        object.__setattr__(self, "deleting", deleting)
        object.__setattr__(self, "managed_elsewhere", managed_elsewhere)

    @staticmethod
    def of(job: Obj) -> JobSpec:
        meta = F.metadata(job)
        spec = F.spec(job)
        parallelism = _int_or_none(spec.get("parallelism"))
        completions = _int_or_none(spec.get("completions"))
        if parallelism is None and completions is None:
            parallelism, completions = 1, 1
        elif parallelism is None:
            parallelism = 1
        per_index = _int_or_none(spec.get("backoffLimitPerIndex"))
        backoff_limit = _int_or_none(spec.get("backoffLimit"))
        if backoff_limit is None:
            backoff_limit = c.MAX_INT32 if per_index is not None else c.DEFAULT_BACKOFF_LIMIT
        pfp = spec.get("podFailurePolicy")
        pfp_rules = tuple(pfp.get("rules") or ()) if isinstance(pfp, dict) else None
        sp = spec.get("successPolicy")
        sp_rules = tuple(sp.get("rules") or ()) if isinstance(sp, dict) else None
        replacement = spec.get("podReplacementPolicy") or (
            c.REPLACE_FAILED if pfp_rules is not None else c.REPLACE_TERMINATING_OR_FAILED
        )
        template = F.obj_field(spec, "template")
        selector = F.obj_field(spec, "selector")
        indexed = spec.get("completionMode") == c.INDEXED
        return JobSpec(
            name=str(meta.get("name", "")),
            namespace=str(meta.get("namespace") or "default"),
            uid=str(meta.get("uid", "")),
            parallelism=max(parallelism, 0),
            completions=completions,
            indexed=indexed and completions is not None,
            backoff_limit=backoff_limit,
            backoff_limit_per_index=per_index if indexed else None,
            max_failed_indexes=_int_or_none(spec.get("maxFailedIndexes")),
            pod_failure_policy=pfp_rules,
            success_policy=sp_rules if indexed else None,
            active_deadline_seconds=_int_or_none(spec.get("activeDeadlineSeconds")),
            suspend=bool(spec.get("suspend")),
            ttl_seconds_after_finished=_int_or_none(spec.get("ttlSecondsAfterFinished")),
            # A pod failure policy needs the pod's final state, so it implies waiting for it.
            replace_only_failed=replacement == c.REPLACE_FAILED or pfp_rules is not None,
            restart_policy=str(F.spec(template).get("restartPolicy") or "Always"),
            template=template,
            selector_labels=dict(F.obj_field(selector, "matchLabels")),
            deleting=bool(meta.get("deletionTimestamp")),
            managed_elsewhere=spec.get("managedBy") not in (None, "", c.JOB_CONTROLLER_NAME),
        )

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)
