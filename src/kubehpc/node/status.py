"""Pod status as the kubelet reports it, computed from the agent's view of each container.

Pure functions of :class:`ContainerView` records; the agent owns the views and writes the
result with ``update_status``. The phase rules are the kubelet's ``getPhase``: a container
waiting to restart after a run counts as stopped (so a crash-looping pod is Running), and
restartPolicy decides what all-stopped means.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]


def rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class ContainerView:
    name: str
    image: str
    init: bool = False
    running_since: float | None = None
    terminated: Obj | None = None  # the "terminated" state body
    last_terminated: Obj | None = None
    waiting: tuple[str, str] = ("ContainerCreating", "")  # (reason, message) when neither of the above
    restart_count: int = 0
    container_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def succeeded(self) -> bool:
        return self.terminated is not None and self.terminated.get("exitCode") == 0

    def status(self) -> Obj:
        if self.running_since is not None:
            state: Obj = {"running": {"startedAt": rfc3339(self.running_since)}}
        elif self.terminated is not None:
            state = {"terminated": dict(self.terminated)}
        else:
            reason, message = self.waiting
            state = {"waiting": {"reason": reason, **({"message": message} if message else {})}}
        out: Obj = {
            "name": self.name,
            "image": self.image,
            "imageID": "",
            "state": state,
            "lastState": {"terminated": dict(self.last_terminated)} if self.last_terminated else {},
            "ready": self.running_since is not None and not self.init,
            "restartCount": self.restart_count,
            "started": self.running_since is not None,
        }
        if self.init:
            out["ready"] = self.succeeded
        if self.container_id:
            out["containerID"] = self.container_id
        return out


def pod_phase(restart_policy: str, inits: list[ContainerView], mains: list[ContainerView]) -> str:
    for c in inits:
        if c.succeeded:
            continue
        if c.terminated is not None and restart_policy == "Never":
            return "Failed"
        return "Pending"
    running = waiting = stopped = succeeded = 0
    for c in mains:
        if c.running_since is not None:
            running += 1
        elif c.terminated is not None:
            stopped += 1
            succeeded += c.succeeded
        elif c.last_terminated is not None:
            stopped += 1  # waiting to restart after a run
        else:
            waiting += 1
    if waiting:
        return "Pending"
    if running:
        return "Running"
    if restart_policy == "Always":
        return "Running"
    if stopped == succeeded:
        return "Succeeded"
    if restart_policy == "Never":
        return "Failed"
    return "Running"  # OnFailure: the failed ones restart


def _condition(ctype: str, ok: bool, now: str, old: list[Obj], reason: str = "") -> Obj:
    status = "True" if ok else "False"
    prev = next((c for c in old if c.get("type") == ctype), None)
    since = prev.get("lastTransitionTime", now) if prev and prev.get("status") == status else now
    out: Obj = {"type": ctype, "status": status, "lastProbeTime": None, "lastTransitionTime": since}
    if reason and not ok:
        out["reason"] = reason
    return out


def pod_status(
    pod: Obj,
    inits: list[ContainerView],
    mains: list[ContainerView],
    now: float,
    start_time: float,
    host_ip: str = "127.0.0.1",
    phase_override: tuple[str, str, str] | None = None,
) -> Obj:
    """The whole ``status`` for ``pod``; ``phase_override`` = (phase, reason, message) for
    pods the agent rejects (admission) rather than runs."""
    old_status = pod.get("status") or {}
    old_conditions = list(old_status.get("conditions") or [])
    restart_policy = (pod.get("spec") or {}).get("restartPolicy", "Always")
    stamp = rfc3339(now)
    phase = phase_override[0] if phase_override else pod_phase(restart_policy, inits, mains)
    initialized = all(c.succeeded for c in inits)
    ready = initialized and all(c.running_since is not None for c in mains) and phase == "Running"
    conditions = [
        c
        for c in old_conditions
        if c.get("type") not in ("Initialized", "ContainersReady", "Ready", "PodReadyToStartContainers")
    ]
    if not any(c.get("type") == "PodScheduled" for c in conditions):
        conditions.append(_condition("PodScheduled", True, stamp, old_conditions))
    terminal = phase in ("Succeeded", "Failed")
    conditions += [
        _condition("PodReadyToStartContainers", not terminal, stamp, old_conditions),
        _condition("Initialized", initialized, stamp, old_conditions, "ContainersNotInitialized"),
        _condition(
            "ContainersReady",
            ready,
            stamp,
            old_conditions,
            "PodCompleted" if terminal else "ContainersNotReady",
        ),
        _condition(
            "Ready", ready, stamp, old_conditions, "PodCompleted" if terminal else "ContainersNotReady"
        ),
    ]
    order = {
        "PodReadyToStartContainers": 0,
        "Initialized": 1,
        "Ready": 2,
        "ContainersReady": 3,
        "PodScheduled": 4,
    }
    conditions.sort(key=lambda c: order.get(c.get("type", ""), 9))
    status: Obj = {
        "phase": phase,
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": "127.0.0.1",
        "podIPs": [{"ip": "127.0.0.1"}],
        "startTime": old_status.get("startTime") or rfc3339(start_time),
        "containerStatuses": [c.status() for c in mains],
    }
    if inits:
        status["initContainerStatuses"] = [c.status() for c in inits]
    if "qosClass" in old_status:
        status["qosClass"] = old_status["qosClass"]
    if phase_override:
        status["reason"], status["message"] = phase_override[1], phase_override[2]
    return status
