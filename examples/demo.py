"""`make demo`: an embedded cluster with fake GPUs runs the seed article's jobs.

Starts `kubehpc up -d` on examples/clusters/fake-gpu-demo.yaml in a throw-away home, applies
the seed's CPU Job, an Indexed Job, a GPU Job and a MIG Job, shows progress until they finish,
prints what ran where on which devices, and stops the cluster.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kubehpc.kube.kubeconfig import load_client_config
from kubehpc.kube.rest import RestClient
from kubehpc.store.client import ListOptions

HERE = Path(__file__).resolve().parent
CLUSTER = HERE / "clusters" / "fake-gpu-demo.yaml"
MANIFESTS = [
    HERE / "seed" / f for f in ("job-runnable.yaml", "indexed-job.yaml", "gpu-job.yaml", "mig-job.yaml")
]
MPI_MANIFEST = HERE / "seed" / "mpijob.yaml"  # section 6, run by real Open MPI (openmpi-bin)
RAY_MANIFEST = HERE / "seed" / "rayjob.yaml"  # section 5, run by real Ray (the `ray` extra)
TIMEOUT_S = 180

# Piped output (CI logs) has no terminal width to follow; give the tables room.
console = Console() if sys.stdout.isatty() else Console(width=120)


def kubehpc(home: Path, *args: str) -> str:
    cmd = [sys.executable, "-m", "kubehpc.cli", "--home", str(home), *args]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        console.print(f"[red]kubehpc {' '.join(args)} failed:[/red]\n{result.stderr}")
        raise SystemExit(1)
    return result.stdout


def finished(job: dict) -> str:
    for cond in job.get("status", {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return ""


def seconds_between(start: str | None, end: str | None) -> str:
    if not start or not end:
        return "-"
    parse = dt.datetime.fromisoformat
    return f"{(parse(end.replace('Z', '+00:00')) - parse(start.replace('Z', '+00:00'))).total_seconds():.0f}s"


def wait_for_jobs(client: RestClient, names: list[str]) -> list[dict]:
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[state]}"),
        TimeElapsedColumn(),
    ) as progress:
        tasks = {n: progress.add_task(n, total=1, state="Pending") for n in names}
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            jobs = {
                j["metadata"]["name"]: j for j in client.list("batch/v1", "Job", ListOptions("default")).items
            }
            for name, task in tasks.items():
                job = jobs.get(name, {})
                spec, status = job.get("spec", {}), job.get("status", {})
                done = finished(job)
                progress.update(
                    task,
                    total=spec.get("completions") or 1,
                    completed=status.get("succeeded", 0),
                    state=done or f"{status.get('active', 0)} running",
                )
            if all(finished(jobs.get(n, {})) for n in names):
                return [jobs[n] for n in names]
            time.sleep(0.3)
    raise SystemExit(f"the demo jobs did not finish within {TIMEOUT_S}s")


def show(client: RestClient, jobs: list[dict]) -> None:
    table = Table(title="Jobs")
    for col in ("job", "state", "completions", "duration"):
        table.add_column(col)
    for job in jobs:
        st = job.get("status", {})
        table.add_row(
            job["metadata"]["name"],
            finished(job),
            f"{st.get('succeeded', 0)}/{job['spec'].get('completions', 1)}",
            seconds_between(st.get("startTime"), st.get("completionTime")),
        )
    console.print(table)

    pods = client.list("v1", "Pod", ListOptions("default")).items
    table = Table(title="Pods")
    for col in ("pod", "node", "devices", "state", "duration"):
        table.add_column(col, no_wrap=True)
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        devices = json.loads(pod["metadata"].get("annotations", {}).get("kubehpc.io/devices", "{}") or "{}")
        short = ", ".join(d.split("-")[0] + "-…" + d[-4:] for ds in devices.values() for d in ds) or "-"
        term = (
            (pod.get("status", {}).get("containerStatuses") or [{}])[0].get("state", {}).get("terminated", {})
        )
        table.add_row(
            pod["metadata"]["name"],
            pod["spec"].get("nodeName", "-"),
            short,
            term.get("reason") or pod.get("status", {}).get("phase", "?"),
            seconds_between(term.get("startedAt"), term.get("finishedAt")),
        )
    console.print(table)

    console.print("[bold]What the GPU and MIG pods saw:[/bold]")
    for pod in pods:
        if pod["metadata"]["name"].startswith(("gpu-train", "mig-infer", "mpi-test-launcher")):
            name = pod["metadata"]["name"]
            log = b"".join(client.stream_log("default", name)).decode().strip()
            console.print(f"  {name}: {log}", soft_wrap=True)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="kubehpc-demo-") as tmp:
        home = Path(tmp) / "home"
        console.rule("kubehpc demo")
        console.print(f"starting an embedded cluster from {CLUSTER.relative_to(HERE.parent)}")
        console.print(kubehpc(home, "up", "-d", "--port", "0", "--cluster", str(CLUSTER)).strip())
        try:
            console.print(kubehpc(home, "get", "nodes").rstrip())
            for manifest in MANIFESTS:
                console.print(kubehpc(home, "apply", "-f", str(manifest)).strip())
            client = RestClient(load_client_config(str(home / "kubeconfig")))
            names = [m.read_text().split("name: ", 1)[1].split()[0] for m in MANIFESTS]
            if shutil.which("mpirun"):
                console.print(kubehpc(home, "apply", "-f", str(MPI_MANIFEST)).strip())
                names.append("mpi-test-launcher")  # the MPIJob's launcher Job runs mpirun
            else:
                console.print("[yellow]no mpirun here: the MPIJob is skipped (`make system-deps`)[/yellow]")
            console.print(kubehpc(home, "apply", "-f", str(RAY_MANIFEST)).strip())
            names.append("ray-test")  # the RayJob's submitter Job (named after it) runs `ray job submit`
            show(client, wait_for_jobs(client, names))
            show_rayjob(client, "ray-test")
            client.close()
        finally:
            console.print(kubehpc(home, "down").strip())


def show_rayjob(client: RestClient, name: str) -> None:
    """The RayJob's states and what its Ray program printed (in its submitter's log)."""
    # The submitter Job ends first; the RayJob controller then reads the Ray job's end and marks
    # the RayJob Complete (or Failed) on its next pass: show the final state, not the one between.
    deadline = time.monotonic() + 60
    while True:
        job = client.get("ray.io/v1", "RayJob", name, "default")
        st = job.get("status", {})
        if st.get("jobDeploymentStatus") in ("Complete", "Failed") or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    console.print(
        f"[bold]RayJob {name}:[/bold] {st.get('jobDeploymentStatus')} / {st.get('jobStatus')} "
        f"on RayCluster {st.get('rayClusterName')} (deleted after the job: shutdownAfterJobFinishes)"
    )
    for pod in client.list(
        "v1", "Pod", ListOptions("default", label_selector=f"batch.kubernetes.io/job-name={name}")
    ).items:
        log = b"".join(client.stream_log("default", pod["metadata"]["name"])).decode()
        for line in log.splitlines():
            if line.startswith(("Ray nodes:", "GPU tasks got:")):
                console.print(f"  {line}", soft_wrap=True)
    # The Ray nodes are host processes: let them stop before the cluster goes down.
    selector = f"ray.io/cluster={st.get('rayClusterName')}"
    deadline = time.monotonic() + 60
    while client.list("v1", "Pod", ListOptions("default", label_selector=selector)).items:
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)


if __name__ == "__main__":
    main()
