"""A cluster in an in-memory Store, for running the Slurm view commands (squeue, sinfo, sacct,
scontrol, scancel) through their real command-line parsing, without a server: Jobs as sbatch
makes them, with the pods and statuses a run gives them, and Nodes."""

from __future__ import annotations

import io
from typing import Any

from viewkit import finished, node, pod, running, sbatch_job

from kubehpc.api.errors import ApiError
from kubehpc.cli.main import build_parser, error_line
from kubehpc.cli.session import CliError, Session
from kubehpc.store.store import Store

Obj = dict[str, Any]


def cli(store: Store, *argv: str) -> tuple[int, str, str]:
    """Run ``kubehpc ARGV`` against ``store``: (exit code, stdout, stderr)."""
    args = build_parser().parse_args(list(argv))
    out, err = io.StringIO(), io.StringIO()
    session = Session(args, stdout=out, stderr=err)
    session._client = store  # type: ignore[assignment]
    try:
        code = int(args.run(session, args) or 0)
    except CliError as exc:
        print(f"error: {exc}", file=err)
        code = exc.exit_code
    except ApiError as exc:  # as main() reports it
        print(error_line(exc), file=err)
        code = 1
    return code, out.getvalue(), err.getvalue()


def _store_pod(store: Store, p: Obj, job: Obj) -> None:
    status = p.pop("status")
    for ref in p["metadata"]["ownerReferences"]:
        ref.update({"apiVersion": "batch/v1", "name": job["metadata"]["name"], "uid": job["metadata"]["uid"]})
    p["metadata"]["labels"] = {
        "slurm.kubehpc.io/job-id": job["metadata"]["labels"]["slurm.kubehpc.io/job-id"]
    }
    template = job["spec"]["template"]["spec"]["containers"][0]
    p["spec"]["containers"] = [{"name": "batch", "image": "busybox", "resources": template["resources"]}]
    for cs in status.get("containerStatuses") or []:
        cs.update({"ready": False, "restartCount": 0, "image": "busybox", "imageID": ""})
    created = store.create(p)
    created["status"] = status
    store.update_status(created)


def add_job(
    store: Store,
    job_id: int,
    *directives: str,
    user: str = "alice",
    state: str = "PENDING",
    nodes: tuple[str, ...] = ("n1",),
    exit_code: int = 0,
) -> Obj:
    """Job ``job_id`` submitted with ``directives`` by ``user``, in ``state``: PENDING (pods not
    placed), HELD (no pods), RUNNING (on ``nodes``), COMPLETED or FAILED (``exit_code``)."""
    job = sbatch_job(job_id, *directives, user=user)
    for key in ("uid", "creationTimestamp"):
        job["metadata"].pop(key)
    job.pop("status")
    created = store.create(job)
    probe = {**created, "metadata": {**created["metadata"], "uid": created["metadata"]["uid"]}}
    if state == "RUNNING":
        pods = running(probe, list(nodes), 0)
    elif state == "PENDING":
        pods = [pod(probe, i, None, phase="Pending") for i in range(int(created["spec"]["parallelism"]))]
        probe["status"] = {}
    elif state in ("COMPLETED", "FAILED"):
        cond, reason = (
            ("Complete", "CompletionsReached") if state == "COMPLETED" else ("Failed", "BackoffLimitExceeded")
        )
        pods = finished(probe, cond, reason, 0, 60, exit_code)
    else:
        pods, probe["status"] = [], {}
    for p in pods:
        _store_pod(store, p, created)
    created["status"] = probe.get("status") or {}
    if created["status"]:
        created = store.update_status(created)
    return created


def add_array(
    store: Store,
    job_id: int,
    *directives: str,
    user: str = "alice",
    running_tasks: int = 0,
    node_name: str = "n2",
) -> Obj:
    """An array job with its first ``running_tasks`` indexes running on ``node_name``."""
    created = add_job(store, job_id, *directives, user=user, state="HELD")
    for i in range(running_tasks):
        _store_pod(store, pod(created, i, node_name), created)
    created["status"] = {"startTime": "2026-12-02T12:00:00Z", "active": running_tasks}
    return store.update_status(created)


def add_node(store: Store, name: str, **kw: Any) -> None:
    store.create(node(name, **kw))


def job_of(store: Store, job_id: int) -> Obj:
    return store.get("batch/v1", "Job", f"slurm-{job_id}", "default")
