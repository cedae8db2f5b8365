"""Builders for the Slurm front-end tests: submit a script (text) with options, get the
request and the objects back, and pick parts of them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubehpc.slurm.mapping import SlurmMapping
from kubehpc.slurm.request import JobRequest, Submission, build_request
from kubehpc.slurm.translate import build_objects

Obj = dict[str, Any]
NOW = datetime(2026, 12, 2, 12, 0, 0)
JOB_ID = 100


def script(*directives: str, body: str = "echo hello") -> str:
    lines = ["#!/bin/bash", *(f"#SBATCH {d}" for d in directives), body]
    return "\n".join(lines) + "\n"


def request(
    text: str | None,
    *argv: str,
    env: dict[str, str] | None = None,
    mapping: SlurmMapping | None = None,
    name: str = "job.sh",
    args: tuple[str, ...] = (),
) -> JobRequest:
    args_ = list(argv) if text is None else [*argv, name, *args]
    sub = Submission(args_, env or {}, "/home/alice/run", "alice", "login1", NOW)
    return build_request(sub, text, name, mapping)


def submit(
    text: str | None,
    *argv: str,
    env: dict[str, str] | None = None,
    mapping: SlurmMapping | None = None,
    job_id: int = JOB_ID,
    args: tuple[str, ...] = (),
) -> list[Obj]:
    req = request(text, *argv, env=env, mapping=mapping, args=args)
    return build_objects(req, job_id, mapping, "default", "2026-12-02T12:00:00Z")


def kind(objs: list[Obj], k: str) -> Obj:
    return next(o for o in objs if o["kind"] == k)


def job(objs: list[Obj]) -> Obj:
    return kind(objs, "Job")


def pod_spec(objs: list[Obj]) -> Obj:
    return job(objs)["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def container(objs: list[Obj]) -> Obj:
    return pod_spec(objs)["containers"][0]  # type: ignore[no-any-return]


def env(objs: list[Obj]) -> dict[str, str]:
    """The container's environment as the process sees it ($$ -> $)."""
    return {e["name"]: e["value"].replace("$$", "$") for e in container(objs)["env"]}


def requests(objs: list[Obj]) -> dict[str, str]:
    return container(objs)["resources"]["requests"]  # type: ignore[no-any-return]


def annotations(objs: list[Obj]) -> dict[str, str]:
    return job(objs)["metadata"].get("annotations") or {}
