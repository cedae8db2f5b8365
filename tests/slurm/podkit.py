"""Run a translated job's pod the way a node would, without a cluster: the ConfigMap's files in
a directory, the container's env after Kubernetes' $(VAR) expansion, its command in bash."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from slurmkit import container, kind

from kubehpc.node.env import expand

Obj = dict[str, Any]


def run_pod(
    objs: list[Obj], tmp: Path, index: int = 0, hostname: str = "", timeout: float = 20
) -> subprocess.CompletedProcess[str]:
    """Run pod ``index`` of the job with its working directory under ``tmp``; returns the
    process (its stdout is the pod log)."""
    cm = kind(objs, "ConfigMap")
    vol = tmp / f"volume-{index}"
    vol.mkdir(parents=True, exist_ok=True)
    for key, text in cm["data"].items():
        (vol / key).write_text(text)
        (vol / key).chmod(0o755)
    c = container(objs)
    env: dict[str, str] = {"PATH": "/usr/bin:/bin", "KUBEHPC_MOUNT_SLURM_SCRIPT": str(vol)}
    env["JOB_COMPLETION_INDEX"] = str(index)
    env["HOSTNAME"] = hostname or f"{kind(objs, 'Job')['metadata']['name']}-{index}"
    for e in c["env"]:
        env[e["name"]] = expand(e["value"], env)
    argv = [expand(a, env) for a in [*c["command"], *c.get("args", [])]]
    workdir = Path(c["workingDir"])
    workdir.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        argv, env=env, cwd=workdir, capture_output=True, text=True, timeout=timeout, check=False
    )
