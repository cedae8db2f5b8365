"""A Volcano Job as its controller reads it: the stored object with the defaults Volcano's
admission webhook would have filled in (task names, minAvailable, queue, schedulerName,
maxRetry), and the webhook's checks as a list of problems (a job with problems is held)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubehpc.controllers.volcano import constants as c

Obj = dict[str, Any]


@dataclass(frozen=True)
class Policy:
    events: tuple[str, ...]
    action: str
    exit_code: int | None

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> Policy:
        events = [str(e) for e in raw.get("events") or ()]
        if raw.get("event"):
            events.insert(0, str(raw["event"]))
        code = raw.get("exitCode")
        return cls(tuple(events), str(raw.get("action") or ""), int(code) if code is not None else None)

    def matches(self, event: str, exit_code: int | None) -> bool:
        if event and any(e in (event, c.ANY_EVENT) for e in self.events):
            return True
        return self.exit_code is not None and exit_code is not None and self.exit_code == exit_code


@dataclass(frozen=True)
class Task:
    name: str
    replicas: int
    min_available: int
    template: Obj
    policies: tuple[Policy, ...]
    max_retry: int | None

    def pod_name(self, job: str, index: int) -> str:
        return f"{job}-{self.name}-{index}"


@dataclass(frozen=True)
class JobView:
    namespace: str
    name: str
    uid: str
    tasks: tuple[Task, ...]
    min_available: int
    min_success: int | None
    queue: str
    scheduler_name: str
    max_retry: int
    plugins: dict[str, list[str]]
    policies: tuple[Policy, ...]
    priority_class_name: str
    volumes: tuple[Obj, ...]
    deleting: bool

    @classmethod
    def of(cls, job: Obj) -> JobView:
        meta = job.get("metadata") or {}
        spec = job.get("spec") or {}
        tasks = []
        for i, raw in enumerate(spec.get("tasks") or ()):
            replicas = int(raw.get("replicas") or 0)
            min_available = raw.get("minAvailable")
            tasks.append(
                Task(
                    name=str(raw.get("name") or f"{c.DEFAULT_TASK}{i}"),
                    replicas=replicas,
                    min_available=replicas if min_available is None else int(min_available),
                    template=dict(raw.get("template") or {}),
                    policies=tuple(Policy.of(p) for p in raw.get("policies") or ()),
                    max_retry=raw.get("maxRetry"),
                )
            )
        min_available = spec.get("minAvailable")
        if not min_available:
            # As Volcano's webhook: the sum of the tasks' minAvailable (replicas by default).
            min_available = sum(t.min_available for t in tasks)
        min_success = spec.get("minSuccess")
        return cls(
            namespace=str(meta.get("namespace") or "default"),
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            tasks=tuple(tasks),
            min_available=int(min_available),
            min_success=int(min_success) if min_success is not None else None,
            queue=str(spec.get("queue") or c.DEFAULT_QUEUE),
            scheduler_name=str(spec.get("schedulerName") or c.SCHEDULER_NAME),
            max_retry=int(spec["maxRetry"]) if spec.get("maxRetry") is not None else 3,
            plugins={str(k): [str(a) for a in v or ()] for k, v in (spec.get("plugins") or {}).items()},
            policies=tuple(Policy.of(p) for p in spec.get("policies") or ()),
            priority_class_name=str(spec.get("priorityClassName") or ""),
            volumes=tuple(spec.get("volumes") or ()),
            deleting=bool(meta.get("deletionTimestamp")),
        )

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    @property
    def total_replicas(self) -> int:
        return sum(t.replicas for t in self.tasks)

    @property
    def podgroup_name(self) -> str:
        # Volcano names a Job's PodGroup after the Job and its uid, so a Job deleted and
        # created again under the same name never adopts the old gang.
        return f"{self.name}-{self.uid}" if self.uid else self.name

    def task(self, name: str) -> Task | None:
        for t in self.tasks:
            if t.name == name:
                return t
        return None

    def problems(self) -> list[str]:
        """What Volcano's validating webhook would reject, as ``field: message`` lines."""
        out: list[str] = []
        if not self.tasks:
            out.append("spec.tasks: no task specified in job spec")
        names: set[str] = set()
        for i, t in enumerate(self.tasks):
            if t.name in names:
                out.append(f"spec.tasks[{i}].name: duplicated task name {t.name}")
            names.add(t.name)
            if t.min_available > t.replicas:
                out.append(
                    f"spec.tasks[{i}].minAvailable: {t.min_available} is greater than replicas {t.replicas} "
                    f"in task {t.name}"
                )
            if not (t.template.get("spec") or {}).get("containers"):
                out.append(
                    f"spec.tasks[{i}].template.spec.containers: the task's pod template has no containers"
                )
            out += _policy_problems(t.policies, f"spec.tasks[{i}].policies")
        if self.min_available > self.total_replicas:
            out.append(
                f"spec.minAvailable: {self.min_available} is greater than the {self.total_replicas} pods "
                "of the job's tasks: the gang could never start"
            )
        if self.min_success is not None and self.min_success > self.total_replicas:
            out.append(
                f"spec.minSuccess: {self.min_success} is greater than the {self.total_replicas} pods "
                "of the job's tasks"
            )
        out += _policy_problems(self.policies, "spec.policies")
        for name in self.plugins:
            if name not in c.KNOWN_PLUGINS:
                out.append(
                    f"spec.plugins[{name}]: unable to find job plugin: {name} "
                    f"(known: {', '.join(c.KNOWN_PLUGINS)})"
                )
        return out


def _policy_problems(policies: tuple[Policy, ...], path: str) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for i, p in enumerate(policies):
        where = f"{path}[{i}]"
        if p.events and p.exit_code is not None:
            out.append(f"{where}: must not specify event and exitCode simultaneously")
        if not p.events and p.exit_code is None:
            out.append(f"{where}: either event and exitCode should be specified")
        if p.exit_code == 0:
            out.append(f"{where}.exitCode: 0 is not a valid error code")
        if p.action not in c.ACTIONS:
            out.append(f"{where}.action: invalid policy action {p.action!r}; valid: {', '.join(c.ACTIONS)}")
        for e in p.events:
            if e in seen:
                out.append(f"{where}: duplicate event {e} across different policy")
            seen.add(e)
    return out


def action_for(view: JobView, event: str, task: str, exit_code: int | None) -> str:
    """The action for an event, as Volcano applies policies: the task's own policies first,
    then the Job's; SyncJob when none matches."""
    owner = view.task(task) if task else None
    for policy in (*(owner.policies if owner else ()), *view.policies):
        if policy.matches(event, exit_code):
            return policy.action
    return c.SYNC_JOB
